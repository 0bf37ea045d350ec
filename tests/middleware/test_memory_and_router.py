"""Memory from the Store reaches the model's system message (only the user's own), new facts are
written back as store puts; the router sends a request near a reference phrase to its route, and
the phrases are edited at run time."""

from __future__ import annotations

from langchain.agents.middleware import ModelRequest
from langchain_core.messages import AIMessage

from streamsaver import StreamStore
from streamsaver.demo.fake_agent import ScriptedChatModel
from streamsaver.middleware import SemanticRouterMiddleware, StoreMemoryMiddleware
from tests.middleware.conftest import ask, make_agent


async def test_the_users_relevant_memories_are_injected(store: StreamStore, mode: str) -> None:
    store.put(("alice", "memories"), "m1", {"text": "favourite food is ramen"})
    store.put(("alice", "memories"), "m2", {"text": "lives in Lisbon"})
    store.put(("bob", "memories"), "m1", {"text": "favourite food is pizza"})
    memory = StoreMemoryMiddleware(store, limit=2, threshold=0.8)
    agent = make_agent([memory])
    answer = await ask(agent, mode, "what is my favourite food?")
    assert "ramen" in answer
    assert "pizza" not in answer and "Lisbon" not in answer
    assert "pizza" in await ask(agent, mode, "what is my favourite food?", user="bob")
    assert "you asked" in await ask(agent, mode, "what is my favourite food?", user="carol")
    assert (memory.stats.hits, memory.stats.misses) == (2, 1)


async def test_new_facts_are_written_back_and_found_next_turn(store: StreamStore, mode: str) -> None:
    def remember(text: str) -> list[str]:
        return [text.removeprefix("remember: ")] if text.startswith("remember: ") else []

    memory = StoreMemoryMiddleware(store, remember=remember)
    agent = make_agent([memory])
    await ask(agent, mode, "remember: my dog is called Rex")
    stored = store.search(("alice", "memories"))
    assert [i.value for i in stored] == [{"text": "my dog is called Rex"}]
    assert "Rex" in await ask(agent, mode, "what is my dog called?")
    assert store.search(("bob", "memories")) == []


def _billing(request: ModelRequest) -> AIMessage:
    return AIMessage(content="billing desk: " + str(request.messages[-1].text))


async def test_a_request_near_a_phrase_goes_to_its_route(store: StreamStore, mode: str) -> None:
    expert, base = ScriptedChatModel(name_tag="expert"), ScriptedChatModel()
    router = SemanticRouterMiddleware(store, {"billing": _billing, "expert": expert}, threshold=0.3)
    router.set_phrases("billing", ["refund my invoice", "billing question about my invoice"])
    router.set_phrases("expert", ["explain quantum entanglement"])
    agent = make_agent([router], model=base)
    assert await ask(agent, mode, "I want a refund for my invoice") == "billing desk: I want a refund for my invoice"
    assert (await ask(agent, mode, "please explain quantum entanglement")).startswith("[expert]")
    assert (await ask(agent, mode, "capital of France?")).startswith("[scripted]")
    assert (expert.calls, base.calls) == (1, 1)
    assert (router.stats.hits, router.stats.misses) == (2, 1)


async def test_phrases_are_edited_at_run_time(store: StreamStore, mode: str) -> None:
    router = SemanticRouterMiddleware(store, {"billing": _billing}, threshold=0.3)
    if mode == "invoke":
        router.set_phrases("billing", ["refund my invoice"])
    else:
        await router.aset_phrases("billing", ["refund my invoice"])
    agent = make_agent([router])
    assert (await ask(agent, mode, "refund my invoice")).startswith("billing desk")
    if mode == "invoke":
        router.set_phrases("billing", ["update my card"])
    else:
        await router.aset_phrases("billing", ["update my card"])
    assert (await ask(agent, mode, "refund my invoice")).startswith("[scripted]")
    assert (await ask(agent, mode, "update my card")).startswith("billing desk")
    assert [i.value["text"] for i in store.search(("streamsaver-router",))] == ["update my card"]

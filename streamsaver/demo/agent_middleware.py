"""The demo's agent middleware scene: a LangChain agent (``create_agent``) on a deterministic chat
model and bag-of-words embeddings, with every streamsaver middleware; it shows a semantic cache
hit, a tool cache hit, an injected memory, a routed request and the audit events of the thread."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import ModelRequest
from langchain_core.tools import tool
from redis import Redis

from streamsaver.demo.fake_agent import BagOfWordsEmbeddings, ScriptedChatModel
from streamsaver.demo.show import Show
from streamsaver.memory.sync import StreamStore
from streamsaver.middleware import (
    AuditMiddleware,
    SemanticCacheMiddleware,
    SemanticRouterMiddleware,
    StoreMemoryMiddleware,
    ToolCacheMiddleware,
    read_audit,
)
from streamsaver.saver.sync import StreamSaver

__all__ = ["MiddlewareFacts", "middleware_scene"]

THREAD = "agent-1"
QUESTIONS = ("What is the capital of France?", "Tell me the capital of France", "What's the weather in Paris?",
             "weather in paris", "What is my favourite food?", "I want a refund for my invoice")


@dataclass(frozen=True)
class MiddlewareFacts:
    """What the scene saw: each question's answer, the counters, and the audit events' (type, cache)."""

    prefix: str
    """The scene's deployment (its checkpoints, store items and audit streams)."""
    thread_id: str
    answers: tuple[str, ...]
    model_calls: int
    tool_runs: int
    cache_hits: int
    tool_cache_hits: int
    audit: tuple[tuple[str, str, str], ...]


def _weather_tool(runs: list[str]) -> Any:
    @tool
    def get_weather(city: str) -> str:
        """The weather in a city (a fixed answer)."""
        runs.append(city)
        return f"sunny and 21C in {city}"

    return get_weather


def _billing(request: ModelRequest) -> str:
    return "The billing desk will handle your refund (routed without calling the model)."


def middleware_scene(client: Redis, demo: StreamSaver, show: Show) -> MiddlewareFacts:
    """Run the scene on `client`, in a deployment of its own beside the `demo` saver's (prefix
    ``P-agents``); print it under its own title."""
    show.title("Agent middleware: caches, memory, routing and audit on the Store and the thread logs")
    # A deployment of its own, so the demo's deployment holds what the other scenes wrote, as they report it.
    prefix = f"{demo.core.keys.prefix}-agents"
    saver = StreamSaver(client, prefix=prefix, projections=("full", "shallow"))  # the tour shows both views
    saver.setup()
    store = StreamStore(client, prefix=prefix, index={"dims": 256, "embed": BagOfWordsEmbeddings()})
    store.setup()
    store.put(("alice", "memories"), "food", {"text": "favourite food is ramen"})
    router = SemanticRouterMiddleware(store, {"billing": _billing}, threshold=0.3)
    router.set_phrases("billing", ["refund my invoice", "question about my bill"])
    cache, tools = SemanticCacheMiddleware(store, threshold=0.1), ToolCacheMiddleware(store, ttl_s=600)
    model, runs = ScriptedChatModel(), list[str]()
    middleware: list[Any] = [AuditMiddleware(saver), router, StoreMemoryMiddleware(store), cache, tools]
    agent = create_agent(model, [_weather_tool(runs)], middleware=middleware, checkpointer=saver)
    config: Any = {"configurable": {"thread_id": THREAD}}
    answers = []
    for question in QUESTIONS:
        out = agent.invoke({"messages": [{"role": "user", "content": question}]}, config,
                           context={"user_id": "alice", "tenant_id": "acme"})
        answers.append(str(out["messages"][-1].content))
    show.table(["question (user alice)", "answer"], zip(QUESTIONS, answers, strict=True))
    show.say(f"memory injected for alice: {answers[4].rsplit('(', 1)[-1].rstrip(')')}")
    show.say(f"model calls: {model.calls}; semantic cache hits/misses: {cache.stats.hits}/{cache.stats.misses}; "
             f"tool cache hits/misses: {tools.stats.hits}/{tools.stats.misses}; routed: {router.stats.hits}")
    events = read_audit(saver, THREAD)
    show.say(f"Checkpoints, caches, memories and routes live under {prefix + ':*'!r}; the audit stream sits "
             f"beside the thread's log ({saver.core.keys.thread(THREAD).audit}):")
    show.table(["type", "name", "cache", "route", "memories", "in bytes", "out bytes", "ms"],
               [(e["type"], e["name"].rsplit(".", 1)[-1], e["cache"], e["route"], e["memories"], e["in_bytes"],
                 e["out_bytes"], e["ms"]) for e in events])
    return MiddlewareFacts(prefix, THREAD, tuple(answers), model.calls, len(runs),
                           cache.stats.hits, tools.stats.hits,
                           tuple((e["type"], e["cache"], e["route"]) for e in events))

"""The semantic cache serves a final answer again for a request near in meaning, only within its
scope (tenant or user, model, system prompt, tool set), and never an answer built on tool results
unless those tools are declared deterministic."""

from __future__ import annotations

import pytest
import redis

from streamsaver import StreamStore
from streamsaver.demo.fake_agent import BagOfWordsEmbeddings, ScriptedChatModel
from streamsaver.errors import MiddlewareConfigError
from streamsaver.middleware import SemanticCacheMiddleware
from tests.middleware.conftest import DIMS, WeatherTool, ask, make_agent


async def test_a_paraphrase_gets_the_cached_answer(store: StreamStore, mode: str) -> None:
    model = ScriptedChatModel()
    cache = SemanticCacheMiddleware(store, threshold=0.1)
    agent = make_agent([cache], model=model)
    first = await ask(agent, mode, "What is the capital of France?")
    again = await ask(agent, mode, "Tell me the capital of France")
    assert again == first
    assert model.calls == 1
    assert (cache.stats.hits, cache.stats.misses, cache.stats.stored) == (1, 1, 1)


async def test_a_near_miss_is_not_a_hit(store: StreamStore, mode: str) -> None:
    model = ScriptedChatModel()
    cache = SemanticCacheMiddleware(store, threshold=0.1)
    agent = make_agent([cache], model=model)
    await ask(agent, mode, "What is the capital of France?")
    answer = await ask(agent, mode, "What is the capital of Spain?")
    assert "Spain" in answer
    assert model.calls == 2


async def test_no_hit_across_users_tenants_models_prompts_or_tools(store: StreamStore, mode: str) -> None:
    cache = SemanticCacheMiddleware(store, scope="tenant+user")
    question = "What is the capital of France?"
    base = ScriptedChatModel()
    await ask(make_agent([cache], model=base), mode, question)
    others = [
        (make_agent([cache], model=base), {"user": "bob"}),
        (make_agent([cache], model=base), {"tenant": "globex"}),
        (make_agent([cache], model=ScriptedChatModel(name_tag="other-model")), {}),
        (make_agent([cache], model=base, system_prompt="You are terse."), {}),
        (make_agent([cache], model=base, tools=[WeatherTool().tool]), {}),
    ]
    for agent, who in others:
        await ask(agent, mode, question, **who)
    assert cache.stats.hits == 0
    assert base.calls == 5
    await ask(make_agent([cache], model=base), mode, question)
    assert cache.stats.hits == 1


async def test_answers_built_on_tools_are_cached_only_for_deterministic_tools(
    store: StreamStore, weather: WeatherTool, mode: str
) -> None:
    plain = SemanticCacheMiddleware(store)
    agent = make_agent([plain], tools=[weather.tool])
    await ask(agent, mode, "weather in Paris?")
    await ask(agent, mode, "weather in Paris?")
    assert (plain.stats.hits, plain.stats.stored, weather.runs) == (0, 0, 2)
    trusting = SemanticCacheMiddleware(store, deterministic_tools=["get_weather"], scope="tenant")
    agent = make_agent([trusting], tools=[weather.tool])
    await ask(agent, mode, "weather in Paris?")
    assert await ask(agent, mode, "weather in Paris?") == "[scripted] sunny in Paris"
    assert (trusting.stats.hits, trusting.stats.stored, weather.runs) == (1, 1, 3)


async def test_entries_expire_with_the_ttl(store: StreamStore, client: redis.Redis, mode: str) -> None:
    await ask(make_agent([SemanticCacheMiddleware(store, ttl_s=90)]), mode, "capital of Peru")
    keys = list(client.scan_iter(match=f"{store.core.prefix}:items:doc:*llm-cache*"))
    assert len(keys) == 1
    assert 0 < client.pttl(keys[0]) <= 90_000


def test_a_store_without_embeddings_is_refused(client: redis.Redis, prefix: str) -> None:
    with pytest.raises(MiddlewareConfigError, match="index="):
        SemanticCacheMiddleware(StreamStore(client, prefix=prefix))


def test_embeddings_of_other_dimensions_are_refused(client: redis.Redis, prefix: str) -> None:
    store = StreamStore(client, prefix=prefix, index={"dims": DIMS, "embed": BagOfWordsEmbeddings(DIMS * 2)})
    with pytest.raises(MiddlewareConfigError, match="dimensions"):
        SemanticCacheMiddleware(store)


@pytest.mark.parametrize("bad", [{"threshold": 0}, {"threshold": 3}, {"threshold": True}, {"scope": "planet"},
                                 {"ttl_s": -5}])
def test_bad_settings_fail_at_construction(store: StreamStore, bad: dict[str, object]) -> None:
    with pytest.raises(MiddlewareConfigError):
        SemanticCacheMiddleware(store, **bad)  # type: ignore[arg-type]


def test_another_distance_is_refused(client: redis.Redis, prefix: str) -> None:
    index = {"dims": DIMS, "embed": BagOfWordsEmbeddings(DIMS), "distance_type": "l2"}
    with pytest.raises(MiddlewareConfigError, match="cosine"):
        SemanticCacheMiddleware(StreamStore(client, prefix=prefix, index=index))  # type: ignore[arg-type]

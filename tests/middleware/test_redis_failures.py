"""A Redis failure never breaks the agent: with every middleware on a client that cannot reach its
server, the answers are those of an agent without middleware; each failure is logged and counted."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable

import pytest
import redis
import redis.asyncio

from streamsaver import AsyncStreamStore, StreamSaver, StreamStore
from streamsaver.demo.fake_agent import BagOfWordsEmbeddings, ScriptedChatModel
from streamsaver.middleware import (
    AuditMiddleware,
    SemanticCacheMiddleware,
    SemanticRouterMiddleware,
    StoreMemoryMiddleware,
    ToolCacheMiddleware,
)
from tests.middleware.conftest import DIMS, WeatherTool, ask, make_agent


def every_middleware(store: StreamStore | AsyncStreamStore) -> list[object]:
    return [SemanticRouterMiddleware(store, {"faq": lambda request: "routed"}),
            StoreMemoryMiddleware(store, remember=lambda text: [text]),
            SemanticCacheMiddleware(store), ToolCacheMiddleware(store)]


async def test_the_agent_answers_as_without_middleware(closed_port_store: StreamStore, weather: WeatherTool,
                                                       mode: str, caplog: pytest.LogCaptureFixture) -> None:
    middleware = every_middleware(closed_port_store)
    plain = make_agent([], tools=[weather.tool])
    guarded = make_agent(middleware, tools=[weather.tool])
    with caplog.at_level(logging.WARNING, logger="streamsaver.middleware"):
        for question in ("weather in Paris?", "capital of France?"):
            assert await ask(guarded, mode, question) == await ask(plain, mode, question)
    for m in middleware:
        assert m.stats.errors >= 1, m  # type: ignore[attr-defined]
        assert m.stats.hits == 0  # type: ignore[attr-defined]
    assert any("the store call failed" in r.message for r in caplog.records)


async def test_a_stopped_server_breaks_neither_the_audit_nor_the_caches(
    stopped_server: tuple[redis.Redis, Callable[[], None]], mode: str
) -> None:
    client, stop = stopped_server
    saver = StreamSaver(client, prefix="stopped")
    saver.setup()
    store = StreamStore(client, prefix="stopped", index={"dims": DIMS, "embed": BagOfWordsEmbeddings(DIMS)})
    store.setup()
    audit, cache = AuditMiddleware(saver), SemanticCacheMiddleware(store)
    agent = make_agent([audit, cache])
    await ask(agent, mode, "capital of Chile?", thread="t1")
    assert (audit.stats.stored, cache.stats.stored, audit.stats.errors, cache.stats.errors) == (1, 1, 0, 0)
    stop()
    assert await ask(agent, mode, "capital of France?", thread="t1") == "[scripted] you asked: capital of France?"
    assert audit.stats.errors == 1
    assert cache.stats.errors == 2  # the lookup and the write
    assert audit.stats.last_error is not None


@pytest.fixture
async def async_store(redis_url: str, prefix: str) -> AsyncIterator[AsyncStreamStore]:
    aclient = redis.asyncio.Redis.from_url(redis_url)
    store = AsyncStreamStore(aclient, prefix=prefix, index={"dims": DIMS, "embed": BagOfWordsEmbeddings(DIMS)})
    await store.setup()
    yield store
    await aclient.aclose()


async def test_an_async_store_serves_ainvoke_and_stays_out_of_invoke(async_store: AsyncStreamStore) -> None:
    model = ScriptedChatModel()
    cache = SemanticCacheMiddleware(async_store)
    agent = make_agent([cache], model=model)
    await ask(agent, "ainvoke", "capital of France?")
    await ask(agent, "ainvoke", "capital of France?")
    assert (cache.stats.hits, model.calls) == (1, 1)
    await ask(agent, "invoke", "capital of France?")
    assert (cache.stats.hits, cache.stats.misses, cache.stats.skipped, cache.stats.errors) == (1, 1, 1, 0)
    assert model.calls == 2


async def test_a_full_server_breaks_neither_the_audit_nor_the_caches(
    stopped_server: tuple[redis.Redis, Callable[[], None]], weather: WeatherTool, mode: str
) -> None:
    client, _ = stopped_server
    saver = StreamSaver(client, prefix="full")
    saver.setup()
    store = StreamStore(client, prefix="full", index={"dims": DIMS, "embed": BagOfWordsEmbeddings(DIMS)})
    store.setup()
    audit, cache, tools = AuditMiddleware(saver), SemanticCacheMiddleware(store), ToolCacheMiddleware(store)
    agent, plain = make_agent([audit, cache, tools], tools=[weather.tool]), make_agent([], tools=[weather.tool])
    client.config_set("maxmemory-policy", "noeviction")
    client.config_set("maxmemory", "1")
    for question in ("capital of France?", "weather in Oslo?"):
        assert await ask(agent, mode, question, thread="f") == await ask(plain, mode, question, thread="f")
    assert (audit.stats.stored, cache.stats.stored, tools.stats.stored) == (0, 0, 0)
    assert audit.stats.errors == 4 and cache.stats.errors == 1  # the search reads; the write is refused
    assert tools.stats.errors >= 1  # the write (and the lookup: a full server refuses the store's get script)
    assert all((m.stats.last_error or '').startswith('OutOfMemoryError') for m in (audit, cache, tools))

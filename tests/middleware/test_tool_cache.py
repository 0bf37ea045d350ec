"""The tool result cache answers a repeated cacheable call from the Store, per scope, and never
caches a tool that raised, a volatile call, a side effect or a denied tool."""

from __future__ import annotations

import pytest
import redis
from langchain_core.tools import tool

from streamsaver import StreamStore
from streamsaver.errors import MiddlewareConfigError
from streamsaver.middleware import ToolCacheMiddleware, ToolCachePolicy
from tests.middleware.conftest import WeatherTool, ask, make_agent


async def test_a_repeated_call_is_answered_from_the_store(store: StreamStore, weather: WeatherTool, mode: str) -> None:
    cache = ToolCacheMiddleware(store, ttl_s=60)
    agent = make_agent([cache], tools=[weather.tool])
    first = await ask(agent, mode, "weather in Paris?")
    second = await ask(agent, mode, "what is the weather in paris")
    assert first == second == "[scripted] sunny in Paris"
    assert weather.runs == 1
    assert (cache.stats.hits, cache.stats.misses, cache.stats.stored) == (1, 1, 1)


async def test_other_arguments_and_other_users_miss(store: StreamStore, weather: WeatherTool, mode: str) -> None:
    agent = make_agent([ToolCacheMiddleware(store)], tools=[weather.tool])
    await ask(agent, mode, "weather in Paris?")
    await ask(agent, mode, "weather in Rome?")
    await ask(agent, mode, "weather in Paris?", user="bob")
    assert weather.runs == 3


async def test_a_tool_that_raised_is_never_cached(store: StreamStore, weather: WeatherTool, mode: str) -> None:
    cache = ToolCacheMiddleware(store)
    agent = make_agent([cache], tools=[weather.tool])
    weather.fail = True
    for _ in range(2):
        with pytest.raises(RuntimeError, match="weather service down"):
            await ask(agent, mode, "weather in Oslo?")
    weather.fail = False
    assert await ask(agent, mode, "weather in Oslo?") == "[scripted] sunny in Oslo"
    assert weather.runs == 3
    assert cache.stats.hits == 0


async def test_the_entry_expires_with_its_ttl(store: StreamStore, client: redis.Redis, weather: WeatherTool,
                                              mode: str) -> None:
    agent = make_agent([ToolCacheMiddleware(store, ttl_s=30)], tools=[weather.tool])
    await ask(agent, mode, "weather in Lima?")
    keys = list(client.scan_iter(match=f"{store.core.prefix}:items:doc:*tool-cache*"))
    assert len(keys) == 1
    assert 0 < client.pttl(keys[0]) <= 30_000


def _call(name: str, args: dict[str, object], **metadata: object) -> tuple[str, dict[str, object], object]:
    @tool(name)
    def anything(**kwargs: object) -> str:
        """Any tool."""
        return ""

    anything.metadata = dict(metadata) or None
    return name, args, anything


@pytest.mark.parametrize(("policy", "call", "cacheable"), [
    (ToolCachePolicy(), _call("get_weather", {"city": "x"}), True),
    (ToolCachePolicy(), _call("send_email", {"to": "x"}), False),
    (ToolCachePolicy(), _call("send_email", {"to": "x"}, readOnlyHint=True), True),
    (ToolCachePolicy(), _call("lookup", {"q": "x"}, destructiveHint=True), False),
    (ToolCachePolicy(), _call("lookup", {"q": "x", "timestamp": 1}), False),
    (ToolCachePolicy(), _call("lookup", {"q": "x"}, cacheable=False), False),
    (ToolCachePolicy(cache_unannotated=False), _call("lookup", {"q": "x"}), False),
    (ToolCachePolicy(cache_unannotated=False), _call("lookup", {"q": "x"}, idempotentHint=True), True),
    (ToolCachePolicy(allow=["send_email"]), _call("send_email", {"to": "x"}), True),
    (ToolCachePolicy(deny=["lookup"]), _call("lookup", {"q": "x"}, readOnlyHint=True), False),
    (ToolCachePolicy(volatile_args=["q"]), _call("lookup", {"q": "x"}), False),
])
def test_cacheability_follows_annotations_names_and_lists(
    policy: ToolCachePolicy, call: tuple[str, dict[str, object], object], cacheable: bool
) -> None:
    assert policy.cacheable(*call) is cacheable


@pytest.mark.parametrize("bad", [{"ttl_s": 0}, {"ttl_s": -1}, {"ttl_s": "1h"}, {"scope": "team"},
                                 {"policy": None, "scope": "nobody"}])
def test_bad_settings_fail_at_construction(store: StreamStore, bad: dict[str, object]) -> None:
    with pytest.raises(MiddlewareConfigError):
        ToolCacheMiddleware(store, **bad)  # type: ignore[arg-type]


def test_a_client_is_not_a_store(client: redis.Redis) -> None:
    with pytest.raises(MiddlewareConfigError, match="StreamStore"):
        ToolCacheMiddleware(client)

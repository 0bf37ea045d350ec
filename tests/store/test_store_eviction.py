"""The store's setup refuses a server that evicts keys, as the savers' does, unless
``allow_eviction=True``: an evicted item or log entry would be lost without an error."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
import redis.asyncio

from streamsaver import AsyncStreamStore, StreamStore
from streamsaver.errors import EvictionPolicyError
from streamsaver.server.embedded import EmbeddedRedis


@pytest.fixture(scope="module")
def evicting() -> Iterator[str]:
    """A server of its own whose maxmemory-policy evicts (the shared one must not)."""
    with EmbeddedRedis() as server:
        redis.Redis.from_url(server.url).config_set("maxmemory-policy", "allkeys-lru")
        yield server.url


async def test_setup_refuses_an_evicting_server_unless_allowed(evicting: str, prefix: str) -> None:
    with pytest.raises(EvictionPolicyError, match="allkeys-lru"):
        StreamStore(redis.Redis.from_url(evicting), prefix=prefix).setup()
    with pytest.raises(EvictionPolicyError):
        await AsyncStreamStore(redis.asyncio.Redis.from_url(evicting), prefix=prefix).setup()
    assert not redis.Redis.from_url(evicting).keys(f"{prefix}:*")
    allowed = StreamStore(redis.Redis.from_url(evicting), prefix=prefix, allow_eviction=True)
    allowed.setup()
    allowed.put(("ns",), "k", {"v": 1})
    assert allowed.get(("ns",), "k").value == {"v": 1}  # type: ignore[union-attr]
    async_allowed = AsyncStreamStore(redis.asyncio.Redis.from_url(evicting), prefix=prefix, allow_eviction=True)
    await async_allowed.setup()
    assert (await async_allowed.aget(("ns",), "k")).value == {"v": 1}  # type: ignore[union-attr]

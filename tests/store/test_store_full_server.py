"""A full server (``maxmemory`` reached, ``noeviction``) still serves the store's reads: `get`
(``store_get.lua`` is flagged ``allow-oom``: it only reads and moves expiries), a refreshing
`get`, and `search`; a put is refused whole."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest
import redis
from redis.exceptions import OutOfMemoryError

from streamsaver import StreamStore
from streamsaver.server.embedded import EmbeddedRedis

VALUE = secrets.token_hex(100_000)  # 200,000 characters


@pytest.fixture(scope="module")
def full_server() -> Iterator[tuple[EmbeddedRedis, str]]:
    """A server holding five items of a store (prefix returned with it), then made full."""
    with EmbeddedRedis() as server, redis.Redis.from_url(server.url) as admin:
        prefix = f"full{secrets.token_hex(3)}"
        store = StreamStore(redis.Redis.from_url(server.url), prefix=prefix, default_ttl=60)
        store.setup()
        for n in range(5):
            store.put(("users", "ada"), f"fact{n}", {"n": n, "text": VALUE})
        admin.config_set("maxmemory", int(admin.info("memory")["used_memory"]) - 400_000)
        with pytest.raises(OutOfMemoryError):
            store.put(("users", "ada"), "more", {"n": 9, "text": VALUE})
        yield server, prefix
        admin.config_set("maxmemory", 0)


def test_a_fresh_store_gets_and_searches_on_a_full_server(full_server: tuple[EmbeddedRedis, str]) -> None:
    server, prefix = full_server
    fresh = StreamStore(redis.Redis.from_url(server.url), prefix=prefix)
    item = fresh.get(("users", "ada"), "fact3")
    assert item is not None and item.value["n"] == 3
    assert sorted(i.value["n"] for i in fresh.search(("users",), filter={"n": {"$gte": 3}})) == [3, 4]
    assert fresh.get(("users", "ada"), "more") is None


def test_a_refreshing_get_works_on_a_full_server(full_server: tuple[EmbeddedRedis, str]) -> None:
    server, prefix = full_server
    refreshing = StreamStore(redis.Redis.from_url(server.url), prefix=prefix, default_ttl=60, refresh_on_read=True)
    item = refreshing.get(("users", "ada"), "fact1")
    assert item is not None and item.value["n"] == 1

"""A search renews the TTL of the items it returns when the call's ``refresh_ttl`` (or the
store's ``refresh_on_read``) says so, as LangGraph's PostgresStore does: the page's items only,
each with its own TTL; items without a TTL stay without one. It costs one more round trip, and
only when the page holds an item that expires."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from store_adapter import StoreAdapter

from streamsaver import StreamStore
from tests.store.test_store_vectors import DIMS, _open, embed

HOUR = 3_600_000


@pytest.fixture(params=["sync", "async"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _docs(client: Any, prefix: str) -> dict[str, bytes]:
    return {key.decode().rsplit(":", 1)[1]: key for key in client.keys(f"{prefix}:items:doc:*")}


def _as_if_nearly_expired(client: Any, docs: dict[str, bytes]) -> None:
    for doc in docs.values():
        if client.pttl(doc) > 0:
            client.pexpire(doc, 10_000)


async def test_a_search_renews_the_ttl_of_its_pages_items_only(store: StoreAdapter, client: Any, prefix: str) -> None:
    for key in ("a", "b"):
        await store.call("put", ("ns",), key, {"v": key}, ttl=60)
    await store.call("put", ("ns",), "c", {"v": "c"}, ttl=None)
    await store.call("put", ("other",), "x", {"v": "x"}, ttl=60)
    docs = _docs(client, prefix)
    _as_if_nearly_expired(client, docs)
    store.counter.reset()
    page = await store.call("search", ("ns",), limit=2)  # newest first: c (no TTL), b
    assert [item.key for item in page] == ["c", "b"] and store.counter.trips == 2
    assert client.pttl(docs["b"]) > HOUR - 60_000
    assert client.pttl(docs["c"]) == -1  # never made to expire
    assert client.pttl(docs["a"]) <= 10_000 and client.pttl(docs["x"]) <= 10_000  # not on the page
    _as_if_nearly_expired(client, docs)
    await store.call("search", ("ns",), limit=3, refresh_ttl=False)
    assert all(client.pttl(docs[key]) <= 10_000 for key in ("a", "b"))
    store.counter.reset()
    assert [item.key for item in await store.call("search", ("ns",), filter={"v": "c"})] == ["c"]
    assert store.counter.trips == 1  # nothing on the page expires: no second round trip


async def test_a_search_by_meaning_renews_its_pages_items(kind: str, redis_url: str, prefix: str, client: Any) -> None:
    store, _ = await _open(kind, redis_url, prefix, {"dims": DIMS, "embed": embed, "fields": ["text"]})
    for key, text in {"near": "apple apple", "far": "kiwi kiwi", "plain": None}.items():
        value = {"text": text} if text else {"note": "no text"}
        await store.call("put", ("docs",), key, value, ttl=60)
    docs = _docs(client, prefix)
    _as_if_nearly_expired(client, docs)
    found = await store.call("search", ("docs",), query="apple", limit=1)
    assert [item.key for item in found] == ["near"]
    assert client.pttl(docs["near"]) > HOUR - 60_000
    assert client.pttl(docs["far"]) <= 10_000
    found = await store.call("search", ("docs",), query="apple", limit=1, offset=2)  # the unscored item
    assert [item.key for item in found] == ["plain"] and client.pttl(docs["plain"]) > HOUR - 60_000


async def test_a_store_that_does_not_refresh_on_read_renews_only_when_asked(
        redis_url: str, prefix: str, client: Any) -> None:
    store = StreamStore(redis.Redis.from_url(redis_url), prefix=prefix, refresh_on_read=False)
    store.setup()
    store.put(("ns",), "k", {"v": 1}, ttl=60)
    docs = _docs(client, prefix)
    _as_if_nearly_expired(client, docs)
    store.search(("ns",))
    assert client.pttl(docs["k"]) <= 10_000
    store.search(("ns",), refresh_ttl=True)
    assert client.pttl(docs["k"]) > HOUR - 60_000

"""Searches by meaning that one server answers with queries loading documents, on Redis Cluster
(the embedded 3-primary cluster, and one of one primary): range conditions in a hybrid search,
and the items without embeddings that fill a short page. One server with the same items is the
oracle: the same items, in the same order, with the same scores, page by page.

BM25 weighs words by each primary's own statistics, so where the text ranking counts, the query's
word is held by items of one namespace (one partition, so one primary) whose texts have one
length: their BM25 order is then the same on that primary as on one server. One word: the weights
of several follow the index's statistics, which count a rewritten document's old entries until
RediSearch's garbage collector drops them (at its own time), on one server as on a cluster."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis
import redis.asyncio
from langgraph.store.base import PutOp
from redis.cluster import RedisCluster

from streamsaver import AsyncStreamStore, StreamStore
from tests.store.test_store_cluster import INDEX

QUERIES: list[dict[str, Any]] = [
    {"query": "apple", "hybrid": False},                                 # embedded items, then the others
    {"query": "apple", "hybrid": False, "filter": {"n": {"$gte": 3}}},   # ranges, then the others that pass
    {"query": "kiwi", "hybrid": False, "filter": {"n": 1}},              # an equality pre-filter
    {"query": "zebra", "filter": {"n": {"$gte": 2}}},                    # hybrid with a range
    {"query": "lion", "filter": {"n": {"$gt": 0, "$lte": 4}}},           # hybrid, two ranges
    {"query": "zebra"},                                                  # hybrid, then the others
]


def _items() -> list[PutOp]:
    """Embedded items of every user, no two of one vector (a KNN cuts ties at its reach either
    way, on one server as on a cluster); a namespace whose texts alone hold "zebra" and "lion" (six
    words each); items without embeddings (no text at the index's path, or ``index=False``)."""
    zed = [PutOp(("zed", "facts"), f"z{k}", {"text": "zebra " * (k + 1) + "lion " * (5 - k), "n": k}) for k in range(6)]
    plain = [PutOp((f"user{k}", "notes"), f"plain{k}", {"note": "apple", "n": k}) for k in range(6)]
    off = [PutOp((f"user{k + 6}", "notes"), f"off{k}", {"text": "apple kiwi", "n": k}, index=False) for k in range(6)]
    embedded = [PutOp((f"user{u}", "facts"), f"k{n}", {"text": "apple " * (n + 1) + "kiwi " * (6 - n) + "b" * u,
                                                        "n": n}) for u in range(12) for n in range(6)]
    return [*embedded, *zed, *plain, *off]


def _answers(items: Any) -> list[tuple[tuple[str, ...], str, Any, Any]]:
    return [(tuple(item.namespace), item.key, item.value, item.score) for item in items]


def _filled(store: StreamStore) -> StreamStore:
    store.setup()
    for op in _items():  # one call each, in the same order in both stores: the same updated order
        store.batch([op])
    return store


@pytest.fixture
def stores(cluster_url: str, redis_url: str, prefix: str) -> Iterator[tuple[StreamStore, StreamStore]]:
    clustered, server = RedisCluster.from_url(cluster_url), redis.Redis.from_url(redis_url)
    yield (_filled(StreamStore(clustered, prefix=prefix, index=INDEX)),  # type: ignore[arg-type]
           _filled(StreamStore(server, prefix=prefix, index=INDEX)))  # type: ignore[arg-type]
    clustered.close()
    server.close()


def _paged(store: StreamStore, size: int, under: tuple[str, ...], query: dict[str, Any]) -> list[Any]:
    return [answer for offset in range(0, 100, size)
            for answer in _answers(store.search(under, limit=size, offset=offset, **query))]


@pytest.mark.parametrize("query", QUERIES)
def test_searches_that_load_documents_answer_on_three_primaries_as_one_server_does(
        stores: tuple[StreamStore, StreamStore], query: dict[str, Any]) -> None:
    on_cluster, on_server = stores
    assert len(on_cluster.core.targets) == 3
    whole = on_server.search((), limit=120, **query)
    assert any(item.score is None for item in whole) or "filter" in query  # the page needed filling
    assert _answers(on_cluster.search((), limit=120, **query)) == _answers(whole)
    for size in (4, 9):  # a hybrid page fuses rankings as deep as its reach: pages are not cuts of one list
        assert _paged(on_cluster, size, (), query) == _paged(on_server, size, (), query)
        assert query.get("hybrid", True) or _paged(on_cluster, size, (), query) == _answers(whole)
    for under in (("user1",), ("user7",), ("zed", "facts")):  # user1 and user7 hold an item without embeddings
        assert _answers(on_cluster.search(under, limit=8, offset=1, **query)) == _answers(
            on_server.search(under, limit=8, offset=1, **query))


def test_searches_that_load_documents_on_one_primary_answer_as_one_server_does(
        one_primary_cluster_url: str, redis_url: str, prefix: str) -> None:
    clustered, server = RedisCluster.from_url(one_primary_cluster_url), redis.Redis.from_url(redis_url)
    on_cluster = _filled(StreamStore(clustered, prefix=prefix, index=INDEX))  # type: ignore[arg-type]
    on_server = _filled(StreamStore(server, prefix=prefix, index=INDEX))  # type: ignore[arg-type]
    for query in QUERIES:
        whole = on_server.search((), limit=120, **query)
        assert whole and _answers(on_cluster.search((), limit=120, **query)) == _answers(whole)
        assert _paged(on_cluster, 11, (), query) == _paged(on_server, 11, (), query)
    clustered.close()
    server.close()


@pytest.mark.asyncio
async def test_the_async_store_fills_and_ranges_a_hybrid_search_on_a_cluster(
        cluster_url: str, redis_url: str, prefix: str) -> None:
    client, server = redis.asyncio.RedisCluster.from_url(cluster_url), redis.asyncio.Redis.from_url(redis_url)
    on_cluster = AsyncStreamStore(client, prefix=prefix, index=INDEX)  # type: ignore[arg-type]
    on_server = AsyncStreamStore(server, prefix=prefix, index=INDEX)  # type: ignore[arg-type]
    for store in (on_cluster, on_server):
        await store.setup()
        for op in _items():
            await store.abatch([op])
    for query in (QUERIES[1], QUERIES[3], QUERIES[5]):
        whole = await on_server.asearch((), limit=120, **query)
        assert whole and _answers(await on_cluster.asearch((), limit=120, **query)) == _answers(whole)
        page = await on_server.asearch((), limit=6, offset=38, **query)
        assert _answers(await on_cluster.asearch((), limit=6, offset=38, **query)) == _answers(page) != []
    await client.aclose()
    await server.aclose()

"""The store on a Redis Cluster of one primary (a managed cluster of one shard): still a cluster
(one index, under its primary's hash tag, whose page queries load no documents), so its pages
merge and read their documents by key as on several primaries, and answer as one server does."""

from __future__ import annotations

from typing import Any

import pytest
import redis
import redis.asyncio
from redis.cluster import RedisCluster

from streamsaver import AsyncStreamStore, StreamStore
from tests.store.test_store_cluster import INDEX, _keys, _ops, _pages

QUERIES: list[dict[str, Any]] = [
    {},
    {"filter": {"n": 2}},
    {"filter": {"n": {"$gte": 4}}},
    {"query": "apple", "hybrid": False},
    {"query": "kiwi", "filter": {"n": 3}, "hybrid": False},
    {"query": "apple kiwi"},
]


def _answers(items: Any) -> list[tuple[tuple[str, ...], str, Any]]:
    return [(tuple(item.namespace), item.key, item.value) for item in items]


def _paged(items: Any, query: dict[str, Any]) -> list[Any]:
    """A page's answers; by meaning only its values (items of equal vectors tie: a KNN's reach may
    cut ties either way, on one server as on a cluster)."""
    return [item.value for item in items] if "query" in query else _answers(items)


@pytest.mark.parametrize("protocol", [2, 3])
def test_the_store_on_one_primary_answers_as_one_server_does(
        one_primary_cluster_url: str, redis_url: str, prefix: str, protocol: int) -> None:
    clustered = RedisCluster.from_url(one_primary_cluster_url, protocol=protocol)
    on_cluster = StreamStore(clustered, prefix=prefix, index=INDEX)  # type: ignore[arg-type]
    on_server = StreamStore(redis.Redis.from_url(redis_url, protocol=protocol), prefix=prefix, index=INDEX)  # type: ignore[arg-type]
    for store in (on_cluster, on_server):
        store.setup()
        store.batch(_ops())
    assert len(on_cluster.core.targets) == 1 and on_cluster.core.targets[0].route is not None
    item = on_cluster.get(("user3", "facts"), "k2")
    assert item is not None and item.value["n"] == 2
    for query in QUERIES:
        whole = on_server.search((), limit=100, **query)
        assert whole and _answers(on_cluster.search((), limit=100, **query)) == _answers(whole)
        page = on_server.search((), limit=5, offset=3, **query)
        assert _paged(on_cluster.search((), limit=5, offset=3, **query), query) == _paged(page, query) != []
        if "query" not in query:
            assert _pages(on_cluster.search, 7, **query) == _keys(whole)
    under = on_server.search(("user3",), query="apple", limit=4, hybrid=False)  # a bare KNN
    assert _keys(on_cluster.search(("user3",), query="apple", limit=4, hybrid=False)) == _keys(under) != []
    assert on_cluster.list_namespaces(limit=100) == on_server.list_namespaces(limit=100) != []
    assert on_cluster.list_namespaces(prefix=("user3",)) == [("user3", "facts")]
    assert on_cluster.purge(("user4",)) == 6 and on_cluster.search(("user4",)) == []
    assert on_cluster.list_namespaces(prefix=("user4",)) == []
    clustered.close()


@pytest.mark.asyncio
async def test_the_async_store_on_one_primary(one_primary_cluster_url: str, redis_url: str, prefix: str) -> None:
    client = redis.asyncio.RedisCluster.from_url(one_primary_cluster_url)
    server = redis.asyncio.Redis.from_url(redis_url)
    on_cluster = AsyncStreamStore(client, prefix=prefix, index=INDEX)  # type: ignore[arg-type]
    on_server = AsyncStreamStore(server, prefix=prefix, index=INDEX)  # type: ignore[arg-type]
    for store in (on_cluster, on_server):
        await store.setup()
        await store.abatch(_ops())
    for query in QUERIES:
        whole = await on_server.asearch((), limit=100, **query)
        assert whole and _answers(await on_cluster.asearch((), limit=100, **query)) == _answers(whole)
        page = await on_server.asearch((), limit=4, offset=6, **query)
        assert _paged(await on_cluster.asearch((), limit=4, offset=6, **query), query) == _paged(page, query) != []
    assert await on_cluster.alist_namespaces(limit=100) == await on_server.alist_namespaces(limit=100) != []
    assert await on_cluster.apurge(("user4",)) == 6 and await on_cluster.asearch(("user4",)) == []
    await client.aclose()
    await server.aclose()

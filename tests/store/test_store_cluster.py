"""The store on Redis Cluster (the embedded 3-primary cluster): writes and gets stay in their
partition's slot; search, search by meaning and list_namespaces ask every primary's index and
merge, so pages, order and listings equal what one server gives."""

from __future__ import annotations

from typing import Any

import pytest
import redis
import redis.asyncio
from langgraph.store.base import PutOp, SearchOp
from redis.cluster import RedisCluster

from streamsaver import AsyncStreamStore, StreamStore
from tests.store.test_store_vectors import DIMS, embed

INDEX = {"dims": DIMS, "embed": embed, "fields": ["text"], "text_fields": ["text"]}
USERS = [f"user{n}" for n in range(12)]  # first labels spread over the partitions, so over the primaries


def _ops() -> list[PutOp]:
    return [PutOp((user, "facts"), f"k{n}", {"text": "apple " * (n + 1) + "kiwi " * (6 - n), "n": n})
            for user in USERS for n in range(6)]


def _pages(search: Any, size: int, **query: Any) -> list[tuple[tuple[str, ...], str]]:
    found: list[tuple[tuple[str, ...], str]] = []
    for offset in range(0, 80, size):
        found += [(tuple(item.namespace), item.key) for item in search((), limit=size, offset=offset, **query)]
    return found


def _keys(items: Any) -> list[tuple[tuple[str, ...], str]]:
    return [(tuple(item.namespace), item.key) for item in items]


@pytest.mark.parametrize("ranged", [
    {"filter": {"n": {"$gte": 4}}},                       # a third of the items: more rounds than one
    {"filter": {"n": {"$gt": 0, "$lt": 2}}},
    {"filter": {"n": {"$lte": 1}}, "query": "kiwi", "hybrid": False},
    {"filter": {"n": {"$gte": 5}}, "query": "apple", "hybrid": False},
])
def test_range_conditions_on_a_cluster_answer_as_one_server_does(
        cluster_url: str, redis_url: str, prefix: str, ranged: dict[str, Any]) -> None:
    on_cluster = StreamStore(RedisCluster.from_url(cluster_url), prefix=prefix, index=INDEX)  # type: ignore[arg-type]
    on_server = StreamStore(redis.Redis.from_url(redis_url), prefix=prefix, index=INDEX)  # type: ignore[arg-type]
    for store in (on_cluster, on_server):
        store.setup()
        store.batch([*_ops(), PutOp(("user1", "facts"), "text", {"n": "5"}), PutOp(("user2", "facts"), "none", {})])
    whole = on_server.search((), limit=100, **ranged)
    assert whole and all(isinstance(item.value["n"], int) for item in whole)
    assert _keys(on_cluster.search((), limit=100, **ranged)) == _keys(whole)
    assert _pages(on_cluster.search, 5, **ranged) == _keys(whole)
    under = on_server.search(("user3",), limit=3, **ranged)
    assert _keys(on_cluster.search(("user3",), limit=3, **ranged)) == _keys(under)
    if "query" in ranged:
        assert [item.score for item in on_cluster.search((), limit=100, **ranged)] == [item.score for item in whole]


def test_the_store_on_a_cluster_answers_as_one_server_does(cluster_url: str, redis_url: str, prefix: str) -> None:
    on_cluster = StreamStore(RedisCluster.from_url(cluster_url), prefix=prefix, index=INDEX)  # type: ignore[arg-type]
    on_server = StreamStore(redis.Redis.from_url(redis_url), prefix=prefix, index=INDEX)  # type: ignore[arg-type]
    for store in (on_cluster, on_server):
        store.setup()
        store.batch(_ops())
    assert len(on_cluster.core.targets) == 3
    item = on_cluster.get(("user3", "facts"), "k2")
    assert item is not None and item.value["n"] == 2
    for query in ({}, {"filter": {"n": 2}}, {"query": "apple", "hybrid": False},
                  {"query": "kiwi", "filter": {"n": 3}, "hybrid": False}):
        whole = on_server.search((), limit=100, **query)
        assert [(i.namespace, i.key) for i in on_cluster.search((), limit=100, **query)] == [
            (i.namespace, i.key) for i in whole]
        assert _pages(on_cluster.search, 7, **query) == [(tuple(i.namespace), i.key) for i in whole]
    for under in (("user3",), ("user3", "facts")):  # a bare KNN whose candidates the prefix checks
        by_meaning = on_cluster.search(under, query="apple", limit=4, hybrid=False)
        assert _keys(by_meaning) == _keys(on_server.search(under, query="apple", limit=4, hybrid=False))
    on_cluster.put(("user5", "facts"), "brief", {"n": 9}, ttl=60)
    brief, cluster = on_cluster.core.item_key("user5.facts:brief"), RedisCluster.from_url(cluster_url)
    cluster.pexpire(brief, 10_000)
    assert _keys(on_cluster.search(("user5",), filter={"n": 9})) == [(("user5", "facts"), "brief")]
    assert cluster.pttl(brief) > 3_000_000  # the search renewed its page's TTL
    # BM25 weighs words by each primary's own statistics: the fused order may differ, not the items
    fused = on_cluster.search((), query="apple kiwi", limit=100)
    assert sorted((tuple(i.namespace), i.key) for i in fused) == sorted(  # then the item without embeddings
        [(("user5", "facts"), "brief"), *((op.namespace, op.key) for op in _ops())])
    # a hybrid search with a range (tests/store/test_store_cluster_search.py compares its pages)
    _, ranged = on_cluster.batch([PutOp(("user0", "facts"), "new", {"n": 1}),
                                  SearchOp((), {"n": {"$gt": 1}}, limit=100, query="kiwi")])
    assert sorted((item.namespace[0], item.key) for item in ranged) == sorted(
        [("user5", "brief"), *((op.namespace[0], op.key) for op in _ops() if op.value["n"] > 1)])
    assert on_cluster.list_namespaces(limit=100) == on_server.list_namespaces(limit=100) == sorted(
        (user, "facts") for user in USERS)
    assert on_cluster.list_namespaces(prefix=("user3",)) == [("user3", "facts")]
    on_cluster.delete(("user3", "facts"), "k2")
    assert on_cluster.get(("user3", "facts"), "k2") is None
    assert on_cluster.purge(("user4",)) == 6 and on_cluster.search(("user4",)) == []


@pytest.mark.asyncio
async def test_the_async_store_on_a_cluster(cluster_url: str, prefix: str) -> None:
    client = redis.asyncio.RedisCluster.from_url(cluster_url)
    store = AsyncStreamStore(client, prefix=prefix, index=INDEX)  # type: ignore[arg-type]
    await store.setup()
    await store.abatch(_ops())
    found = await store.asearch((), filter={"n": 5}, limit=100)
    assert sorted(i.namespace[0] for i in found) == sorted(USERS)
    assert [i.key for i in await store.asearch((), query="apple", limit=3, hybrid=False)] == ["k5", "k5", "k5"]
    ranged = await store.asearch((), filter={"n": {"$gte": 5}}, limit=100)
    assert sorted(i.namespace[0] for i in ranged) == sorted(USERS) and {i.key for i in ranged} == {"k5"}
    assert await store.areembed(("user1",), everything=True) == 6
    await client.aclose()

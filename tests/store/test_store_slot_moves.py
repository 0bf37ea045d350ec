"""The store after a Redis Cluster changed under it: a primary joins and takes a slot holding
items (``CLUSTER MEET``, then Redis's own resharding steps, ``MIGRATE`` of the slot's keys). The
items index lives per primary, so the new primary needs one (and the store's scripts) before it
can answer: a write or ``get`` there meets ``NOSCRIPT`` and goes on (the driver loads the scripts
on every primary the client knows, the new one included, and sends again only what did not run:
each event logged once); a store still on the old slot map notices on its next search (it asks
``CLUSTER SLOTS`` beside its queries), sets up again and answers whole; a `setup()` after the
change waits until the new index has indexed the items."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis.asyncio
from cluster_join import grown_cluster, move
from langgraph.store.base import PutOp
from redis.cluster import RedisCluster

from streamsaver import AsyncStreamStore, StreamStore
from streamsaver.log.routing import key_slot
from streamsaver.server.cluster import EmbeddedCluster
from streamsaver.server.embedded import EmbeddedRedis
from tests.store.test_store_vectors import DIMS, embed

INDEX = {"dims": DIMS, "embed": embed, "fields": ["text"]}
MOVED = 200
"""Items in the partition that moves (enough that a new index takes a while to index them)."""


def _ops() -> list[PutOp]:
    spread = [PutOp((f"user{n}", "facts"), f"k{k}", {"text": "apple " * (k + 1), "n": k})
              for n in range(1, 9) for k in range(3)]
    return [*spread, *(PutOp(("user0", "facts"), f"m{k:03d}", {"text": "kiwi " * (k % 7 + 1), "n": k})
                       for k in range(MOVED))]


@pytest.fixture
def grown() -> Iterator[tuple[EmbeddedCluster, EmbeddedRedis]]:
    """A cluster of three primaries of its own, and a fourth node that has joined it without slots."""
    with grown_cluster() as made:
        yield made


def _moved_slot(store: StreamStore | AsyncStreamStore) -> int:
    return key_slot(store.core.item_key("user0.facts:m000").encode())


def _keys(items: Any) -> list[tuple[str, str]]:
    return sorted((item.namespace[0], item.key) for item in items)


EVERY = sorted((op.namespace[0], op.key) for op in _ops())


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_a_store_on_the_old_slot_map_sets_up_again_when_a_primary_joined(
        grown: tuple[EmbeddedCluster, EmbeddedRedis], kind: str, caplog: pytest.LogCaptureFixture) -> None:
    """The first call after the move is a search (it would miss the moved items), then a write and
    a read of the moved partition (which would meet NOSCRIPT)."""
    cluster, extra = grown
    writer = StreamStore(RedisCluster.from_url(cluster.url), prefix="grow", index=INDEX)  # type: ignore[arg-type]
    writer.setup()
    writer.batch(_ops())
    if kind == "sync":
        store: Any = writer
    else:
        store = AsyncStreamStore(redis.asyncio.RedisCluster.from_url(cluster.url), prefix="grow", index=INDEX)  # type: ignore[arg-type]
        await store.setup()
    move(cluster, _moved_slot(writer), extra)

    found = store.search((), limit=500) if kind == "sync" else await store.asearch((), limit=500)
    assert _keys(found) == EVERY
    assert any("joined the cluster" in record.getMessage() for record in caplog.records)
    assert len(store.core.targets) == 4
    if kind == "sync":
        store.put(("user0", "facts"), "new", {"text": "kiwi", "n": -1})
        item = store.get(("user0", "facts"), "new")
    else:
        await store.aput(("user0", "facts"), "new", {"text": "kiwi", "n": -1})
        item = await store.aget(("user0", "facts"), "new")
    assert item is not None and item.value["n"] == -1


@pytest.mark.parametrize("first", ["put", "get"])
def test_a_write_or_read_on_the_new_primary_goes_on_and_the_next_search_sets_up_again(
        grown: tuple[EmbeddedCluster, EmbeddedRedis], first: str, caplog: pytest.LogCaptureFixture) -> None:
    cluster, extra = grown
    client = RedisCluster.from_url(cluster.url)
    writer = StreamStore(client, prefix="grow", index=INDEX)  # type: ignore[arg-type]
    writer.setup()
    writer.batch(_ops())
    move(cluster, _moved_slot(writer), extra)
    logs = [writer.core.keyspace.store(writer.core.keyspace.store_partition(user)).log for user in ("user0", "user1")]
    lengths = [client.xlen(log) for log in logs]

    if first == "put":
        writer.batch([PutOp(("user0", "facts"), "new", {"text": "kiwi", "n": -1}),
                      PutOp(("user1", "facts"), "new", {"text": "kiwi", "n": -2})])  # two partitions, two primaries
        assert writer.get(("user0", "facts"), "new") is not None
        assert writer.get(("user1", "facts"), "new") is not None
        # user1's append ran on its old primary before user0's met NOSCRIPT: not sent twice
        assert [client.xlen(log) for log in logs] == [length + 1 for length in lengths]
    else:
        item = writer.get(("user0", "facts"), "m007")
        assert item is not None and item.value["n"] == 7
    assert len(writer.core.targets) == 3  # the store learns of the new primary on its next search
    expected = sorted([*EVERY, *([("user0", "new"), ("user1", "new")] if first == "put" else [])])
    assert _keys(writer.search((), limit=500)) == expected
    assert any("joined the cluster" in record.getMessage() for record in caplog.records)
    assert len(writer.list_namespaces(limit=100)) == 9


def test_setup_after_a_primary_joined_waits_until_its_index_holds_the_items(
        grown: tuple[EmbeddedCluster, EmbeddedRedis]) -> None:
    cluster, extra = grown
    store = StreamStore(RedisCluster.from_url(cluster.url), prefix="grow", index=INDEX)  # type: ignore[arg-type]
    store.setup()
    store.batch(_ops())
    move(cluster, _moved_slot(store), extra)

    again = StreamStore(RedisCluster.from_url(cluster.url), prefix="grow", index=INDEX)  # type: ignore[arg-type]
    again.setup()
    assert len(again.core.targets) == 4
    assert _keys(again.search((), limit=500)) == EVERY
    assert _keys(again.search(("user0",), query="kiwi", limit=500)) == [k for k in EVERY if k[0] == "user0"]


async def test_the_async_store_writes_on_the_new_primary_and_its_next_search_sets_up_again(
        grown: tuple[EmbeddedCluster, EmbeddedRedis], caplog: pytest.LogCaptureFixture) -> None:
    cluster, extra = grown
    client = redis.asyncio.RedisCluster.from_url(cluster.url)
    store = AsyncStreamStore(client, prefix="grow", index=INDEX)  # type: ignore[arg-type]
    await store.setup()
    await store.abatch(_ops())
    move(cluster, _moved_slot(store), extra)

    await store.aput(("user0", "facts"), "new", {"text": "kiwi", "n": -1})
    item = await store.aget(("user0", "facts"), "m007")
    assert item is not None and item.value["n"] == 7
    assert _keys(await store.asearch((), limit=500)) == sorted([*EVERY, ("user0", "new")])
    assert any("joined the cluster" in record.getMessage() for record in caplog.records)
    await client.aclose()


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_purge_and_reembed_of_a_partition_that_moved_to_the_new_primary_go_on_without_setup(
        grown: tuple[EmbeddedCluster, EmbeddedRedis], kind: str) -> None:
    cluster, extra = grown
    writer = StreamStore(RedisCluster.from_url(cluster.url), prefix="grow", index=INDEX)  # type: ignore[arg-type]
    writer.setup()
    writer.batch(_ops())
    store: Any = writer
    if kind == "async":
        store = AsyncStreamStore(redis.asyncio.RedisCluster.from_url(cluster.url), prefix="grow", index=INDEX)  # type: ignore[arg-type]
        await store.setup()
    move(cluster, _moved_slot(writer), extra)

    reembedded = (store.reembed(("user0",), everything=True) if kind == "sync"
                  else await store.areembed(("user0",), everything=True))
    assert reembedded == MOVED
    erased = store.purge(("user0",)) if kind == "sync" else await store.apurge(("user0",))
    assert erased == 2 * MOVED  # each item's put and its re-embedding
    assert writer.get(("user0", "facts"), "m007") is None
    assert _keys(writer.search((), limit=500)) == [k for k in EVERY if k[0] != "user0"]

"""Invariant 8: `put`, `put_writes` and `get_tuple` each make exactly one round trip to Redis.

A round trip is one send on the connection followed by its replies: a pipeline of N commands is
one. The client's connection class is replaced by a subclass that counts calls of
``send_packed_command`` (every command and every pipeline goes through it exactly once), so the
count is what went over the wire, not what the saver believes it sent.

On Redis Cluster a cluster pipeline writes to every node it needs before it reads any reply,
so a fan-out to every primary is one round trip (`TripCounter.trips`); the hot paths must
send once, to one node (`TripCounter.total`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import redis
import redis.asyncio
from helpers import (
    CLUSTER_URLS,
    KINDS,
    VARIANT_IDS,
    VARIANTS,
    SaverAdapter,
    async_client,
    config,
    new_checkpoint,
    node_clients,
    sync_client,
)

from streamsaver import AsyncStreamSaver, StreamSaver


class TripCounter:
    """What a client sent since the last `reset`: every send per node, and round trips.

    A round trip starts with the first send after a reply came back; on a cluster the sends of
    one pipeline to several nodes all go out before any reply is read, so they are one."""

    def __init__(self) -> None:
        self.sends: Counter[int] = Counter()
        self.trips = 0
        self._answered = True

    def sent(self, port: int) -> None:
        self.sends[port] += 1
        if self._answered:
            self.trips += 1
            self._answered = False

    def answered(self) -> None:
        self._answered = True

    @property
    def total(self) -> int:
        """Every send, to any node."""
        return sum(self.sends.values())

    def reset(self) -> None:
        self.sends.clear()
        self.trips = 0
        self._answered = True


def counting_sync_client(url: str, counter: TripCounter) -> redis.Redis:
    class CountingConnection(redis.Connection):
        def send_packed_command(self, command: Any, check_health: bool = True) -> None:
            counter.sent(self.port)
            super().send_packed_command(command, check_health)

        def read_response(self, *args: Any, **kwargs: Any) -> Any:
            reply = super().read_response(*args, **kwargs)
            counter.answered()
            return reply

    return sync_client(url, connection_class=CountingConnection)  # type: ignore[no-any-return]


async def counting_async_client(url: str, counter: TripCounter) -> redis.asyncio.Redis:
    class CountingConnection(redis.asyncio.Connection):
        async def send_packed_command(self, command: Any, check_health: bool = True) -> None:
            counter.sent(self.port)
            await super().send_packed_command(command, check_health)

        async def read_response(self, *args: Any, **kwargs: Any) -> Any:
            reply = await super().read_response(*args, **kwargs)
            counter.answered()
            return reply

    if url not in CLUSTER_URLS:
        return async_client(url, connection_class=CountingConnection)  # type: ignore[no-any-return]
    # The asyncio cluster client ignores `connection_class`: its nodes' connections are swapped.
    client = async_client(url)
    await client.initialize()
    for node in client.get_nodes():
        node.connection_class = CountingConnection
        for connection in node._connections:
            connection.__class__ = CountingConnection
    return client  # type: ignore[no-any-return]


@pytest.fixture
async def counted(
    request: pytest.FixtureRequest, redis_url: str, prefix: str
) -> AsyncIterator[tuple[SaverAdapter, TripCounter]]:
    """A set-up saver on a counting client, warmed up (connection open, scripts loaded)."""
    kind, view = request.param
    counter = TripCounter()
    if kind == "sync":
        client = counting_sync_client(redis_url, counter)
        adapter = SaverAdapter(StreamSaver(client, view=view, prefix=prefix), kind, view)
    else:
        aclient = await counting_async_client(redis_url, counter)
        adapter = SaverAdapter(AsyncStreamSaver(aclient, view=view, prefix=prefix), kind, view)
    await adapter.setup()
    warm, _ = await adapter.save("warm-up", {"a": 1})
    await adapter.put_writes(warm, [("a", 2)], "task")
    await adapter.get_tuple(warm)
    counter.reset()
    yield adapter, counter
    if kind == "sync":
        client.close()
    else:
        await aclient.aclose()


every_variant = pytest.mark.parametrize("counted", VARIANTS, ids=VARIANT_IDS, indirect=True)
full_view = pytest.mark.parametrize(
    "counted", [(kind, "full") for kind in KINDS], ids=[f"{k}-full" for k in KINDS], indirect=True
)


@every_variant
async def test_put_is_one_round_trip(counted: tuple[SaverAdapter, TripCounter]) -> None:
    saver, counter = counted
    checkpoint, versions = new_checkpoint({"a": "x" * 1000, "b": [1, 2, 3], "c": {"d": None}})

    await saver.put(
        config("t1", "ns"), checkpoint, {"source": "loop", "step": 1, "k": "v"}, versions
    )

    assert counter.total == 1


@every_variant
async def test_put_writes_is_one_round_trip(counted: tuple[SaverAdapter, TripCounter]) -> None:
    saver, counter = counted
    saved, _ = await saver.save("t1", {"a": 1})
    counter.reset()

    await saver.put_writes(saved, [("a", 1), ("b", 2), ("__error__", "boom")], "task1", "~1")

    assert counter.total == 1


@every_variant
async def test_a_fenced_put_and_put_writes_are_still_one_round_trip_each(
    counted: tuple[SaverAdapter, TripCounter],
) -> None:
    """The write-ownership fence is checked inside the append's own script: no extra read."""
    saver, counter = counted
    if saver.is_async:
        writer = await saver.saver.aclaim_write_ownership("fenced")  # type: ignore[union-attr]
    else:
        writer = saver.saver.claim_write_ownership("fenced")
    fenced = SaverAdapter(writer, saver.kind, saver.view)
    checkpoint, versions = new_checkpoint({"a": 1})
    counter.reset()

    saved = await fenced.put(config("fenced", ""), checkpoint, {"step": 1}, versions)
    assert counter.total == 1
    counter.reset()
    await fenced.put_writes(saved, [("a", 2), ("__resume__", "yes")], "task1")
    assert counter.total == 1


@every_variant
async def test_get_tuple_is_one_round_trip_for_the_latest_and_by_id(
    counted: tuple[SaverAdapter, TripCounter],
) -> None:
    saver, counter = counted
    first, cp = await saver.save("t1", {"a": 1, "b": 2})
    second, _ = await saver.save("t1", {"a": 3}, parent=first, previous=cp)
    await saver.put_writes(second, [("a", 4)], "task1")
    counter.reset()

    latest = await saver.get_tuple(config("t1"))
    assert counter.total == 1
    counter.reset()
    by_id = await saver.get_tuple(second)
    assert counter.total == 1

    assert latest is not None and by_id is not None and latest.config == by_id.config == second


@full_view
async def test_listing_one_thread_and_namespace_is_one_round_trip(
    counted: tuple[SaverAdapter, TripCounter],
) -> None:
    saver, counter = counted
    parent, previous = None, None
    for step in range(12):
        parent, previous = await saver.save("t1", {"step": step}, parent=parent, previous=previous)
    counter.reset()

    listed = await saver.list(config("t1", ""), limit=10)

    assert len(listed) == 10
    assert counter.trips == 1


@every_variant
async def test_a_filtered_listing_across_threads_is_one_round_trip_on_one_server_two_on_a_cluster(
    counted: tuple[SaverAdapter, TripCounter], redis_url: str,
) -> None:
    """One server: ``list_page.lua`` finds the page and reads it in one call; a cluster finds
    it on every primary, then fetches its checkpoints from the nodes of their threads."""
    saver, counter = counted
    for i in range(12):
        await saver.save(f"t{i}", {"i": i}, metadata={"batch": "b"})
    counter.reset()

    listed = await saver.list(None, filter={"batch": "b"}, limit=10)

    assert [t.checkpoint["channel_values"]["i"] for t in listed] == list(range(11, 1, -1))
    assert counter.trips == (2 if redis_url in CLUSTER_URLS else 1)


@full_view
async def test_a_filtered_listing_of_one_thread_is_two_round_trips(
    counted: tuple[SaverAdapter, TripCounter],
) -> None:
    saver, counter = counted
    parent, previous = None, None
    for step in range(5):
        parent, previous = await saver.save(
            "t1", {"s": step}, metadata={"even": step % 2 == 0}, parent=parent, previous=previous
        )
    counter.reset()

    listed = await saver.list(config("t1", ""), filter={"even": True}, limit=10)

    assert len(listed) == 3
    assert counter.trips == 2


@pytest.fixture
def fsync_always(client: redis.Redis) -> Iterator[None]:
    """``appendfsync always`` on the test server's primaries while a test runs: WAITAOF then
    answers once the write is on disk, not at the next second's fsync (a second per call)."""
    nodes = node_clients(client)
    if not all(int(node.info("persistence")["aof_enabled"]) for node in nodes):
        pytest.skip("the test server runs without AOF, so WAITAOF cannot succeed")
    before = [node.config_get("appendfsync")["appendfsync"] for node in nodes]
    for node in nodes:
        node.config_set("appendfsync", "always")
    yield
    for node, policy in zip(nodes, before, strict=True):
        node.config_set("appendfsync", policy)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.usefixtures("fsync_always")
async def test_a_durable_append_is_still_one_round_trip(redis_url: str, prefix: str, kind: str) -> None:
    """``durability="aof"`` pipelines WAITAOF with the append."""
    counter = TripCounter()
    if kind == "sync":
        saver: StreamSaver | AsyncStreamSaver = StreamSaver(
            counting_sync_client(redis_url, counter), prefix=prefix, durability="aof"
        )
    else:
        saver = AsyncStreamSaver(await counting_async_client(redis_url, counter), prefix=prefix, durability="aof")
    adapter = SaverAdapter(saver, kind, "full")
    await adapter.setup()
    _warm, _ = await adapter.save("warm-up", {"a": 1})
    counter.reset()

    saved, _ = await adapter.save("t1", {"a": 1})
    assert counter.total == 1
    await adapter.put_writes(saved, [("a", 2)], "task")
    assert counter.total == 2
    await adapter.delete_thread("t1")
    assert counter.total == 3


async def _maintain(saver: SaverAdapter, method: str, *args: Any, **kwargs: Any) -> None:
    target: Any = saver.saver
    if saver.is_async:
        await getattr(target, "a" + method)(*args, **kwargs)
    else:
        getattr(target, method)(*args, **kwargs)


@full_view
async def test_maintenance_calls_cost_what_the_docs_say(counted: tuple[SaverAdapter, TripCounter]) -> None:
    """copy_thread: read + append; prune: read (with TIME) + rewrite; delete_for_runs of one
    thread: an index query, read + rewrite, and the query that finds nothing left."""
    saver, counter = counted
    parent, previous = None, None
    for step in range(4):
        parent, previous = await saver.save(
            "t1", {"s": step}, metadata={"run_id": f"r{step % 2}"}, parent=parent, previous=previous
        )
    counter.reset()
    await _maintain(saver, "copy_thread", "t1", "t2")
    assert counter.trips == 2
    counter.reset()
    await _maintain(saver, "prune", ["t2"])
    assert counter.trips == 2
    counter.reset()
    await _maintain(saver, "delete_for_runs", ["r0"])
    assert counter.trips == 4
    assert {t.metadata["run_id"] for t in await saver.list(config("t1", ""))} == {"r1"}

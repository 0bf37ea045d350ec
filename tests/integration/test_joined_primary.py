"""The savers after a Redis Cluster grew under them: a fourth primary joins and takes the slot of
a partition holding threads (tests/cluster_join.py). A view's index is one per primary of the
slot map setup read, so the new primary's checkpoints are under no index a listing asks, and it
has none of the scripts: a saver still on the old slot map lists every checkpoint (its listing
asks ``CLUSTER SLOTS`` beside its index queries and sets up again, waiting for the new index),
and its calls on a moved thread go on (the driver loads the scripts on every primary the client
knows, the new one included, and sends again what did not run), sync and async, without a
`setup()` in between."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from cluster_join import grown_cluster, move
from helpers import config, new_checkpoint
from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster
from redis.cluster import RedisCluster

from streamsaver import AsyncStreamSaver, StreamSaver
from streamsaver.log.routing import key_slot
from streamsaver.server.cluster import EmbeddedCluster
from streamsaver.server.embedded import EmbeddedRedis

pytestmark = pytest.mark.slow

THREADS = [f"t{n}" for n in range(30)]


@pytest.fixture
def grown() -> Iterator[tuple[EmbeddedCluster, EmbeddedRedis]]:
    with grown_cluster() as made:
        yield made


def _slot(saver: StreamSaver | AsyncStreamSaver, thread_id: str) -> int:
    return key_slot(saver.core.keys.thread(thread_id).log.encode())


def _written(cluster: EmbeddedCluster) -> StreamSaver:
    """A saver set up on the three primaries, with one checkpoint (run ``r<n % 3>``) per thread."""
    saver = StreamSaver(RedisCluster.from_url(cluster.url), prefix="grow")  # type: ignore[arg-type]
    saver.setup()
    for n, thread_id in enumerate(THREADS):
        checkpoint, versions = new_checkpoint({"n": n})
        saver.put(config(thread_id), checkpoint, {"source": "input", "step": n, "run_id": f"r{n % 3}"}, versions)
    return saver


def _moved(saver: StreamSaver, cluster: EmbeddedCluster, to: EmbeddedRedis) -> list[str]:
    """Move the slot of the partition holding the most threads to `to`; those threads."""
    slot, _ = Counter(_slot(saver, t) for t in THREADS).most_common(1)[0]
    move(cluster, slot, to)
    return [t for t in THREADS if _slot(saver, t) == slot]


def _ids(tuples: Any) -> list[str]:
    return [t.config["configurable"]["checkpoint_id"] for t in tuples]


async def _listed(saver: Any, **options: Any) -> list[Any]:
    if isinstance(saver, AsyncStreamSaver):
        return [t async for t in saver.alist(None, **options)]
    return list(saver.list(None, **options))


async def _writer_and_saver(cluster: EmbeddedCluster, kind: str) -> tuple[StreamSaver, Any]:
    """The sync saver that wrote `THREADS` (`_written`), and the saver of `kind` to call: that
    one, or an async saver on the same deployment."""
    writer = _written(cluster)
    if kind == "sync":
        return writer, writer
    saver = AsyncStreamSaver(AsyncRedisCluster.from_url(cluster.url), prefix="grow")  # type: ignore[arg-type]
    await saver.setup()
    return writer, saver


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_a_listing_across_threads_lists_the_checkpoints_of_a_joined_primary(
        grown: tuple[EmbeddedCluster, EmbeddedRedis], kind: str, caplog: pytest.LogCaptureFixture) -> None:
    cluster, extra = grown
    writer, saver = await _writer_and_saver(cluster, kind)
    whole = _ids(await _listed(saver))
    filtered = _ids(await _listed(saver, filter={"source": "input"}, limit=25))
    assert len(whole) == len(THREADS) and filtered == whole[:25]
    moved = _moved(writer, cluster, extra)
    assert len(moved) > 1

    assert _ids(await _listed(saver)) == whole
    assert any("joined the cluster" in record.getMessage() for record in caplog.records)
    assert len(saver.core.index_targets("full")) == 4
    assert _ids(await _listed(saver, filter={"source": "input"}, limit=25)) == filtered


def test_a_filtered_listing_is_the_first_call_to_meet_the_joined_primary(
        grown: tuple[EmbeddedCluster, EmbeddedRedis]) -> None:
    cluster, extra = grown
    saver = _written(cluster)
    before = _ids(saver.list(None, filter={"step": 3}))
    _moved(saver, cluster, extra)
    assert len(before) == 1 and _ids(saver.list(None, filter={"step": 3})) == before
    assert len(list(saver.list(None, filter={"source": "input"}))) == len(THREADS)


def test_delete_for_runs_finds_the_threads_of_a_joined_primary(grown: tuple[EmbeddedCluster, EmbeddedRedis]) -> None:
    cluster, extra = grown
    saver = _written(cluster)
    moved = _moved(saver, cluster, extra)

    saver.delete_for_runs(["r0"])
    kept = {t.config["configurable"]["thread_id"] for t in saver.list(None)}
    assert kept == {t for n, t in enumerate(THREADS) if n % 3}
    assert any(THREADS.index(t) % 3 == 0 for t in moved)  # the moved partition held some of r0's


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_the_calls_on_a_thread_that_moved_to_a_joined_primary_go_on_without_setup(
        grown: tuple[EmbeddedCluster, EmbeddedRedis], kind: str) -> None:
    cluster, extra = grown
    writer, saver = await _writer_and_saver(cluster, kind)
    first, second, *_ = _moved(writer, cluster, extra)

    async def call(name: str, *args: Any, **options: Any) -> Any:
        if kind == "async":
            return await getattr(saver, "a" + name)(*args, **options)
        return getattr(saver, name)(*args, **options)

    found = await call("get_tuple", config(first))
    assert found is not None and found.checkpoint["channel_values"] == {"n": THREADS.index(first)}
    checkpoint, versions = new_checkpoint({"n": -1}, found.checkpoint)
    saved = await call("put", found.config, checkpoint, {"step": 99}, versions)
    await call("put_writes", saved, [("n", -2)], "task")
    latest = await call("get_tuple", config(first))
    assert latest.checkpoint["id"] == checkpoint["id"] and latest.pending_writes[0][1:] == ("n", -2)
    await call("prune", [first], strategy="keep_latest")
    assert [t.checkpoint["id"] for t in await _threads(saver, first)] == [checkpoint["id"]]
    await call("copy_thread", first, "copied")
    assert [t.checkpoint["id"] for t in await _threads(saver, "copied")] == [checkpoint["id"]]
    await call("delete_thread", second)
    assert await call("get_tuple", config(second)) is None


async def _threads(saver: Any, thread_id: str) -> list[Any]:
    if isinstance(saver, AsyncStreamSaver):
        return [t async for t in saver.alist(config(thread_id))]
    return list(saver.list(config(thread_id)))

"""Thread TTL: set in the same script as each append, one deadline for every key of a thread,
so expiry removes log, views and index entries together; `refresh_on_read` moves the deadline
within the read's round trip; a pinned thread never expires until unpinned."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
import redis
from helpers import (
    KINDS,
    VARIANT_IDS,
    VARIANTS,
    SaverAdapter,
    config,
    index_hits,
    keys_of,
    new_checkpoint,
    open_adapter,
)
from test_round_trips import TripCounter, counting_async_client, counting_sync_client

from streamsaver import AsyncStreamSaver, StreamSaver
from streamsaver.errors import InvalidInputError
from streamsaver.feeds.worker import ProjectorWorker
from streamsaver.log.codec import escape, tag
from streamsaver.ops.replay import Replayer

MINUTE_MS = 60_000


def thread_keys(client: redis.Redis, prefix: str, thread_id: str) -> list[bytes]:
    mark = f":{escape(thread_id)}".encode()
    return [k for k in keys_of(client, prefix) if k.endswith(mark) or mark + b":" in k]


def deadlines(client: redis.Redis, keys: list[bytes]) -> set[int]:
    return {client.execute_command("PEXPIRETIME", k) for k in keys}


def indexed(client: redis.Redis, prefix: str, thread_id: str) -> int:
    return sum(index_hits(client, prefix, view, f"@th:{{{tag(thread_id)}}}") for view in ("full", "shallow"))


def wait_for(condition: Callable[[], bool], seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.02)


async def fill(saver: SaverAdapter, thread_id: str, checkpoints: int = 3) -> None:
    for ns in ("", "child:1"):
        parent, previous = None, None
        for step in range(checkpoints):
            parent, previous = await saver.save(
                thread_id, {"step": step, "ns": ns}, checkpoint_ns=ns, parent=parent, previous=previous
            )
            await saver.put_writes(parent, [("step", step)], f"task{step}")


@pytest.fixture(params=VARIANTS, ids=VARIANT_IDS)
async def opened(request: pytest.FixtureRequest, redis_url: str, prefix: str) -> Callable[..., Any]:
    kind, view = request.param

    def open_one(**options: Any) -> Any:
        return open_adapter(kind, view, redis_url, prefix, **options)

    return open_one


async def pin(saver: SaverAdapter, thread_id: str, pinned: bool) -> None:
    s: Any = saver.saver
    if isinstance(s, AsyncStreamSaver):
        await (s.apin_thread(thread_id) if pinned else s.aunpin_thread(thread_id))
    else:
        s.pin_thread(thread_id) if pinned else s.unpin_thread(thread_id)


async def test_every_key_of_a_thread_shares_the_deadline_its_appends_set(
    opened: Callable[..., Any], client: redis.Redis, prefix: str
) -> None:
    async with opened(default_ttl=1) as saver:
        await fill(saver, "alive")
        keys = thread_keys(client, prefix, "alive")
        assert len(keys) >= 6
        [deadline] = deadlines(client, keys)
        assert 0 < deadline - int(time.time() * 1000) <= MINUTE_MS
        await fill(saver, "alive", checkpoints=1)
        assert len(deadlines(client, thread_keys(client, prefix, "alive"))) == 1


async def test_expiry_removes_every_key_and_index_entry_while_a_pinned_thread_stays(
    opened: Callable[..., Any], client: redis.Redis, prefix: str
) -> None:
    async with opened(default_ttl=0.005) as saver:  # 300 ms
        await pin(saver, "kept", True)
        await fill(saver, "kept")
        await fill(saver, "gone")
        assert indexed(client, prefix, "gone") > 0

        wait_for(lambda: not thread_keys(client, prefix, "gone"))

        assert indexed(client, prefix, "gone") == 0
        assert await saver.get_tuple(config("gone")) is None
        assert deadlines(client, thread_keys(client, prefix, "kept")) == {-1}
        assert await saver.get_tuple(config("kept")) is not None


async def test_refresh_on_read_moves_the_deadline_and_keeps_the_thread_alive(
    opened: Callable[..., Any], client: redis.Redis, prefix: str
) -> None:
    ttl_ms = 600_000
    async with opened(default_ttl=ttl_ms / MINUTE_MS, refresh_on_read=True) as saver, opened(
        default_ttl=ttl_ms / MINUTE_MS
    ) as plain:
        await fill(saver, "read")
        keys = thread_keys(client, prefix, "read")
        # As if most of the TTL had passed (set, not waited for: a loaded machine cannot expire
        # the thread before the reads).
        first = int(client.execute_command("TIME")[0]) * 1000 + 5_000
        for key in keys:
            client.pexpireat(key, first)
        assert await plain.get_tuple(config("read")) is not None
        assert deadlines(client, thread_keys(client, prefix, "read")) == {first}

        assert await saver.get_tuple(config("read")) is not None

        [moved] = deadlines(client, thread_keys(client, prefix, "read"))
        assert moved > first + ttl_ms - 60_000  # a whole TTL from the read: the thread lives on


async def test_pinning_persists_every_key_until_unpinned(
    opened: Callable[..., Any], client: redis.Redis, prefix: str
) -> None:
    async with opened(default_ttl=1) as saver:
        await fill(saver, "p")
        await pin(saver, "p", True)
        await fill(saver, "p", checkpoints=1)
        assert deadlines(client, thread_keys(client, prefix, "p")) == {-1}

        await pin(saver, "p", False)

        [deadline] = deadlines(client, thread_keys(client, prefix, "p"))
        assert deadline > 0


async def test_a_retried_append_logs_nothing_and_refreshes_the_deadline_as_an_append_would(
    opened: Callable[..., Any], client: redis.Redis, prefix: str
) -> None:
    """A repeat (a call retried after a lost reply, see append.lua) writes no entry, but keeps
    the thread alive as the append it repeats would: past half the TTL every key gets it again."""
    ttl_ms = 3000
    async with opened(default_ttl=ttl_ms / MINUTE_MS) as saver:
        checkpoint, versions = new_checkpoint({"step": 1})
        saved = await saver.put(config("retried"), checkpoint, {"step": 1}, versions)
        await saver.put_writes(saved, [("step", 2)], "task")
        keys = saver.saver.core.keys.thread("retried")  # type: ignore[union-attr]
        logged = (client.xlen(keys.log), client.xlen(keys.feed))
        [first] = deadlines(client, thread_keys(client, prefix, "retried"))

        await saver.put(config("retried"), checkpoint, {"step": 1}, versions)
        assert deadlines(client, thread_keys(client, prefix, "retried")) == {first}
        wait_for(lambda: 0 <= client.pttl(keys.log) < ttl_ms / 2)
        await saver.put_writes(saved, [("step", 2)], "task")

        assert (client.xlen(keys.log), client.xlen(keys.feed)) == logged
        [moved] = deadlines(client, thread_keys(client, prefix, "retried"))
        assert moved > first
        got = await saver.get_tuple(config("retried"))
        assert got is not None and got.pending_writes == [("task", "step", 2)]


@pytest.mark.parametrize("kind", KINDS)
async def test_ttl_costs_no_round_trip(kind: str, redis_url: str, prefix: str) -> None:
    counter = TripCounter()
    options: dict[str, Any] = {"prefix": prefix, "default_ttl": 1, "refresh_on_read": True}
    if kind == "sync":
        adapter = SaverAdapter(StreamSaver(counting_sync_client(redis_url, counter), **options), kind, "full")
    else:
        adapter = SaverAdapter(
            AsyncStreamSaver(await counting_async_client(redis_url, counter), **options), kind, "full"
        )
    await adapter.setup()
    await adapter.save("warm", {"a": 1})
    counter.reset()
    saved, _ = await adapter.save("t", {"a": 1})
    await adapter.put_writes(saved, [("a", 2)], "task")
    await adapter.get_tuple(saved)
    assert counter.trips == 3


def test_a_ttl_must_be_positive_minutes(client: redis.Redis) -> None:
    for bad in (0, -1, "10", True):
        with pytest.raises(InvalidInputError, match="default_ttl"):
            StreamSaver(client, default_ttl=bad)  # type: ignore[arg-type]


async def test_copied_and_pruned_threads_keep_one_deadline(
    opened: Callable[..., Any], client: redis.Redis, prefix: str
) -> None:
    async with opened(default_ttl=1) as saver:
        await fill(saver, "src")
        s: Any = saver.saver
        if isinstance(s, AsyncStreamSaver):
            await s.acopy_thread("src", "dst")
            await s.aprune(["src"])
        else:
            s.copy_thread("src", "dst")
            s.prune(["src"])
        for name in ("src", "dst"):
            [deadline] = deadlines(client, thread_keys(client, prefix, name))
            assert deadline > 0


@pytest.mark.parametrize("builder", ["replay", "worker"])
def test_views_a_replay_or_a_worker_builds_expire_with_the_log(
    builder: str, client: redis.Redis, prefix: str
) -> None:
    """A saver that projects only the full view, with a TTL; the shallow view is built by a
    projector worker or by a replay. Its keys take the log's deadline, and move with it when an
    append refreshes the thread (the append's TTL block names every view, not only its own)."""
    saver = StreamSaver(client, prefix=prefix, projections=("full",), default_ttl=1)
    saver.setup()
    previous = None
    for step in range(3):
        checkpoint, versions = new_checkpoint({"step": step}, previous)
        saver.put(config("t"), checkpoint, {}, versions)
        previous = checkpoint
    if builder == "worker":
        ProjectorWorker(client, prefix, ["shallow"]).run_burst()
    else:
        Replayer.open(client, prefix).replay(["shallow"])
    shallow = [k for k in thread_keys(client, prefix, "t") if b":shallow:" in k]
    assert shallow, "the shallow view was built"
    log = saver.core.keys.thread("t").log
    [deadline] = deadlines(client, thread_keys(client, prefix, "t"))
    assert deadline == client.execute_command("PEXPIRETIME", log) > 0

    # Less than half the TTL left: the next append gives every key of the thread the full TTL.
    client.pexpire(log, 1000)
    checkpoint, versions = new_checkpoint({"step": 3}, previous)
    saver.put(config("t"), checkpoint, {}, versions)
    [refreshed] = deadlines(client, thread_keys(client, prefix, "t"))
    assert refreshed == client.execute_command("PEXPIRETIME", log) > deadline - MINUTE_MS + 30_000


def test_a_replay_of_a_pinned_thread_sets_no_deadline(client: redis.Redis, prefix: str) -> None:
    saver = StreamSaver(client, prefix=prefix, projections=("full",), default_ttl=1)
    saver.setup()
    checkpoint, versions = new_checkpoint({"step": 0})
    saver.put(config("t"), checkpoint, {}, versions)
    saver.pin_thread("t")

    Replayer.open(client, prefix).replay(["shallow"])

    assert deadlines(client, thread_keys(client, prefix, "t")) == {-1}

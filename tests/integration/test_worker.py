"""The projector worker keeps a view that the savers do not project inline: the view it builds
equals the inline one, re-delivery changes nothing, partitions move from a dead worker to a live
one without losing a pointer, poison goes to the dead letters, and the continuous mode keeps up
and stops cleanly."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
import redis
import redis.asyncio
from helpers import config, new_checkpoint, snapshot
from langgraph.checkpoint.base import Checkpoint
from redis.exceptions import OutOfMemoryError, RedisError

from streamsaver import StreamSaver
from streamsaver.cli.main import main
from streamsaver.errors import InvalidInputError
from streamsaver.feeds.worker import ProjectorWorker, WorkerStats
from streamsaver.feeds.worker_core import WorkerCore
from streamsaver.log.keys import Keyspace, partition_of, projector_group
from streamsaver.ops.replay import Replayer

THREADS = ("alpha", "beta", "gamma {x}", "δ:1 @mt:{*}")
Op = tuple[Any, ...]


def history(threads: tuple[str, ...] = THREADS, steps: int = 3, delete: str | None = "beta") -> list[Op]:
    """Puts and writes interleaved across threads and namespaces (writes of a step may come
    before its checkpoint, as LangGraph saves them concurrently), then one thread deleted."""
    ops: list[Op] = []
    last: dict[tuple[str, str], Checkpoint] = {}
    for step in range(steps):
        for thread in threads:
            for ns in ("", "inner:1"):
                previous = last.get((thread, ns))
                values = {"n": step} if step == 1 else {"n": step, "who": f"{thread}/{ns}"}
                checkpoint, versions = new_checkpoint(values, previous)
                parent = config(thread, ns, previous["id"]) if previous else config(thread, ns)
                saved = config(thread, ns, checkpoint["id"])
                put = ("put", parent, checkpoint, {"step": step, "source": "loop"}, versions)
                writes = ("writes", saved, [("n", step * 10), ("who", thread)], f"task-{step}")
                ops += [writes, put] if step == 2 and ns else [put, writes]
                last[(thread, ns)] = checkpoint
    return ops + ([("delete", delete)] if delete else [])


def play(saver: StreamSaver, ops: list[Op]) -> None:
    for op in ops:
        if op[0] == "put":
            saver.put(*op[1:])
        elif op[0] == "writes":
            saver.put_writes(*op[1:])
        else:
            saver.delete_thread(op[1])


def writer(client: redis.Redis, prefix: str) -> StreamSaver:
    """A saver that projects only the full view inline."""
    saver = StreamSaver(client, prefix=prefix, projections=("full",))
    saver.setup()
    return saver


def shallow_reader(client: redis.Redis, prefix: str) -> StreamSaver:
    """A saver that reads the shallow view (it never writes here)."""
    return StreamSaver(client, prefix=prefix, view="shallow", projections=("shallow",))


def view_state(client: redis.Redis, prefix: str, view: str = "shallow") -> dict[bytes, Any]:
    """Every key of a view, with the prefix cut off and each pointer to a log entry named by its
    place in the thread's log: comparable across deployments."""
    state = {}
    for key, (kind, content) in snapshot(client, prefix).items():
        if key.startswith(f"{prefix}:{view}:".encode()):
            if kind == "hash":
                tag, thread = key.split(b":")[3:5]
                log = b"%s:log:%s:%s" % (prefix.encode(), tag, thread)
                places = {entry_id: b"#%d" % n for n, (entry_id, _) in enumerate(client.xrange(log))}
                state[key[len(prefix):]] = (kind, {f: places.get(v, v) for f, v in content.items()})
            else:
                state[key[len(prefix):]] = (kind, content)
    return state


def reads(saver: StreamSaver) -> list[Any]:
    """What LangGraph would read: the latest tuple of each thread and namespace, and lists."""
    out: list[Any] = [saver.get_tuple(config(t, ns)) for t in THREADS for ns in ("", "inner:1")]
    out.append(list(saver.list(None)))
    out.append(list(saver.list(None, filter={"step": 2})))
    out.append(list(saver.list(config("alpha", None))))
    return out


def wait_until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    """Poll `condition` (a look at Redis) until it holds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.01)


def leases(client: redis.Redis, prefix: str) -> dict[int, bytes | None]:
    keyspace = Keyspace(prefix, 16)
    return {p: client.get(keyspace.lease(p, "shallow")) for p in range(16)}


def pending(client: redis.Redis, prefix: str) -> int:
    keyspace = Keyspace(prefix, 16)
    return sum(client.xpending(keyspace.feed(p), projector_group("shallow"))["pending"] for p in range(16))


@pytest.fixture
def written(client: redis.Redis, prefix: str) -> list[Op]:
    ops = history()
    play(writer(client, prefix), ops)
    return ops


def test_a_worker_builds_the_view_an_inline_projection_would(
    client: redis.Redis, prefix: str, written: list[Op]
) -> None:
    assert not any(b":shallow:" in k for k in client.scan_iter(match=f"{prefix}:*"))

    stats = ProjectorWorker(client, prefix, ["shallow"], lease_ms=5000).run_burst()

    events = len(written)
    beta_events = sum(1 for op in written if op[0] != "delete" and op[1]["configurable"]["thread_id"] == "beta")
    assert (stats.read, stats.dead, stats.gone) == (events, 0, beta_events)
    assert stats.applied == events - beta_events
    inline = f"{prefix}i"
    play(StreamSaver(client, prefix=inline, projections=("full", "shallow")), written)
    assert reads(shallow_reader(client, prefix)) == reads(StreamSaver(client, prefix=inline, view="shallow"))
    built = view_state(client, prefix)
    assert len(built) == 3 * 7 and built == view_state(client, inline)  # 3 threads: 2 ns x 3 keys + ns set
    assert all(owner is None for owner in leases(client, prefix).values())


def test_running_again_or_redelivering_everything_changes_nothing(
    client: redis.Redis, prefix: str, written: list[Op]
) -> None:
    worker = ProjectorWorker(client, prefix, ["shallow"])
    first = worker.run_burst()
    before = snapshot(client, prefix)

    assert worker.run_burst().read == 0
    keyspace = Keyspace(prefix, 16)
    for p in range(16):
        client.xgroup_setid(keyspace.feed(p), projector_group("shallow"), "0")
    again = ProjectorWorker(client, prefix, ["shallow"]).run_burst()

    # A deletion leaves no position (nor any key): re-delivered, it purges again, changing nothing.
    deletions = sum(1 for op in written if op[0] == "delete")
    assert again.read == first.read and again.applied == deletions
    assert again.skipped == first.applied - deletions
    assert snapshot(client, prefix) == before


def test_a_dead_workers_partitions_and_pending_pointers_move_to_the_live_one(
    client: redis.Redis, prefix: str, written: list[Op]
) -> None:
    a = ProjectorWorker(client, prefix, ["shallow"], name="A", lease_ms=300)
    b = ProjectorWorker(client, prefix, ["shallow"], name="B", lease_ms=300)
    shares = {p: b"A" if p % 2 == 0 else b"B" for p in range(16)}

    def balanced() -> bool:
        a.run_once()
        b.run_once()
        return leases(client, prefix) == shares

    wait_until(balanced)
    a.run_once()
    b.run_once()
    more = history(threads=("alpha", "epsilon", "zeta", "eta"), steps=2, delete=None)
    play(writer(client, prefix), more)
    keyspace = Keyspace(prefix, 16)
    # A reads a batch of its partitions and dies before acking it.
    for p in range(0, 16, 2):
        client.xreadgroup(projector_group("shallow"), "A", {keyspace.feed(p): ">"})
    stranded = pending(client, prefix)
    assert stranded > 0

    claimed = WorkerStats()

    def b_owns_everything() -> bool:
        claimed.add(b.run_once())
        return set(leases(client, prefix).values()) == {b"B"}

    wait_until(b_owns_everything)
    claimed.add(b.run_burst())

    assert claimed.claimed >= stranded and claimed.dead == 0
    assert pending(client, prefix) == 0
    built = view_state(client, prefix)
    Replayer.open(client, prefix).rebuild(["shallow"])
    assert built and built == view_state(client, prefix)


def _poison(client: redis.Redis, prefix: str, thread: str) -> list[bytes]:
    """A log entry that is no event, its pointer, and a pointer without a log entry id."""
    keys = Keyspace(prefix, 16).thread(thread)
    bad_entry = client.xadd(keys.log, {"type": "CheckpointSaved", "v": "1", "thread": thread})
    return [
        client.xadd(keys.feed, {"id": bad_entry, "type": "CheckpointSaved", "thread": thread}),
        client.xadd(keys.feed, {"id": "not-an-id", "type": "CheckpointSaved", "thread": thread}),
    ]


def test_poison_goes_to_the_dead_letters_and_later_events_still_apply(client: redis.Redis, prefix: str) -> None:
    saver = writer(client, prefix)
    first, _ = new_checkpoint({"n": 1})
    saved = saver.put(config("alpha"), first, {"step": 1}, dict(first["channel_versions"]))
    poisoned = _poison(client, prefix, "alpha")
    second, versions = new_checkpoint({"n": 2}, first)
    saver.put(saved, second, {"step": 2}, versions)

    stats = ProjectorWorker(client, prefix, ["shallow"], name="w").run_burst()

    assert (stats.dead, stats.applied) == (2, 2)
    dead = client.xrange(Keyspace(prefix).dead_letters("shallow"))
    assert [fields[b"entry"] for _, fields in dead] == poisoned
    assert all(fields[b"worker"] == b"w" and fields[b"thread"] == b"alpha" for _, fields in dead)
    assert b"malformed CheckpointSaved" in dead[0][1][b"error"] and b"not-an-id" in dead[1][1][b"error"]
    latest = shallow_reader(client, prefix).get_tuple(config("alpha"))
    assert latest is not None and latest.checkpoint["id"] == second["id"]
    assert pending(client, prefix) == 0


def _catch_up(client: redis.Redis, prefix: str, expected: dict[str, str]) -> Callable[[], bool]:
    reader = shallow_reader(client, prefix)

    def caught_up() -> bool:
        latest = {t: reader.get_tuple(config(t)) for t in expected}
        return all((tup := latest[t]) is not None and tup.checkpoint["id"] == cid for t, cid in expected.items())

    return caught_up


def test_the_continuous_worker_keeps_up_with_a_writer_and_stops_cleanly(
    client: redis.Redis, redis_url: str, prefix: str
) -> None:
    saver = writer(client, prefix)
    worker_client = redis.Redis.from_url(redis_url)
    worker = ProjectorWorker(worker_client, prefix, ["shallow"], name="w", lease_ms=2000, poll_ms=10)
    result: list[WorkerStats] = []
    runner = threading.Thread(target=lambda: result.append(worker.run()))
    runner.start()
    try:
        latest: dict[str, Checkpoint] = {}
        for _ in range(3):
            for thread in ("one", "two", "three"):
                checkpoint, versions = new_checkpoint({"n": len(latest)}, latest.get(thread))
                parent = config(thread, "", latest[thread]["id"]) if thread in latest else config(thread)
                saver.put(parent, checkpoint, {}, versions)
                latest[thread] = checkpoint
            wait_until(_catch_up(client, prefix, {t: c["id"] for t, c in latest.items()}))
    finally:
        worker.stop()
        runner.join(timeout=10)
        worker_client.close()

    assert not runner.is_alive() and result[0].applied == 9 and result[0].dead == 0
    assert all(owner is None for owner in leases(client, prefix).values())
    assert client.zrange(Keyspace(prefix).projector_workers("shallow"), 0, -1) == []


async def test_the_async_worker_follows_the_feeds_and_stops(
    client: redis.Redis, aclient: redis.asyncio.Redis, prefix: str, written: list[Op]
) -> None:
    worker = ProjectorWorker(aclient, prefix, ["shallow"], lease_ms=2000, poll_ms=10)
    burst = await worker.async_run_burst()
    assert burst.read == len(written)

    saver = writer(client, prefix)
    checkpoint, versions = new_checkpoint({"n": 99})
    saver.put(config("late"), checkpoint, {}, versions)
    caught_up = _catch_up(client, prefix, {"late": checkpoint["id"]})

    async def stop_when_caught_up() -> None:
        while not caught_up():
            await asyncio.sleep(0.01)
        worker.stop()

    stats, _ = await asyncio.gather(worker.async_run(), stop_when_caught_up())
    assert stats.applied == 1 and all(owner is None for owner in leases(client, prefix).values())


def test_a_new_view_is_backfilled_by_replay_then_followed_by_the_worker(client: redis.Redis, prefix: str) -> None:
    """The documented procedure: groups at the feeds' ends, replay, then the worker; events
    written in between are applied once, whichever comes first."""
    ops = history(delete=None)
    saver = writer(client, prefix)
    play(saver, ops[:20])
    worker = ProjectorWorker(client, prefix, ["shallow"], start="$")
    worker.prepare()
    play(saver, ops[20:40])
    Replayer.open(client, prefix).replay(["shallow"])
    play(saver, ops[40:])

    stats = worker.run_burst()

    assert stats.read == len(ops) - 20 and stats.skipped == 20 and stats.applied == len(ops) - 40
    inline = f"{prefix}i"
    play(StreamSaver(client, prefix=inline, projections=("full", "shallow")), ops)
    assert view_state(client, prefix) == view_state(client, inline)


def test_the_project_command_drains_in_burst_mode(
    client: redis.Redis, redis_url: str, prefix: str, written: list[Op], capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["project", "--url", redis_url, "--prefix", prefix, "--view", "shallow"]
    assert main([*args, "--burst", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["read"] == len(written) and report["dead"] == 0
    assert main([*args, "--burst"]) == 0
    assert "0 pointers" in capsys.readouterr().out
    assert main(["project", "--url", redis_url, "--prefix", f"{prefix}-none", "--view", "shallow", "--burst"]) == 1


def _drive_cycle(core: WorkerCore, apply_replies: list[Any]) -> tuple[list[list[Any]], Exception | None]:
    """One cycle of the core on made-up replies: two ThreadDeleted pointers of one thread on
    its partition (no log read needed), every other partition busy. Returns what it sent."""
    partition = partition_of("alpha", 16)
    pointer = [b"id", b"5-0", b"type", b"ThreadDeleted", b"thread", b"alpha"]
    reads = [[0, [[b"1-0", pointer], [b"2-0", [*pointer[:1], b"6-0", *pointer[2:]]]]] if u.partition == partition
             else 0 for u in core.units()]
    program, sent = core.cycle(balance=False), []
    try:
        sent.append(next(program))
        sent.append(program.send(reads))
        program.send(apply_replies)
    except StopIteration:
        return sent, None
    except RedisError as exc:
        return sent, exc
    raise AssertionError("the cycle asked for more than a read and an apply")


def test_a_transient_apply_failure_stops_its_partition_and_is_retried_first() -> None:
    core = WorkerCore("t", ["shallow"], "w", lease_ms=1000, batch=10)
    core.keyspace = Keyspace("t", 16)

    _, error = _drive_cycle(core, [OutOfMemoryError("command not allowed"), OutOfMemoryError("again")])

    assert isinstance(error, RedisError) and "command not allowed" in str(error)
    assert core.later == []  # nothing acked: both stay pending, read again first next cycle


def test_a_transient_failure_overtaken_by_a_later_event_of_its_thread_is_dead_lettered() -> None:
    core = WorkerCore("t", ["shallow"], "w", lease_ms=1000, batch=10)
    core.keyspace = Keyspace("t", 16)

    _, error = _drive_cycle(core, [OutOfMemoryError("command not allowed"), 1])

    assert error is None
    dead, ack_first, ack_second = core.later
    assert dead[:2] == ["XADD", "t:projector:dead:shallow"]
    assert b"applied meanwhile" in dead[dead.index(b"error") + 1]
    assert (ack_first[-1], ack_second[-1]) == ("1-0", "2-0")


def test_a_feed_recreated_without_its_group_is_followed_again(client: redis.Redis, prefix: str) -> None:
    saver = writer(client, prefix)
    worker = ProjectorWorker(client, prefix, ["shallow"], name="w")
    worker.run_once()
    client.delete(Keyspace(prefix, 16).thread("alpha").feed)
    checkpoint, versions = new_checkpoint({"n": 1})
    saver.put(config("alpha"), checkpoint, {}, versions)

    with pytest.raises(RedisError, match="NOGROUP"):
        worker.run_once()
    assert worker.run_once().applied == 1
    latest = shallow_reader(client, prefix).get_tuple(config("alpha"))
    assert latest is not None and latest.checkpoint["id"] == checkpoint["id"]
    worker.release()


def test_a_deleted_thread_leaves_no_key_behind_the_worker(client: redis.Redis, prefix: str) -> None:
    writer = StreamSaver(client, prefix=prefix, projections=("full",))
    play(writer, history(("alpha", "beta"), delete=None))
    worker = ProjectorWorker(client, prefix, ["shallow"], lease_ms=5000)
    worker.run_burst()
    beta_keys = {k for k in client.scan_iter(match=f"{prefix}:*") if b":" + b"beta" in k}
    assert any(b":pos:" in k for k in beta_keys) and any(b":shallow:" in k for k in beta_keys)

    writer.delete_thread("beta")
    stats = worker.run_burst()

    assert stats.applied == 1 and stats.dead == 0
    assert {k for k in client.scan_iter(match=f"{prefix}:*") if b"beta" in k} == set()
    assert any(b":pos:" in k and b"alpha" in k for k in client.scan_iter(match=f"{prefix}:*"))


@pytest.mark.parametrize(
    ("views", "options"),
    [("shallow", {}), (["shallow"], {"batch": "5"}), (["shallow"], {"lease_ms": 1.5e3}),
     (["shallow"], {"poll_ms": None})],
    ids=["views-a-string", "batch-a-string", "lease-a-float", "poll-none"],
)
def test_worker_options_of_the_wrong_type_are_refused_at_construction(
    client: redis.Redis, prefix: str, views: Any, options: dict[str, Any]
) -> None:
    with pytest.raises(InvalidInputError):
        ProjectorWorker(client, prefix, views, **options)

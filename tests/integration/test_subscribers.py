"""Subscribers read the partition feeds through consumer groups: typed events with payloads on
demand, filters, at-least-once delivery in per-thread order across consumers that die or join,
dead letters for a handler that keeps failing, lag, and feed retention."""

from __future__ import annotations

import asyncio
import random
import signal
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import redis
import redis.asyncio
from helpers import config, new_checkpoint
from subscriber_harness import fill, handled_key, partitions_of

from streamsaver import StreamSaver
from streamsaver.errors import InvalidInputError
from streamsaver.feeds.admin import dead_letters, requeue_dead_letters, trim_feeds
from streamsaver.feeds.event import FeedEvent
from streamsaver.feeds.subscriber import Subscriber
from streamsaver.log.keys import Keyspace
from streamsaver.ops.inspection import group_health


def one_thread_story(saver: StreamSaver) -> None:
    checkpoint, versions = new_checkpoint({"messages": ["hi"], "n": 1})
    saved = saver.put(config("story"), checkpoint, {"source": "input", "step": -1, "user": "ann"}, versions)
    saver.put_writes(saved, [("messages", "hello back"), ("__interrupt__", {"why": "approve"})], "task-1", "")
    saver.delete_thread("story")


def check_story(events: list[FeedEvent], payloads: list[Any]) -> None:
    assert [e.type for e in events] == ["CheckpointSaved", "WritesSaved", "ThreadDeleted"]
    put, writes, deleted = events
    # The thread was deleted before the subscriber ran: its log entries, metadata included, are
    # erased; the pointers still say what happened.
    assert (put.thread_id, put.checkpoint_ns, put.metadata) == ("story", "", None)
    assert writes.checkpoint_id == put.checkpoint_id and writes.metadata is None
    assert (deleted.checkpoint_ns, deleted.checkpoint_id) == (None, None)
    assert len({e.id for e in events}) == 3 and all(e.deliveries == 1 for e in events)
    assert put.time <= writes.time <= deleted.time
    assert payloads == [None, None, {}]


def test_handler_gets_typed_events_and_payloads_on_demand(client: redis.Redis, prefix: str) -> None:
    saver = StreamSaver(client, prefix=prefix)
    saver.setup()
    checkpoint, versions = new_checkpoint({"messages": ["hi"], "n": 1})
    saved = saver.put(config("live"), checkpoint, {"source": "input"}, versions)
    saver.put_writes(saved, [("messages", "hello back")], "task-1", "")
    seen: list[tuple[FeedEvent, Any]] = []
    Subscriber(client, "audit", lambda e: seen.append((e, e.payload())), prefix=prefix).run_burst()
    (put, put_payload), (writes, writes_payload) = seen
    assert put.metadata == {"source": "input"} and writes.metadata is None
    assert put_payload["checkpoint"]["channel_values"] == {"messages": ["hi"], "n": 1}
    assert put_payload["checkpoint"]["id"] == put.checkpoint_id == writes.checkpoint_id == checkpoint["id"]
    assert writes_payload == {"task_id": "task-1", "task_path": "", "writes": [("messages", "hello back")]}
    story: list[tuple[FeedEvent, Any]] = []
    one_thread_story(saver)
    Subscriber(client, "audit", lambda e: story.append((e, e.payload())), prefix=prefix).run_burst()
    check_story([e for e, _ in story], [p for _, p in story])


async def test_async_twin_with_a_coroutine_handler(aclient: redis.asyncio.Redis, client: redis.Redis,
                                                   prefix: str) -> None:
    saver = StreamSaver(client, prefix=prefix)
    saver.setup()
    checkpoint, versions = new_checkpoint({"n": 7})
    saver.put(config("a"), checkpoint, {"source": "loop"}, versions)
    seen: list[tuple[FeedEvent, Any]] = []

    async def handle(event: FeedEvent) -> None:
        await asyncio.sleep(0)
        seen.append((event, await event.apayload()))

    stats = await Subscriber(aclient, "audit", handle, prefix=prefix).async_run_burst()
    assert stats.handled == 1 and seen[0][1]["checkpoint"]["channel_values"] == {"n": 7}
    story: list[FeedEvent] = []
    one_thread_story(saver)
    await Subscriber(aclient, "audit", story.append, prefix=prefix, prefetch=True).async_run_burst()
    check_story(story, [None, None, {}])


def test_filters_by_type_and_metadata_run_before_the_handler(client: redis.Redis, prefix: str) -> None:
    fill(client, prefix, threads=3, per_thread=6, writes_every=2)
    evens: list[FeedEvent] = []
    writes: list[FeedEvent] = []
    stats = Subscriber(client, "evens", evens.append, prefix=prefix, metadata={"kind": "even", "n": 2.0}).run_burst()
    Subscriber(client, "writes", writes.append, prefix=prefix, types=["WritesSaved"]).run_burst()
    assert sorted((e.thread_id, e.metadata) for e in evens) == [
        (f"thread-{t}", {"n": 2, "kind": "even", "source": "loop", "step": 2}) for t in range(3)]
    assert stats.handled == 3 and stats.filtered == 3 * 6 + 3 * 3 - 3
    assert len(writes) == 9 and {e.type for e in writes} == {"WritesSaved"}
    assert all(h.pending == 0 and h.lag == 0 for h in group_health(client, prefix, "evens"))


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_a_poisoned_event_is_dead_lettered_after_n_attempts_and_the_rest_flow_on(
        kind: str, client: redis.Redis, aclient: redis.asyncio.Redis, prefix: str) -> None:
    order = fill(client, prefix, threads=4, per_thread=5, partitions=2)
    handled: list[tuple[str, int]] = []
    attempts: list[int] = []

    def handle(event: FeedEvent) -> None:
        if (event.thread_id, event.metadata["n"]) == ("thread-1", 2):  # type: ignore[index]
            attempts.append(event.deliveries)
            raise RuntimeError("poison")
        handled.append((event.thread_id, event.metadata["n"]))  # type: ignore[index]

    sub = Subscriber(aclient if kind == "async" else client, "alerts", handle, prefix=prefix, max_deliveries=3,
                     load_metadata=True)
    stats = await sub.async_run_burst() if kind == "async" else sub.run_burst()
    assert attempts == [1, 2, 3] and stats.dead == 1 and stats.failed == 3
    assert sorted(handled) == sorted(o for o in order if o != ("thread-1", 2))
    by_thread = defaultdict(list)
    for thread, n in handled:
        by_thread[thread].append(n)
    assert all(ns == sorted(ns) for ns in by_thread.values())
    (letter,) = dead_letters(client, prefix, "alerts")
    assert (letter.thread_id, letter.attempts, letter.type) == ("thread-1", 3, "CheckpointSaved")
    assert "RuntimeError: poison" in letter.error
    assert all(h.pending == 0 and h.lag == 0 for h in group_health(client, prefix, "alerts"))
    # Re-queued for this group only, it is handled once the cause is gone; other groups skip it.
    attempts.clear()
    handled.clear()
    other: list[FeedEvent] = []
    Subscriber(client, "other", other.append, prefix=prefix, start="$").prepare()
    assert requeue_dead_letters(client, prefix, "alerts") == 1 and not dead_letters(client, prefix, "alerts")
    Subscriber(client, "alerts", lambda e: handled.append((e.thread_id, e.metadata["n"])),  # type: ignore[index]
               prefix=prefix).run_burst()
    Subscriber(client, "other", other.append, prefix=prefix).run_burst()
    assert handled == [("thread-1", 2)] and other == []


def in_thread_order(handled: list[tuple[str, int]]) -> bool:
    """Each thread's events were first handled in order: a thread's record never skips ahead
    (a re-delivery may go back and repeat, which at-least-once allows)."""
    last: dict[str, int] = {}
    for thread, n in handled:
        if n > last.get(thread, -1) + 1:
            return False
        last[thread] = max(n, last.get(thread, -1))
    return True


def wait_for(condition: Any, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def test_events_survive_consumers_killed_at_random(client: redis.Redis, prefix: str, redis_url: str) -> None:
    order = fill(client, prefix, threads=100, per_thread=100)
    assert len(order) == 10_000
    rng = random.Random(4)
    harness = str(Path(__file__).with_name("subscriber_harness.py"))
    procs: dict[str, subprocess.Popen[bytes]] = {}

    def start(name: str) -> None:
        procs[name] = subprocess.Popen([sys.executable, harness, redis_url, prefix, "audit", name, "400"])

    def handled() -> list[tuple[str, int]]:
        return [(t, int(n)) for t, n in (x.decode().split("|") for x in client.lrange(handled_key(prefix), 0, -1))]

    def unacknowledged(name: str) -> int:
        feeds = [Keyspace(prefix).feed(p) for p in range(partitions_of(client, prefix))]
        return sum(int(c["pending"]) for feed in feeds for c in client.xinfo_consumers(feed, "audit")
                   if c["name"] == name.encode())

    def kill_one_holding_entries() -> bool:
        """SIGKILL a random consumer that holds read, unacknowledged entries. Each is frozen
        (SIGSTOP) and its connections closed before its entries are counted, so that nothing
        it sent (an acknowledgement) can still change the count."""
        for victim in rng.sample(sorted(procs), len(procs)):
            procs[victim].send_signal(signal.SIGSTOP)
            stat = Path(f"/proc/{procs[victim].pid}/stat")
            wait_for(lambda stat=stat: stat.read_text().rsplit(")", 1)[1].split()[0] == "T", 10, f"{victim} stopped")
            for connection in client.client_list():
                if connection["name"] == victim:
                    client.client_kill_filter(_id=connection["id"])
            if unacknowledged(victim) > 0:
                procs.pop(victim).send_signal(signal.SIGKILL)
                return True
            procs[victim].send_signal(signal.SIGCONT)  # it connects again
        return False

    for i in range(3):
        start(f"c{i}")
    killed = 0
    try:
        for fraction in (0.15, 0.4, 0.65):
            wait_for(lambda f=fraction: client.llen(handled_key(prefix)) >= f * 10_000, 60, f"{fraction:.0%} handled")
            wait_for(kill_one_holding_entries, 60, "a consumer holding unacknowledged entries")
            killed += 1
            start(f"c{3 + killed}")
        wait_for(lambda: set(handled()) >= set(order), 60, "every event handled")
        wait_for(lambda: all(h.pending == 0 and h.lag == 0 for h in group_health(client, prefix, "audit")), 30,
                 "every event acknowledged")
        for proc in procs.values():
            proc.send_signal(signal.SIGTERM)
        for proc in procs.values():
            proc.wait(20)
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                proc.wait()
    record = handled()
    assert set(record) == set(order) and in_thread_order(record)
    assert killed == 3 and len(record) >= len(order)
    # The survivors took over what the killed ones had read and not acknowledged (the last
    # victim's entries went to consumers that all ran to the end and reported what they claimed).
    assert int(client.get(f"{prefix}:test:claimed") or 0) > 0


class Abandon(BaseException):
    """Leaves a subscriber mid-batch without releasing anything, like a crash."""


async def test_async_consumers_abandoned_mid_batch_lose_nothing(aclient: redis.asyncio.Redis, client: redis.Redis,
                                                                prefix: str) -> None:
    order = fill(client, prefix, threads=40, per_thread=50, partitions=4)
    record: list[tuple[str, int]] = []
    rng = random.Random(9)

    def consumer(name: str, budget: int | None) -> Subscriber:
        def handle(event: FeedEvent) -> None:
            if budget is not None and len(record) >= budget:
                raise Abandon
            record.append((event.thread_id, event.metadata["n"]))  # type: ignore[index]
        return Subscriber(aclient, "audit", handle, prefix=prefix, name=name, lease_ms=300, batch=25, poll_ms=20,
                          load_metadata=True)

    for i, budget in enumerate(sorted(rng.sample(range(100, 1900), 3))):
        with pytest.raises(Abandon):
            await consumer(f"doomed-{i}", budget).async_run()
    survivor = consumer("survivor", None)
    task = asyncio.create_task(survivor.async_run())
    deadline = time.monotonic() + 30
    while not set(record) >= set(order):
        assert time.monotonic() < deadline and not task.done()
        await asyncio.sleep(0.02)
    survivor.stop()
    stats = await task
    assert in_thread_order(record) and stats.claimed > 0
    assert all(h.pending == 0 and h.lag == 0 for h in group_health(client, prefix, "audit"))


def test_an_event_that_crashes_its_consumer_each_time_is_dead_lettered_too(client: redis.Redis, prefix: str) -> None:
    order = fill(client, prefix, threads=4, per_thread=3, partitions=1)
    handled: list[tuple[str, int]] = []
    crashes = 0

    def handle(event: FeedEvent) -> None:
        if (event.thread_id, event.metadata["n"]) == ("thread-2", 1):  # type: ignore[index]
            raise Abandon  # the consumer dies in the handler: no failure is ever reported
        handled.append((event.thread_id, event.metadata["n"]))  # type: ignore[index]

    while True:
        assert crashes < 10, "the poison was never dead-lettered"
        try:
            Subscriber(client, "g", handle, prefix=prefix, name=f"c{crashes}", lease_ms=100, max_deliveries=3,
                       batch=5).run_burst()
            break
        except Abandon:
            crashes += 1
            wait_for(lambda: not client.exists(f"{prefix}:sub:lease:{{p0}}:g"), 5, "the dead owner's lease to lapse")
    assert crashes == 4  # the first delivery and three counted ones
    (letter,) = dead_letters(client, prefix, "g")
    assert letter.thread_id == "thread-2" and "never completed" in letter.error
    assert sorted(set(handled)) == sorted(o for o in order if o != ("thread-2", 1))
    assert in_thread_order([h for h in handled if h[0] != "thread-2"])
    assert list(dict.fromkeys(n for t, n in handled if t == "thread-2")) == [0, 2]
    assert not client.exists(f"{prefix}:sub:tries:{{p0}}:g")


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_a_consumer_joining_a_group_takes_a_share_of_partitions(
        kind: str, client: redis.Redis, aclient: redis.asyncio.Redis, prefix: str) -> None:
    fill(client, prefix, threads=16, per_thread=1, partitions=8)
    seen: dict[str, list[int]] = {"a": [], "b": []}
    # Leases and roster entries that outlive the test, and a roster heartbeat on every call: the
    # share moves by release alone, never because an entry lapsed between two calls (with a
    # 400 ms lease, a loaded machine let b's lapse while the test wrote, and a took everything).
    a, b = (Subscriber(aclient if kind == "async" else client, "audit", lambda e, n=n: seen[n].append(e.partition),
                       prefix=prefix, name=n, lease_ms=60_000, batch=1) for n in ("a", "b"))
    for sub in (a, b):
        sub.core.heartbeat_s = 0

    async def once(sub: Subscriber) -> None:
        await sub.async_run_once() if kind == "async" else sub.run_once()

    await once(a)
    assert a.core.owned == set(range(8))
    await once(b)
    assert b.core.owned == set()  # a still holds every lease
    deadline = time.monotonic() + 10
    while not (b.core.owned == {1, 3, 5, 7} and a.core.owned == {0, 2, 4, 6}):
        assert time.monotonic() < deadline, "b never took its share"
        await once(a)
        await once(b)
    # New events now go to each one's share only.
    seen["a"].clear()
    seen["b"].clear()
    fill(client, prefix, threads=16, per_thread=1, partitions=8)
    await once(a)
    await once(b)
    assert seen["a"] and set(seen["a"]) <= {0, 2, 4, 6} and seen["b"] and set(seen["b"]) <= {1, 3, 5, 7}
    for sub in (a, b):
        await sub.async_release() if kind == "async" else sub.release()
    assert not client.exists(f"{prefix}:sub:members:audit")


def sid(entry: bytes) -> tuple[int, int]:
    ms, seq = entry.split(b"-")
    return int(ms), int(seq)


def test_trimming_never_drops_an_unacknowledged_entry(client: redis.Redis, prefix: str) -> None:
    order = fill(client, prefix, threads=12, per_thread=6, partitions=2)
    logs_before = {k: client.xlen(k) for k in client.scan_iter(f"{prefix}:log:*")}
    assert trim_feeds(client, prefix) == {}  # no group yet: nothing goes
    Subscriber(client, "fast", lambda e: None, prefix=prefix).run_burst()

    def slow_handler(event: FeedEvent) -> None:
        if event.metadata["n"] >= 4:  # type: ignore[index]
            raise RuntimeError("not yet")

    slow = Subscriber(client, "slow", slow_handler, prefix=prefix, batch=5, max_deliveries=100)
    for _ in range(60):
        if slow.run_once().failed:
            break
    slow.release()
    feeds = {p: f"{prefix}:feed:{{p{p}}}" for p in (0, 1)}
    unacked = {(p, e["message_id"]) for p, feed in feeds.items()
               for e in client.xpending_range(feed, "slow", "-", "+", 100)}
    delivered = {p: sid(client.xinfo_groups(feed)[[g["name"] for g in client.xinfo_groups(feed)].index(b"slow")]
                        ["last-delivered-id"]) for p, feed in feeds.items()}
    before = {(p, e[0]) for p, feed in feeds.items() for e in client.xrange(feed)}
    removed = trim_feeds(client, prefix)
    left = {(p, e[0]) for p, feed in feeds.items() for e in client.xrange(feed)}
    assert unacked and unacked <= left and sum(removed.values()) == len(before - left) > 0
    for p, entry in before - left:  # only entries both groups acknowledged went
        assert sid(entry) <= delivered[p] and all(sid(entry) < sid(u) for q, u in unacked if q == p)
    assert all(sid(entry) <= delivered[p] for p, entry in before - left)
    assert {(p, e) for p, e in before if sid(e) > delivered[p]} <= left
    Subscriber(client, "slow", lambda e: None, prefix=prefix).run_burst()
    assert sum(trim_feeds(client, prefix).values()) == len(left)
    assert all(client.xlen(f"{prefix}:feed:{{p{p}}}") == 0 for p in (0, 1))
    assert {k: client.xlen(k) for k in client.scan_iter(f"{prefix}:log:*")} == logs_before
    assert len(order) == 72


def test_a_running_subscriber_retries_after_a_pause_and_trims_its_feeds(client: redis.Redis, prefix: str) -> None:
    order = fill(client, prefix, threads=8, per_thread=5, partitions=2)
    failures: list[float] = []
    handled: list[tuple[str, int]] = []

    def flaky(event: FeedEvent) -> None:
        if (event.thread_id, event.metadata["n"]) == ("thread-3", 1) and len(failures) < 2:  # type: ignore[index]
            failures.append(time.monotonic())
            raise ConnectionError("downstream is down")
        handled.append((event.thread_id, event.metadata["n"]))  # type: ignore[index]

    sub = Subscriber(client, "sink", flaky, prefix=prefix, retry_ms=150, trim_every_s=0.05, lease_ms=600)
    runner = threading.Thread(target=sub.run)
    runner.start()
    try:
        wait_for(lambda: set(handled) >= set(order), 20, "every event handled")
        wait_for(lambda: sum(client.xlen(f"{prefix}:feed:{{p{p}}}") for p in (0, 1)) == 0, 20, "the feeds trimmed")
    finally:
        sub.stop()
        runner.join(10)
    assert len(failures) == 2 and failures[1] - failures[0] >= 0.15 and in_thread_order(handled)
    assert not dead_letters(client, prefix, "sink")
    assert sum(client.xlen(k) for k in client.scan_iter(f"{prefix}:log:*")) == len(order)


@pytest.mark.parametrize("prefetch", [False, True], ids=["on-demand", "prefetched"])
def test_a_checkpoint_pruned_since_reads_as_gone_and_a_copied_values_retained_as_itself(
    client: redis.Redis, prefix: str, prefetch: bool
) -> None:
    saver = StreamSaver(client, prefix=prefix)
    saver.setup()
    first, versions = new_checkpoint({"a": 1})
    saved = saver.put(config("t"), first, {}, versions)
    second, versions = new_checkpoint({"b": 2}, first)
    saver.put(saved, second, {}, versions)
    saver.prune(["t"])  # the first checkpoint's entry keeps `a` only, as a ValuesRetained
    saver.copy_thread("t", "copy")
    seen: list[tuple[str, str, Any, Any]] = []

    def handle(e: FeedEvent) -> None:
        record = e.record()
        seen.append((e.thread_id, e.type, None if record is None else record.TYPE, e.payload()))

    stats = Subscriber(client, "audit", handle, prefix=prefix, prefetch=prefetch).run_burst()

    assert stats.dead == 0 and stats.failed == 0
    assert [s[:3] for s in seen if s[0] == "t"] == [
        ("t", "CheckpointSaved", None),
        ("t", "CheckpointSaved", "CheckpointSaved"),
        ("t", "ThreadPruned", "ThreadPruned"),
    ]
    assert ("copy", "ValuesRetained", "ValuesRetained", {}) in seen


@pytest.mark.parametrize(
    ("types", "metadata"),
    [(set(), None), (["CheckpointSave"], None), ("CheckpointSaved", None), (["WritesSaved"], {"source": "input"}),
     (None, ["source"])],
    ids=["no-types", "unknown-type", "a-string", "metadata-on-writes-only", "metadata-not-a-mapping"],
)
def test_a_filter_that_can_match_nothing_is_refused_at_construction(
    client: redis.Redis, prefix: str, types: Any, metadata: Any
) -> None:
    with pytest.raises(InvalidInputError):
        Subscriber(client, "audit", lambda e: None, prefix=prefix, types=types, metadata=metadata)


def test_a_coroutine_handler_on_a_sync_client_is_refused_at_construction(
    client: redis.Redis, aclient: redis.asyncio.Redis, prefix: str
) -> None:
    async def handle(event: FeedEvent) -> None:
        return None

    class Handler:
        async def __call__(self, event: FeedEvent) -> None:
            return None

    for handler in (handle, Handler()):
        with pytest.raises(InvalidInputError, match="async"):
            Subscriber(client, "audit", handler, prefix=prefix)
        Subscriber(aclient, "audit", handler, prefix=prefix)  # the async client awaits it
    with pytest.raises(InvalidInputError, match="callable"):
        Subscriber(client, "audit", "print", prefix=prefix)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "options",
    [{"partitions": "01"}, {"partitions": 3}, {"partitions": [True]}, {"partitions": [1.0]}, {"partitions": [-1]},
     {"partitions": []}, {"batch": "10"}, {"batch": 1.5}, {"lease_ms": True}, {"max_deliveries": None},
     {"poll_ms": "100"}, {"retry_ms": -1}, {"trim_every_s": "60"}],
    ids=["partitions-a-string", "partitions-an-int", "a-bool-partition", "a-float-partition", "a-negative-partition",
         "no-partitions", "batch-a-string", "batch-a-float", "lease-a-bool", "deliveries-none", "poll-a-string",
         "retry-negative", "trim-a-string"],
)
def test_options_of_the_wrong_type_are_refused_at_construction(
    client: redis.Redis, prefix: str, options: dict[str, Any]
) -> None:
    with pytest.raises(InvalidInputError):
        Subscriber(client, "audit", lambda e: None, prefix=prefix, **options)

"""A writer killed with SIGKILL at any instant of a `put` or `put_writes` leaves either the whole
event with its projections or nothing (invariant 2), and every acknowledged checkpoint and write
stays readable.

Writers are forked from the test process (no interpreter start-up per kill, so hundreds of kills
take seconds). Each writer continues one of a few threads from its latest checkpoint, putting
checkpoints of mixed sizes (up to ~200 kB, so a kill often lands mid-send) each followed by its
writes, and records an acknowledgement in a shared file only after the call returned. The test
kills it after a random delay, then checks the deployment: `verify` folds every log afresh and
compares with the live views (a view without its event is *extra*, an event without its view is
*missing*), every feed pointer names a log entry and every log entry has one, and every
acknowledged checkpoint and write reads back with its values.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
import redis
from crash_harness import KILLS, acknowledge, complete_lines, kill_writers
from helpers import config, new_checkpoint

from streamsaver import StreamSaver
from streamsaver.log.keys import Keyspace
from streamsaver.ops.verify import verify

pytestmark = pytest.mark.slow

THREADS = 6
SIZES = (10, 2_000, 60_000, 200_000)


def _values(thread: str, step: int) -> dict[str, Any]:
    size = SIZES[step % len(SIZES)]
    return {"step": step, "text": f"{thread}/{step}:" + "x" * size}


def _write_forever(url: str, prefix: str, thread: str, acks: Path) -> None:
    """The child: continue `thread` from its latest checkpoint, acknowledging each call after
    it returned (one line, one write(2), so a kill never leaves half a line)."""
    client = redis.Redis.from_url(url)
    saver = StreamSaver(client, prefix=prefix)
    saver.setup()
    ack = acknowledge(acks)
    latest = saver.get_tuple(config(thread))
    previous = latest.checkpoint if latest else None
    step = latest.checkpoint["channel_values"]["step"] + 1 if latest else 0
    while True:
        checkpoint, versions = new_checkpoint(_values(thread, step), previous)
        parent = config(thread, "", previous["id"] if previous else None)
        saved = saver.put(parent, checkpoint, {"source": "loop", "step": step}, versions)
        ack(f"put {thread} {checkpoint['id']} {step}")
        saver.put_writes(saved, [("text", f"w{step}"), ("step", step)], f"task-{step}")
        ack(f"writes {thread} {checkpoint['id']} task-{step}")
        previous, step = checkpoint, step + 1


def _read_acks(acks: Path) -> tuple[dict[str, tuple[str, int]], set[tuple[str, str, str]]]:
    puts: dict[str, tuple[str, int]] = {}
    writes: set[tuple[str, str, str]] = set()
    for line in complete_lines(acks):
        kind, thread, cid, last = line.split(" ")
        if kind == "put":
            puts[cid] = (thread, int(last))
        else:
            writes.add((thread, cid, last))
    return puts, writes


def _feeds_match_logs(client: redis.Redis, prefix: str) -> None:
    keyspace = Keyspace(prefix, int(client.hget(f"{prefix}:meta", "partitions") or 0))
    pointed: set[tuple[bytes, bytes]] = set()
    for partition in range(keyspace.partitions):
        for _, fields in client.xrange(keyspace.feed(partition)):
            pointed.add((fields[b"thread"], fields[b"id"]))
    logged = {
        (f"thread-{t}".encode(), entry_id)
        for t in range(THREADS)
        for entry_id, _ in client.xrange(keyspace.thread(f"thread-{t}").log)
    }
    assert pointed == logged, "a log entry without its feed pointer, or a pointer without its entry"


def test_writers_killed_at_random_instants_leave_whole_events_and_every_ack_readable(
    client: redis.Redis, redis_url: str, prefix: str, tmp_path: Path
) -> None:
    StreamSaver(client, prefix=prefix).setup()
    acks = tmp_path / "acks"
    acks.mkdir()
    seed = random.randrange(2**32)

    killed = kill_writers(lambda n, own: _write_forever(redis_url, prefix, f"thread-{n % THREADS}", own), acks,
                          random.Random(seed), (0.002, 0.035))

    puts, writes = _read_acks(acks)
    assert killed >= 200, f"seed {seed}: only {killed} writers were killed mid-work"
    assert len(puts) >= KILLS // 8, f"seed {seed}: the writers hardly got anything done ({len(puts)} puts)"
    report = verify(client, prefix)
    assert report.matches, (seed, report.differences)
    _feeds_match_logs(client, prefix)
    saver = StreamSaver(client, prefix=prefix)
    for cid, (thread, step) in puts.items():
        got = saver.get_tuple(config(thread, "", cid))
        assert got is not None, f"seed {seed}: acknowledged checkpoint {cid} of {thread} is lost"
        assert got.checkpoint["channel_values"] == _values(thread, step)
    for thread, cid, task in writes:
        got = saver.get_tuple(config(thread, "", cid))
        assert got is not None and (task, "text", f"w{task.split('-')[1]}") in got.pending_writes
    print(f"kills mid-work: {killed}, acknowledged: {len(puts)} puts, {len(writes)} put_writes")

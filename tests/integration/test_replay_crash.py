"""A replay killed at any instant (SIGKILL, no cleanup) resumes to views identical, byte for byte,
to the ones the live appends made: every apply records its position in the same script, so
what the killed process did is either whole or absent, and the resumed replay skips it."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
from typing import Any

import pytest
import redis
from helpers import config, new_checkpoint, snapshot

from streamsaver import StreamSaver
from streamsaver.log.keys import ViewName
from streamsaver.ops.replay import Replayer

pytestmark = pytest.mark.slow

THREADS = 200
STEPS = 10
PAGE = 8
TRIALS = 5
VIEWS: list[ViewName] = ["full", "shallow"]

CHILD = """
import sys
import redis
from streamsaver.ops.replay import Replayer

url, prefix, page = sys.argv[1], sys.argv[2], int(sys.argv[3])
replayer = Replayer.open(redis.Redis.from_url(url), prefix, page=page)
replayer.replay(["full", "shallow"], progress=lambda events: print(events, flush=True))
print("done", flush=True)
"""


def _write_threads(client: redis.Redis, prefix: str) -> int:
    """THREADS threads of STEPS checkpoints, each followed by its writes (every third thread
    also has a subgraph namespace); returns the number of events logged."""
    saver = StreamSaver(client, prefix=prefix, projections=VIEWS)
    saver.setup()
    events = 0
    for t in range(THREADS):
        namespaces = ["", "inner:1"] if t % 3 == 0 else [""]
        for ns in namespaces:
            previous: Any = None
            for step in range(STEPS):
                values = {
                    "messages": [f"message {i} of thread {t}" for i in range(step + 1)],
                    "step": step,
                }
                checkpoint, versions = new_checkpoint(values, previous)
                parent = config(f"thread-{t}", ns, previous["id"] if previous else None)
                saved = saver.put(parent, checkpoint, {"source": "loop", "step": step}, versions)
                saver.put_writes(
                    saved, [("messages", f"reply {step}"), ("step", step + 1)], f"task-{step}"
                )
                previous, events = checkpoint, events + 2
    return events


def _replay_then_kill(url: str, prefix: str, pages: int) -> None:
    """Start a replay in a child process, wait until it reports `pages` round trips, SIGKILL it."""
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, url, prefix, str(PAGE)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and child.stderr is not None
    try:
        for done in range(pages):
            line = child.stdout.readline()
            assert line and line != "done\n", (
                f"the replay ended after {done} pages: {child.stderr.read()}"
            )
        child.send_signal(signal.SIGKILL)
        child.wait()
        assert "done" not in child.stdout.read(), "the replay finished before it was killed"
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        for stream in (child.stdout, child.stderr):
            if stream is not None:
                stream.close()


def _positions(client: redis.Redis, prefix: str) -> dict[bytes, dict[bytes, bytes]]:
    """The recorded positions: per thread, the last event each view applied."""
    return {
        key: client.hgetall(key) for key in client.scan_iter(match=f"{prefix}:pos:*", count=1000)
    }


def _positions_of(state: dict[bytes, Any], prefix: str) -> dict[bytes, dict[bytes, bytes]]:
    return {
        key: value for key, (_, value) in state.items() if key.startswith(f"{prefix}:pos:".encode())
    }


def test_a_replay_killed_at_random_points_resumes_to_byte_identical_views(
    client: redis.Redis, redis_url: str, prefix: str
) -> None:
    events = _write_threads(client, prefix)
    live = snapshot(client, prefix)
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    replayer = Replayer.open(client, prefix, page=PAGE)

    for trial in range(TRIALS):
        replayer.drop(VIEWS)
        pages = rng.randrange(1, events // PAGE * 9 // 10)
        _replay_then_kill(redis_url, prefix, pages)
        assert _positions(client, prefix) != _positions_of(live, prefix), (
            f"seed {seed}, trial {trial}: nothing to resume"
        )

        stats = replayer.replay(VIEWS)

        assert stats.events == events
        assert snapshot(client, prefix) == live, (
            f"seed {seed}, trial {trial}: killed after {pages} pages"
        )

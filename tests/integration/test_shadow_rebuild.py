"""Shadow rebuild: views are folded beside the live ones and swapped in thread by thread, so a
reader sees each thread either as it was or rebuilt, never half folded, and writes made during
the rebuild are in the result."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
from typing import Any

import pytest
import redis
from helpers import config, keys_of, new_checkpoint, snapshot
from langgraph.checkpoint.base import Checkpoint

from streamsaver import StreamSaver
from streamsaver.cli.main import main
from streamsaver.log.keys import ViewName
from streamsaver.ops.shadow import ShadowRebuild
from streamsaver.ops.verify import verify

THREADS = [f"thread-{i}" for i in range(6)] + ["odd {id}: with * and |"]


def _save(saver: StreamSaver, thread_id: str, previous: Checkpoint | None, step: int, ns: str = "") -> Checkpoint:
    checkpoint, versions = new_checkpoint({"messages": [f"{thread_id} step {step}"], "step": step}, previous)
    parent = saver.get_tuple(config(thread_id, ns))
    cfg = parent.config if parent is not None else config(thread_id, ns)
    saved = saver.put(cfg, checkpoint, {"step": step, "source": "loop"}, versions)
    saver.put_writes(saved, [("messages", f"pending {step}"), ("step", step + 1)], f"task-{step}")
    return checkpoint


@pytest.fixture
def sync_saver(client: redis.Redis, prefix: str) -> StreamSaver:
    """A saver of a deployment keeping both views inline (both are rebuilt here)."""
    saver = StreamSaver(client, prefix=prefix, projections=("full", "shallow"))
    saver.setup()
    return saver


@pytest.fixture
def deployment(sync_saver: StreamSaver) -> dict[str, Checkpoint]:
    """Seven threads of three checkpoints each (one with a subgraph namespace); the latest
    checkpoint of each thread, by thread."""
    latest: dict[str, Checkpoint] = {}
    for thread_id in THREADS:
        previous = None
        for step in range(3):
            previous = _save(sync_saver, thread_id, previous, step)
        latest[thread_id] = previous  # type: ignore[assignment]
    _save(sync_saver, THREADS[0], None, 0, ns="child:1")
    return latest


def _views(client: redis.Redis, prefix: str) -> dict[bytes, Any]:
    return {k: v for k, v in snapshot(client, prefix).items() if b":full:" in k or b":shallow:" in k}


def _damage(client: redis.Redis, saver: StreamSaver) -> None:
    """Lose the latest full-view document of every thread: reads then show the one before."""
    for thread_id in THREADS:
        latest = saver.get_tuple(config(thread_id))
        assert latest is not None
        cid = latest.config["configurable"]["checkpoint_id"]
        client.delete(saver.core.keys.thread(thread_id).per_checkpoint("full", "cp", "", cid))


def _latest_ids(saver: StreamSaver) -> dict[str, str | None]:
    ids: dict[str, str | None] = {}
    for thread_id in THREADS:
        found = saver.get_tuple(config(thread_id))
        ids[thread_id] = found.config["configurable"]["checkpoint_id"] if found else None
    return ids


def test_a_shadow_rebuild_repairs_lost_keys_and_leaves_no_shadow_behind(
    client: redis.Redis, prefix: str, sync_saver: StreamSaver, deployment: dict[str, Checkpoint]
) -> None:
    good = _views(client, prefix)
    _damage(client, sync_saver)
    assert _views(client, prefix) != good

    stats = ShadowRebuild.open(client, prefix, page=2).run(["full", "shallow"])

    assert _views(client, prefix) == good
    assert stats.swapped == 2 * len(THREADS) and stats.caught_up == 0
    assert not keys_of(client, f"{prefix}:shadow")
    assert verify(client, prefix).matches


def test_readers_see_each_thread_whole_old_or_rebuilt_during_the_rebuild(
    client: redis.Redis, prefix: str, sync_saver: StreamSaver, deployment: dict[str, Checkpoint]
) -> None:
    rebuilt = _latest_ids(sync_saver)
    _damage(client, sync_saver)
    damaged = _latest_ids(sync_saver)
    assert all(damaged[t] != rebuilt[t] for t in THREADS)
    seen: list[dict[str, str | None]] = []

    def folding(events: int) -> None:  # the fold writes shadow keys only
        assert _latest_ids(sync_saver) == damaged

    def swapping(threads: int) -> None:
        seen.append(now := _latest_ids(sync_saver))
        assert all(now[t] in (damaged[t], rebuilt[t]) for t in THREADS)
        for thread_id in THREADS:
            history = list(sync_saver.list(config(thread_id)))
            assert len(history) in (2, 3) and all(t.pending_writes for t in history)

    ShadowRebuild.open(client, prefix, page=1).run(["full"], progress=folding, swapping=swapping)

    assert len(seen) == len(THREADS)
    assert seen[-1] == rebuilt
    assert [sum(s[t] == rebuilt[t] for t in THREADS) for s in seen] == list(range(1, len(THREADS) + 1))


def test_writes_and_deletes_made_during_the_rebuild_are_in_the_result(
    client: redis.Redis, prefix: str, sync_saver: StreamSaver, deployment: dict[str, Checkpoint]
) -> None:
    rebuild = ShadowRebuild.open(client, prefix, page=1)
    stats = rebuild.fold(["full", "shallow"])
    for thread_id in THREADS[:3]:  # after the fold: these threads' shadows are now behind
        deployment[thread_id] = _save(sync_saver, thread_id, deployment[thread_id], 3)
    sync_saver.delete_thread(THREADS[3])
    for view in ("full", "shallow"):
        rebuild.swap(view, stats)

    assert stats.caught_up == 2 * 3 and stats.swapped == 2 * len(THREADS)
    assert verify(client, prefix).matches
    for thread_id in THREADS[:3]:
        latest = sync_saver.get_tuple(config(thread_id))
        assert latest is not None and latest.checkpoint["id"] == deployment[thread_id]["id"]
        assert latest.metadata["step"] == 3
    assert sync_saver.get_tuple(config(THREADS[3])) is None
    escaped = sync_saver.core.keys.thread(THREADS[3]).escaped_thread.encode()
    assert not [k for k in keys_of(client, prefix) if escaped in k]


@pytest.mark.parametrize("view", ["full", "shallow"])
def test_the_cli_rebuilds_in_shadow_and_reports_the_swap(
    client: redis.Redis,
    redis_url: str,
    prefix: str,
    sync_saver: StreamSaver,
    deployment: dict[str, Checkpoint],
    view: ViewName,
    capsys: pytest.CaptureFixture[str],
) -> None:
    good = _views(client, prefix)
    assert main(["replay", "--shadow", "--view", view, "--url", redis_url, "--prefix", prefix, "--json"]) == 0
    out = capsys.readouterr().out
    assert '"swapped": 7' in out and '"shadow": true' in out
    assert _views(client, prefix) == good


CHILD = """
import sys
import redis
from streamsaver.ops.shadow import ShadowRebuild

url, prefix = sys.argv[1], sys.argv[2]
rebuild = ShadowRebuild.open(redis.Redis.from_url(url), prefix, page=4)
tick = lambda n: print(n, flush=True)
rebuild.run(["full", "shallow"], progress=tick, swapping=tick)
print("done", flush=True)
"""


@pytest.mark.slow
def test_a_shadow_rebuild_killed_at_random_points_never_disturbs_the_live_views(
    client: redis.Redis, redis_url: str, prefix: str, sync_saver: StreamSaver
) -> None:
    for t in range(40):
        previous = None
        for step in range(4):
            previous = _save(sync_saver, f"t{t}", previous, step)
    live = snapshot(client, prefix)
    rng = random.Random(seed := random.randrange(2**32))
    ticks = 0
    for trial in range(5):
        child = subprocess.Popen([sys.executable, "-c", CHILD, redis_url, prefix], stdout=subprocess.PIPE, text=True)
        assert child.stdout is not None
        if trial == 0:  # a whole run, to learn how many progress lines a run prints
            ticks = sum(1 for line in child.stdout if line != "done\n")
            child.wait()
        else:
            for _ in range(rng.randrange(1, ticks)):
                assert child.stdout.readline() not in ("", "done\n"), f"seed {seed}: finished before the kill"
            child.send_signal(signal.SIGKILL)
            child.wait()
        child.stdout.close()
        assert {k: v for k, v in snapshot(client, prefix).items() if b":shadow:" not in k} == live, f"seed {seed}"

    ShadowRebuild.open(client, prefix).run(["full", "shallow"])
    assert snapshot(client, prefix) == live

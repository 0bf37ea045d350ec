"""The log is the truth: views folded afresh from the thread logs equal the live views, byte for
byte, and folding again changes nothing."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from helpers import config, new_checkpoint, snapshot

from streamsaver import StreamSaver
from streamsaver.demo import run_demo
from streamsaver.errors import ConfigurationError
from streamsaver.ops.replay import Replayer
from streamsaver.ops.shadow import ShadowRebuild


@pytest.fixture(scope="module")
def demo_prefix(redis_url: str) -> Iterator[str]:
    """A deployment written by real graphs (the demo), plus one thread deleted afterwards."""
    report = run_demo(redis_url, out=io.StringIO())
    client = redis.Redis.from_url(redis_url)
    StreamSaver(client, prefix=report.prefix).delete_thread("trip")
    yield report.prefix
    client.close()


def _without_positions(state: dict[bytes, Any], prefix: str) -> dict[bytes, Any]:
    return {k: v for k, v in state.items() if not k.startswith(f"{prefix}:pos:".encode())}


def test_views_rebuilt_from_the_logs_equal_the_live_views_byte_for_byte(client: redis.Redis, demo_prefix: str) -> None:
    live = snapshot(client, demo_prefix)
    replayer = Replayer.open(client, demo_prefix)

    dropped = replayer.drop(["full", "shallow"])
    assert dropped > 0
    assert not any(b":full:" in k or b":shallow:" in k for k in snapshot(client, demo_prefix))

    stats = replayer.replay(["full", "shallow"])

    assert stats.threads == 3 and stats.events > 0
    assert snapshot(client, demo_prefix) == live


def test_replaying_again_changes_nothing(client: redis.Redis, demo_prefix: str) -> None:
    before = snapshot(client, demo_prefix)
    replayer = Replayer.open(client, demo_prefix)
    for log in replayer.thread_logs():
        assert replayer.replay_log(log, ["full", "shallow"]).events > 0
    assert snapshot(client, demo_prefix) == before


def test_a_replay_stopped_midway_resumes_to_the_same_views(client: redis.Redis, demo_prefix: str) -> None:
    live = snapshot(client, demo_prefix)
    replayer = Replayer.open(client, demo_prefix, page=3)
    replayer.drop(["full"])
    for log in replayer.thread_logs():
        ids = [entry_id for entry_id, _ in client.xrange(log)]
        replayer.replay_log(log, ["full"], until=ids[len(ids) // 2].decode())
    halfway = snapshot(client, demo_prefix)
    assert _without_positions(halfway, demo_prefix) != _without_positions(live, demo_prefix)

    replayer.replay(["full"])

    assert snapshot(client, demo_prefix) == live


def test_reads_and_searches_work_on_rebuilt_views(client: redis.Redis, demo_prefix: str) -> None:
    saver = StreamSaver(client, prefix=demo_prefix)
    config = {"configurable": {"thread_id": "chat", "checkpoint_ns": ""}}
    before = (saver.get_tuple(config), list(saver.list(None, filter={"source": "input"})))

    Replayer.open(client, demo_prefix).rebuild(["full", "shallow"])

    after = (saver.get_tuple(config), list(saver.list(None, filter={"source": "input"})))
    assert after == before and before[1]


def test_documents_from_before_index_schema_v2_ask_for_a_replay_which_cures_them(
    client: redis.Redis, prefix: str
) -> None:
    """The upgrade runbook (docs/operations.md): a document without ``tk``/``nk``, as versions
    before schema v2 wrote them, stops a cross-thread listing with a clear error; a shadow
    rebuild writes every document anew and the listing works."""
    saver = StreamSaver(client, prefix=prefix)
    saver.setup()
    for i in range(3):
        checkpoint, versions = new_checkpoint({"i": i})
        saver.put(config(f"t{i}"), checkpoint, {"i": i, "run_id": "run-1" if i == 2 else "run-0"}, versions)
    for key in client.scan_iter(match=f"{prefix}:*:cp:*"):
        client.execute_command("JSON.DEL", key, "$.tk")
        client.execute_command("JSON.DEL", key, "$.nk")
    with pytest.raises(ConfigurationError, match="streamsaver replay"):
        list(saver.list(None))
    # the runs' threads are found by the index too: refused, not a silent no-op
    with pytest.raises(ConfigurationError, match="streamsaver replay"):
        saver.delete_for_runs(["run-1"])
    assert saver.get_tuple(config("t2")) is not None

    ShadowRebuild.open(client, prefix).run(["full", "shallow"])

    assert sorted(t.config["configurable"]["thread_id"] for t in saver.list(None)) == ["t0", "t1", "t2"]
    saver.delete_for_runs(["run-1"])
    assert saver.get_tuple(config("t2")) is None and saver.get_tuple(config("t1")) is not None


def test_documents_from_before_index_schema_v3_ask_for_a_replay_which_cures_them(
    client: redis.Redis, prefix: str
) -> None:
    """The upgrade runbook (docs/operations.md): a document without ``ck``, as schema v2 wrote
    them, would fall outside every window a listing across threads sorts; the listing refuses
    with a clear error instead of leaving it out, and a shadow rebuild cures it."""
    saver = StreamSaver(client, prefix=prefix)
    saver.setup()
    for i in range(3):
        checkpoint, versions = new_checkpoint({"i": i})
        saver.put(config(f"t{i}"), checkpoint, {"i": i}, versions)
    old = next(iter(client.scan_iter(match=f"{prefix}:full:cp:*")))
    client.execute_command("JSON.DEL", old, "$.ck")
    with pytest.raises(ConfigurationError, match=r"schema v3.*streamsaver replay"):
        list(saver.list(None))
    assert len(list(saver.list(None, filter={"i": 9}))) == 0  # only matches without `ck` count
    assert len(list(saver.list(config("t1")))) == 1  # one thread's listing does not use windows

    ShadowRebuild.open(client, prefix).run(["full", "shallow"])

    assert sorted(t.config["configurable"]["thread_id"] for t in saver.list(None)) == ["t0", "t1", "t2"]

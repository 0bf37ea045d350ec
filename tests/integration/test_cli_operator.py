"""Operator commands in LangGraph's terms, run as the real command against the embedded server:
``restore --at <checkpoint_id>``, ``replay --thread``, what ``replay --keep`` applied, what an
interrupted replay left, and ``--shadow --keep`` refused."""

from __future__ import annotations

import json
from typing import Any

import pytest
import redis
from helpers import config, new_checkpoint, snapshot

from streamsaver import StreamSaver
from streamsaver.cli.main import main
from streamsaver.ops.replay import Replayer


@pytest.fixture
def threads(client: redis.Redis, prefix: str) -> dict[str, list[str]]:
    """Threads t and u of three checkpoints each (with a pending write on the second)."""
    saver = StreamSaver(client, prefix=prefix)
    saver.setup()
    ids: dict[str, list[str]] = {}
    for thread in ("t", "u"):
        previous: Any = None
        for step in range(3):
            checkpoint, versions = new_checkpoint({"step": step}, previous)
            parent = previous["id"] if previous else None
            saved = saver.put(config(thread, "", parent), checkpoint, {"step": step}, versions)
            if step == 1:
                saver.put_writes(saved, [("step", 2)], "task-1")
            ids.setdefault(thread, []).append(checkpoint["id"])
            previous = checkpoint
    return ids


def _cli(capsys: pytest.CaptureFixture[str], url: str, prefix: str, *argv: str) -> tuple[int, str, str]:
    code = main([*argv, "--url", url, "--prefix", prefix])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_restore_at_a_checkpoint_id_copies_the_thread_as_it_was_then(
    client: redis.Redis, prefix: str, redis_url: str, threads: dict[str, list[str]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = _cli(capsys, redis_url, prefix, "restore", "t", "--at", threads["t"][1], "--into", "t2", "--json")

    assert code == 0 and json.loads(out)["checkpoints"] == 2
    saver = StreamSaver(client, prefix=prefix)
    restored = [c.config["configurable"]["checkpoint_id"] for c in saver.list(config("t2"))]
    assert restored == threads["t"][1::-1]
    latest = saver.get_tuple(config("t2"))
    assert latest is not None and latest.pending_writes == []  # logged after that checkpoint


def test_restore_at_a_checkpoint_the_thread_lacks_is_an_error(
    prefix: str, redis_url: str, threads: dict[str, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _cli(capsys, redis_url, prefix, "restore", "t", "--at", threads["u"][0], "--into", "t3")
    assert code == 1 and "has no checkpoint" in err


def test_replay_of_one_thread_rebuilds_it_and_leaves_the_others(
    client: redis.Redis, prefix: str, redis_url: str, threads: dict[str, list[str]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    before = snapshot(client, prefix)
    keyspace = Replayer.open(client, prefix).keyspace
    damaged = {thread: keyspace.thread(thread).per_checkpoint("full", "cp", "", threads[thread][0])
               for thread in ("t", "u")}
    client.execute_command("JSON.SET", damaged["t"], "$.step", "999")
    client.delete(damaged["u"])

    code, out, _ = _cli(capsys, redis_url, prefix, "replay", "--thread", "t", "--json")

    assert code == 0 and json.loads(out)["threads"] == 1
    after = snapshot(client, prefix)
    assert after == {k: v for k, v in before.items() if k != damaged["u"].encode()}


def test_replay_keep_reports_what_it_applied(
    client: redis.Redis, prefix: str, redis_url: str, threads: dict[str, list[str]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = _cli(capsys, redis_url, prefix, "replay", "--keep", "--view", "full")
    assert code == 0 and "applied 0 " in out  # nothing was missing

    client.hdel(Replayer.open(client, prefix).keyspace.thread("t").positions, "full")
    code, out, _ = _cli(capsys, redis_url, prefix, "replay", "--keep", "--view", "full", "--thread", "t", "--json")
    report = json.loads(out)
    assert code == 0 and report["events"] == 4 and report["applied"] == 4


def test_shadow_with_keep_is_a_usage_error(
    prefix: str, redis_url: str, threads: dict[str, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _cli(capsys, redis_url, prefix, "replay", "--shadow", "--keep")
    assert code == 2 and "--shadow" in err and "--keep" in err


@pytest.mark.parametrize("args", [[], ["--thread", "t"], ["--shadow"]], ids=["all", "thread", "shadow"])
def test_an_interrupted_replay_says_what_it_left_and_how_to_resume(
    prefix: str, redis_url: str, threads: dict[str, list[str]], capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch, args: list[str],
) -> None:
    def interrupt(*_: Any, **__: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(Replayer, "_fold", interrupt)

    code, _, err = _cli(capsys, redis_url, prefix, "replay", *args)

    assert code == 130
    if args == ["--shadow"]:
        assert "live views are whole" in err
    else:
        assert "partial" in err and "resume with: streamsaver replay --keep" in err
        assert ("--thread=t" in err) == bool(args)

"""``streamsaver drop``: the real command removes a deployment whole (logs, feeds and their
groups, views and indexes, store, worker state, scratch keys), asks first, and leaves a
deployment nested under its prefix and every other one untouched."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
import redis
from helpers import config, new_checkpoint

from streamsaver import StreamSaver
from streamsaver.cli.main import main
from streamsaver.memory.sync import StreamStore


def _deployment(client: redis.Redis, prefix: str, threads: int = 3) -> StreamSaver:
    saver = StreamSaver(client, prefix=prefix)
    saver.setup()
    for n in range(threads):
        checkpoint, versions = new_checkpoint({"n": n})
        saved = saver.put(config(f"t{n}"), checkpoint, {"step": n}, versions)
        saver.put_writes(saved, [("n", n + 1)], "task")
    store = StreamStore(client, prefix=prefix)
    store.setup()
    store.put(("users", "u1"), "k", {"text": "remember"})
    return saver


def _names(client: redis.Redis, prefix: str) -> tuple[set[str], set[str]]:
    keys = {k.decode() for k in client.scan_iter(match=f"{prefix}:*", count=1000)}
    indexes = {i.decode() if isinstance(i, bytes) else i for i in client.execute_command("FT._LIST")}
    return keys, {i for i in indexes if i.startswith(f"{prefix}:")}


def test_drop_removes_the_deployment_whole_and_leaves_the_others(
    client: redis.Redis, prefix: str, redis_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _deployment(client, prefix)
    client.xgroup_create(f"{prefix}:feed:{{p0}}", "audit", id="0", mkstream=True)
    client.set(f"{prefix}:shadow:log:{{p0}}:x", "scratch of an interrupted shadow rebuild")
    nested = _deployment(client, f"{prefix}:tenant2", threads=1)
    sibling = _deployment(client, f"{prefix}x", threads=1)
    nested_before, sibling_before = _names(client, f"{prefix}:tenant2"), _names(client, f"{prefix}x")

    code = main(["drop", "--yes", "--url", redis_url, "--prefix", prefix, "--json"])

    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["threads"] == 3 and report["kept_deployments"] == [f"{prefix}:tenant2"]
    assert report["removed_keys"] == report["keys"] > 3
    assert any(name.startswith(f"{prefix}:full:idx:") for name in report["indexes"])
    assert any(name.startswith(f"{prefix}:items:idx:") for name in report["indexes"])
    keys, indexes = _names(client, prefix)
    assert keys == nested_before[0] and indexes == nested_before[1]
    assert _names(client, f"{prefix}x") == sibling_before
    assert nested.get_tuple(config("t0")) is not None and sibling.get_tuple(config("t0")) is not None
    again = StreamSaver(client, prefix=prefix)
    again.setup()  # nothing left behind blocks a new deployment under the same prefix
    assert again.get_tuple(config("t0")) is None


def test_drop_asks_first_and_a_wrong_answer_or_no_terminal_removes_nothing(
    client: redis.Redis, prefix: str, redis_url: str, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _deployment(client, prefix, threads=1)
    before = _names(client, prefix)
    argv = ["drop", "--url", redis_url, "--prefix", prefix]

    monkeypatch.setattr("sys.stdin", io.StringIO(prefix + "\n"))  # not a terminal
    assert main(argv) == 2
    assert "--yes" in capsys.readouterr().err

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr("sys.stdin", Terminal("streamsaver\n"))
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "would remove" in err and "not confirmed" in err
    assert _names(client, prefix) == before

    monkeypatch.setattr("sys.stdin", Terminal(prefix + "\n"))
    assert main(argv) == 0
    assert "removed" in capsys.readouterr().out
    assert _names(client, prefix) == (set(), set())


def test_drop_of_nothing_says_so(prefix: str, redis_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["drop", "--yes", "--url", redis_url, "--prefix", prefix]) == 0
    assert "nothing under the prefix" in capsys.readouterr().out
    assert main(["drop", "--help"]) == 0
    help_text: Any = capsys.readouterr().out
    assert "cannot be undone" in help_text and "--yes" in help_text

"""A server killed in the middle of writing a script's effects to its AOF (the kernel cuts a write
at a page boundary when SIGKILL lands in it) restarts with neither half of that script, and the
writes acknowledged after the restart survive the next crash too.

Redis's own lenient load (``aof-load-truncated yes``) cut such a file inside the script's
``MULTI``; the restarted server appended after that open ``MULTI`` and the next load ran the torn
script's first half with them: `verify` found view keys unlike what the log gives (the flake of
``test_durability.py``, about 2 in 70 runs). `EmbeddedRedis` now refuses the lenient load and
cuts the file back to its last whole transaction (`streamsaver.server.aof_tail`). The tear is
made here by hand, at the place a page boundary puts it, so the test does not wait for luck.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import pytest
import redis
from helpers import config, new_checkpoint
from langgraph.checkpoint.base import Checkpoint

from streamsaver import StreamSaver
from streamsaver.ops.verify import verify
from streamsaver.server.embedded import EmbeddedRedis

pytestmark = pytest.mark.slow

PREFIX = "torn"
MULTI = b"*1\r\n$5\r\nMULTI\r\n"
EXEC = b"*1\r\n$4\r\nEXEC\r\n"


def _torn_in_last_command(data: bytes) -> bytes:
    """Every command of the last transaction whole but its last, which lacks its final byte
    (Redis's lenient load ran all but the positions hash: one key unlike the log)."""
    return data[: -len(EXEC) - 1]


def _torn_after_the_log_entry(data: bytes) -> bytes:
    """The last transaction's first command (the log entry's XADD) whole, the next cut in its
    header (the lenient load ran the log entry without its views)."""
    first = data.rindex(MULTI) + len(MULTI)
    second = data.index(b"\r\n*", first) + 2
    return data[: second + 3]


def _kill(server: EmbeddedRedis) -> None:
    assert server.process is not None
    server.process.kill()
    server.process.wait()
    server.stop()


def _incr_file(server: EmbeddedRedis) -> Path:
    (incr,) = (server.data_dir / "appendonlydir").glob("*.incr.aof")
    return incr


def _put_steps(url: str, thread: str, steps: range) -> list[tuple[str, str, int]]:
    """Put a checkpoint and its write per step (``durability="aof"``); returns what was acknowledged."""
    client = redis.Redis.from_url(url)
    saver, acked = StreamSaver(client, prefix=PREFIX, durability="aof"), []
    got = saver.get_tuple(config(thread))
    previous: Checkpoint | None = got.checkpoint if got else None
    for step in steps:
        checkpoint, versions = new_checkpoint({"step": step}, previous)
        saved = saver.put(config(thread, "", previous["id"] if previous else None), checkpoint, {}, versions)
        saver.put_writes(saved, [("step", step)], f"task-{step}")
        acked.append((thread, checkpoint["id"], step))
        previous = checkpoint
    client.close()
    return acked


def _assert_whole(url: str, acked: list[tuple[str, str, int]]) -> None:
    client = redis.Redis.from_url(url)
    saver = StreamSaver(client, prefix=PREFIX)
    for thread, cid, step in acked:
        got = saver.get_tuple(config(thread, "", cid))
        assert got is not None, f"acknowledged {cid} of {thread} lost"
        assert (f"task-{step}", "step", step) in got.pending_writes
    report = verify(client, PREFIX)
    client.close()
    assert report.matches, report.differences


@pytest.mark.parametrize("tear", [_torn_in_last_command, _torn_after_the_log_entry])
def test_a_torn_script_in_the_aof_is_dropped_whole_and_later_writes_survive(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, tear: Callable[[bytes], bytes]
) -> None:
    server = EmbeddedRedis(tmp_path / "data", extra_args=["--appendfsync", "always"]).start()
    try:
        StreamSaver(redis.Redis.from_url(server.url), prefix=PREFIX).setup()
        acked = _put_steps(server.url, "before", range(3))
        _kill(server)
        # The crash: the last script's effects (the last put_writes) written in part.
        incr = _incr_file(server)
        data = incr.read_bytes()
        assert data.endswith(EXEC)
        incr.write_bytes(tear(data))
        thread, put_only, _ = acked.pop()  # that put_writes was never acknowledged; its put was

        with caplog.at_level(logging.WARNING, logger="streamsaver.server"):
            server = EmbeddedRedis(server.data_dir, port=server.port, extra_args=server.extra_args).start()
        assert any("torn write" in r.message for r in caplog.records)
        got = StreamSaver(redis.Redis.from_url(server.url), prefix=PREFIX).get_tuple(config(thread, "", put_only))
        assert got is not None and got.pending_writes == []
        _assert_whole(server.url, acked)
        acked += _put_steps(server.url, "after", range(4))
        _kill(server)

        server = EmbeddedRedis(server.data_dir, port=server.port, extra_args=server.extra_args).start()
        _assert_whole(server.url, acked)
    finally:
        server.stop()

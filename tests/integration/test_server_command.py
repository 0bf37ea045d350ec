"""``streamsaver server`` runs the embedded Redis in the foreground: it prints a URL where a
server with the search and JSON modules answers, keeps its data in --data-dir across restarts,
and a Ctrl-C (SIGINT) or SIGTERM stops it cleanly with exit code 0."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import redis

from streamsaver import StreamSaver
from streamsaver.server.embedded import free_port
from tests.helpers import config, new_checkpoint


def _command(*args: str) -> list[str]:
    """``python -m streamsaver`` with `args`, Ctrl-C raising KeyboardInterrupt as in a terminal.

    A process inherits an ignored SIGINT, and Python keeps it ignored: a suite started in the
    background of a non-interactive shell (or under nohup) had every Ctrl-C here ignored, and
    the test waited 30 s for a server that never stopped."""
    run = ("import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
           "sys.argv[0] = 'streamsaver'; runpy.run_module('streamsaver', run_name='__main__')")
    return [sys.executable, "-c", run, *args]


@contextmanager
def _server(data_dir: Path, port: int) -> Iterator[tuple[subprocess.Popen[str], str]]:
    process = subprocess.Popen(
        _command("server", "--port", str(port), "--data-dir", str(data_dir)),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()  # blocks until the server answers, or the command fails
        assert f"redis://127.0.0.1:{port}/0" in first, first + process.stderr.read() if process.stderr else first
        yield process, f"redis://127.0.0.1:{port}/0"
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_the_server_serves_a_saver_keeps_its_data_and_stops_cleanly(tmp_path: Path, stop: signal.Signals) -> None:
    port = free_port()
    with _server(tmp_path, port) as (process, url):
        with StreamSaver.from_conn_string(url) as saver:
            saver.setup()
            checkpoint, versions = new_checkpoint({"messages": ["kept across restarts"]})
            saved = saver.put(config("t1"), checkpoint, {"source": "input", "step": -1}, versions)
        process.send_signal(stop)
        assert process.wait(timeout=30) == 0
        assert process.stdout is not None and "stopping" in process.stdout.read()
    with pytest.raises(redis.ConnectionError):
        redis.Redis(port=port, socket_connect_timeout=1).ping()
    with _server(tmp_path, port) as (process, url), StreamSaver.from_conn_string(url) as saver:
        found = saver.get_tuple(saved)
        assert found is not None and found.checkpoint["channel_values"] == {"messages": ["kept across restarts"]}
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 0


def test_a_port_already_served_is_a_one_line_error(tmp_path: Path) -> None:
    port = free_port()
    with _server(tmp_path / "a", port) as (first, _url):
        second = subprocess.run(
            _command("server", "--port", str(port), "--data-dir", str(tmp_path / "b")),
            capture_output=True, text=True, timeout=60, check=False,
        )
        assert second.returncode == 1
        assert second.stderr.startswith("streamsaver: error:") and str(port) in second.stderr
        assert first.poll() is None, "the running server is untouched"
        first.send_signal(signal.SIGINT)
        assert first.wait(timeout=30) == 0

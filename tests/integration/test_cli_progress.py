"""``--progress``: the real commands report their phases (verify's fold and compare), stay
quiet with ``never``, and a long-running worker says it started and how it is doing."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import pytest
import redis
from helpers import config, new_checkpoint

from streamsaver import StreamSaver
from streamsaver.cli.commands._running import status_lines
from streamsaver.cli.main import main
from streamsaver.ops.progress import set_mode


@pytest.fixture(autouse=True)
def auto_again() -> object:
    yield None
    set_mode("auto")


def _threads(client: redis.Redis, prefix: str) -> None:
    saver = StreamSaver(client, prefix=prefix)
    saver.setup()
    for n in range(5):
        checkpoint, versions = new_checkpoint({"n": n})
        saver.put(config(f"t{n}"), checkpoint, {"step": n}, versions)


def test_verify_reports_its_fold_and_compare_phases_and_never_silences_them(
    client: redis.Redis, prefix: str, redis_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _threads(client, prefix)

    assert main(["--progress", "always", "verify", "--url", redis_url, "--prefix", prefix]) == 0
    err = capsys.readouterr().err.splitlines()
    assert main(["--progress", "never", "verify", "--url", redis_url, "--prefix", prefix]) == 0
    quiet = capsys.readouterr().err

    assert any(line.startswith("events folded: 5/5 (100%)") for line in err)
    assert any(line.startswith("keys compared: ") for line in err)
    assert quiet == ""


def test_a_projector_worker_says_it_started(
    client: redis.Redis, prefix: str, redis_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _threads(client, prefix)

    assert main(["project", "--view", "shallow", "--burst", "--url", redis_url, "--prefix", prefix]) == 0

    err = capsys.readouterr().err
    assert "projector worker" in err and "keeping shallow of" in err and "until the feeds are drained" in err


@dataclass
class Counts:
    read: int = 0
    applied: int = 0


def test_status_lines_report_the_running_counts(capsys: pytest.CaptureFixture[str]) -> None:
    asked = threading.Event()
    counts = Counts(read=1200, applied=1199)

    def running() -> Counts:
        asked.set()
        return counts

    with status_lines("worker w1", running, every=0.001):
        assert asked.wait(timeout=30)

    first = capsys.readouterr().err.splitlines()[0]
    assert first.startswith("worker w1: read 1,200, applied 1,199 (")

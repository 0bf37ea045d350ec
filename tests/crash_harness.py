"""Writers forked from the test process and SIGKILLed at random instants: the harness of the crash
tests (checkpoint writers in tests/integration/test_writer_crash.py, store writers in
tests/store/test_store_writer_crash.py).

A fork costs no interpreter start-up, so hundreds of kills take seconds. Each writer records its
acknowledgements, one line per call that returned, in a file of its own under `acks`."""

from __future__ import annotations

import os
import random
import signal
import time
from collections.abc import Callable
from pathlib import Path

KILLS = int(os.environ.get("STREAMSAVER_CRASH_KILLS", "240"))


def _spawn(write_forever: Callable[[int, Path], None], n: int, acks: Path) -> int:
    pid = os.fork()
    if pid == 0:  # the child never returns into pytest
        code = 0
        try:
            write_forever(n, acks)
        except BaseException:  # noqa: BLE001 - any failure must end the child, not pytest
            code = 1
        finally:
            os._exit(code)
    return pid


def kill_writers(write_forever: Callable[[int, Path], None], acks: Path, rng: random.Random,
                 delay: tuple[float, float]) -> int:
    """KILLS writers, writer n running ``write_forever(n, acks / str(n))``, each SIGKILLed after a
    random delay within `delay` seconds; how many were still running (so killed mid-work) when
    the signal came. A writer that failed on its own fails the test."""
    killed_running = 0
    for n in range(KILLS):
        pid = _spawn(write_forever, n, acks / str(n))
        time.sleep(rng.uniform(*delay))  # the random moment of the kill, not a wait
        exited, status = os.waitpid(pid, os.WNOHANG)
        if exited == 0:
            os.kill(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
            killed_running += 1
        assert not (os.WIFEXITED(status) and os.WEXITSTATUS(status) != 0), f"writer {n} failed"
    return killed_running


def acknowledge(acks: Path) -> Callable[[str], None]:
    """A writer's way to acknowledge: one line, one write(2) to its own file."""
    fd = os.open(acks, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def ack(line: str) -> None:
        os.write(fd, f"{line}\n".encode())

    return ack


def complete_lines(acks: Path) -> list[str]:
    """The acknowledgements in the writers' files: whole lines only. A kill can cut a write(2) to
    a file where it crosses a page boundary, leaving a line without its end (that call's
    acknowledgement is then not counted); in one shared file the next writer's line would have
    joined it."""
    return [line for file in sorted(acks.iterdir()) for line in file.read_text().split("\n")[:-1]]

"""How progress shows in each ``--progress`` mode: a redrawn line on a terminal, periodic plain
status lines elsewhere (none for a short run), always lines with a final one, or nothing."""

from __future__ import annotations

import io
from collections.abc import Iterator

import pytest

from streamsaver.ops import progress
from streamsaver.ops.progress import Progress, set_mode


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def restore_mode() -> Iterator[None]:
    yield
    set_mode("auto")


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """A clock the test moves (Progress reads time.monotonic)."""
    now = [1000.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: now[0])
    return now


def _run(stream: io.StringIO, clock: list[float], seconds: float, steps: int = 4) -> str:
    with Progress("events", total=steps, stream=stream) as bar:
        for _ in range(steps):
            clock[0] += seconds / steps
            bar.advance()
    return stream.getvalue()


def test_auto_redraws_one_line_on_a_terminal(clock: list[float]) -> None:
    out = _run(Terminal(), clock, 2.0)
    assert "\r" in out and out.endswith("\n") and "events: 4/4 (100%)" in out


def test_auto_elsewhere_prints_a_status_line_every_ten_seconds_and_nothing_for_a_short_run(
    clock: list[float],
) -> None:
    assert _run(io.StringIO(), clock, 2.0) == ""
    lines = _run(io.StringIO(), clock, 45.0).splitlines()
    assert len(lines) == 5 and all("\r" not in line for line in lines)  # 4 periodic + the final one
    assert lines[-1].startswith("events: 4/4 (100%)")


def test_always_prints_a_final_line_even_for_a_short_run_and_never_prints_nothing(clock: list[float]) -> None:
    set_mode("always")
    assert _run(Terminal(), clock, 1.0).splitlines() == ["events: 4/4 (100%) 4/s (1s)"]
    set_mode("never")
    assert _run(Terminal(), clock, 60.0) == ""


def test_an_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="auto, always, never"):
        set_mode("sometimes")

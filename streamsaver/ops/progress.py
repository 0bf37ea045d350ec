"""Progress of long work, on stderr: count, rate and ETA.

How it shows depends on the process-wide mode (`set_mode`, the CLI's ``--progress``):

* ``auto`` (default): on a terminal, one line redrawn at most five times a second; elsewhere
  (a log file, a pipe, a container's output) a plain status line every `STATUS_EVERY_S`
  seconds, so a short command prints nothing and a long one says it is alive;
* ``always``: plain status lines every `STATUS_EVERY_S` seconds (on a terminal too), and a
  final one even for a short command;
* ``never``: nothing.

A `Progress` made with ``enabled=False`` (e.g. for ``--json`` output) draws nothing whatever
the mode; ``enabled=True`` draws the redrawn line whatever the mode.

    with Progress("replay", total=events) as bar:
        for page in pages:
            bar.advance(len(page))
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["MODES", "STATUS_EVERY_S", "Phases", "Progress", "mode", "set_mode"]

MODES = ("auto", "always", "never")
STATUS_EVERY_S = 10.0
_settings = {"mode": "auto"}


def set_mode(mode: str) -> None:
    """Choose how every later `Progress` shows (one of `MODES`).

    Raises:
        ValueError: an unknown mode.
    """
    if mode not in MODES:
        raise ValueError(f"progress mode must be one of {', '.join(MODES)}, not {mode!r}")
    _settings["mode"] = mode


def mode() -> str:
    """The mode `set_mode` chose (``auto`` unless changed)."""
    return _settings["mode"]


def _style(enabled: bool | None, tty: bool) -> str:
    """``redraw``, ``lines``, ``final-lines`` (lines, and a final line always) or ``off``."""
    if enabled is not None:
        return "redraw" if enabled else "off"
    if _settings["mode"] == "never":
        return "off"
    if _settings["mode"] == "always":
        return "final-lines"
    return "redraw" if tty else "lines"


class Progress:
    """A one-line progress display.

    Args:
        label: what is being counted, e.g. ``"events"``.
        total: the expected count, for a percentage and an ETA; None when unknown.
        stream: where to draw (default stderr).
        enabled: force the redrawn line on, or everything off; default: as the mode says.
    """

    def __init__(
        self, label: str, total: int | None = None, *, stream: TextIO | None = None, enabled: bool | None = None
    ) -> None:
        self.label = label
        self.total = total
        self.stream = stream or sys.stderr
        self.style = _style(enabled, self.stream.isatty())
        self.enabled = self.style != "off"
        self.done = 0
        self._start = time.monotonic()
        self._drawn = 0.0 if self.style == "redraw" else self._start
        self._lines = 0

    def advance(self, count: int = 1) -> None:
        """Count `count` more units of work."""
        self.done += count
        now = time.monotonic()
        if self.style == "redraw" and now - self._drawn >= 0.2:
            self._drawn = now
            self._draw(now)
        elif self.style in ("lines", "final-lines") and now - self._drawn >= STATUS_EVERY_S:
            self._drawn = now
            self._status(now)

    def line(self, now: float | None = None) -> str:
        """The current progress line."""
        elapsed = max((now or time.monotonic()) - self._start, 1e-9)
        rate = self.done / elapsed
        text = f"{self.label}: {self.done:,}"
        if self.total:
            text += f"/{self.total:,} ({100 * self.done / self.total:.0f}%)"
        text += f" {rate:,.0f}/s"
        if self.total and rate > 0 and self.done < self.total:
            text += f" ETA {(self.total - self.done) / rate:.0f}s"
        return text

    def _status(self, now: float) -> None:
        elapsed = now - self._start
        self.stream.write(f"{self.line(now)} ({elapsed:.0f}s)\n")
        self.stream.flush()
        self._lines += 1

    def _draw(self, now: float) -> None:
        self.stream.write("\r" + self.line(now) + "\x1b[K")
        self.stream.flush()

    def close(self) -> None:
        """Draw the final line and end it (status lines: a final one when any was printed, or
        always in the ``always`` mode)."""
        if self.style == "redraw":
            self._draw(time.monotonic())
            self.stream.write("\n")
            self.stream.flush()
        elif self.style == "final-lines" or (self.style == "lines" and self._lines):
            self._status(time.monotonic())

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class Phases:
    """Progress of work in phases (fold, then compare, ...): one `Progress` at a time, the
    previous one closed when the next phase counts its first unit.

        with Phases(enabled=None) as phases:
            verify(..., progress=phases.counter("events", total), compared=phases.counter("keys compared"))
    """

    def __init__(self, *, enabled: bool | None = None, stream: TextIO | None = None) -> None:
        self.enabled, self.stream = enabled, stream
        self.current: Progress | None = None

    def counter(self, label: str, total: int | None = None) -> Callable[[int], None]:
        """A progress callback for the phase `label` (opens its display on first use)."""

        def advance(count: int = 1) -> None:
            if self.current is None or self.current.label != label:
                self.close()
                self.current = Progress(label, total, stream=self.stream, enabled=self.enabled)
            self.current.advance(count)

        return advance

    def close(self) -> None:
        """Close the current phase's display."""
        if self.current is not None:
            self.current.close()
            self.current = None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

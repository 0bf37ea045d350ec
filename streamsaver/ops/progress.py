"""Progress of long work, on stderr: count, rate and ETA, redrawn at most five times a second.

Silent when stderr is not a terminal (or when disabled, e.g. for ``--json`` output), so logs
and pipes stay clean.

    with Progress("replay", total=events) as bar:
        for page in pages:
            bar.advance(len(page))
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["Progress"]


class Progress:
    """A one-line progress display.

    Args:
        label: what is being counted, e.g. ``"events"``.
        total: the expected count, for a percentage and an ETA; None when unknown.
        stream: where to draw (default stderr).
        enabled: force on or off; default: on when `stream` is a terminal.
    """

    def __init__(
        self, label: str, total: int | None = None, *, stream: TextIO | None = None, enabled: bool | None = None
    ) -> None:
        self.label = label
        self.total = total
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.done = 0
        self._start = time.monotonic()
        self._drawn = 0.0

    def advance(self, count: int = 1) -> None:
        """Count `count` more units of work."""
        self.done += count
        now = time.monotonic()
        if self.enabled and now - self._drawn >= 0.2:
            self._drawn = now
            self._draw(now)

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

    def _draw(self, now: float) -> None:
        self.stream.write("\r" + self.line(now) + "\x1b[K")
        self.stream.flush()

    def close(self) -> None:
        """Draw the final line and end it."""
        if self.enabled:
            self._draw(time.monotonic())
            self.stream.write("\n")
            self.stream.flush()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

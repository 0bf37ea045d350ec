"""Plain-text output for the demo: section titles, short aligned tables, one-line notes."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

__all__ = ["Show", "short_id"]

_WIDTH = 96
_CELL = 44


def short_id(checkpoint_id: str | None) -> str:
    """The last 8 characters of a checkpoint id (the random part of a uuid6), or ``-``."""
    return f"..{checkpoint_id[-8:]}" if checkpoint_id else "-"


def _cell(value: Any) -> str:
    text = "-" if value is None or value == "" else str(value)
    return text if len(text) <= _CELL else text[: _CELL - 3] + "..."


@dataclass
class Show:
    """Writes the demo's output to `out`."""

    out: TextIO

    def title(self, text: str) -> None:
        """A section title, set off by a blank line and a rule."""
        self.out.write(f"\n== {text} " + "=" * max(3, _WIDTH - len(text) - 4) + "\n")

    def say(self, text: str = "") -> None:
        """One line of prose."""
        self.out.write(f"{text}\n")

    def table(self, headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        """An aligned table, indented by two spaces; long cells are cut to 48 characters."""
        cells = [[_cell(v) for v in row] for row in rows]
        widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
        for row in [list(headers), ["-" * w for w in widths], *cells]:
            self.out.write(
                "  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() + "\n"
            )

    def block(self, text: str) -> None:
        """A multi-line excerpt, indented by four spaces."""
        for line in text.splitlines():
            self.out.write(f"    {line}\n")

"""Aligned text tables for command output."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Sequence

__all__ = ["fitted_widths", "table", "terminal_width"]


_GAP = 2
_NARROWEST = 6


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 3, 0)] + "..."


def fitted_widths(
    natural: Sequence[int], headers: Sequence[str], width: int | None, flexible: Sequence[int] = ()
) -> list[int]:
    """Column widths that fit in `width` characters (None: no limit). The `flexible` columns
    are narrowed first, in their order, each down to a few characters; then, if the row is still
    too wide, the widest of all, down to its header's width."""
    widths = list(natural)
    if width is None:
        return widths

    def excess() -> int:
        return sum(widths) + _GAP * (len(widths) - 1) - width

    for i in flexible:
        widths[i] -= max(0, min(excess(), widths[i] - min(widths[i], _NARROWEST)))
    floors = [min(n, max(len(h), _NARROWEST)) for n, h in zip(widths, headers, strict=True)]
    while excess() > 0:
        room = [(w - f, i) for i, (w, f) in enumerate(zip(widths, floors, strict=True)) if w > f]
        if not room:
            break
        widths[max(room)[1]] -= 1
    return widths


def table(
    headers: Sequence[str], rows: Sequence[Sequence[object]], *, max_width: int = 48, width: int | None = None,
    flexible: Sequence[int] = (),
) -> str:
    """`rows` under `headers`, columns padded to their widest cell (cut at `max_width`), the
    `flexible` ones first (`fitted_widths`) narrowed further so that a line fits in `width` (None: no limit)."""
    text = [[" ".join(str(c).split()) for c in row] for row in rows]
    natural = [min(max([len(h), *(len(r[i]) for r in text)]), max_width) for i, h in enumerate(headers)]
    widths = fitted_widths(natural, headers, width, flexible)
    cells = [[_cut(c, w) for c, w in zip(row, widths, strict=True)] for row in text]
    headers = [_cut(h, w) for h, w in zip(headers, widths, strict=True)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)), "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in cells]
    return "\n".join(line.rstrip() for line in lines)


def terminal_width() -> int | None:
    """The terminal's width when stdout is one (None for a pipe or a file: nothing is cut)."""
    return shutil.get_terminal_size().columns if sys.stdout.isatty() else None

"""Aligned text tables for command output."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["table"]


def table(headers: Sequence[str], rows: Sequence[Sequence[object]], *, max_width: int = 48) -> str:
    """`rows` under `headers`, columns padded to their widest cell (cut at `max_width`)."""
    cells = [[str(c) if len(str(c)) <= max_width else str(c)[: max_width - 3] + "..." for c in row] for row in rows]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)), "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in cells]
    return "\n".join(line.rstrip() for line in lines)

"""Statistics and Markdown tables. Pure: samples in, text out."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

__all__ = ["Column", "Row", "micro_tables", "paired_ratios", "ratio", "table"]


@dataclass(frozen=True)
class Row:
    """One saver's results: seconds per op, wrong answers per op, bytes stored."""

    name: str
    samples: Mapping[str, Sequence[float]]
    failures: Mapping[str, int]
    stored_bytes: int | None


Column = Callable[[Sequence[float]], float]


def p99(values: Sequence[float]) -> float:
    """The nearest-rank 99th percentile."""
    ordered = sorted(values)
    return ordered[max(math.ceil(0.99 * len(ordered)) - 1, 0)]


def ratio(value: float | None, base: float | None, fmt: str = "{:.3f}", scale: float = 1.0) -> str:
    """`value` (times `scale`, formatted) with its ratio to `base`; "—" when not measured."""
    if value is None:
        return "—"
    text = fmt.format(value * scale)
    return f"{text} ({value / base:.2f}x)" if base else text


def table(header: Sequence[str], body: Sequence[Sequence[str]]) -> list[str]:
    """A Markdown table, first column left-aligned, the others right-aligned."""
    return _table(header, body)


def _table(header: Sequence[str], body: Sequence[Sequence[str]]) -> list[str]:
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|",
    ]
    return lines + ["| " + " | ".join(row) + " |" for row in body]


def _cell(value: float, base: float) -> str:
    return f"{value * 1000:.3f} ({value / base:.2f}x)" if base > 0 else f"{value * 1000:.3f}"


def _latency_table(rows: Sequence[Row], ops: Sequence[str], stat: Column) -> list[str]:
    base = {op: stat(rows[0].samples[op]) for op in ops}
    body = [[row.name, *(_cell(stat(row.samples[op]), base[op]) for op in ops)] for row in rows]
    return _table(["saver", *ops], body)


def _size(value: int | None) -> str:
    return "n/a" if value is None else f"{value / 2**20:.1f} MiB"


def _other_table(rows: Sequence[Row], ops: Sequence[str]) -> list[str]:
    body = []
    for row in rows:
        wrong = (
            ", ".join(f"{op}: {row.failures[op]}" for op in ops if row.failures.get(op)) or "none"
        )
        body.append([row.name, _size(row.stored_bytes), wrong])
    return _table(["saver", "data stored at the end", "wrong results"], body)


def micro_tables(rows: Sequence[Row], ops: Sequence[str]) -> list[str]:
    """Medians and p99s in ms with ratios to the first row, then storage and checks."""
    lines: list[str] = []
    for label, stat in (("Median", statistics.median), ("p99", p99)):
        lines += [f"#### {label} latency, ms (ratio to {rows[0].name})", ""]
        lines += [*_latency_table(rows, ops, stat), ""]
    lines += ["#### Storage and result checks", "", *_other_table(rows, ops)]
    return lines


def paired_ratios(rates: Sequence[float], base: Sequence[float]) -> list[float]:
    """The ratio of each round's rate to the base saver's rate in the same round.

    Raises:
        ValueError: the two lists have different lengths (not the same rounds).
    """
    if len(rates) != len(base):
        raise ValueError(f"{len(rates)} rates against {len(base)} base rates: not the same rounds")
    return [rate / other for rate, other in zip(rates, base, strict=True)]

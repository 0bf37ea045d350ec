"""Before/after statistics and their table. Pure: samples in, text out (no Redis, no saver).

A tree's samples of one op come in rounds; round k of the two trees ran back to back (A B, then
B A), so the load on the machine was about the same in both halves of a round. The ratio of a
round's two medians is therefore less noisy than the ratio of the two overall medians, which
mixes rounds of different load; the median of the per-round ratios is the headline, with a 95%
confidence interval (distribution-free: order statistics of the ratios) that says how well one
run knows it, and the middle half of the ratios says how far a single round strays.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from benchmarks.report import p99, paired_ratios, table

__all__ = [
    "Comparison",
    "Rounds",
    "compare",
    "comparison_table",
    "median_interval",
    "middle_half",
    "report",
    "split_rounds",
]

Rounds = list[dict[str, list[float]]]
"""One saver on one tree: per round, seconds per op."""


def split_rounds(samples: int, rounds: int) -> list[int]:
    """How many samples each round takes: `samples` spread over `rounds`, the first ones larger.

    Raises:
        ValueError: fewer samples than rounds (a round without samples has no median).
    """
    if rounds < 1 or samples < rounds:
        raise ValueError(f"{samples} samples cannot fill {rounds} rounds")
    base, extra = divmod(samples, rounds)
    return [base + (r < extra) for r in range(rounds)]


def middle_half(values: Sequence[float]) -> tuple[float, float]:
    """The first and third quartiles (inclusive method); a single value is its own range."""
    if len(values) < 2:
        return values[0], values[0]
    q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1, q3


def median_interval(values: Sequence[float], z: float = 1.96) -> tuple[float, float]:
    """A confidence interval of the median (95% with z = 1.96) from the order statistics alone:
    the values of ranks n/2 - z sqrt(n)/2 and 1 + n/2 + z sqrt(n)/2, clipped to the extremes."""
    ordered, half = sorted(values), z * math.sqrt(len(values)) / 2
    low = max(math.floor(len(values) / 2 - half) - 1, 0)
    high = min(math.ceil(1 + len(values) / 2 + half) - 1, len(values) - 1)
    return ordered[low], ordered[high]


@dataclass(frozen=True)
class Comparison:
    """One op of one saver, before and after: seconds, and ratios after / before."""

    op: str
    before_median: float
    before_p99: float
    after_median: float
    after_p99: float
    ratio_of_medians: float
    round_ratio: float
    round_interval: tuple[float, float]
    round_spread: tuple[float, float]


def compare(
    op: str, before: Sequence[Sequence[float]], after: Sequence[Sequence[float]]
) -> Comparison:
    """Compare one op's samples, given per round for each tree (the same rounds, in order).

    Raises:
        ValueError: the trees ran a different number of rounds.
    """
    ratios = paired_ratios(
        [statistics.median(r) for r in after], [statistics.median(r) for r in before]
    )
    all_before = [s for r in before for s in r]
    all_after = [s for r in after for s in r]
    return Comparison(
        op,
        statistics.median(all_before),
        p99(all_before),
        statistics.median(all_after),
        p99(all_after),
        statistics.median(all_after) / statistics.median(all_before),
        statistics.median(ratios),
        median_interval(ratios),
        middle_half(ratios),
    )


def comparison_table(rows: Sequence[Comparison]) -> list[str]:
    """A Markdown table: ms per op for each tree, and the ratios after / before."""
    header = [
        "op",
        "before median",
        "after median",
        "before p99",
        "after p99",
        "after/before, medians",
        "after/before, per round: median [95% CI]",
        "per round: middle half",
    ]
    body = [
        [
            row.op,
            f"{row.before_median * 1000:.3f}",
            f"{row.after_median * 1000:.3f}",
            f"{row.before_p99 * 1000:.3f}",
            f"{row.after_p99 * 1000:.3f}",
            f"{row.ratio_of_medians:.3f}",
            f"**{row.round_ratio:.3f}** [{row.round_interval[0]:.3f}, {row.round_interval[1]:.3f}]",
            f"{row.round_spread[0]:.3f}-{row.round_spread[1]:.3f}",
        ]
        for row in rows
    ]
    return table(header, body)


def report(
    title: str, head: list[str], sections: dict[str, tuple[Rounds, Rounds]], ops: Sequence[str]
) -> list[str]:
    """The Markdown report: `head`, then a table of `ops` per section's (before, after) rounds."""
    lines = [title, "", *head]
    for name, (before, after) in sections.items():
        rows = [compare(op, [r[op] for r in before], [r[op] for r in after]) for op in ops]
        lines += ["", f"## {name}", "", *comparison_table(rows)]
    return [*lines, ""]

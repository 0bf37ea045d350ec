"""The e2e benchmark's ratio: per round, against the base saver's rate in the same round."""

from __future__ import annotations

import statistics

import pytest

from benchmarks.report import paired_ratios  # pure: importable without the bench extras


def test_a_ratio_pairs_each_round_with_the_same_rounds_base() -> None:
    # The machine's speed changes from round to round; within a round both savers see the same.
    base = [500.0, 250.0, 400.0, 100.0]
    within = [0.9, 0.8, 1.0, 0.9]
    rates = [b * r for b, r in zip(base, within, strict=True)]
    ratios = paired_ratios(rates, base)
    assert ratios == pytest.approx(within)
    assert statistics.median(ratios) == pytest.approx(0.9)
    # The ratio of the medians is not the pairing's: it mixes rounds of different load.
    assert statistics.median(rates) / statistics.median(base) != pytest.approx(0.9, abs=0.01)


def test_rounds_must_match() -> None:
    with pytest.raises(ValueError, match="not the same rounds"):
        paired_ratios([1.0, 2.0], [1.0])

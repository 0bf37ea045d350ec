"""The e2e benchmark's ratio: per round, against the base saver's rate in the same round."""

from __future__ import annotations

import statistics

import pytest

from benchmarks.e2e import paired_ratios


def test_a_ratio_pairs_each_round_with_the_same_rounds_base() -> None:
    # The machine slows down over the rounds: both savers' rates fall, their ratio stays.
    base = [500.0, 250.0, 400.0, 100.0]
    rates = [b * 0.9 for b in base]
    ratios = paired_ratios(rates, base)
    assert ratios == pytest.approx([0.9] * 4)
    # The ratio of the medians is not the pairing's: it mixes rounds of different load.
    assert statistics.median(rates) / statistics.median(base) == pytest.approx(0.9)
    assert statistics.median(ratios) == pytest.approx(0.9)


def test_rounds_must_match() -> None:
    with pytest.raises(ValueError, match="not the same rounds"):
        paired_ratios([1.0, 2.0], [1.0])

"""The before/after benchmark's statistics: rounds paired across the two trees."""

from __future__ import annotations

import pytest

from benchmarks.ab_report import (
    compare,
    comparison_table,
    median_interval,
    middle_half,
    split_rounds,
)


def test_samples_spread_over_rounds_first_rounds_larger() -> None:
    assert split_rounds(10, 3) == [4, 3, 3]
    assert sum(split_rounds(400, 20)) == 400
    with pytest.raises(ValueError, match="cannot fill"):
        split_rounds(2, 3)


def test_middle_half_is_the_quartiles() -> None:
    assert middle_half([1.0, 2.0, 3.0, 4.0, 5.0]) == (2.0, 4.0)
    assert middle_half([0.97]) == (0.97, 0.97)


def test_the_median_interval_takes_order_statistics_around_the_middle() -> None:
    values = [float(v) for v in range(80, 0, -1)]  # order does not matter
    assert median_interval(values) == (31.0, 50.0)  # ranks 31 and 50 of 80
    assert median_interval([5.0, 1.0, 3.0]) == (1.0, 5.0)  # few values: the extremes
    assert median_interval([0.97]) == (0.97, 0.97)


def test_a_round_ratio_pairs_each_round_with_the_same_round_of_the_other_tree() -> None:
    # The machine slows down round by round; within a round both trees see the same speed, and
    # the after tree is 10% slower in every round.
    load = [1.0, 2.0, 3.0]
    before = [[0.001 * f, 0.002 * f, 0.003 * f] for f in load]
    after = [[s * 1.1 for s in r] for r in before]
    got = compare("put", before, after)
    assert got.round_ratio == pytest.approx(1.1)
    assert got.round_spread == pytest.approx((1.1, 1.1))
    assert got.round_interval == pytest.approx((1.1, 1.1))
    assert got.before_median == pytest.approx(0.003)  # pooled: 1 2 2 3 [3] 4 6 6 9 ms
    assert got.after_median == pytest.approx(0.0033)
    assert got.ratio_of_medians == pytest.approx(1.1)
    assert got.before_p99 == pytest.approx(0.009)


def test_a_round_ratio_is_not_the_ratio_of_the_pooled_medians() -> None:
    # A tree that got the quiet halves of uneven rounds looks faster pooled than it is.
    before = [[1.0], [1.0], [5.0]]
    after = [[1.0], [5.0], [5.0]]
    got = compare("get_tuple", before, after)
    assert got.round_ratio == pytest.approx(1.0)
    assert got.ratio_of_medians == pytest.approx(5.0)


def test_trees_must_have_run_the_same_rounds() -> None:
    with pytest.raises(ValueError, match="not the same rounds"):
        compare("list", [[1.0], [1.0]], [[1.0]])


def test_the_table_has_one_row_per_op_in_ms() -> None:
    rows = [compare("put", [[0.001]], [[0.00102]])]
    lines = comparison_table(rows)
    assert len(lines) == 3
    assert lines[2].startswith("| put | 1.000 | 1.020 |")
    assert lines[2].endswith("| **1.020** [1.020, 1.020] | 1.020-1.020 |")

"""Unit tests of scoring.bootstrap that pin every field of the returned intervals.

Written against surviving mutants of ``make mutation`` (bench/RESULTS.md): an interval that
records the wrong seed or resample count cannot be reproduced from what the report prints.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from scopebench.scoring.bootstrap import (
    CI_METHOD,
    DEGENERATE,
    Interval,
    bootstrap_ci,
    paired_diff_ci,
    stratified_macro_ci,
    stratified_mean_ci,
)


def test_stratified_mean_ci_of_nothing_is_nan_and_records_its_settings() -> None:
    iv = stratified_mean_ci([[], []], seed=7, resamples=50)
    assert math.isnan(iv.low) and math.isnan(iv.high)
    assert (iv.method, iv.resamples, iv.seed) == (DEGENERATE, 50, 7)


def test_constant_strata_give_the_point_as_a_degenerate_interval() -> None:
    # A one-value class and a class whose two values are equal: nothing to resample.
    # Point = mean(0.5, 0.2) = 0.35.
    iv = stratified_mean_ci([[0.5], [0.2, 0.2]], seed=3, resamples=40)
    assert iv == Interval(0.35, 0.35, DEGENERATE, 40, 3)


def test_one_varying_stratum_is_resampled_and_the_settings_recorded() -> None:
    iv = stratified_mean_ci([[0.5], [0.0, 1.0]], seed=11, resamples=200)
    assert (iv.method, iv.resamples, iv.seed) == ("stratified-" + CI_METHOD, 200, 11)
    # Point 0.5 + 0.5 over 2 = 0.5; the second class's resampled mean is 0, 0.5 or 1, so the
    # macro mean is 0.25, 0.5 or 0.75, and 200 draws reach both ends (each has p = 1/4).
    assert (iv.low, iv.high) == (0.25, 0.75)


def _percentile_bootstrap_by_hand(x: np.ndarray, seed: int, resamples: int) -> tuple[float, float]:
    """The textbook percentile bootstrap: resample n of n with replacement, 2.5th/97.5th percentile."""
    draws = np.random.default_rng(seed).integers(0, x.size, size=(resamples, x.size))
    lo, hi = np.percentile(x[draws].mean(axis=1), [2.5, 97.5])
    return float(lo), float(hi)


def test_bootstrap_ci_is_the_percentile_interval_of_the_resampled_means() -> None:
    x = np.array([1.0] * 7 + [0.0] * 5)
    iv = bootstrap_ci(x, seed=5, resamples=1000)
    # 4 of 12 and 10 of 12 correct: the 2.5th and 97.5th percentiles of the 1000 resampled means
    # (a BCa or basic interval from the same draws would differ).
    assert (iv.low, iv.high) == _percentile_bootstrap_by_hand(x, 5, 1000) == (4 / 12, 10 / 12)
    assert (iv.method, iv.resamples, iv.seed) == (CI_METHOD, 1000, 5)


def test_bootstrap_ci_of_a_large_sample_is_drawn_in_batches_with_the_same_result() -> None:
    # 2,400 items x 1000 resamples exceed the 2M-element batch budget: scipy gets batch 833, which
    # must be an int (scipy refuses 833.33) and must not change the draws.
    x = np.zeros(2400)
    x[:1440] = 1.0
    iv = bootstrap_ci(x, seed=2, resamples=1000)
    assert (iv.low, iv.high) == _percentile_bootstrap_by_hand(x, 2, 1000)
    assert iv.low < 0.6 < iv.high


def test_bootstrap_ci_of_nothing_or_of_a_constant_records_its_settings() -> None:
    iv = bootstrap_ci([], seed=9, resamples=20)
    assert math.isnan(iv.low) and math.isnan(iv.high)
    assert (iv.method, iv.resamples, iv.seed) == (DEGENERATE, 20, 9)
    assert bootstrap_ci([1.0, 1.0], seed=9, resamples=20) == Interval(1.0, 1.0, DEGENERATE, 20, 9)


def test_stratified_macro_ci_of_empty_strata_is_nan_and_records_its_settings() -> None:
    iv = stratified_macro_ci([(0, 0), (0, 0)], seed=6, resamples=25)
    assert math.isnan(iv.low) and math.isnan(iv.high)
    assert (iv.method, iv.resamples, iv.seed) == (DEGENERATE, 25, 6)


def test_stratified_macro_ci_records_its_settings() -> None:
    # All-or-nothing tasks: nothing varies, the point (1 + 0) / 2 is the interval.
    assert stratified_macro_ci([(2, 2), (0, 3)], seed=6, resamples=25) == Interval(
        0.5, 0.5, DEGENERATE, 25, 6
    )
    iv = stratified_macro_ci([(1, 2), (0, 3)], seed=6, resamples=25)
    assert (iv.method, iv.resamples, iv.seed) == ("stratified-" + CI_METHOD, 25, 6)


def test_paired_diff_ci_with_equal_discordant_counts_is_a_real_interval() -> None:
    # A wins two items, B wins two: the difference is 0, but it is uncertain, not degenerate.
    iv = paired_diff_ci([True, False, True, False], [False, True, False, True], seed=1, resamples=200)
    assert (iv.method, iv.resamples, iv.seed) == ("paired-" + CI_METHOD, 200, 1)
    assert iv.low < 0.0 < iv.high


def test_paired_diff_ci_of_one_item_or_none_is_degenerate_and_records_its_settings() -> None:
    assert paired_diff_ci([True], [False], seed=2, resamples=30) == Interval(1.0, 1.0, DEGENERATE, 30, 2)
    iv = paired_diff_ci([], [], seed=2, resamples=30)
    assert math.isnan(iv.low) and math.isnan(iv.high)
    assert (iv.method, iv.resamples, iv.seed) == (DEGENERATE, 30, 2)
    with pytest.raises(ValueError, match=r"^paired bootstrap needs two outcome vectors of the same length$"):
        paired_diff_ci([True], [True, False], seed=2)


def test_stratified_intervals_are_the_2_5th_and_97_5th_percentiles() -> None:
    # 20 distinct scores: the resampled means are nearly all distinct, so a percentile taken at
    # another rank (2.525th, 97.6th) is another value.
    v = np.sqrt(np.arange(1, 21)) / 5
    iv = stratified_mean_ci([v], seed=8, resamples=400)
    assert (iv.low, iv.high) == _percentile_bootstrap_by_hand(v, 8, 400)


def test_paired_interval_reads_0_1_arrays_as_outcomes_and_bootstraps_two_items() -> None:
    # An ndarray of 0.0/1.0 (what outcomes() gives) is the same outcomes as bools (a float array
    # has no bitwise ~: without dtype=bool it raised TypeError).
    a, b = [True, True, False, True, False, True], [False, True, True, True, False, False]
    want = paired_diff_ci(a, b, seed=3, resamples=200)
    got = paired_diff_ci(np.array(a, dtype=float), np.array(b, dtype=float), seed=3, resamples=200)
    assert (got.low, got.high, got.method) == (want.low, want.high, want.method)
    # Two items that disagree: a real interval (each resample differs by -1, 0 or +1), not degenerate.
    two = paired_diff_ci([True, False], [False, True], seed=0, resamples=200)
    assert two.method == "paired-bootstrap-percentile" and two.low < 0.0 < two.high

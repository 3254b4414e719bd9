"""Unit tests of scoring.bootstrap that pin every field of the returned intervals.

Written against surviving mutants of ``make mutation`` (bench/RESULTS.md): an interval that
records the wrong seed or resample count cannot be reproduced from what the report prints.
"""

from __future__ import annotations

import math

from scopebench.scoring.bootstrap import CI_METHOD, DEGENERATE, Interval, stratified_mean_ci


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

"""Intervals valid at 0% and 100% (Wilson), and μ-Bench's owner interval (scipy basic bootstrap)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from scopebench.items import Record
from scopebench.report.tables import format_accuracy
from scopebench.scoring.accuracy import accuracy_row
from scopebench.scoring.aggregate import owner_aggregation
from scopebench.scoring.bootstrap import Interval
from scopebench.scoring.intervals import (
    OWNER_BASIC,
    OWNER_BATCH,
    owner_macro_basic_ci,
    proportion_ci,
    wilson_interval,
)
from scopebench.scoring.metrics import compute_metrics

Z = 1.959963984540054  # Φ⁻¹(0.975)


def wilson_by_formula(k: int, n: int) -> tuple[float, float]:
    """(p̂ + z²/2n ± z·√(p̂(1−p̂)/n + z²/4n²)) / (1 + z²/n), written out by hand."""
    p = k / n
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / (1 + Z * Z / n)
    return centre - half, centre + half


@pytest.mark.parametrize(
    ("k", "expected"),
    [
        # 0 of 12: [0, z²/(n + z²)] — a bootstrap said [0, 0].
        (0, (0.0, 0.24249400665524096)),
        (12, (0.7575059933447590, 1.0)),
        (1, (0.014865094404917095, 0.35387991114111705)),
        (6, (0.253781597633706, 0.746218402366294)),
    ],
)
def test_wilson_matches_the_formula_and_hand_values(k, expected):
    iv = wilson_interval(k, 12)
    lo, hi = wilson_by_formula(k, 12)
    assert (iv.low, iv.high) == pytest.approx((lo, hi), abs=1e-12)
    assert (iv.low, iv.high) == pytest.approx(expected, abs=1e-12)
    assert iv.method == "wilson" and iv.resamples == 0


def test_wilson_is_statsmodels_bit_for_bit_and_scipys_binomtest() -> None:
    # The references: statsmodels' proportion_confint and scipy's binomtest (test dependencies
    # only: importing either costs a run 0.75 CPU s or more). Every k of every n up to 60, and a
    # few large n; statsmodels' own rounding noise outside [0, 1] or the estimate is clipped.
    from scipy.stats import binomtest, norm
    from statsmodels.stats.proportion import proportion_confint

    from scopebench.scoring.intervals import _Z

    assert norm.isf(0.025) == _Z
    cases = [(k, n) for n in range(1, 61) for k in range(n + 1)]
    cases += [(k, n) for n in (999, 1000, 17_235, 10**6) for k in (0, 1, n // 3, n - 1, n)]
    for k, n in cases:
        lo, hi = proportion_confint(k, n, alpha=0.05, method="wilson")
        iv = wilson_interval(k, n)
        assert (iv.low, iv.high) == (max(0.0, min(lo, k / n)), min(1.0, max(hi, k / n))), (k, n)
        ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
        assert (iv.low, iv.high) == (pytest.approx(ci.low, abs=1e-12), pytest.approx(ci.high, abs=1e-12))
        assert 0.0 <= iv.low <= k / n <= iv.high <= 1.0


def test_wilson_closed_forms_at_the_extremes():
    # At k = 0 the interval is [0, z²/(n + z²)]; at k = n, [n/(n + z²), 1].
    for n in (1, 5, 12, 400):
        assert wilson_interval(0, n).low == 0.0
        assert wilson_interval(0, n).high == pytest.approx(Z * Z / (n + Z * Z), abs=1e-12)
        assert wilson_interval(n, n).high == 1.0
        assert wilson_interval(n, n).low == pytest.approx(n / (n + Z * Z), abs=1e-12)


def test_wilson_is_asymmetric_and_displayed_as_bounds():
    # 1 of 12 = 8.3%: the interval reaches 27 points above and 7 below — "±12.5" misstated it.
    row = accuracy_row("overall", [_rec(i, "t", i == 0) for i in range(12)])
    assert format_accuracy(row.to_dict()) == "8.3% [1.5, 35.4]"
    zero = accuracy_row("overall", [_rec(i, "t", False) for i in range(12)])
    assert format_accuracy(zero.to_dict()) == "0.0% [0.0, 24.2]"


def test_wilson_edge_cases():
    iv = wilson_interval(0, 0)
    assert math.isnan(iv.low) and math.isnan(iv.high)
    with pytest.raises(ValueError, match="0 <= correct <= n"):
        wilson_interval(5, 4)
    assert proportion_ci([1, 0, 0, 1]) == wilson_interval(2, 4)


def _rec(i: int, task: str, correct: bool, status: str = "ok") -> Record:
    return Record(
        item_id=f"u/{task}/{i}",
        model="m",
        status=status,  # type: ignore[arg-type]
        choice=0 if status == "ok" else None,
        correct=correct if status == "ok" else None,
        task=task,
        answer_index=0,
    )


def _ubench_records() -> list[Record]:
    spec = {"modality": (17, 25), "stain": (4, 9), "domain": (30, 31), "classification": (3, 11)}
    return [_rec(i, t, i < k) for t, (k, n) in spec.items() for i in range(n)]


def test_owner_ubench_row_equals_scipy_basic_bootstrap_with_the_recorded_seed():
    recs = _ubench_records()
    own = owner_aggregation(recs, benchmark="ubench", items={}, seed=7, resamples=1000, protocol="owner")
    assert own is not None
    row = next(r for r in own["rows"] if (r["split_or_group"], r["subset_or_task"]) == ("coarse", "all"))
    assert (row["ci_method"], row["seed"], row["resamples"]) == ("stratified-bootstrap-basic", 7, 1000)
    # The owner's call, by hand: one sample per task (sorted by name), macro-average statistic.
    samples = tuple(
        np.array([1.0 if r.correct else 0.0 for r in recs if r.task == t])
        for t in ("domain", "modality", "stain")
    )

    def macro(*xs, axis=-1):
        return np.mean([np.mean(x, axis=axis) for x in xs], axis=0)

    res = stats.bootstrap(
        samples,
        macro,
        n_resamples=1000,
        confidence_level=0.95,
        method="basic",
        vectorized=True,
        batch=OWNER_BATCH,
        rng=np.random.default_rng(row["seed"]),
    )
    assert row["accuracy"] == pytest.approx((30 / 31 + 17 / 25 + 4 / 9) / 3)
    assert (row["ci_low"], row["ci_high"]) == (res.confidence_interval.low, res.confidence_interval.high)
    assert "ci_owner_unclipped" not in row
    # The default protocol keeps the stratified percentile bootstrap on the same row.
    default = owner_aggregation(recs, benchmark="ubench", items={}, seed=7, resamples=1000)
    assert default is not None
    assert default["rows"][0]["ci_method"] == "stratified-bootstrap-percentile"


def test_owner_basic_interval_is_clipped_and_the_owners_bounds_kept():
    # One task at 39 of 40: the basic interval 2θ̂ − q₂.₅ reaches above 1.
    iv, raw = owner_macro_basic_ci([[1.0] * 39 + [0.0]], seed=0, resamples=1000)
    assert raw is not None and raw[1] > 1.0
    assert iv.high == 1.0 and iv.low == raw[0] <= 39 / 40
    recs = [_rec(i, "modality", i < 39) for i in range(40)]
    m = compute_metrics(recs, benchmark="ubench", seed=0, resamples=1000, protocol="owner")
    row = m["owner"]["rows"][0]
    assert row["ci_high"] == 1.0 and row["ci_owner_unclipped"] == [raw[0], raw[1]]
    assert m["intervals"]["macro_average"] == "stratified-bootstrap-basic"
    # PathMMU, SPUR and MicroVQA publish no interval: the owner protocol keeps Wilson there.
    spur = compute_metrics([_rec(i, "NP", i < 3) for i in range(5)], benchmark="spur", protocol="owner")
    assert {r["ci_method"] for r in spur["owner"]["rows"]} == {"wilson"}


def test_owner_basic_degenerate_and_empty():
    iv, raw = owner_macro_basic_ci([[1.0, 1.0], [0.0]], seed=0)
    assert (iv.low, iv.high, iv.method, raw) == (0.5, 0.5, "degenerate", None)
    iv, raw = owner_macro_basic_ci([[]], seed=0)
    assert math.isnan(iv.low) and raw is None


@pytest.mark.parametrize("const", [0.0, 1.0])
def test_owner_basic_one_item_task_is_a_constant(const):
    # scipy cannot resample a one-observation sample; the task still counts in the macro-average.
    # A correct one-item task (1.0) matters: with 0.0 only, leaving the constant out of the
    # statistic gave the same interval and passed.
    iv, raw = owner_macro_basic_ci([[1.0, 0.0, 1.0, 1.0], [const]], seed=1, resamples=500)
    assert iv.low <= (0.75 + const) / 2 <= iv.high
    # The same as scipy on the resampled task alone, with the constant task in the statistic.
    res = stats.bootstrap(
        (np.array([1.0, 0.0, 1.0, 1.0]),),
        lambda x, axis=-1: (np.mean(x, axis=axis) + const) / 2,
        n_resamples=500,
        method="basic",
        vectorized=True,
        batch=OWNER_BATCH,
        rng=np.random.default_rng(1),
    )
    # The owner's bounds as scipy computes them (kept unclipped where they leave [0, 1]).
    owner = raw if raw is not None else (iv.low, iv.high)
    assert owner == pytest.approx((res.confidence_interval.low, res.confidence_interval.high))
    assert (iv.low, iv.high) == pytest.approx((max(0.0, owner[0]), min(1.0, owner[1])))


def test_owner_interval_of_nothing_or_of_constants_records_its_settings() -> None:
    iv, raw = owner_macro_basic_ci([[], []], seed=4, resamples=30)
    assert math.isnan(iv.low) and math.isnan(iv.high) and raw is None
    assert (iv.method, iv.resamples, iv.seed) == (OWNER_BASIC, 30, 4)
    # One one-item task and one constant task: point (1 + 0) / 2, nothing to resample.
    iv, raw = owner_macro_basic_ci([[1.0], [0.0, 0.0, 0.0]], seed=4, resamples=30)
    assert (iv, raw) == (Interval(0.5, 0.5, "degenerate", 30, 4), None)


def test_owner_interval_resamples_a_task_of_two_differing_outcomes() -> None:
    # Two items are enough for scipy; only constant tasks (or one-item ones) are degenerate.
    iv, _ = owner_macro_basic_ci([[0.0, 1.0]], seed=4, resamples=30)
    assert (iv.method, iv.resamples, iv.seed) == (OWNER_BASIC, 30, 4)
    assert iv.low < 0.5 < iv.high


def test_wilson_interval_records_that_it_draws_nothing() -> None:
    # Every row records its interval's seed and resamples; Wilson's are 0 (nothing random), empty
    # rows included (a seed of None or 1 there would read as a bootstrap's).
    empty = wilson_interval(0, 0)
    assert math.isnan(empty.low) and math.isnan(empty.high)
    assert (empty.method, empty.resamples, empty.seed) == ("wilson", 0, 0)
    three = wilson_interval(3, 10)
    assert (three.method, three.resamples, three.seed) == ("wilson", 0, 0)

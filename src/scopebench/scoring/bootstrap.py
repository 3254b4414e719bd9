"""Bootstrap confidence intervals, all seeded and reproducible.

Single proportions (an accuracy ``k / n``) do not use these: their interval is the Wilson score
interval of :mod:`scopebench.scoring.intervals`, which a bootstrap cannot replace at 0% or 100%.

* :func:`bootstrap_ci` — percentile interval of a mean (GRIT scores of one class, probe scores)
  via :func:`scipy.stats.bootstrap` (``method="percentile"``; BCa fails on constant samples).
* :func:`stratified_macro_ci` — stratified bootstrap of a macro-average: resample within each
  stratum (task), average each stratum, then average the strata.
* :func:`paired_diff_ci` — paired bootstrap of the accuracy difference of two models on the same
  items.

Resampling a 0/1 sample with replacement only changes how many ones it holds, so the stratified
and paired versions draw those counts directly (binomial / multinomial), which is exactly the same
distribution as resampling indices and needs no ``resamples × n`` matrix.

Every interval contains its estimate: a percentile interval of these means misses the estimate
only when 97.5% of the resamples fall on one side of it, which binomial / multinomial resampling of
the observed counts does not produce; should it happen, the bound is moved to the estimate
(:func:`_percentiles`), so ``low ≤ estimate ≤ high`` holds on every row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from scopebench.config import DEFAULT_RESAMPLES

__all__ = [
    "CI_METHOD",
    "DEFAULT_RESAMPLES",
    "Interval",
    "bootstrap_ci",
    "paired_diff_ci",
    "stratified_macro_ci",
    "stratified_mean_ci",
]

#: The method of :func:`bootstrap_ci` (the others prefix ``stratified-`` / ``paired-``).
CI_METHOD = "bootstrap-percentile"
#: Method recorded when the sample is constant (all 0, all 1) or has ≤ 1 value: ``[p, p]``.
DEGENERATE = "degenerate"
_CONFIDENCE = 0.95


@dataclass(frozen=True, slots=True)
class Interval:
    """A 95% confidence interval.

    Attributes:
        low: Lower bound.
        high: Upper bound.
        method: ``wilson``, ``bootstrap-percentile``, ``stratified-bootstrap-percentile``,
            ``paired-bootstrap-percentile``, ``stratified-bootstrap-basic`` (μ-Bench owner) or
            ``degenerate`` (a bootstrap with nothing to resample: ``[p, p]``).
        resamples: Bootstrap resamples drawn (0 for Wilson).
        seed: Seed of the random generator (0 for Wilson, which draws nothing).
    """

    low: float
    high: float
    method: str
    resamples: int
    seed: int

    def fields(self) -> dict[str, Any]:
        """The ``ci_*``, ``resamples`` and ``seed`` fields of a result row, in that order."""
        return {
            "ci_low": self.low,
            "ci_high": self.high,
            "ci_method": self.method,
            "resamples": self.resamples,
            "seed": self.seed,
        }


def bootstrap_ci(
    values: Sequence[float] | np.ndarray, *, seed: int, resamples: int = DEFAULT_RESAMPLES
) -> Interval:
    """95% percentile bootstrap interval of the mean of ``values``.

    Args:
        values: Outcomes (1.0 correct, 0.0 wrong).
        seed: Seed of the :class:`numpy.random.Generator` passed to scipy.
        resamples: Number of bootstrap resamples.

    Returns:
        The interval; ``[p, p]`` with method ``degenerate`` for constant samples or ``n ≤ 1``, and
        ``[nan, nan]`` for an empty sample.
    """
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        return Interval(float("nan"), float("nan"), DEGENERATE, resamples, seed)
    p = float(x.mean())
    if x.size <= 1 or np.all(x == x[0]):
        return Interval(p, p, DEGENERATE, resamples, seed)
    from scipy import stats  # lazy: 0.9 s of import that a no-op resume does not need

    res = stats.bootstrap(
        (x,),
        np.mean,
        n_resamples=resamples,
        confidence_level=_CONFIDENCE,
        method="percentile",
        rng=np.random.default_rng(seed),
        # Resamples are drawn batch by batch from the same stream, so the interval does not depend
        # on the batch size; a (batch × n) float array plus its int64 indices must stay small
        # (2M elements ≈ 32 MB) or a 20k-item run spends 300 MB on its confidence intervals.
        batch=max(1, min(resamples, 2_000_000 // max(1, x.size))),
    )
    ci = res.confidence_interval
    return Interval(min(float(ci.low), p), max(float(ci.high), p), CI_METHOD, resamples, seed)


def _percentiles(dist: np.ndarray, point: float) -> tuple[float, float]:
    """The 2.5th and 97.5th percentiles of ``dist``, stretched to contain ``point`` (see module doc)."""
    alpha = (1 - _CONFIDENCE) / 2
    lo, hi = np.percentile(dist, [100 * alpha, 100 * (1 - alpha)])
    return min(float(lo), point), max(float(hi), point)


def stratified_macro_ci(
    strata: Sequence[tuple[int, int]], *, seed: int, resamples: int = DEFAULT_RESAMPLES
) -> Interval:
    """95% interval of a macro-average by stratified bootstrap.

    Args:
        strata: One ``(correct, denominator)`` per stratum (task); strata with denominator 0 are
            left out, as they are from the point estimate.
        seed: Seed of the random generator.
        resamples: Number of bootstrap resamples.
    """
    kept = [(k, n) for k, n in strata if n > 0]
    if not kept:
        return Interval(float("nan"), float("nan"), DEGENERATE, resamples, seed)
    point = float(np.mean([k / n for k, n in kept]))
    if all(k in (0, n) for k, n in kept) or all(n <= 1 for _, n in kept):
        return Interval(point, point, DEGENERATE, resamples, seed)
    rng = np.random.default_rng(seed)
    means = np.zeros(resamples)
    for k, n in kept:
        means += rng.binomial(n, k / n, size=resamples) / n
    means /= len(kept)
    lo, hi = _percentiles(means, point)
    return Interval(lo, hi, "stratified-" + CI_METHOD, resamples, seed)


def stratified_mean_ci(
    strata: Sequence[Sequence[float] | np.ndarray], *, seed: int, resamples: int = DEFAULT_RESAMPLES
) -> Interval:
    """95% interval of the mean over strata of each stratum's mean, resampling within each stratum.

    The continuous-valued sibling of :func:`stratified_macro_ci`, for macro-averages of scores
    such as the GRIT localization score (mean per class, then mean over classes).

    Args:
        strata: The values of each stratum (class); empty strata are left out, as they are from
            the point estimate.
        seed: Seed of the random generator.
        resamples: Number of bootstrap resamples.
    """
    kept = [np.asarray(v, dtype=float) for v in strata if len(v) > 0]
    if not kept:
        return Interval(float("nan"), float("nan"), DEGENERATE, resamples, seed)
    point = float(np.mean([v.mean() for v in kept]))
    if all(v.size <= 1 or np.all(v == v[0]) for v in kept):
        return Interval(point, point, DEGENERATE, resamples, seed)
    rng = np.random.default_rng(seed)
    means = np.zeros(resamples)
    for v in kept:
        # One (resamples × n) index draw per stratum; strata are classes of a detection task, so
        # small next to the item count the accuracy bootstrap is batched for.
        means += v[rng.integers(0, v.size, size=(resamples, v.size))].mean(axis=1)
    means /= len(kept)
    lo, hi = _percentiles(means, point)
    return Interval(lo, hi, "stratified-" + CI_METHOD, resamples, seed)


def paired_diff_ci(
    a: Sequence[bool] | np.ndarray,
    b: Sequence[bool] | np.ndarray,
    *,
    seed: int,
    resamples: int = DEFAULT_RESAMPLES,
) -> Interval:
    """95% paired-bootstrap interval of ``mean(a) − mean(b)`` over the same items.

    Args:
        a: Correctness of model A per item.
        b: Correctness of model B on the same items, in the same order.
        seed: Seed of the random generator.
        resamples: Number of bootstrap resamples.
    """
    xa = np.asarray(a, dtype=bool)
    xb = np.asarray(b, dtype=bool)
    if xa.shape != xb.shape:
        raise ValueError("paired bootstrap needs two outcome vectors of the same length")
    n = xa.size
    if n == 0:
        return Interval(float("nan"), float("nan"), DEGENERATE, resamples, seed)
    n10 = int(np.sum(xa & ~xb))
    n01 = int(np.sum(~xa & xb))
    point = (n10 - n01) / n
    if n10 + n01 == 0 or n <= 1:
        return Interval(point, point, DEGENERATE, resamples, seed)
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(n, [n10 / n, n01 / n, (n - n10 - n01) / n], size=resamples)
    diffs = (draws[:, 0] - draws[:, 1]) / n
    lo, hi = _percentiles(diffs, point)
    return Interval(lo, hi, "paired-" + CI_METHOD, resamples, seed)

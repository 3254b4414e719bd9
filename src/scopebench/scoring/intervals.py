"""Confidence intervals that stay valid at 0% and 100%, and μ-Bench's own bootstrap.

* :func:`wilson_interval` — the Wilson score interval of a single proportion ``k / n``: every
  accuracy row (overall, per task / subset / split / metadata group, owner per-task rows) and every
  reasoning-group row of the SPUR decoupling table. Unlike a percentile bootstrap it does not collapse
  to ``[0, 0]`` at 0 of 12: it is ``[0, 24.2]%`` there.
* :func:`owner_macro_basic_ci` — μ-Bench's method under ``--protocol owner``: ``scipy.stats.bootstrap``
  with ``method="basic"``, one sample per task (scipy resamples each sample on its own, i.e. a
  stratified bootstrap), statistic the macro-average over tasks.

Why Wilson rather than Clopper–Pearson: Clopper–Pearson guarantees at least 95% coverage and is
therefore conservative (wider than needed, most of all for small n); Wilson's coverage stays close to
the nominal 95% over the whole range of p, it is never degenerate, and it always contains ``k / n``
(Agresti & Coull 1998; Brown, Cai & DasGupta 2001). Both are valid at the extremes; Wilson is the
one recommended for reporting.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from scopebench.scoring.bootstrap import DEFAULT_RESAMPLES, Interval

__all__ = [
    "CONFIDENCE",
    "OWNER_BASIC",
    "OWNER_BATCH",
    "WILSON",
    "owner_macro_basic_ci",
    "proportion_ci",
    "wilson_interval",
]

#: Confidence level of every interval.
CONFIDENCE = 0.95
#: The two-sided normal quantile of :data:`CONFIDENCE` as scipy computes it
#: (``scipy.stats.norm.isf(0.025)``, which statsmodels uses; the standard library's
#: ``NormalDist().inv_cdf(0.975)`` differs in the last bit). A test checks it against scipy.
_Z = 1.9599639845400545
#: ``ci_method`` of a Wilson score interval.
WILSON = "wilson"
#: ``ci_method`` of μ-Bench's owner interval (scipy's basic bootstrap, resampled within each task).
OWNER_BASIC = "stratified-bootstrap-basic"
#: eVLLM's ``batch`` argument. With several samples scipy draws each batch's indices sample after
#: sample, so the batch size is part of what reproduces an interval from its seed.
OWNER_BATCH = 100


def wilson_interval(correct: int, n: int) -> Interval:
    """95% Wilson score interval of the proportion ``correct / n``.

    ``(p̂ + z²/2n ± z·√(p̂(1−p̂)/n + z²/4n²)) / (1 + z²/n)``, computed in the order statsmodels'
    ``proportion_confint(method="wilson")`` computes it (the tests check the two agree bit for bit
    on every count up to n = 60 and at large n, and against scipy's ``binomtest``). Neither
    library is imported: statsmodels pulls in pandas, scipy.stats takes 0.75 CPU s to import, and
    this is the one interval every run computes.
    Rounding noise (``0.9999999999999999`` for 12 of 12) is removed by clipping to ``[0, 1]`` and
    to the estimate, which the Wilson interval always contains.

    Args:
        correct: Successes (correct answers) among the ``n`` counted records.
        n: Records counted (the accuracy's denominator: under policy ``exclude`` the answered
            records only).

    Returns:
        The interval (``seed`` 0, ``resamples`` 0: nothing random); ``[nan, nan]`` when ``n`` is 0.
    """
    if n <= 0:
        return Interval(float("nan"), float("nan"), WILSON, 0, 0)
    if not 0 <= correct <= n:
        raise ValueError(f"wilson_interval needs 0 <= correct <= n, got {correct} of {n}")
    p = correct / n
    crit2 = _Z * _Z
    denom = 1 + crit2 / n
    centre = (p + crit2 / (2 * n)) / denom
    half = _Z * math.sqrt(p * (1.0 - p) / n + crit2 / (4.0 * n**2)) / denom
    lo, hi = centre - half, centre + half
    return Interval(max(0.0, min(float(lo), p)), min(1.0, max(float(hi), p)), WILSON, 0, 0)


def proportion_ci(outcomes: Sequence[float] | np.ndarray) -> Interval:
    """95% Wilson interval of the proportion of ones among 0/1 ``outcomes`` (``[nan, nan]`` if empty)."""
    x = np.asarray(outcomes, dtype=float)
    return wilson_interval(int(x.sum()), int(x.size))


def owner_macro_basic_ci(
    strata: Sequence[Sequence[float] | np.ndarray], *, seed: int, resamples: int = DEFAULT_RESAMPLES
) -> tuple[Interval, tuple[float, float] | None]:
    """μ-Bench's 95% interval of a macro-average: ``scipy.stats.bootstrap(method="basic")``.

    eVLLM (``src/evlm/eval/stats.py``) calls ``bootstrap((is_correct,), np.mean,
    confidence_level=0.95, vectorized=True, batch=100, method='basic')`` on each dataset's 0/1
    outcomes; the paper (appendix F.2) says 1000 resamples. Here each task is one sample of the
    same call (``batch=100`` too, which also bounds memory at 100 × items × 16 bytes), the statistic
    is the mean over tasks of each task's mean, and the generator is seeded (eVLLM's is not).

    A basic interval ``[2θ̂ − q₉₇.₅, 2θ̂ − q₂.₅]`` can leave ``[0, 1]``. The owner's bounds are kept
    as computed in the second return value; the interval itself is clipped to ``[0, 1]`` (an
    accuracy below 0 is not a statement anyone can use) and, like every bootstrap interval here,
    stretched to the estimate in the (practically impossible) case that it misses it.

    Args:
        strata: The 0/1 outcomes of each task (empty tasks are left out, as from the estimate;
            a one-item task, which scipy cannot resample, adds its value as a constant).
        seed: Seed of the :class:`numpy.random.Generator` passed to scipy.
        resamples: Bootstrap resamples.

    Returns:
        ``(interval, unclipped)``: ``unclipped`` is the owner's ``(low, high)`` when clipping
        changed it, else ``None``.
    """
    kept = [np.asarray(v, dtype=float) for v in strata if len(v) > 0]
    if not kept:
        return Interval(float("nan"), float("nan"), OWNER_BASIC, resamples, seed), None
    point = float(np.mean([v.mean() for v in kept]))
    if all(v.size <= 1 or np.all(v == v[0]) for v in kept):
        # scipy refuses a degenerate bootstrap distribution (every resample equal): say so.
        return Interval(point, point, "degenerate", resamples, seed), None
    from scipy import stats  # lazy, as in scoring.bootstrap

    # scipy needs two observations per sample; a one-item task resamples to itself, so it enters
    # the statistic as a constant.
    fixed = sum(float(v[0]) for v in kept if v.size == 1)
    resampled = tuple(v for v in kept if v.size > 1)

    def macro_mean(*samples: Any, axis: int = -1) -> Any:
        """Mean over tasks of each task's mean (vectorized along ``axis``, as scipy asks)."""
        return (np.sum([np.mean(x, axis=axis) for x in samples], axis=0) + fixed) / len(kept)

    res = stats.bootstrap(
        resampled,
        macro_mean,
        n_resamples=resamples,
        confidence_level=CONFIDENCE,
        method="basic",
        vectorized=True,
        rng=np.random.default_rng(seed),
        batch=OWNER_BATCH,
    )
    lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
    shown = (max(0.0, min(lo, point)), min(1.0, max(hi, point)))
    return (
        Interval(shown[0], shown[1], OWNER_BASIC, resamples, seed),
        None if shown == (lo, hi) else (lo, hi),
    )

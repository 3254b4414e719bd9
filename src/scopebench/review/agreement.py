"""Inter-rater agreement with seeded bootstrap intervals.

* Cohen's κ per reviewer pair (scikit-learn ``cohen_kappa_score``) over the items both rated, for
  the first answers and for the item decisions (keep / drop / uncertain).
* Krippendorff's α (the ``krippendorff`` package) over all reviewers, for the answers, the decisions
  and each rubric item (ordinal for 1–5 scales, nominal otherwise); missing ratings allowed.

Each estimate carries a 95% percentile bootstrap interval from resampling items with replacement
(``numpy.random.default_rng(seed)``, ``resamples`` draws); the seed and count are in the result.
A statistic that is undefined (one category only, fewer than two items) is ``None``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from itertools import combinations
from typing import Any

import numpy as np

__all__ = ["alpha_with_ci", "kappa_with_ci", "project_agreement"]


def _ci(
    stat: Callable[[np.ndarray], float], n: int, seed: int, resamples: int
) -> tuple[float | None, float | None]:
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(resamples):
        value = stat(rng.integers(0, n, n))
        if not math.isnan(value):
            draws.append(value)
    if len(draws) < max(10, resamples // 10):
        return None, None
    lo, hi = np.percentile(draws, [2.5, 97.5])
    return float(lo), float(hi)


def _kappa(a: Sequence[Any], b: Sequence[Any]) -> float:
    from sklearn.metrics import cohen_kappa_score

    if len(set(a) | set(b)) < 2:
        return math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(cohen_kappa_score(list(a), list(b)))


def kappa_with_ci(a: Sequence[Any], b: Sequence[Any], *, seed: int, resamples: int) -> dict[str, Any]:
    """Cohen's κ of two raters' labels on the same items, with its bootstrap interval."""
    n = len(a)
    value = _kappa(a, b) if n >= 2 else math.nan
    arr_a, arr_b = np.asarray(a, dtype=object), np.asarray(b, dtype=object)
    lo, hi = (
        (None, None)
        if math.isnan(value)
        else _ci(lambda ix: _kappa(arr_a[ix], arr_b[ix]), n, seed, resamples)
    )
    return {"value": None if math.isnan(value) else value, "ci_low": lo, "ci_high": hi, "n": n}


def _alpha(matrix: np.ndarray, level: Any) -> float:
    import krippendorff

    # α needs at least one unit with two ratings and two distinct values overall.
    pairable = (~np.isnan(matrix)).sum(axis=0) >= 2
    values = matrix[:, pairable]
    values = values[~np.isnan(values)]
    if not pairable.any() or len(np.unique(values)) < 2:
        return math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(krippendorff.alpha(reliability_data=matrix, level_of_measurement=level))


def alpha_with_ci(matrix: np.ndarray, level: str, *, seed: int, resamples: int) -> dict[str, Any]:
    """Krippendorff's α of a raters × items matrix (``nan`` = not rated), with its bootstrap interval."""
    n = matrix.shape[1]
    value = _alpha(matrix, level) if n >= 2 else math.nan
    lo, hi = (
        (None, None)
        if math.isnan(value)
        else _ci(lambda ix: _alpha(matrix[:, ix], level), n, seed, resamples)
    )
    pairable = int(((~np.isnan(matrix)).sum(axis=0) >= 2).sum()) if n else 0
    return {
        "value": None if math.isnan(value) else value,
        "ci_low": lo,
        "ci_high": hi,
        "n_items": pairable,
        "level": level,
    }


def project_agreement(
    ratings: Sequence[dict[str, Any]], variables: dict[str, str], *, seed: int = 0, resamples: int = 1000
) -> dict[str, Any]:
    """κ per pair and α per variable from a flat list of ratings.

    Args:
        ratings: One dict per (item, rater) with ``item``, ``rater`` and one key per variable.
        variables: Variable name → ``nominal`` or ``ordinal``; κ is computed for ``answer`` and
            ``decision`` only, α for every variable.
        seed: Bootstrap seed (recorded).
        resamples: Bootstrap draws (recorded).

    Returns:
        ``{"seed", "resamples", "kappa": [{"a", "b", "variable", …}], "alpha": {variable: {…}}}``.
    """
    items = sorted({r["item"] for r in ratings})
    raters = sorted({r["rater"] for r in ratings})
    col = {it: k for k, it in enumerate(items)}
    row = {r: k for k, r in enumerate(raters)}
    out: dict[str, Any] = {"seed": seed, "resamples": resamples, "kappa": [], "alpha": {}}
    for var, level in variables.items():
        codes: dict[Any, int] = {}
        if level == "ordinal":
            for v in sorted({r[var] for r in ratings if r.get(var) is not None}):
                codes[v] = int(v)
        matrix = np.full((len(raters), len(items)), np.nan)
        for r in ratings:
            if r.get(var) is None:
                continue
            code = codes.setdefault(r[var], len(codes))
            matrix[row[r["rater"]], col[r["item"]]] = code
        out["alpha"][var] = alpha_with_ci(matrix, level, seed=seed, resamples=resamples)
        if var not in ("answer", "decision"):
            continue
        for i, j in combinations(range(len(raters)), 2):
            both = ~np.isnan(matrix[i]) & ~np.isnan(matrix[j])
            if both.sum() == 0:
                continue
            k = kappa_with_ci(list(matrix[i, both]), list(matrix[j, both]), seed=seed, resamples=resamples)
            out["kappa"].append({"a": raters[i], "b": raters[j], "variable": var} | k)
    return out

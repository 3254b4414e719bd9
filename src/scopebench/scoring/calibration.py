"""Calibration of per-option probabilities: multi-class Brier score and ECE.

Only records with ``scores`` (per-option probabilities from contrastive or log-prob backends) and an
``answer_index`` count. Scores are renormalised to sum to 1 when they do not already.

* Brier score — mean over items of ``Σ_k (p_k − y_k)²`` (0 perfect, 2 worst), the multi-class form.
* ECE — 15 equal-width bins on the max probability (confidence); ``Σ_b |B_b|/N · |acc_b − conf_b|``
  where ``acc_b`` is how often the arg-max option is the answer. Bins are ``(lo, hi]``, the first
  one also takes confidence 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from scopebench.items import Record

__all__ = ["N_BINS", "brier_score", "calibration_section", "expected_calibration_error", "reliability_bins"]

#: Number of equal-width confidence bins for ECE and the reliability diagram.
N_BINS = 15


def _normalise(scores: Sequence[float]) -> np.ndarray:
    p = np.asarray(scores, dtype=float)
    total = p.sum()
    return p / total if total > 0 else np.full(p.size, 1.0 / p.size)


def brier_score(probs: Sequence[Sequence[float]], answers: Sequence[int]) -> float:
    """Multi-class Brier score: mean of ``Σ_k (p_k − 1[k = answer])²``."""
    if not probs:
        return float("nan")
    total = 0.0
    for p, a in zip(probs, answers, strict=True):
        q = _normalise(p)
        y = np.zeros(q.size)
        y[a] = 1.0
        total += float(np.sum((q - y) ** 2))
    return total / len(probs)


def reliability_bins(
    probs: Sequence[Sequence[float]], answers: Sequence[int], n_bins: int = N_BINS
) -> list[dict[str, Any]]:
    """Per-bin count, mean confidence and accuracy of the arg-max option (empty bins included)."""
    conf = np.array([float(_normalise(p).max()) for p in probs])
    hit = np.array([float(int(np.argmax(_normalise(p))) == a) for p, a in zip(probs, answers, strict=True)])
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    idx = np.clip(np.ceil(conf * n_bins).astype(int) - 1, 0, n_bins - 1) if conf.size else np.array([], int)
    out = []
    for b in range(n_bins):
        sel = idx == b
        n = int(sel.sum())
        out.append(
            {
                "low": float(edges[b]),
                "high": float(edges[b + 1]),
                "n": n,
                "confidence": float(conf[sel].mean()) if n else float("nan"),
                "accuracy": float(hit[sel].mean()) if n else float("nan"),
            }
        )
    return out


def expected_calibration_error(
    probs: Sequence[Sequence[float]], answers: Sequence[int], n_bins: int = N_BINS
) -> float:
    """ECE over ``n_bins`` equal-width bins of the max probability."""
    if not probs:
        return float("nan")
    total = len(probs)
    return float(
        sum(
            b["n"] / total * abs(b["accuracy"] - b["confidence"])
            for b in reliability_bins(probs, answers, n_bins)
            if b["n"]
        )
    )


def calibration_section(records: Sequence[Record]) -> dict[str, Any] | None:
    """Brier, ECE and reliability bins of the ``mcq`` records that carry scores, else ``None``."""
    usable = [
        r
        for r in records
        if r.kind == "mcq" and r.scores and r.answer_index is not None and r.answer_index < len(r.scores)
    ]
    if not usable:
        return None
    probs = [list(r.scores or []) for r in usable]
    answers = [int(r.answer_index or 0) for r in usable]
    return {
        "n": len(usable),
        "brier": brier_score(probs, answers),
        "ece": expected_calibration_error(probs, answers),
        "n_bins": N_BINS,
        "bins": reliability_bins(probs, answers),
    }

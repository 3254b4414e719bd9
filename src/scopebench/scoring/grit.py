"""The GRIT localization score (μ-Bench §C.6, Table 5), as in allenai/grit_official.

Reference: ``loc_metric`` in allenai/grit_official ``metrics/localization.py``, copied unchanged
by μ-Bench as ``grit_localization_metric`` in Ale9806/eVLLM ``src/evlm/eval/eval_detection.py``.
For one (image, class): Hungarian matching (``scipy.optimize.linear_sum_assignment``) on
``1 − IoU``; only assigned pairs with IoU > 0 (strictly) count as matched; then

    score = Σ IoU(matched pairs) / (#predicted + #ground truth − #matched)

which is 1 when both sets are empty and 0 when exactly one is. Boxes are scored as given: a box
with x2 ≤ x1 or y2 ≤ y1 (reversed corners, zero width) has area 0 and so IoU 0 with every box,
and a box reaching outside the image keeps its full area (the official code neither swaps nor
clips). The official IoU divides by ``union + 1e-6``; this one divides by the union (0 when the
union is 0), a relative difference of 1e-6 / union — below 1e-8 for boxes of 100 px² or more.
Scores are averaged per class, then over classes; μ-Bench's easy/hard split groups classes by
source dataset.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from scopebench.items import Box

__all__ = ["GRIT_SPLITS", "LocalizationRow", "grit_score", "iou_matrix", "localization_table"]

#: μ-Bench's easy/hard split: (source dataset or name fragment, class) → split.
GRIT_SPLITS: dict[tuple[str, str], str] = {
    ("pcst", "cell"): "easy",
    ("cellcognition", "nucleus"): "easy",
    ("pcst", "nucleus"): "hard",
    ("opencell", "nucleus"): "hard",
    ("wu", "mitochondria"): "hard",
    ("glas", "gland"): "hard",
}


def iou_matrix(pred: Sequence[Box], gt: Sequence[Box]) -> np.ndarray:
    """Pairwise IoU of ``pred`` (rows) and ``gt`` (columns); degenerate boxes have area 0."""
    if not pred or not gt:
        return np.zeros((len(pred), len(gt)))
    p = np.array([[b.x1, b.y1, b.x2, b.y2] for b in pred], dtype=float)
    g = np.array([[b.x1, b.y1, b.x2, b.y2] for b in gt], dtype=float)
    ix1 = np.maximum(p[:, None, 0], g[None, :, 0])
    iy1 = np.maximum(p[:, None, 1], g[None, :, 1])
    ix2 = np.minimum(p[:, None, 2], g[None, :, 2])
    iy2 = np.minimum(p[:, None, 3], g[None, :, 3])
    inter = np.clip(ix2 - ix1, 0, None) * np.clip(iy2 - iy1, 0, None)
    area_p = np.clip(p[:, 2] - p[:, 0], 0, None) * np.clip(p[:, 3] - p[:, 1], 0, None)
    area_g = np.clip(g[:, 2] - g[:, 0], 0, None) * np.clip(g[:, 3] - g[:, 1], 0, None)
    union = area_p[:, None] + area_g[None, :] - inter
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(union > 0, inter / union, 0.0)
    return out


def grit_score(pred: Sequence[Box], gt: Sequence[Box], *, unread: int = 0) -> float:
    """The GRIT localization score of one (image, class).

    Args:
        pred: Predicted boxes, as the model wrote them.
        gt: Ground-truth boxes.
        unread: Further predicted boxes the parser did not read (its cap on boxes per reply);
            they count as unmatched predictions in the denominator, so a capped reply never scores
            higher than its read boxes alone would.
    """
    n_pred = len(pred) + unread
    if n_pred == 0 and not gt:
        return 1.0
    if not pred or not gt:
        return 0.0
    ious = iou_matrix(pred, gt)
    from scipy.optimize import linear_sum_assignment  # lazy, as in scoring.bootstrap

    rows, cols = linear_sum_assignment(1.0 - ious)
    # Strictly > 0, as the official code: a zero-IoU assignment is not a match.
    matched = [ious[r, c] for r, c in zip(rows, cols, strict=True) if ious[r, c] > 0]
    return float(sum(matched) / (n_pred + len(gt) - len(matched)))


@dataclass(frozen=True, slots=True)
class LocalizationRow:
    """Mean GRIT score of one class (or the overall mean over classes).

    Attributes:
        group: ``class=<name>``, ``split=easy|hard`` or ``overall``.
        n: (image, class) pairs scored.
        score: Mean GRIT localization score (per class; macro over classes for split/overall).
    """

    group: str
    n: int
    score: float


def localization_table(
    scores: Sequence[tuple[str, float]], splits: Mapping[str, str] | None = None
) -> list[LocalizationRow]:
    """Average (class, score) pairs per class, then macro-average over classes (and per split).

    Args:
        scores: One ``(class_name, grit_score)`` per (image, class).
        splits: Optional class → ``easy``/``hard``.
    """
    per_class: dict[str, list[float]] = defaultdict(list)
    for cls, s in scores:
        per_class[cls].append(s)
    rows = [LocalizationRow(f"class={c}", len(v), float(np.mean(v))) for c, v in sorted(per_class.items())]
    class_means = {c: float(np.mean(v)) for c, v in per_class.items()}
    if splits:
        for split in ("easy", "hard"):
            members = [c for c in class_means if splits.get(c) == split]
            if members:
                rows.append(
                    LocalizationRow(
                        f"split={split}",
                        sum(len(per_class[c]) for c in members),
                        float(np.mean([class_means[c] for c in members])),
                    )
                )
    if class_means:
        rows.append(LocalizationRow("overall", len(scores), float(np.mean(list(class_means.values())))))
    return rows

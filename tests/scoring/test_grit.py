from __future__ import annotations

import pytest

from scopebench.items import Box
from scopebench.scoring.grit import grit_score, iou_matrix, localization_table


def B(x1: float, y1: float, x2: float, y2: float) -> Box:
    return Box(x1, y1, x2, y2)


def test_perfect_match() -> None:
    assert grit_score([B(0, 0, 10, 10), B(20, 20, 30, 30)], [B(20, 20, 30, 30), B(0, 0, 10, 10)]) == 1.0


def test_shifted_box() -> None:
    # Shift by 5 px on a 10×10 box: intersection 50, union 150 → IoU 1/3; one pair matched.
    assert grit_score([B(5, 0, 15, 10)], [B(0, 0, 10, 10)]) == pytest.approx(1 / 3)


def test_extra_prediction_is_penalised() -> None:
    # One perfect match + one spurious box: 1 / (2 + 1 - 1) = 0.5.
    assert grit_score([B(0, 0, 10, 10), B(50, 50, 60, 60)], [B(0, 0, 10, 10)]) == pytest.approx(0.5)


def test_missing_ground_truth_is_penalised() -> None:
    # One perfect match, one missed object: 1 / (1 + 2 - 1) = 0.5.
    assert grit_score([B(0, 0, 10, 10)], [B(0, 0, 10, 10), B(50, 50, 60, 60)]) == pytest.approx(0.5)


def test_non_overlapping_pair_is_not_matched() -> None:
    # Hungarian assigns the pair but IoU is 0, so it is unmatched: 0 / (1 + 1 - 0) = 0.
    assert grit_score([B(0, 0, 10, 10)], [B(20, 20, 30, 30)]) == 0.0


def test_empty_cases() -> None:
    assert grit_score([], []) == 1.0
    assert grit_score([B(0, 0, 1, 1)], []) == 0.0
    assert grit_score([], [B(0, 0, 1, 1)]) == 0.0


def test_hungarian_beats_greedy() -> None:
    # Greedy would pair pred0 with gt0 (IoU 0.6) and leave pred1 with gt1 at 0; the optimal
    # assignment pairs pred0-gt1 and pred1-gt0.
    gt = [B(0, 0, 10, 10), B(4, 0, 14, 10)]
    pred = [B(2, 0, 12, 10), B(0, 0, 10, 10)]
    ious = iou_matrix(pred, gt)
    best = ious[0, 1] + ious[1, 0]
    assert grit_score(pred, gt) == pytest.approx(best / 2)
    assert ious[1, 0] == 1.0


def test_localization_table_macro_over_classes_and_splits() -> None:
    rows = localization_table(
        [("cell", 1.0), ("cell", 0.0), ("nucleus", 0.5)], splits={"cell": "easy", "nucleus": "hard"}
    )
    by = {r.group: r for r in rows}
    assert by["class=cell"].score == 0.5 and by["class=cell"].n == 2
    assert by["split=hard"].score == 0.5
    assert by["overall"].score == pytest.approx(0.5) and by["overall"].n == 3

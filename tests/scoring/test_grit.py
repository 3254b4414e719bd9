from __future__ import annotations

import warnings

import numpy as np
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


# --- Asymmetric hand-computed cases: each tells the official rule from a variant ----
#
# Official (allenai/grit_official metrics/localization.py): Hungarian on 1 − IoU, pairs with
# IoU > 0 are matched, score = Σ IoU(matched) / (P + G − matched).


def test_two_predictions_two_truths_one_match() -> None:
    # p1 = left half of g1: intersection 50, union 100 → IoU 0.5; p2 and g2 overlap nothing.
    gt = [B(0, 0, 10, 10), B(100, 100, 110, 110)]
    pred = [B(0, 0, 10, 5), B(200, 200, 210, 210)]
    # Right: 0.5 / (2 + 2 − 1) = 1/6.
    # Ruled out: IoU ≥ 0 matching (p2–g2 matched at 0) → 0.5 / (4 − 2) = 0.25;
    # max(P, G) denominator → 0.5 / 2 = 0.25; P + G denominator → 0.125; mean matched IoU → 0.5.
    assert grit_score(pred, gt) == pytest.approx(1 / 6, abs=1e-12)


def test_one_prediction_three_truths() -> None:
    # The prediction covers g1 (0,0)-(10,10) and half again: IoU 100 / 150 = 2/3.
    gt = [B(0, 0, 10, 10), B(50, 50, 60, 60), B(80, 80, 90, 90)]
    pred = [B(0, 0, 15, 10)]
    # Right: (2/3) / (1 + 3 − 1) = 2/9.
    # Ruled out: denominator P (precision-like) → 2/3; P + G → 1/6; mean matched IoU → 2/3.
    assert grit_score(pred, gt) == pytest.approx(2 / 9, abs=1e-12)
    # Three predictions, one truth: the denominator counts the spurious predictions.
    # Ruled out: denominator G (recall-like) → 2/3.
    assert grit_score([*pred, B(50, 50, 60, 60), B(80, 80, 90, 90)], gt[:1]) == pytest.approx(
        2 / 9, abs=1e-12
    )


def test_zero_iou_pair_beside_a_match() -> None:
    # p1 = g1 exactly (IoU 1); p2 only touches g2 along an edge (intersection width 0 → IoU 0).
    gt = [B(0, 0, 10, 10), B(40, 0, 50, 10)]
    pred = [B(0, 0, 10, 10), B(30, 0, 40, 10)]
    # Right: 1 / (2 + 2 − 1) = 1/3. Ruled out: IoU ≥ 0 matching → 1 / (4 − 2) = 0.5;
    # max(P, G) → 0.5.
    assert grit_score(pred, gt) == pytest.approx(1 / 3, abs=1e-12)


def test_low_iou_pair_still_matches() -> None:
    # IoU 5/95 ≈ 0.05 (intersection 1×5, union 95) is a match: there is no IoU ≥ 0.5 threshold.
    # Ruled out: a 0.5 threshold → 0 / (1 + 1) = 0.
    assert grit_score([B(0, 0, 10, 5)], [B(9, 0, 19, 5)]) == pytest.approx((5 / 95) / (1 + 1 - 1))


def test_reversed_or_zero_area_prediction_matches_nothing() -> None:
    gt = [B(0, 0, 10, 10)]
    # Corners written reversed: area 0 in the official code, IoU 0 → 0 / (1 + 1) = 0.
    # Ruled out: swapping the corners first → 1.0.
    assert grit_score([B(10, 10, 0, 0)], gt) == 0.0
    # Zero-width box inside the truth: area 0 → IoU 0.
    assert grit_score([B(5, 0, 5, 10)], gt) == 0.0
    # Reversed box beside a perfect one: counted as a prediction → 1 / (2 + 1 − 1) = 0.5.
    assert grit_score([B(0, 0, 10, 10), B(10, 10, 0, 0)], gt) == pytest.approx(0.5)


def test_box_outside_the_image_keeps_its_area() -> None:
    # Truth fills a 10×10 image; the prediction spills to x = 20: IoU 100 / 200 = 0.5.
    # Ruled out: clipping to the image first → 1.0.
    assert grit_score([B(0, 0, 20, 10)], [B(0, 0, 10, 10)]) == pytest.approx(0.5)


def test_unread_predictions_count_in_the_denominator() -> None:
    gt = [B(0, 0, 10, 10)]
    # One perfect box read, 3 more the parser did not read: 1 / (4 + 1 − 1) = 0.25.
    assert grit_score([B(0, 0, 10, 10)], gt, unread=3) == pytest.approx(0.25)
    # Nothing read but boxes were there: not an empty prediction when there is no truth.
    assert grit_score([], [], unread=2) == 0.0


# --- Equality with the official code on sloppy boxes ------------------------------------------


def _official_loc_metric(pred: list[list[float]], gt: list[list[float]]) -> float:
    """The official algorithm, restated in plain Python (loops, ``union + 1e-6``)."""
    from scipy.optimize import linear_sum_assignment

    def area(b: list[float]) -> float:
        return 0.0 if b[2] <= b[0] or b[3] <= b[1] else (b[2] - b[0]) * (b[3] - b[1])

    def iou(a: list[float], b: list[float]) -> float:
        inter = area([max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3])])
        return inter / (area(a) + area(b) - inter + 1e-6)

    if not pred and not gt:
        return 1.0
    if not pred or not gt:
        return 0.0
    ious = np.array([[iou(p, g) for g in gt] for p in pred])
    rows, cols = linear_sum_assignment(1 - ious)
    hits = [ious[r, c] for r, c in zip(rows, cols, strict=True) if ious[r, c] > 0]
    return float(np.sum(hits) / (len(pred) + len(gt) - len(hits)))


def test_matches_the_official_metric_on_reversed_and_outside_boxes() -> None:
    rng = np.random.default_rng(20)
    for _ in range(300):
        n_pred, n_gt = (int(v) for v in rng.integers(0, 5, size=2))
        xs = [sorted(rng.uniform(0, 100, 2)) for _ in range(n_gt)]
        ys = [sorted(rng.uniform(0, 100, 2)) for _ in range(n_gt)]
        gt_boxes = [[x[0], y[0], x[1], y[1]] for x, y in zip(xs, ys, strict=True)]
        # Predictions: any corner order, reaching up to 50 px outside a 100×100 image.
        pred_boxes = [list(rng.uniform(-50, 150, 4)) for _ in range(n_pred)]
        ours = grit_score([B(*p) for p in pred_boxes], [B(*g) for g in gt_boxes])
        official = _official_loc_metric(pred_boxes, gt_boxes)
        # Measured: max |difference| 1e-10 over these cases (the official union + 1e-6).
        assert ours == pytest.approx(official, abs=1e-8), (pred_boxes, gt_boxes)


def test_iou_matrix_with_no_boxes_on_one_side_has_that_shape() -> None:
    box = Box(0, 0, 10, 10)
    assert iou_matrix([], [box, box]).shape == (0, 2)
    assert iou_matrix([box], []).shape == (1, 0)
    assert iou_matrix([], []).shape == (0, 0)


def test_sub_pixel_boxes_keep_their_true_area() -> None:
    # A 0.5 x 0.5 box on itself is IoU 1; against its left half (0.25 x 0.5) IoU 0.5.
    half = Box(0, 0, 0.5, 0.5)
    assert iou_matrix([half], [half])[0, 0] == 1.0
    assert iou_matrix([half], [Box(0, 0, 0.25, 0.5)])[0, 0] == 0.5
    assert iou_matrix([Box(0, 0, 0.5, 0.25)], [half])[0, 0] == 0.5


def test_zero_area_boxes_have_iou_zero_without_a_warning() -> None:
    point = Box(5, 5, 5, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # 0 / 0 must not reach numpy's "invalid value" warning
        m = iou_matrix([point, Box(0, 0, 4, 4)], [point])
    assert m.tolist() == [[0.0], [0.0]]

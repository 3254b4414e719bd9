import pytest

from scopebench.items import Record
from scopebench.scoring.calibration import brier_score, calibration_section, expected_calibration_error


def test_brier_by_hand():
    # item 1: (0.7-1)^2 + 0.2^2 + 0.1^2 = 0.09+0.04+0.01 = 0.14; item 2: 0.5^2 + 0.5^2 = 0.5
    assert brier_score([[0.7, 0.2, 0.1], [0.5, 0.5]], [0, 1]) == pytest.approx((0.14 + 0.5) / 2)
    assert brier_score([[1.0, 0.0]], [0]) == 0.0
    assert brier_score([[0.0, 1.0]], [0]) == 2.0


def test_ece_by_hand():
    # conf 0.9 right (bin 14), conf 0.9 wrong (bin 14), conf 0.6 right (bin 9; 0.6*15=9 -> (8/15, 9/15])
    probs = [[0.9, 0.1], [0.9, 0.1], [0.6, 0.4]]
    answers = [0, 1, 0]
    # bin 14: acc 0.5 conf 0.9 -> 2/3*0.4; bin 8: acc 1 conf 0.6 -> 1/3*0.4
    assert expected_calibration_error(probs, answers) == pytest.approx(0.4)
    assert expected_calibration_error([[0.25, 0.25, 0.25, 0.25]], [0]) == pytest.approx(0.75)


def test_section_skips_records_without_scores():
    recs = [
        Record("a", "m", "ok", choice=0, correct=True, scores=[2.0, 2.0], answer_index=0),
        Record("b", "m", "ok", choice=0, correct=True, answer_index=0),
    ]
    sec = calibration_section(recs)
    assert sec is not None and sec["n"] == 1
    assert sec["brier"] == pytest.approx(0.5)
    assert len(sec["bins"]) == 15
    assert calibration_section(recs[1:]) is None

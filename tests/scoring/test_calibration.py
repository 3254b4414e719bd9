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


def test_reliability_bins_by_hand():
    from scopebench.scoring.calibration import reliability_bins

    # 5 bins (lo, hi]: conf 0.9 right and wrong -> bin 4; conf 0.6 (an edge) -> bin 2 = (0.4, 0.6];
    # a uniform 5-way answer has conf 0.2 -> bin 0 = [0, 0.2].
    probs = [[0.9, 0.1], [0.1, 0.9], [0.6, 0.4], [0.2] * 5]
    bins = reliability_bins(probs, [0, 0, 0, 3], n_bins=5)
    assert [b["low"] for b in bins] == pytest.approx([0.0, 0.2, 0.4, 0.6, 0.8])
    assert [b["high"] for b in bins] == pytest.approx([0.2, 0.4, 0.6, 0.8, 1.0])
    assert [b["n"] for b in bins] == [1, 0, 1, 0, 2]
    assert bins[4]["confidence"] == pytest.approx(0.9) and bins[4]["accuracy"] == 0.5
    assert bins[2]["confidence"] == pytest.approx(0.6) and bins[2]["accuracy"] == 1.0
    # arg-max of a tie is the first option (0), not the answer 3: wrong.
    assert bins[0]["confidence"] == pytest.approx(0.2) and bins[0]["accuracy"] == 0.0
    assert bins[1]["confidence"] != bins[1]["confidence"] and bins[1]["accuracy"] != bins[1]["accuracy"]
    # ECE = 1/4*|0-0.2| + 1/4*|1-0.6| + 2/4*|0.5-0.9| = 0.05 + 0.1 + 0.2
    assert expected_calibration_error(probs, [0, 0, 0, 3], n_bins=5) == pytest.approx(0.35)
    assert len(reliability_bins(probs, [0, 0, 0, 3])) == 15
    assert [b["n"] for b in reliability_bins([], [], n_bins=3)] == [0, 0, 0]


def test_all_zero_scores_are_uniform_and_empty_input_is_nan():
    # Scores summing to 0 carry no preference: read as uniform, never divided by zero.
    assert brier_score([[0.0, 0.0]], [0]) == pytest.approx(0.5)  # 0.5^2 + 0.5^2
    assert brier_score([[0.0, 0.0, 0.0, 0.0]], [1]) == pytest.approx(0.75)  # 0.75^2 + 3*0.25^2
    assert expected_calibration_error([[0.0, 0.0]], [1]) == pytest.approx(0.5)  # conf 0.5, acc 0
    b, e = brier_score([], []), expected_calibration_error([], [])
    assert b != b and e != e


def test_section_counts_only_scorable_mcq_records():
    recs = [
        Record("a", "m", "ok", choice=0, correct=True, scores=[3.0, 1.0], answer_index=0),
        Record("b", "m", "ok", choice=1, correct=True, scores=[0.2, 0.8], answer_index=1),
        # The answer index is outside the scores: cannot be scored, left out (not an IndexError).
        Record("c", "m", "ok", choice=0, correct=False, scores=[0.5, 0.5], answer_index=2),
        Record("d", "m", "ok", scores=[0.5, 0.5], answer_index=0, kind="detection"),
        Record("e", "m", "ok", scores=[0.5, 0.5]),  # no answer
    ]
    sec = calibration_section(recs)
    assert sec is not None
    # a: (0.75-1)^2 + 0.25^2 = 0.125; b: 0.2^2 + (0.8-1)^2 = 0.08
    assert (sec["n"], sec["n_bins"]) == (2, 15)
    assert sec["brier"] == pytest.approx((0.125 + 0.08) / 2)
    # a: conf 0.75 right (bin 11), b: conf 0.8 right (bin 11: 0.8*15 = 12 -> (11/15, 12/15])
    assert sec["ece"] == pytest.approx(1 / 2 * 0.25 + 1 / 2 * 0.2)
    assert [b["n"] for b in sec["bins"]][11] == 2
    assert calibration_section([recs[2], recs[3], recs[4]]) is None


def test_probabilities_and_answers_must_pair_up():
    from scopebench.scoring.calibration import reliability_bins

    # One answer too many is a caller's bug: refused, never silently truncated.
    with pytest.raises(ValueError):
        reliability_bins([[0.5, 0.5]], [0, 1])
    with pytest.raises(ValueError):
        brier_score([[0.5, 0.5]], [0, 1])


def test_ece_bin_count_matters():
    # conf 0.9 right, 0.85 wrong. 5 bins: one bin (0.8, 1], acc 0.5, conf 0.875 -> 0.375.
    # 15 bins (the default): 0.9 in (13/15, 14/15], 0.85 in (12/15, 13/15] -> 0.5*0.1 + 0.5*0.85 = 0.475.
    probs, answers = [[0.9, 0.1], [0.85, 0.15]], [0, 1]
    assert expected_calibration_error(probs, answers, n_bins=5) == pytest.approx(0.375)
    assert expected_calibration_error(probs, answers) == pytest.approx(0.475)

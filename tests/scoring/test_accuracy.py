"""Unit tests of scoring.accuracy: every field of a row, by hand, under both policies.

Written against ``make mutation`` survivors: a row's bookkeeping (unparsed, errors, judge-free
accuracy) is printed beside the accuracy in every report.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from scopebench.items import Record
from scopebench.scoring.accuracy import AccuracyRow, accuracy_row, group_rows, outcomes

_Z = 1.959963984540054  # the 97.5th percentile of the standard normal


def _wilson(k: int, n: int) -> tuple[float, float]:
    """The Wilson score interval, from its formula (Wilson 1927)."""
    p = k / n
    centre = (p + _Z**2 / (2 * n)) / (1 + _Z**2 / n)
    half = _Z / (1 + _Z**2 / n) * math.sqrt(p * (1 - p) / n + _Z**2 / (4 * n * n))
    return centre - half, centre + half


def _rec(i: int, status: Any, correct: bool | None = None, judge: bool = False, task: str = "t") -> Record:
    return Record(f"x/{i}", "m", status, choice=0 if status == "ok" else None, correct=correct,
                  task=task, answer_index=0, extra={"answer_method": "judge"} if judge else {})  # fmt: skip


# One record of each kind: two parser answers (right, wrong), one right answer by the judge,
# and one of each unscorable status.
_RECORDS = [
    _rec(0, "ok", True),
    _rec(1, "ok", False),
    _rec(2, "ok", True, judge=True),
    _rec(3, "unparsed"),
    _rec(4, "error"),
    _rec(5, "missing_image"),
    _rec(6, "missing_response"),
]


def test_row_under_policy_wrong_counts_every_record() -> None:
    row = accuracy_row("overall", _RECORDS, "wrong", seed=3, resamples=10)
    lo, hi = _wilson(2, 7)
    assert row == AccuracyRow(
        group="overall", n=7, correct=2, accuracy=2 / 7, denominator=7, unparsed=1, errors=1,
        missing_image=1, missing_response=1, policy="wrong", ci_low=pytest.approx(lo),
        ci_high=pytest.approx(hi), ci_method="wilson", resamples=0, seed=None, n_judge=1,
        judge_free_accuracy=1 / 7,  # the judge's right answer turns unparsed: 1 of 7
    )  # fmt: skip


def test_row_under_policy_exclude_counts_answered_records_only() -> None:
    row = accuracy_row("overall", _RECORDS, "exclude")
    lo, hi = _wilson(2, 3)
    assert (row.n, row.correct, row.denominator, row.accuracy) == (7, 2, 3, 2 / 3)
    assert (row.ci_low, row.ci_high) == (pytest.approx(lo), pytest.approx(hi))
    # Without the judge its answer leaves the denominator too: 1 of 2.
    assert (row.n_judge, row.judge_free_accuracy, row.policy) == (1, 0.5, "exclude")


def test_row_of_nothing_answered_is_nan_not_zero() -> None:
    row = accuracy_row("g", [_rec(0, "error")], "exclude")
    assert (row.n, row.denominator, row.errors) == (1, 0, 1)
    assert math.isnan(row.accuracy) and math.isnan(row.ci_low) and math.isnan(row.judge_free_accuracy)


def test_outcomes_follow_the_policy() -> None:
    assert outcomes(_RECORDS, "wrong") == [1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0]
    assert outcomes(_RECORDS, "exclude") == [1.0, 0.0, 1.0]


def test_group_rows_one_sorted_row_per_key_without_none() -> None:
    recs = [_rec(0, "ok", True, task="b"), _rec(1, "ok", False, task="a"), _rec(2, "ok", True, task="b"),
            _rec(3, "ok", True, task=""), _rec(4, "unparsed", task="a")]  # fmt: skip
    rows = group_rows(recs, lambda r: r.task or None, "task", "exclude")
    got = [(r.group, r.n, r.correct, r.denominator, r.policy) for r in rows]
    assert got == [("task=a", 2, 0, 1, "exclude"), ("task=b", 2, 2, 2, "exclude")]


def test_default_policy_is_wrong_everywhere() -> None:
    # The headline number: without a policy, unscorable records stay in the denominator as wrong
    # (2 right of 7), never the answered-only 2 of 3.
    assert outcomes(_RECORDS) == [1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0]
    row = accuracy_row("overall", _RECORDS)
    assert (row.policy, row.denominator, row.accuracy) == ("wrong", 7, 2 / 7)
    (grouped,) = group_rows(_RECORDS, lambda r: r.task, "task")
    assert (grouped.group, grouped.policy, grouped.denominator, grouped.accuracy) == (
        "task=t",
        "wrong",
        7,
        2 / 7,
    )

"""Accuracy with the bookkeeping a paper needs: counts of unparsed answers, errors and gaps.

Two policies for records that carry no scorable answer (``unparsed``, ``error``,
``missing_image``, ``missing_response``):

* ``wrong`` (default) — they stay in the denominator and count as incorrect, which is how a
  benchmark's headline number must be reported;
* ``exclude`` — they leave the denominator (accuracy over answered items), for diagnosis.

Each row's 95% interval is the Wilson score interval of ``correct / denominator``
(:func:`~scopebench.scoring.intervals.wilson_interval`): under ``exclude`` it is computed on the
answered records alone, so an excluded record never enters it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from scopebench.items import Record
from scopebench.parsing.judge import answered_by_judge
from scopebench.scoring.bootstrap import DEFAULT_RESAMPLES
from scopebench.scoring.intervals import wilson_interval

__all__ = ["AccuracyRow", "Policy", "accuracy_row", "group_rows", "outcomes"]

Policy = Literal["wrong", "exclude"]


@dataclass(frozen=True, slots=True)
class AccuracyRow:
    """Accuracy of one group of records.

    Attributes:
        group: What the row is (``"overall"``, ``"task=NP"``…).
        n: Records in the group.
        correct: Records answered correctly (under ``exclude``, among the answered ones).
        accuracy: ``correct / denominator`` (``nan`` when the denominator is 0).
        denominator: ``n`` under policy ``wrong``; answered records under ``exclude``.
        unparsed: Responses that committed to no single option.
        errors: Failed model calls or unreadable images.
        missing_image: Items whose image is missing from the data.
        missing_response: Items a replay file has no answer for.
        policy: The policy used.
        ci_low: Lower bound of the 95% Wilson score interval (``nan`` when the denominator is 0).
        ci_high: Upper bound of the 95% Wilson score interval.
        ci_method: ``wilson``.
        resamples: 0 (the Wilson interval draws nothing).
        seed: ``None`` (nothing random).
        n_judge: Answers that came from the answer-extraction judge (``--judge``), not the parser.
        judge_free_accuracy: The accuracy with those answers counted as ``unparsed`` under the
            same policy, i.e. what the run scores without a judge (equals ``accuracy`` when
            ``n_judge`` is 0).
        truncated: Replies the backend's token limit cut (``finish_reason == "length"``), whatever
            their status: read only by an explicit answer before the cut.
    """

    group: str
    n: int
    correct: int
    accuracy: float
    denominator: int
    unparsed: int
    errors: int
    missing_image: int
    missing_response: int
    policy: Policy
    ci_low: float = float("nan")
    ci_high: float = float("nan")
    ci_method: str = "none"
    resamples: int = 0
    seed: int | None = None
    n_judge: int = 0
    judge_free_accuracy: float = float("nan")
    truncated: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict."""
        return asdict(self)


def outcomes(records: Sequence[Record], policy: Policy = "wrong") -> list[float]:
    """The 0/1 outcomes that make up the accuracy of ``records`` under ``policy``.

    Under ``wrong`` every record counts (unscorable ones as 0); under ``exclude`` only ``ok`` ones.
    """
    if policy == "wrong":
        return [1.0 if r.correct else 0.0 for r in records]
    return [1.0 if r.correct else 0.0 for r in records if r.status == "ok"]


def accuracy_row(
    group: str,
    records: Sequence[Record],
    policy: Policy = "wrong",
    *,
    seed: int | None = None,
    resamples: int = DEFAULT_RESAMPLES,
) -> AccuracyRow:
    """Compute one :class:`AccuracyRow` over ``records``.

    Args:
        group: Row label.
        records: The records of the group.
        policy: What unscorable records count as.
        seed: Unused (the Wilson interval draws nothing); kept so callers pass one set of
            interval options everywhere.
        resamples: Unused, as ``seed``.
    """
    del seed, resamples  # the row's interval is Wilson's, whatever the caller's bootstrap options
    n = len(records)
    status_counts: dict[str, int] = defaultdict(int)
    for r in records:
        status_counts[r.status] += 1
    # The same outcomes the denominator counts: under ``exclude`` only answered records, so neither
    # the accuracy nor its interval ever sees an excluded record.
    counted = outcomes(records, policy)
    correct = int(sum(counted))
    denominator = len(counted)
    acc = correct / denominator if denominator else float("nan")
    iv = wilson_interval(correct, denominator)
    ci: dict[str, Any] = {"ci_low": iv.low, "ci_high": iv.high, "ci_method": iv.method, "resamples": 0}
    # The judge-free outcome: judge answers go back to unparsed (still in the denominator under
    # ``wrong``, out of it under ``exclude``).
    judged = [r for r in records if r.status == "ok" and answered_by_judge(r)]
    free_den = denominator if policy == "wrong" else denominator - len(judged)
    free_correct = correct - sum(1 for r in judged if r.correct)
    return AccuracyRow(
        group=group,
        n=n,
        correct=correct,
        accuracy=acc,
        denominator=denominator,
        unparsed=status_counts["unparsed"],
        errors=status_counts["error"],
        missing_image=status_counts["missing_image"],
        missing_response=status_counts["missing_response"],
        policy=policy,
        **ci,
        n_judge=len(judged),
        judge_free_accuracy=free_correct / free_den if free_den else float("nan"),
        truncated=sum(1 for r in records if r.truncated),
    )


def group_rows(
    records: Iterable[Record],
    key: Callable[[Record], str | None],
    prefix: str,
    policy: Policy = "wrong",
    *,
    seed: int | None = None,
    resamples: int = DEFAULT_RESAMPLES,
) -> list[AccuracyRow]:
    """One :class:`AccuracyRow` per distinct ``key(record)`` (``None`` keys are left out).

    Every row's interval uses the same ``seed``, so a row's CI does not depend on which other
    groups exist.
    """
    groups: dict[str, list[Record]] = defaultdict(list)
    for r in records:
        k = key(r)
        if k is not None:
            groups[k].append(r)
    return [
        accuracy_row(f"{prefix}={k}", groups[k], policy, seed=seed, resamples=resamples)
        for k in sorted(groups)
    ]

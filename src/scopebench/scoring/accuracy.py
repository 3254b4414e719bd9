"""Accuracy with the bookkeeping a paper needs: counts of unparsed answers, errors and gaps.

Two policies for records that carry no scorable answer (``unparsed``, ``error``,
``missing_image``, ``missing_response``):

* ``wrong`` (default) — they stay in the denominator and count as incorrect, which is how a
  benchmark's headline number must be reported;
* ``exclude`` — they leave the denominator (accuracy over answered items), for diagnosis.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from scopebench.items import Record

__all__ = ["AccuracyRow", "Policy", "accuracy_row", "group_rows"]

Policy = Literal["wrong", "exclude"]


@dataclass(frozen=True, slots=True)
class AccuracyRow:
    """Accuracy of one group of records.

    Attributes:
        group: What the row is (``"overall"``, ``"task=NP"``…).
        n: Records in the group.
        correct: Records answered correctly.
        accuracy: ``correct / denominator`` (``nan`` when the denominator is 0).
        denominator: ``n`` under policy ``wrong``; answered records under ``exclude``.
        unparsed: Responses that committed to no single option.
        errors: Failed model calls or unreadable images.
        missing_image: Items whose image is missing from the data.
        missing_response: Items a replay file has no answer for.
        policy: The policy used.
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

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict."""
        return asdict(self)


def accuracy_row(group: str, records: Sequence[Record], policy: Policy = "wrong") -> AccuracyRow:
    """Compute one :class:`AccuracyRow` over ``records``."""
    n = len(records)
    status_counts: dict[str, int] = defaultdict(int)
    for r in records:
        status_counts[r.status] += 1
    correct = sum(1 for r in records if r.correct)
    answered = status_counts["ok"]
    denominator = n if policy == "wrong" else answered
    acc = correct / denominator if denominator else float("nan")
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
    )


def group_rows(
    records: Iterable[Record],
    key: Callable[[Record], str | None],
    prefix: str,
    policy: Policy = "wrong",
) -> list[AccuracyRow]:
    """One :class:`AccuracyRow` per distinct ``key(record)`` (``None`` keys are left out)."""
    groups: dict[str, list[Record]] = defaultdict(list)
    for r in records:
        k = key(r)
        if k is not None:
            groups[k].append(r)
    return [accuracy_row(f"{prefix}={k}", groups[k], policy) for k in sorted(groups)]

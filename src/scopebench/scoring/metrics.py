"""The metrics file of a run: accuracy overall and per task, subset and split."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from scopebench.items import Record
from scopebench.scoring.accuracy import Policy, accuracy_row, group_rows

__all__ = ["METRICS_SCHEMA_VERSION", "compute_metrics"]

#: Bumped whenever the layout of the metrics dict changes (documented in docs/metrics-schema.md).
METRICS_SCHEMA_VERSION = 1


def compute_metrics(records: Sequence[Record], *, benchmark: str, policy: Policy = "wrong") -> dict[str, Any]:
    """Accuracy overall and per task / subset / split, with unparsed and error counts beside each.

    Args:
        records: The run's records (one per item).
        benchmark: Benchmark name (for the owner aggregation added by later stages).
        policy: What unscorable records count as (see :mod:`scopebench.scoring.accuracy`).

    Returns:
        A JSON-safe dict: ``{"schema_version", "benchmark", "policy", "overall", "by_task",
        "by_subset", "by_split"}``; each row is an :class:`~scopebench.scoring.accuracy.AccuracyRow`
        as a dict.
    """
    return {
        "schema_version": METRICS_SCHEMA_VERSION,
        "benchmark": benchmark,
        "policy": policy,
        "overall": accuracy_row("overall", records, policy).to_dict(),
        "by_task": [r.to_dict() for r in group_rows(records, lambda r: r.task, "task", policy)],
        "by_subset": [r.to_dict() for r in group_rows(records, lambda r: r.subset, "subset", policy)],
        "by_split": [r.to_dict() for r in group_rows(records, lambda r: r.split, "split", policy)],
    }

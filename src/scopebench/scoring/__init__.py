"""Scoring: accuracy with unparsed/error accounting, per-group tables."""

from scopebench.scoring.accuracy import AccuracyRow, Policy, accuracy_row, group_rows
from scopebench.scoring.metrics import METRICS_SCHEMA_VERSION, compute_metrics

__all__ = [
    "METRICS_SCHEMA_VERSION",
    "AccuracyRow",
    "Policy",
    "accuracy_row",
    "compute_metrics",
    "group_rows",
]

"""The ``owner`` section of the metrics dict: each benchmark's own headline aggregation.

The aggregation itself belongs to the benchmark (:meth:`~scopebench.benchmarks.Benchmark.owner_rows`,
beside its loader and owner prompt); this module finds the benchmark through the registry, calls
its hook, and provides the row builders the hooks share:

* :func:`instance_row` — instance-weighted accuracy of a group of records, with the Wilson
  interval of its accuracy;
* :func:`macro_row` — the macro-average over tasks, with a stratified percentile bootstrap (resample
  within each task, then macro-average), or under ``--protocol owner`` μ-Bench's own
  ``scipy.stats.bootstrap(method="basic")`` (:func:`~scopebench.scoring.intervals.owner_macro_basic_ci`);
* :func:`per_task_rows` — one instance-weighted row per task and ``overall``, per split
  (``test_tiny``, ``test``, then any other split present).

Every row carries ``split_or_group`` and ``subset_or_task``, the two keys of the published-results
table, so published numbers can be set beside a run's; every row records its ``ci_method``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scopebench.benchmarks.registry import find_benchmark
from scopebench.items import Record
from scopebench.scoring.accuracy import Policy, accuracy_row, outcomes
from scopebench.scoring.bootstrap import DEFAULT_RESAMPLES, stratified_macro_ci
from scopebench.scoring.intervals import owner_macro_basic_ci

__all__ = ["SPLIT_ORDER", "OwnerRows", "instance_row", "macro_row", "owner_aggregation", "per_task_rows"]

#: The order of split rows: PathMMU's Tiny before the full test set, then any other split.
SPLIT_ORDER = ("test_tiny", "test")


def instance_row(
    split_or_group: str,
    subset_or_task: str,
    records: Sequence[Record],
    policy: Policy,
    seed: int,
    resamples: int,
) -> dict[str, Any]:
    """One instance-weighted accuracy row (Wilson interval) keyed like the published table."""
    row = accuracy_row(f"{split_or_group}/{subset_or_task}", records, policy, seed=seed, resamples=resamples)
    out = row.to_dict()
    out.update(split_or_group=split_or_group, subset_or_task=subset_or_task, weighting="instance")
    return out


def macro_row(
    split_or_group: str,
    subset_or_task: str,
    records: Sequence[Record],
    policy: Policy,
    seed: int,
    resamples: int,
    protocol: str = "default",
) -> dict[str, Any] | None:
    """The macro-average over tasks of ``records`` (``None`` when there are none).

    Under ``protocol == "owner"`` the interval is μ-Bench's basic bootstrap (the raw, unclipped
    bounds kept as ``ci_owner_unclipped``), else the stratified percentile bootstrap.
    """
    by_task: dict[str, list[Record]] = defaultdict(list)
    for r in records:
        by_task[r.task].append(r)
    if not by_task:
        return None
    task_rows = {t: accuracy_row(t, rs, policy) for t, rs in sorted(by_task.items())}
    strata = [(row.correct, row.denominator) for row in task_rows.values()]
    kept = [(k, n) for k, n in strata if n > 0]
    acc = sum(k / n for k, n in kept) / len(kept) if kept else float("nan")
    extra: dict[str, Any] = {}
    if protocol == "owner":
        iv, raw = owner_macro_basic_ci(
            [outcomes(rs, policy) for _, rs in sorted(by_task.items())], seed=seed, resamples=resamples
        )
        if raw is not None:
            extra["ci_owner_unclipped"] = list(raw)
    else:
        iv = stratified_macro_ci(strata, seed=seed, resamples=resamples)
    totals = accuracy_row("all", records, policy)
    free = [row.judge_free_accuracy for row in task_rows.values() if not math.isnan(row.judge_free_accuracy)]
    return {
        "group": f"{split_or_group}/{subset_or_task}",
        "split_or_group": split_or_group,
        "subset_or_task": subset_or_task,
        "weighting": "macro over tasks",
        "tasks": {t: row.accuracy for t, row in task_rows.items()},
        "n": totals.n,
        "correct": totals.correct,
        "accuracy": acc,
        "denominator": totals.denominator,
        "unparsed": totals.unparsed,
        "errors": totals.errors,
        "missing_image": totals.missing_image,
        "missing_response": totals.missing_response,
        "policy": policy,
        **iv.fields(),
        **extra,
        "n_judge": totals.n_judge,
        # Macro-averaged like ``accuracy``, over the tasks with a judge-free denominator.
        "judge_free_accuracy": sum(free) / len(free) if free else float("nan"),
    }


def per_task_rows(
    records: Sequence[Record], order: Sequence[str], policy: Policy, seed: int, resamples: int
) -> list[dict[str, Any]]:
    """Per split: an :func:`instance_row` per task (``order`` first, others sorted), then ``overall``."""
    by_split: dict[str, list[Record]] = defaultdict(list)
    for r in records:
        by_split[r.split or "test"].append(r)
    rows = []

    def split_key(s: str) -> tuple[int, str]:
        return (SPLIT_ORDER.index(s), "") if s in SPLIT_ORDER else (len(SPLIT_ORDER), s)

    for split in sorted(by_split, key=split_key):
        recs = by_split[split]
        present = {r.task for r in recs}
        tasks = [t for t in order if t in present] + sorted(present - set(order))
        for t in tasks:
            rows.append(instance_row(split, t, [r for r in recs if r.task == t], policy, seed, resamples))
        rows.append(instance_row(split, "overall", recs, policy, seed, resamples))
    return rows


@dataclass(frozen=True, slots=True)
class OwnerRows:
    """The row builders a benchmark's owner aggregation uses, bound to the run's settings.

    Handed to :meth:`~scopebench.benchmarks.Benchmark.owner_rows`, so a benchmark module computes
    its owners' table without importing the scoring layer.

    Attributes:
        policy: What unscorable records count as.
        seed: Bootstrap seed.
        resamples: Bootstrap resamples.
        protocol: The run's prompt protocol (``owner`` gives macro rows the owner's interval).
    """

    policy: Policy
    seed: int
    resamples: int
    protocol: str

    def instance(self, split_or_group: str, subset_or_task: str, records: Sequence[Record]) -> dict[str, Any]:
        """An instance-weighted row (:func:`instance_row`)."""
        return instance_row(split_or_group, subset_or_task, records, self.policy, self.seed, self.resamples)

    def macro(
        self, split_or_group: str, subset_or_task: str, records: Sequence[Record]
    ) -> dict[str, Any] | None:
        """A macro-average over tasks (:func:`macro_row`); ``None`` without records."""
        return macro_row(
            split_or_group, subset_or_task, records, self.policy, self.seed, self.resamples, self.protocol
        )

    def per_task(self, records: Sequence[Record], order: Sequence[str]) -> list[dict[str, Any]]:
        """Per split, a row per task and ``overall`` (:func:`per_task_rows`)."""
        return per_task_rows(records, order, self.policy, self.seed, self.resamples)


def owner_aggregation(
    records: Sequence[Record],
    *,
    benchmark: str,
    items: Mapping[str, Mapping[str, Any]] | None = None,
    policy: Policy = "wrong",
    seed: int = 0,
    resamples: int = DEFAULT_RESAMPLES,
    protocol: str = "default",
) -> dict[str, Any] | None:
    """The benchmark owners' aggregation of multiple-choice ``records``.

    Args:
        records: Records of one run (only multiple-choice ones are aggregated).
        benchmark: Benchmark name (or plugin file spec); its
            :meth:`~scopebench.benchmarks.Benchmark.owner_rows` computes the rows.
        items: Item summaries by id (for views such as μ-Bench's pathology rows).
        policy: What unscorable records count as.
        seed: Bootstrap seed.
        resamples: Bootstrap resamples.
        protocol: The run's prompt protocol; ``owner`` gives μ-Bench's macro rows the owner's
            basic bootstrap interval.

    Returns:
        ``{"benchmark", "description", "rows"}``, or ``None`` when the benchmark is unknown here
        or has no owner aggregation.
    """
    bench = find_benchmark(benchmark)
    if bench is None:
        return None
    mcq = [r for r in records if r.kind == "mcq"]
    rows = bench.owner_rows(mcq, items=items or {}, rows=OwnerRows(policy, seed, resamples, protocol))
    if rows is None:
        return None
    return {"benchmark": benchmark, "description": bench.owner_description, "rows": rows}

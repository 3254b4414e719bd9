"""Each benchmark's own headline aggregation (the ``owner`` section of the metrics dict).

* ``ubench`` — μ-Bench: macro-average over tasks for *coarse* (modality, submodality, domain,
  subdomain, stain), *fine* (classification) and *cognition* (any other multiple-choice task), on
  all items and on the pathology-only view (item metadata ``domain == "pathology"``); the 95% CI is
  a stratified percentile bootstrap (resample within each task, then macro-average), or under
  ``--protocol owner`` μ-Bench's own ``scipy.stats.bootstrap(method="basic")``
  (:func:`~scopebench.scoring.intervals.owner_macro_basic_ci`).
* ``pathmmu`` — instance-weighted accuracy per subset and ``overall`` for each split (``test_tiny``,
  ``test``, then any other split present), plus the paper's ``ALL`` rows: ``test`` and ``test_tiny``
  pooled (the released data keeps them disjoint; the paper's ALL columns count both, e.g.
  SocialPath 1,620 + 235 = 1,855, as ``eval/print_results.py`` of PathMMU-Benchmark/PathMMU does).
* ``spur`` — accuracy per task NP, MP, IL, TA, HI, Qual, Quant and instance-weighted ``overall``.
* ``microvqa`` — accuracy per task 1, 2, 3 and instance-weighted ``overall``.

Every row carries ``split_or_group`` and ``subset_or_task``, the two keys of the published-results
table, so published numbers can be set beside a run's. Instance-weighted rows carry the Wilson
interval of their accuracy (PathMMU, SPUR and MicroVQA publish no interval, so the owner protocol
changes nothing there); every row records its ``ci_method``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from scopebench.items import Record
from scopebench.scoring.accuracy import Policy, accuracy_row, outcomes
from scopebench.scoring.bootstrap import DEFAULT_RESAMPLES, stratified_macro_ci
from scopebench.scoring.intervals import owner_macro_basic_ci

__all__ = ["COARSE_TASKS", "FINE_TASKS", "MICROVQA_TASKS", "PATHMMU_ALL", "SPUR_TASKS", "owner_aggregation"]

COARSE_TASKS: tuple[str, ...] = ("modality", "submodality", "domain", "subdomain", "stain")
FINE_TASKS: tuple[str, ...] = ("classification",)
SPUR_TASKS: tuple[str, ...] = ("NP", "MP", "IL", "TA", "HI", "Qual", "Quant")
MICROVQA_TASKS: tuple[str, ...] = ("1", "2", "3")
_SPLIT_ORDER = ("test_tiny", "test")


def _row(
    split_or_group: str,
    subset_or_task: str,
    records: Sequence[Record],
    policy: Policy,
    seed: int,
    resamples: int,
) -> dict[str, Any]:
    row = accuracy_row(f"{split_or_group}/{subset_or_task}", records, policy, seed=seed, resamples=resamples)
    out = row.to_dict()
    out.update(split_or_group=split_or_group, subset_or_task=subset_or_task, weighting="instance")
    return out


def _macro_row(
    split_or_group: str,
    subset_or_task: str,
    records: Sequence[Record],
    policy: Policy,
    seed: int,
    resamples: int,
    protocol: str = "default",
) -> dict[str, Any] | None:
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


def _ubench(
    records: Sequence[Record],
    items: Mapping[str, Mapping[str, Any]],
    policy: Policy,
    seed: int,
    resamples: int,
    protocol: str = "default",
) -> list[dict[str, Any]]:
    def is_pathology(r: Record) -> bool:
        meta = items.get(r.item_id, {}).get("metadata") or {}
        return str(meta.get("domain", "")).strip().lower() == "pathology"

    groups = {
        "coarse": [r for r in records if r.task in COARSE_TASKS],
        "fine": [r for r in records if r.task in FINE_TASKS],
        "cognition": [r for r in records if r.task not in COARSE_TASKS + FINE_TASKS],
    }
    rows = []
    for name, recs in groups.items():
        for view, sel in (("all", recs), ("pathology", [r for r in recs if is_pathology(r)])):
            row = _macro_row(name, view, sel, policy, seed, resamples, protocol)
            if row is not None:
                rows.append(row)
    return rows


def _per_task(
    records: Sequence[Record], order: Sequence[str], policy: Policy, seed: int, resamples: int
) -> list[dict[str, Any]]:
    by_split: dict[str, list[Record]] = defaultdict(list)
    for r in records:
        by_split[r.split or "test"].append(r)
    rows = []

    def split_key(s: str) -> tuple[int, str]:
        return (_SPLIT_ORDER.index(s), "") if s in _SPLIT_ORDER else (len(_SPLIT_ORDER), s)

    for split in sorted(by_split, key=split_key):
        recs = by_split[split]
        present = {r.task for r in recs}
        tasks = [t for t in order if t in present] + sorted(present - set(order))
        for t in tasks:
            rows.append(_row(split, t, [r for r in recs if r.task == t], policy, seed, resamples))
        rows.append(_row(split, "overall", recs, policy, seed, resamples))
    return rows


#: The owner-row group of PathMMU's pooled ``test`` + ``test_tiny`` rows (the paper's "ALL").
PATHMMU_ALL = "ALL"
_PATHMMU_POOLED = ("test_tiny", "test")


def _pathmmu(records: Sequence[Record], policy: Policy, seed: int, resamples: int) -> list[dict[str, Any]]:
    order = ("PubMed", "SocialPath", "EduContent", "Atlas", "PathCLS")
    regrouped = [Record(**{**r.to_dict(), "task": r.subset or r.task}) for r in records]
    rows = _per_task(regrouped, order, policy, seed, resamples)
    # The paper's ALL = test ∪ test_tiny, per subset and overall; only where both splits are
    # present (with one of them, "ALL" would silently be Tiny or the rest of the test set).
    pooled = [r for r in regrouped if r.split in _PATHMMU_POOLED]
    splits_of: dict[str, set[str]] = defaultdict(set)
    for r in pooled:
        splits_of[r.task].add(r.split)
    if {s for ss in splits_of.values() for s in ss} != set(_PATHMMU_POOLED):
        return rows
    both = [t for t in order if len(splits_of.get(t, ())) == 2]
    both += sorted(t for t, ss in splits_of.items() if len(ss) == 2 and t not in order)
    all_rows = [
        _row(PATHMMU_ALL, t, [r for r in pooled if r.task == t], policy, seed, resamples) for t in both
    ]
    all_rows.append(_row(PATHMMU_ALL, "overall", pooled, policy, seed, resamples))
    for row in all_rows:
        row["pooled_splits"] = list(_PATHMMU_POOLED)
    # Beside Tiny and test, before any other split (val).
    at = max(i for i, row in enumerate(rows) if row["split_or_group"] in _PATHMMU_POOLED) + 1
    return rows[:at] + all_rows + rows[at:]


_DESCRIPTIONS = {
    "ubench": "μ-Bench: macro-average over tasks (coarse, fine, cognition; all items and pathology only); "
    "CI by stratified bootstrap within tasks (percentile; basic, as eVLLM, under --protocol owner)",
    "pathmmu": "PathMMU: instance-weighted accuracy per subset and overall, per split; ALL pools test and "
    "test_tiny (the paper's ALL columns)",
    "spur": "SPUR: accuracy per task (NP, MP, IL, TA, HI, Qual, Quant) and instance-weighted overall",
    "microvqa": "MicroVQA: accuracy per task (1, 2, 3) and instance-weighted overall",
}


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
        records: Multiple-choice records of one run.
        benchmark: Benchmark name; unknown benchmarks get ``None``.
        items: Item summaries by id (for μ-Bench's pathology view).
        policy: What unscorable records count as.
        seed: Bootstrap seed.
        resamples: Bootstrap resamples.
        protocol: The run's prompt protocol; ``owner`` gives μ-Bench's macro rows the owner's
            basic bootstrap interval.

    Returns:
        ``{"benchmark", "description", "rows"}`` or ``None`` when the benchmark has no owner
        aggregation here.
    """
    mcq = [r for r in records if r.kind == "mcq"]
    if benchmark == "ubench":
        rows = _ubench(mcq, items or {}, policy, seed, resamples, protocol)
    elif benchmark == "pathmmu":
        rows = _pathmmu(mcq, policy, seed, resamples)
    elif benchmark == "spur":
        rows = _per_task(mcq, SPUR_TASKS, policy, seed, resamples)
    elif benchmark == "microvqa":
        rows = _per_task(mcq, MICROVQA_TASKS, policy, seed, resamples)
    else:
        return None
    return {"benchmark": benchmark, "description": _DESCRIPTIONS[benchmark], "rows": rows}

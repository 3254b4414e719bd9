"""The metrics file of a run: accuracy with 95% CIs overall and per group.

Accuracy rows carry the Wilson score interval of ``correct / denominator``; macro-averages a
stratified bootstrap; localization scores a bootstrap (see each row's ``ci_method``).

Layout documented in ``docs/metrics-schema.md``. Only ``kind == "mcq"`` records count for accuracy;
detection records feed the ``localization`` section (mean GRIT score per class, each record scored
here from its stored boxes: :mod:`scopebench.scoring.detection`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from scopebench.benchmarks.registry import find_benchmark
from scopebench.items import Record
from scopebench.parsing.judge import answered_by_judge, judge_free
from scopebench.scoring.accuracy import Policy, accuracy_row, group_rows, outcomes
from scopebench.scoring.aggregate import owner_aggregation
from scopebench.scoring.baselines import baseline_section
from scopebench.scoring.bootstrap import (
    CI_METHOD,
    DEFAULT_RESAMPLES,
    Interval,
    bootstrap_ci,
    stratified_mean_ci,
)
from scopebench.scoring.calibration import calibration_section
from scopebench.scoring.detection import record_grit
from scopebench.scoring.grit import GRIT_SPLITS, localization_table
from scopebench.scoring.intervals import OWNER_BASIC, WILSON

__all__ = [
    "METADATA_FIELDS",
    "METRICS_SCHEMA_VERSION",
    "TOO_FEW_ITEMS",
    "compute_metrics",
    "judge_section",
    "localization_section",
    "sampling_section",
]

#: Bumped whenever the layout of the metrics dict changes (documented in docs/metrics-schema.md).
METRICS_SCHEMA_VERSION = 4

#: Item-metadata fields that get their own accuracy table when items carry them.
METADATA_FIELDS: tuple[str, ...] = ("modality", "submodality", "domain", "subdomain", "stain")


def _grit_split(cls: str, meta: Mapping[str, Any]) -> str | None:
    """``easy``/``hard`` for a detection item: its own ``grit_split``, else μ-Bench's table."""
    explicit = meta.get("grit_split")
    if explicit in ("easy", "hard"):
        return str(explicit)
    source = str(meta.get("dataset") or meta.get("source_dataset") or "").lower()
    for (fragment, name), split in GRIT_SPLITS.items():
        names = (fragment, *_DATASET_KEYS.get(fragment, ()))
        if source and any(n in source for n in names) and name == cls.lower():
            return split
    return None


#: The μ-Bench release names datasets ``<author>_et_al_<year>``, the paper by tool or challenge:
#: CellCognition is Held et al. 2010 (``held_et_al_2010_h2b``…), GlaS is Sirinukunwattana et al.
#: PCST has no confirmed key in the release, so its items need an explicit ``grit_split``.
_DATASET_KEYS: dict[str, tuple[str, ...]] = {
    "cellcognition": ("held_et_al_2010",),
    "glas": ("sirinukunwattana",),
    "wu": ("wu_et_al",),
}


def localization_section(
    records: Sequence[Record],
    items: Mapping[str, Mapping[str, Any]] | None = None,
    *,
    seed: int = 0,
    resamples: int = DEFAULT_RESAMPLES,
) -> list[dict[str, Any]]:
    """Mean GRIT localization score per class, per easy/hard split and overall, with 95% CIs.

    Every detection record counts, none is dropped. Each is scored here, from the boxes its parse
    stage stored and its item's targets (:func:`~scopebench.scoring.detection.record_grit`): a reply
    with no box is an empty prediction (0 with truths, 1 without); records without a reply (errors,
    missing images) score 0, as a failed detection; legacy records keep their stored ``extra["grit"]``
    (a non-number counts 0). A record's class
    comes from ``extra["class_name"]`` or the task. A class is named
    ``<source dataset>/<class>`` when the item names its dataset (μ-Bench's ``nucleus`` is easy
    in CellCognition and hard in PCST), else ``<class>``. The easy/hard split of a class comes from
    the item's ``grit_split`` metadata, else μ-Bench's published (dataset, class) table. Per-class
    intervals bootstrap the (image, class) scores; split and overall rows are macro-averages over
    classes, bootstrapped within each class. A class with fewer than 2 pairs, or fewer than 10
    that all score the same, has no interval (``NaN``, ``ci_method="too-few-items"``), and neither
    has a split/overall row that includes such a class: a zero-width interval would read as certain.

    Raises:
        DataNotFoundError: When a detection record with boxes has no item summary with targets
            in ``items`` (it could not be scored).
    """
    items = items or {}
    per_class: dict[str, list[float]] = defaultdict(list)
    split_of: dict[str, str] = {}
    for r in records:
        if r.kind != "detection":
            continue
        cls = str(r.extra.get("class_name") or r.subset or r.task)
        item = items.get(r.item_id)
        meta = (item or {}).get("metadata") or {}
        source = meta.get("dataset") or meta.get("source_dataset")
        key = f"{source}/{cls}" if source else cls
        per_class[key].append(record_grit(r, item))
        split = _grit_split(cls, meta)
        if split:
            split_of[key] = split
    pairs = [(cls, v) for cls, values in per_class.items() for v in values]
    out = []
    for row in localization_table(pairs, split_of):
        if row.group.startswith("class="):
            members = [row.group[len("class=") :]]
        else:
            members = [
                c for c in per_class if row.group == "overall" or f"split={split_of.get(c)}" == row.group
            ]
        if any(_too_few(per_class[c]) for c in members):
            ci = Interval(float("nan"), float("nan"), TOO_FEW_ITEMS, resamples, seed)
        elif row.group.startswith("class="):
            ci = bootstrap_ci(per_class[members[0]], seed=seed, resamples=resamples)
        else:
            ci = stratified_mean_ci([per_class[c] for c in members], seed=seed, resamples=resamples)
        out.append(
            {
                "group": row.group,
                "n": row.n,
                "score": row.score,
                "ci_low": ci.low,
                "ci_high": ci.high,
                "ci_method": ci.method,
            }
        )
    return out


#: ``ci_method`` of a localization row that has no interval (see :func:`_too_few`).
TOO_FEW_ITEMS = "too-few-items"
#: Below this many (image, class) pairs, a class whose scores are all equal gets no interval.
_MIN_CONSTANT_ITEMS = 10


def _too_few(values: Sequence[float]) -> bool:
    """Whether a class's scores are too few to bootstrap honestly.

    One pair has no spread to resample, and a handful of identical scores (all 0: the model found
    nothing) resamples to ``[p, p]``, an interval that claims a certainty a few images cannot give
    (with 9 identical outcomes the exact binomial 95% bound on the other outcome is still 0.34).
    """
    return len(values) < 2 or (len(values) < _MIN_CONSTANT_ITEMS and len(set(values)) == 1)


def _metadata_rows(
    records: Sequence[Record],
    items: Mapping[str, Mapping[str, Any]],
    policy: Policy,
    seed: int,
    resamples: int,
) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for fld in METADATA_FIELDS:

        def key(r: Record, fld: str = fld) -> str | None:
            meta = items.get(r.item_id, {}).get("metadata") or {}
            v = meta.get(fld)
            return None if v is None or v == "" else str(v)

        rows = group_rows(records, key, fld, policy, seed=seed, resamples=resamples)
        if rows:
            out[fld] = [r.to_dict() for r in rows]
    return out


def _interval_methods(benchmark: str, protocol: str) -> dict[str, str]:
    """Which 95% interval each kind of row carries (also recorded per row as ``ci_method``)."""
    bench = find_benchmark(benchmark)
    owner_basic = protocol == "owner" and bench is not None and bench.owner_macro_rows
    owner_macro = OWNER_BASIC if owner_basic else "stratified-" + CI_METHOD
    return {
        "proportion": WILSON,
        "macro_average": owner_macro,
        "localization_class": CI_METHOD,
        "localization_macro": "stratified-" + CI_METHOD,
    }


def judge_section(
    records: Sequence[Record], policy: Policy, *, seed: int, resamples: int = DEFAULT_RESAMPLES
) -> dict[str, Any] | None:
    """What the answer-extraction judge did, and the judge-free overall accuracy with its 95% CI.

    ``None`` when no record was sent to a judge. ``answered`` records took the judge's option;
    ``none`` were said to commit to no single option; ``unreadable`` replies were neither a bare
    label nor ``none``; ``failed`` calls got no reply. ``judge_free`` is the overall accuracy row
    with the judge's answers counted as ``unparsed`` (:func:`~scopebench.parsing.judge.judge_free`).
    """
    entries = [r.extra["judge"] for r in records if isinstance(r.extra.get("judge"), dict)]
    if not entries:
        return None
    statuses = [e.get("status") for e in entries]
    free = [judge_free(r) for r in records]
    return {
        "specs": sorted({str(e.get("spec")) for e in entries}),
        "asked": len(entries),
        "answered": sum(1 for r in records if r.status == "ok" and answered_by_judge(r)),
        "none": sum(1 for e in entries if e.get("status") == "ok" and e.get("verdict") == "none"),
        "unreadable": statuses.count("unreadable"),
        "failed": statuses.count("error"),
        "judge_free": accuracy_row("overall", free, policy, seed=seed, resamples=resamples).to_dict(),
    }


def compute_metrics(
    records: Sequence[Record],
    *,
    benchmark: str,
    policy: Policy = "wrong",
    items: Mapping[str, Mapping[str, Any]] | None = None,
    seed: int = 0,
    resamples: int = DEFAULT_RESAMPLES,
    baselines: bool = True,
    protocol: str = "default",
) -> dict[str, Any]:
    """Accuracy overall and per task / subset / split / metadata group, each with a 95% CI.

    Args:
        records: The run's records (one per item); only ``mcq`` records count for accuracy.
        benchmark: Benchmark name (selects the owner aggregation).
        policy: What unscorable records count as (see :mod:`scopebench.scoring.accuracy`).
        items: Item summaries by id (``load_run(...).items``) for the metadata tables and
            μ-Bench's pathology view.
        seed: Seed of every bootstrap interval (recorded in each row).
        resamples: Bootstrap resamples per interval.
        baselines: Add the random and frequent-choice baselines on the same items (needs
            ``items``; see :mod:`scopebench.scoring.baselines`).
        protocol: The run's prompt protocol (``run.json``); under ``owner`` μ-Bench's macro rows
            use the owner's basic bootstrap interval.

    Returns:
        A JSON-safe dict (NaN aside): ``schema_version``, ``benchmark``, ``policy``, ``bootstrap``,
        ``overall``, ``by_task``, ``by_subset``, ``by_split``, ``by_metadata``, ``owner``,
        ``localization``, ``calibration``, ``baselines``, ``counts``, ``judge``, ``sampling``.

    Raises:
        DataNotFoundError: When a detection record cannot be scored for want of its item's
            targets in ``items`` (:func:`localization_section`).
    """
    items = items or {}
    mcq = [r for r in records if r.kind == "mcq"]
    kinds: dict[str, int] = defaultdict(int)
    for r in records:
        kinds[r.kind] += 1
    kw: dict[str, Any] = {"seed": seed, "resamples": resamples}
    return {
        "schema_version": METRICS_SCHEMA_VERSION,
        "benchmark": benchmark,
        "policy": policy,
        "bootstrap": {"method": CI_METHOD, "confidence": 0.95, "resamples": resamples, "seed": seed},
        "intervals": _interval_methods(benchmark, protocol),
        "overall": accuracy_row("overall", mcq, policy, **kw).to_dict(),
        "by_task": [r.to_dict() for r in group_rows(mcq, lambda r: r.task, "task", policy, **kw)],
        "by_subset": [r.to_dict() for r in group_rows(mcq, lambda r: r.subset, "subset", policy, **kw)],
        "by_split": [r.to_dict() for r in group_rows(mcq, lambda r: r.split, "split", policy, **kw)],
        "by_metadata": _metadata_rows(mcq, items, policy, seed, resamples),
        "owner": owner_aggregation(
            mcq, benchmark=benchmark, items=items, policy=policy, protocol=protocol, **kw
        ),
        "localization": localization_section(records, items, seed=seed, resamples=resamples),
        "calibration": calibration_section(mcq),
        "baselines": baseline_section(mcq, items, benchmark=benchmark, **kw) if baselines else {},
        "counts": {"records": len(records), **dict(kinds)},
        "judge": judge_section(mcq, policy, seed=seed, resamples=resamples),
        "sampling": sampling_section(mcq, policy),
    }


def sampling_section(records: Sequence[Record], policy: Policy = "wrong") -> dict[str, Any] | None:
    """Accuracy over samples for runs that drew several replies per item (``--gen-arg n=…``).

    ``mean_accuracy`` averages each item's share of correct samples; ``majority_accuracy`` scores
    the majority choice, the record's own (so it equals the overall accuracy). Unparsed or failed
    samples count as wrong under ``wrong`` and are left out of their item's share under
    ``exclude`` (an item with no answered sample then drops out). ``None`` for greedy runs.
    """
    sampled = [r for r in records if isinstance(r.extra.get("samples"), list) and r.extra["samples"]]
    if not sampled:
        return None
    shares: list[float] = []
    for rec in sampled:
        marks = [s.get("correct") for s in rec.extra["samples"]]
        if policy == "exclude":
            marks = [m for m in marks if m is not None]
        if marks:
            shares.append(sum(m is True for m in marks) / len(marks))
    majority = outcomes(sampled, policy)
    return {
        "items": len(sampled),
        "samples_per_item": max(len(r.extra["samples"]) for r in sampled),
        "mean_accuracy": sum(shares) / len(shares) if shares else float("nan"),
        "majority_accuracy": sum(majority) / len(majority) if majority else float("nan"),
    }

"""Comparing runs of one benchmark: leaderboard, paired bootstrap and McNemar's exact test.

For every pair of runs, on the multiple-choice items both answered (under policy ``wrong``: every
shared item, unscorable answers counting as wrong; under ``exclude``: shared items both runs
answered):

* the accuracy difference ``acc(A) − acc(B)`` with a 95% paired-bootstrap interval;
* McNemar's exact test: with ``b`` = items A got right and B wrong, ``c`` = the reverse, the
  two-sided p-value of ``binomtest(b, b + c, 0.5)`` (1.0 when ``b + c = 0``; no test, NaN, when
  the runs share no item).

Warnings are raised (as strings, naming runs by :func:`run_labels`) when runs differ in data
fingerprint, protocol, parser version or item set, when two share no item, and when one run
directory is given twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations
from pathlib import Path
from typing import Any

from scopebench.config import ReportConfig
from scopebench.errors import ConfigMismatchError, DataFormatError
from scopebench.scoring.accuracy import Policy
from scopebench.scoring.bootstrap import DEFAULT_RESAMPLES, paired_diff_ci
from scopebench.scoring.metrics import compute_metrics
from scopebench.scoring.schema import Metrics
from scopebench.store.rundir import RunData, load_run

__all__ = [
    "CHECKED_KEYS",
    "compare_runs",
    "mcnemar_exact",
    "paired_comparison",
    "run_folder_names",
    "run_labels",
]

#: run.json keys whose difference makes a comparison suspect.
#: ``box_repair``: ``--box-repair`` scores the same replies up to 0.16 higher (GRIT).
CHECKED_KEYS: tuple[str, ...] = (
    "data_fingerprint",
    "protocol",
    "parser_version",
    "box_repair",
    "box_parser_version",
)


def run_labels(run_dirs: Sequence[str | Path]) -> list[str]:
    """Short, unique, deterministic names of run directories: their shortest distinguishing path suffix.

    ``sweep/alpha-0.5/run`` and ``sweep/alpha-1/run`` → ``alpha-0.5/run``, ``alpha-1/run``;
    ``runs/demo/random`` beside ``runs/pm/clip`` → ``random``, ``clip``. The same directory given
    twice gets ``-2``, ``-3``… on its later occurrences, so every label names one argument.
    """
    resolved = [Path(p).resolve() for p in run_dirs]
    unique = sorted(set(resolved), key=resolved.index)
    # The root ("/") is no useful name part; a path that runs out of parts keeps its full suffix.
    parts = [p.parts[1:] if p.is_absolute() else p.parts for p in unique]
    depth = [1] * len(unique)
    while True:
        labels = ["/".join(pp[-d:]) for pp, d in zip(parts, depth, strict=True)]
        clash = {x for x in labels if labels.count(x) > 1}
        grow = [i for i, x in enumerate(labels) if x in clash and depth[i] < len(parts[i])]
        if not grow:
            break
        for i in grow:
            depth[i] += 1
    by_path = dict(zip(unique, labels, strict=True))
    return _dedupe([by_path[p] for p in resolved])


def run_folder_names(run_dirs: Sequence[str | Path]) -> list[str]:
    """Unique folder names for the outputs of each run (:func:`run_labels` with ``/`` → ``_``)."""
    return _dedupe([label.replace("/", "_") for label in run_labels(run_dirs)])


def _dedupe(names: Sequence[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name}-{seen[name]}")
    return out


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts ``b`` and ``c``."""
    if b + c == 0:
        return 1.0
    from scipy import stats  # lazy, as in scoring.bootstrap

    return float(stats.binomtest(b, b + c, 0.5, alternative="two-sided").pvalue)


def _outcomes(run: RunData, policy: Policy) -> dict[str, bool]:
    return {
        r.item_id: bool(r.correct)
        for r in run.records
        if r.kind == "mcq" and (policy == "wrong" or r.status == "ok")
    }


def paired_comparison(
    a: dict[str, bool], b: dict[str, bool], *, seed: int, resamples: int = DEFAULT_RESAMPLES
) -> dict[str, Any]:
    """Accuracy difference, paired-bootstrap CI and McNemar's test on the items both maps share."""
    common = sorted(set(a) & set(b))
    xa = [a[i] for i in common]
    xb = [b[i] for i in common]
    n_b = sum(1 for u, v in zip(xa, xb, strict=True) if u and not v)
    n_c = sum(1 for u, v in zip(xa, xb, strict=True) if v and not u)
    n = len(common)
    iv = paired_diff_ci(xa, xb, seed=seed, resamples=resamples)
    return {
        "n_common": n,
        "accuracy_a": sum(xa) / n if n else float("nan"),
        "accuracy_b": sum(xb) / n if n else float("nan"),
        "difference": (n_b - n_c) / n if n else float("nan"),
        **iv.fields(),
        "b_a_right_b_wrong": n_b,
        "c_a_wrong_b_right": n_c,
        # No shared item, no test: NaN rather than McNemar's p = 1 of "no discordant pair".
        "mcnemar_p": mcnemar_exact(n_b, n_c) if n else float("nan"),
        "test": "McNemar exact (two-sided binomial on discordant pairs)" if n else "no shared items",
    }


def compare_runs(run_dirs: Sequence[str | Path], report: ReportConfig | None = None) -> dict[str, Any]:
    """Leaderboard and pairwise tests of runs of one benchmark.

    Args:
        run_dirs: Run directories (at least one).
        report: The seed of every bootstrap (``None``: 0), the resamples and what unscorable
            records count as (``published`` plays no part here).

    Returns:
        ``{"benchmark", "policy", "seed", "resamples", "leaderboard", "baselines", "pairs",
        "warnings"}``; leaderboard rows are sorted by overall accuracy (best first) and carry the
        owner rows; ``baselines`` holds the random and frequent-choice rows on the first run's items.

    Raises:
        DataFormatError: When no run is given.
        ConfigMismatchError: When the runs are of different benchmarks.
    """
    if not run_dirs:
        raise DataFormatError("compare needs at least one run directory")
    report = report or ReportConfig()
    seed = 0 if report.seed is None else report.seed
    resamples, policy = report.resamples, report.policy
    runs = [load_run(p) for p in run_dirs]
    benches = sorted({r.benchmark for r in runs})
    if len(benches) > 1:
        raise ConfigMismatchError(
            f"runs are of different benchmarks ({', '.join(benches)}); "
            "compare runs of one benchmark at a time"
        )
    labels = run_labels(run_dirs)
    warnings = _setting_warnings(runs, labels, run_dirs)
    outcomes = [_outcomes(r, policy) for r in runs]
    id_sets = [frozenset(r.item_id for r in run.records if r.kind == "mcq") for run in runs]
    if len(set(id_sets)) > 1:
        common = frozenset.intersection(*id_sets)
        warnings.append(
            "runs differ in item set ("
            + ", ".join(f"{lab}: {len(s)}" for lab, s in zip(labels, id_sets, strict=True))
            + f" items; {len(common)} shared); pairwise tests use shared items only"
        )
    board: list[dict[str, Any]] = []
    overall: list[float] = []  # each run's headline accuracy, for the leaderboard's order
    baselines: list[dict[str, Any]] = []
    for k, run in enumerate(runs):
        # Chance levels once, on the first run's items (the item-set warning covers the rest).
        typed = Metrics.from_dict(
            compute_metrics(
                run.records, benchmark=run.benchmark, policy=policy, items=run.items, seed=seed,
                resamples=resamples, baselines=k == 0, protocol=str(run.config.get("protocol") or "default"),
            )
        )  # fmt: skip
        baselines += _baseline_entries(typed, labels[k])
        board.append(_board_entry(run, typed))
        overall.append(typed.overall.accuracy)
    order = sorted(range(len(runs)), key=lambda i: -_acc(overall[i]))
    pairs = []
    for i, j in combinations(order, 2):
        res = paired_comparison(outcomes[i], outcomes[j], seed=seed, resamples=resamples)
        res.update(
            model_a=runs[i].model, model_b=runs[j].model, run_a=str(runs[i].path), run_b=str(runs[j].path)
        )
        if not res["n_common"]:
            warnings.append(f"{labels[i]} and {labels[j]} share no items: no paired test")
        pairs.append(res)
    return {
        "benchmark": benches[0],
        "policy": policy,
        "seed": seed,
        "resamples": resamples,
        "leaderboard": [board[i] for i in order],
        "baselines": baselines,
        "pairs": pairs,
        "warnings": warnings,
    }


def _setting_warnings(
    runs: Sequence[RunData], labels: Sequence[str], run_dirs: Sequence[str | Path]
) -> list[str]:
    """Warnings about what makes the runs' numbers not comparable: a run twice, settings, judges."""
    warnings: list[str] = []
    resolved = [r.path.resolve() for r in runs]
    for k, path in enumerate(resolved):
        if path in resolved[:k]:
            first = resolved.index(path)
            warnings.append(
                f"{labels[k]} is the same run directory as {labels[first]} ({run_dirs[k]}): "
                "a run compared with itself"
            )
    for key in CHECKED_KEYS:
        values = {str(r.config.get(key)) for r in runs}
        if len(values) > 1:
            detail = ", ".join(f"{lab}={r.config.get(key)!r}" for lab, r in zip(labels, runs, strict=True))
            warnings.append(f"runs differ in {key}: {detail}")
    judges = [(r.config.get("judge") or {}).get("spec") for r in runs]
    if len(set(judges)) > 1:
        # Accuracies with and without a judge's answers are not the same measurement.
        detail = ", ".join(f"{lab}={j!r}" for lab, j in zip(labels, judges, strict=True))
        warnings.append(
            f"runs differ in answer-extraction judge: {detail}; each run's metrics.json gives "
            "judge_free_accuracy for a comparison without any judge"
        )
    return warnings


def _baseline_entries(typed: Metrics, label: str) -> list[dict[str, Any]]:
    """The chance baselines computed on one run's items, as leaderboard-like entries."""
    return [
        {
            "model": f"{name} baseline",
            "source": f"baseline on {label}'s items",
            "overall": base.overall.to_dict(),
            "owner": [r.to_dict() for r in base.owner],
        }
        for name, base in typed.baselines.items()
    ]


def _board_entry(run: RunData, typed: Metrics) -> dict[str, Any]:
    """One run's leaderboard entry."""
    return {
        "run": str(run.path),
        "model": run.model,
        "source": "this run",
        "overall": typed.overall.to_dict(),
        "by_task": [r.to_dict() for r in typed.by_task],
        "by_subset": [r.to_dict() for r in typed.by_subset],
        "owner": [r.to_dict() for r in typed.owner_rows],
        "config": {k: run.config.get(k) for k in ("data_fingerprint", "protocol", "parser_version", "seed")},
    }


def _acc(x: float) -> float:
    return -1.0 if x != x else x

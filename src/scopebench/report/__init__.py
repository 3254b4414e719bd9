"""Reporting: per-run metric files (JSON, CSV, Markdown, LaTeX, plots) and the console table."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

from scopebench.config import DEFAULT_RESAMPLES, Policy, ReportConfig
from scopebench.display import shown
from scopebench.report.breakdowns import write_spur_breakdowns
from scopebench.report.labels import run_display_names
from scopebench.report.tables import (
    judge_used,
    render_metrics_table,
    report_columns,
    report_rows,
    rows_to_csv,
    rows_to_latex,
    rows_to_markdown,
    table_note,
)
from scopebench.scoring.metrics import compute_metrics
from scopebench.store import rundir
from scopebench.store.rundir import METRICS_FILE, RunData, load_run

__all__ = ["is_run_default", "json_safe", "render_metrics_table", "report_dir", "write_run_outputs"]


def json_safe(obj: Any) -> Any:
    """Replace NaN/inf floats by ``None`` recursively so the output is strict JSON."""
    if isinstance(obj, float):
        return None if math.isnan(obj) or math.isinf(obj) else obj
    if isinstance(obj, dict):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [json_safe(v) for v in obj]
    return obj


def is_run_default(run: RunData, *, seed: int, resamples: int, policy: Policy) -> bool:
    """Whether these settings compute exactly the run's own metrics (``scopebench run``'s).

    Those are policy ``wrong``, the run's seed (``run.json``) and the default resamples. Only
    such metrics may replace the run directory's ``metrics.json``: a finished run that is run
    again reuses that file as its headline number.
    """
    return policy == "wrong" and seed == run_seed(run) and resamples == DEFAULT_RESAMPLES


def run_seed(run: RunData) -> int:
    """The seed the run was made with (0 when ``run.json`` has none)."""
    return int(run.config.get("seed") or 0)


def report_dir(run_dir: str | Path, report: ReportConfig) -> Path:
    """Where ``scopebench report`` writes a run's files when no ``--out`` is given.

    The run directory itself for the run's own settings (:func:`is_run_default`), else its
    subfolder ``report-<policy>-seed<seed>-<resamples>``, so other settings never overwrite the
    run's ``metrics.json`` nor its tables. A ``report.seed`` of ``None`` is the run's own seed.
    """
    run = load_run(run_dir)
    seed = run_seed(run) if report.seed is None else report.seed
    if is_run_default(run, seed=seed, resamples=report.resamples, policy=report.policy):
        return run.path
    return run.path / f"report-{report.policy}-seed{seed}-{report.resamples}"


def write_run_outputs(
    run_dir: str | Path,
    report: ReportConfig | None = None,
    *,
    out_dir: str | Path | None = None,
) -> dict[str, Any]:
    """Compute a run's metrics and write them with tables and plots.

    Writes ``metrics.json``/``.csv``/``.md``/``.tex`` (accuracy rows, then the GRIT
    ``localization`` rows), ``accuracy_by_task.png``/``.svg`` (when any item has an accuracy),
    ``localization.png``/``.svg`` (GRIT score per class), ``reliability.png``/``.svg`` (when
    records carry scores) and, for SPUR runs, ``spur_breakdowns.json``/``.md``/``.png``/``.svg``
    (:mod:`scopebench.report.breakdowns`) into ``out_dir`` (default, or when it is the run
    directory: :func:`report_dir`). The run directory's own ``metrics.json`` is rewritten only
    for the run's own settings (:func:`is_run_default`); another folder, or any other policy,
    seed or resample count, leaves the run directory untouched.

    Args:
        run_dir: A run directory.
        report: The bootstrap seed (default: the run's seed), resamples and the policy for
            unscorable records; default :class:`~scopebench.config.ReportConfig`'s.
        out_dir: Where the files go (default :func:`report_dir`).

    Returns:
        The metrics dict (NaN where undefined).
    """
    run = load_run(run_dir)
    report = report or ReportConfig()
    seed = run_seed(run) if report.seed is None else report.seed
    resamples, policy = report.resamples, report.policy
    protocol = str(run.config.get("protocol") or "default")
    metrics = compute_metrics(run.records, benchmark=run.benchmark, policy=policy, items=run.items,
                              seed=seed, resamples=resamples, protocol=protocol)  # fmt: skip
    metrics["model"] = shown(run.model)  # the whole spec is in run.json; a shared file shows ~
    default = is_run_default(run, seed=seed, resamples=resamples, policy=policy)
    out = Path(out_dir) if out_dir is not None else run.path
    if out.resolve() == run.path.resolve() and not default:
        # The run directory holds the run's own metrics only (a re-run reuses them).
        out = report_dir(run.path, dataclasses.replace(report, seed=seed))
    out.mkdir(parents=True, exist_ok=True)
    text = json.dumps(json_safe(metrics), indent=2, ensure_ascii=False)
    if default and out_dir is None and rundir.is_writable(run.path):
        # Only when no other folder was asked for (`report --out` leaves the run untouched), and
        # never into a read-only run.
        (run.path / METRICS_FILE).write_text(text, encoding="utf-8")
    (out / METRICS_FILE).write_text(text, encoding="utf-8")
    _write_tables_and_plots(run, metrics, out, policy)
    return metrics


def _write_tables_and_plots(run: RunData, metrics: dict[str, Any], out: Path, policy: Policy) -> None:
    """``metrics.csv``/``.md``/``.tex`` and the plots of :func:`write_run_outputs` into ``out``."""
    from scopebench.report.plots import (
        chance_level,
        has_accuracy,
        plot_accuracy,
        plot_localization,
        plot_reliability,
        reliability_drawn,
    )

    rows = report_rows(metrics)
    # The display name: a spec may name a local (home) folder, which a shared file must not show.
    title = f"{run.benchmark} — {run_display_names([run])[0]}"
    (out / "metrics.csv").write_text(rows_to_csv(rows, report_columns(metrics)), encoding="utf-8")
    note = table_note(metrics)
    judge = judge_used(metrics)
    (out / "metrics.md").write_text(rows_to_markdown(rows, title, note, judge=judge), encoding="utf-8")
    (out / "metrics.tex").write_text(rows_to_latex(rows, title, note, judge=judge), encoding="utf-8")
    task_rows = metrics["by_task"] or [metrics["overall"]]
    # A detection-only run has no accuracy to plot: its figure is the GRIT score per class.
    if has_accuracy(task_rows):
        plot_accuracy(task_rows, out / "accuracy_by_task", title, chance_level(metrics))
    if metrics.get("localization"):
        plot_localization(metrics["localization"], out / "localization", title)
    if metrics.get("calibration") and reliability_drawn(run.model):
        plot_reliability(metrics["calibration"]["bins"], out / "reliability", title)
    # The paper's MP-by-category and TA-by-relations breakdowns; a built benchmark whose panels
    # `build filter` categorised gets the by-category one.
    if run.benchmark == "spur" or any(
        "panel_category" in (it.get("metadata") or {}) for it in run.items.values()
    ):
        write_spur_breakdowns(run.records, run.items, out, policy=policy, title=title)

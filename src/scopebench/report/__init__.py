"""Reporting: per-run metric files (JSON, CSV, Markdown, LaTeX, plots) and the console table."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from scopebench.engine.rundir import METRICS_FILE, load_run
from scopebench.report.tables import (
    metrics_rows,
    render_metrics_table,
    rows_to_csv,
    rows_to_latex,
    rows_to_markdown,
    table_note,
)
from scopebench.scoring.accuracy import Policy
from scopebench.scoring.metrics import compute_metrics

__all__ = ["json_safe", "render_metrics_table", "write_run_outputs"]


def json_safe(obj: Any) -> Any:
    """Replace NaN/inf floats by ``None`` recursively so the output is strict JSON."""
    if isinstance(obj, float):
        return None if math.isnan(obj) or math.isinf(obj) else obj
    if isinstance(obj, dict):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [json_safe(v) for v in obj]
    return obj


def write_run_outputs(
    run_dir: str | Path,
    *,
    seed: int = 0,
    resamples: int = 1000,
    policy: Policy = "wrong",
    out_dir: str | Path | None = None,
) -> dict[str, Any]:
    """Compute a run's metrics and write them beside it.

    Writes ``metrics.json`` (always into the run dir), and ``metrics.csv``, ``metrics.md``,
    ``metrics.tex``, ``accuracy_by_task.png``/``.svg`` and, when records carry scores,
    ``reliability.png``/``.svg`` into ``out_dir`` (default: the run dir).

    Args:
        run_dir: A run directory.
        seed: Seed of every bootstrap interval.
        resamples: Bootstrap resamples per interval.
        policy: What unscorable records count as.
        out_dir: Where the tables and plots go (default ``run_dir``).

    Returns:
        The metrics dict (NaN where undefined).
    """
    from scopebench.report.plots import plot_accuracy, plot_reliability

    run = load_run(run_dir)
    metrics = compute_metrics(
        run.records, benchmark=run.benchmark, policy=policy, items=run.items, seed=seed, resamples=resamples
    )
    metrics["model"] = run.model
    out = Path(out_dir) if out_dir is not None else run.path
    out.mkdir(parents=True, exist_ok=True)
    text = json.dumps(json_safe(metrics), indent=2, ensure_ascii=False)
    (run.path / METRICS_FILE).write_text(text, encoding="utf-8")
    if out != run.path:
        (out / METRICS_FILE).write_text(text, encoding="utf-8")
    rows = metrics_rows(metrics)
    title = f"{run.benchmark} — {run.model}"
    (out / "metrics.csv").write_text(rows_to_csv(rows), encoding="utf-8")
    note = table_note(metrics)
    (out / "metrics.md").write_text(rows_to_markdown(rows, title, note), encoding="utf-8")
    (out / "metrics.tex").write_text(rows_to_latex(rows, title, note), encoding="utf-8")
    task_rows = metrics["by_task"] or [metrics["overall"]]
    plot_accuracy(task_rows, out / "accuracy_by_task", title)
    if metrics.get("calibration"):
        plot_reliability(metrics["calibration"]["bins"], out / "reliability", title)
    return metrics

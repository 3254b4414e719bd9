"""Forest plot: each model's headline accuracy with its 95% interval, chance level drawn.

One panel per benchmark; a row per run (labelled by its display name), the point at the run's
headline accuracy (``metrics.json`` ``overall``: every multiple-choice record, Wilson interval)
and a horizontal bar for the interval. Chance is the expected accuracy of a uniform guess,
the mean over the run's multiple-choice items of 1 / (number of options): one dashed line when all
runs share it, else a tick on each row.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from scopebench.results import Results

__all__ = ["chance_level", "forest_figure", "plot_forest"]


def chance_level(results: Results, items: Mapping[str, Mapping[str, Any]]) -> float:
    """Expected accuracy (fraction) of a uniform guess over the run's multiple-choice records.

    Args:
        results: The run.
        items: Its item summaries by id (``RunData.items``), which hold the options.

    Returns:
        The mean of ``1 / len(choices)`` over the run's multiple-choice records; NaN without any.
    """
    inv = []
    for rec in results.records:
        if rec.kind != "mcq":
            continue
        choices = (items.get(rec.item_id) or {}).get("choices") or []
        if choices:
            inv.append(1.0 / len(choices))
    return sum(inv) / len(inv) if inv else math.nan


def forest_figure(
    labels: Sequence[str], results: Sequence[Results], chances: Sequence[float], title: str
) -> Figure:
    """The forest plot of ``results`` (one row each, top to bottom in the given order)."""
    n = len(results)
    fig, ax = plt.subplots(figsize=(7.0, 1.2 + 0.42 * n))
    ys = list(range(n - 1, -1, -1))
    for y, res in zip(ys, results, strict=True):
        acc, (low, high) = res.accuracy, res.interval
        if math.isnan(acc):
            continue
        if not (math.isnan(low) or math.isnan(high)):
            ax.plot([100 * low, 100 * high], [y, y], color="#1f4e79", linewidth=2, solid_capstyle="butt")
        ax.plot([100 * acc], [y], marker="s", color="#1f4e79", markersize=7, linestyle="none")
        ax.annotate(f"{100 * acc:.1f}", (100 * acc, y), textcoords="offset points", xytext=(0, 7),
                    ha="center", fontsize=8)  # fmt: skip
    known = [c for c in chances if not math.isnan(c)]
    if known and max(known) - min(known) < 1e-9:
        ax.axvline(100 * known[0], color="#b22222", linestyle="--", linewidth=1,
                   label=f"chance ({100 * known[0]:.1f}%)")  # fmt: skip
    elif known:
        for i, (y, c) in enumerate(zip(ys, chances, strict=True)):
            if not math.isnan(c):
                ax.plot([100 * c], [y], marker="|", color="#b22222", markersize=14, linestyle="none",
                        label="chance (per run)" if i == 0 else None)  # fmt: skip
    ax.set_yticks(ys, list(labels))
    ax.set_ylim(-0.8, n - 0.2)
    ax.set_xlim(0, 100)
    ax.set_xlabel("accuracy (%) with 95% interval")
    ax.set_title(title, fontsize=10, loc="left")
    ax.grid(axis="x", alpha=0.3)
    if known:
        # Above the axes, right of the title: the legend never covers a row or the axis label.
        ax.legend(loc="lower right", bbox_to_anchor=(1.0, 1.0), frameon=False, fontsize=8, borderaxespad=0.2)
    fig.tight_layout()
    return fig


def plot_forest(
    labels: Sequence[str], results: Sequence[Results], chances: Sequence[float], path: str | Path, title: str
) -> list[Path]:
    """Save the forest plot as ``path`` + ``.png`` and ``.svg``; returns the files."""
    fig = forest_figure(labels, results, chances, title)
    base = Path(path)
    out = []
    try:
        for ext in ("png", "svg"):
            target = base.with_name(base.name + f".{ext}")
            # No creation date in the SVG, so a rerun on the same runs writes the same bytes.
            fig.savefig(
                target, dpi=150, bbox_inches="tight", metadata={"Date": None} if ext == "svg" else None
            )
            out.append(target)
    finally:
        plt.close(fig)
    return out

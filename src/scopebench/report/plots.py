"""Figures: accuracy per task with CI whiskers, and the reliability diagram (matplotlib, Agg)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

__all__ = ["plot_accuracy", "plot_reliability"]


def plot_accuracy(rows: Sequence[Mapping[str, Any]], stem: Path, title: str = "") -> list[Path]:
    """Bar chart of accuracy per row with 95% CI whiskers, saved as ``stem.png`` and ``stem.svg``."""
    rows = [r for r in rows if not math.isnan(float(r["accuracy"]))]
    labels = [str(r["group"]).split("=", 1)[-1] for r in rows]
    acc = [100 * float(r["accuracy"]) for r in rows]
    lo = [
        max(0.0, a - 100 * float(r["ci_low"])) if not math.isnan(r["ci_low"]) else 0.0
        for a, r in zip(acc, rows, strict=True)
    ]
    hi = [
        max(0.0, 100 * float(r["ci_high"]) - a) if not math.isnan(r["ci_high"]) else 0.0
        for a, r in zip(acc, rows, strict=True)
    ]
    fig, ax = plt.subplots(figsize=(max(4.0, 0.6 * len(rows) + 2), 3.5))
    ax.bar(range(len(rows)), acc, yerr=[lo, hi], capsize=3, color="#4C72B0")
    ax.set_xticks(range(len(rows)), labels, rotation=45, ha="right")
    ax.set_ylabel("accuracy (%) with 95% CI")
    ax.set_ylim(0, 100)
    if title:
        ax.set_title(title)
    fig.tight_layout()
    paths = [stem.with_suffix(".png"), stem.with_suffix(".svg")]
    for p in paths:
        fig.savefig(p, dpi=150)
    plt.close(fig)
    return paths


def plot_reliability(bins: Sequence[Mapping[str, Any]], path: Path, title: str = "") -> Path:
    """Reliability diagram (accuracy vs confidence per bin) saved as a PNG."""
    fig, ax = plt.subplots(figsize=(4, 4))
    ax.plot([0, 1], [0, 1], ls="--", color="grey", lw=1)
    used = [b for b in bins if b["n"]]
    width = (bins[0]["high"] - bins[0]["low"]) if bins else 1 / 15
    ax.bar(
        [b["low"] for b in used],
        [b["accuracy"] for b in used],
        width=width,
        align="edge",
        edgecolor="k",
        alpha=0.7,
    )
    ax.set_xlabel("confidence (max probability)")
    ax.set_ylabel("accuracy")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    if title:
        ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    plt.close(fig)
    return path

"""Figures: accuracy per task with CI whiskers, a group × model heatmap, the reliability diagram.

Every figure is built by a ``*_figure`` function and either saved (``plot_*``: PNG and SVG) or
embedded in the HTML report as a ``data:`` URI (:func:`figure_data_uri`). matplotlib runs on the
Agg backend, so no display is needed.
"""

from __future__ import annotations

import base64
import io
import math
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.figure import Figure

__all__ = [
    "accuracy_figure",
    "figure_data_uri",
    "has_accuracy",
    "heatmap_figure",
    "localization_figure",
    "plot_accuracy",
    "plot_heatmap",
    "plot_localization",
    "plot_reliability",
    "reliability_figure",
    "save_figure",
    "short_label",
]


def _nan(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def short_label(text: str, max_len: int = 40) -> str:
    """A plot label for a model spec or run name: paths shortened to their last part, then capped.

    ``clip:/root/.cache/huggingface/…/snapshots/abc123`` → ``clip:abc123``; hub ids such as
    ``clip:openai/clip-vit-base-patch32`` stay; a label longer than ``max_len`` ends in ``…``.
    """

    def part(p: str) -> str:
        # A local path (absolute, home- or dot-relative, or several folders deep), not a hub id.
        if p.startswith(("/", "~", "./", "../")) or p.count("/") >= 2:
            return p.rstrip("/").rsplit("/", 1)[-1] or p
        return p

    out = " ".join(":".join(part(p) for p in tok.split(":")) for tok in text.split(" "))
    return out if len(out) <= max_len else out[: max_len - 1] + "…"


def _title(ax: Any, title: str, width: int, **kwargs: Any) -> None:
    """Set a shortened title wrapped to ``width`` characters, so it is never clipped."""
    if title:
        ax.set_title(textwrap.fill(short_label(title, max_len=3 * width), width=width), **kwargs)


def save_figure(fig: Figure, stem: Path) -> list[Path]:
    """Save ``fig`` as ``stem.png`` (150 dpi) and ``stem.svg``, then close it.

    The bounding box is tight, so long tick labels and titles are not cut at the figure edge.
    """
    paths = [stem.with_suffix(".png"), stem.with_suffix(".svg")]
    for p in paths:
        fig.savefig(p, dpi=150, bbox_inches="tight")
    plt.close(fig)
    return paths


def figure_data_uri(fig: Figure, fmt: str = "svg") -> str:
    """The figure as a ``data:`` URI (SVG by default), then close it.

    A data URI rather than inline ``<svg>`` markup keeps the ids matplotlib writes into each SVG
    from colliding when one page holds several figures.
    """
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, dpi=110, bbox_inches="tight")
    plt.close(fig)
    mime = "image/svg+xml" if fmt == "svg" else f"image/{fmt}"
    return f"data:{mime};base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def accuracy_figure(rows: Sequence[Mapping[str, Any]], title: str = "") -> Figure:
    """Bar chart of accuracy per row (percent) with 95% CI whiskers."""
    rows = [r for r in rows if not _nan(r["accuracy"])]
    labels = [str(r["group"]).split("=", 1)[-1] for r in rows]
    acc = [100 * float(r["accuracy"]) for r in rows]
    lo = [
        0.0 if _nan(r["ci_low"]) else max(0.0, a - 100 * float(r["ci_low"]))
        for a, r in zip(acc, rows, strict=True)
    ]
    hi = [
        0.0 if _nan(r["ci_high"]) else max(0.0, 100 * float(r["ci_high"]) - a)
        for a, r in zip(acc, rows, strict=True)
    ]
    fig, ax = plt.subplots(figsize=(max(4.0, 0.6 * len(rows) + 2), 3.5))
    ax.bar(range(len(rows)), acc, yerr=[lo, hi], capsize=3, color="#4C72B0")
    ax.set_xticks(range(len(rows)), labels, rotation=45, ha="right")
    ax.set_ylabel("accuracy (%) with 95% CI")
    ax.set_ylim(0, 100)
    _title(ax, title, width=int(8 * fig.get_figwidth()))
    fig.tight_layout()
    return fig


def has_accuracy(rows: Sequence[Mapping[str, Any]]) -> bool:
    """Whether any row has a defined accuracy (a detection-only run has none)."""
    return any(r["n"] and not _nan(r["accuracy"]) for r in rows)


def localization_figure(rows: Sequence[Mapping[str, Any]], title: str = "") -> Figure:
    """Bar chart of the mean GRIT localization score per class with 95% CI whiskers.

    ``rows`` are a metrics dict's ``localization`` rows; the split and overall rows are drawn
    after the classes, in grey.
    """
    rows = [r for r in rows if not _nan(r["score"])]
    labels = [
        str(r["group"]).split("=", 1)[-1] if r["group"].startswith("class=") else r["group"] for r in rows
    ]
    score = [float(r["score"]) for r in rows]
    lo = [
        0.0 if _nan(r["ci_low"]) else max(0.0, v - float(r["ci_low"]))
        for v, r in zip(score, rows, strict=True)
    ]
    hi = [
        0.0 if _nan(r["ci_high"]) else max(0.0, float(r["ci_high"]) - v)
        for v, r in zip(score, rows, strict=True)
    ]
    colors = ["#4C72B0" if r["group"].startswith("class=") else "#999999" for r in rows]
    fig, ax = plt.subplots(figsize=(max(4.0, 0.6 * len(rows) + 2), 3.5))
    ax.bar(range(len(rows)), score, yerr=[lo, hi], capsize=3, color=colors)
    ax.set_xticks(range(len(rows)), labels, rotation=45, ha="right")
    ax.set_ylabel("GRIT localization score (95% CI)")
    ax.set_ylim(0, 1)
    _title(ax, title, width=int(8 * fig.get_figwidth()))
    fig.tight_layout()
    return fig


def plot_localization(rows: Sequence[Mapping[str, Any]], stem: Path, title: str = "") -> list[Path]:
    """:func:`localization_figure` saved as ``stem.png`` and ``stem.svg``."""
    return save_figure(localization_figure(rows, title), stem)


def plot_accuracy(rows: Sequence[Mapping[str, Any]], stem: Path, title: str = "") -> list[Path]:
    """Bar chart of accuracy per row with 95% CI whiskers, saved as ``stem.png`` and ``stem.svg``."""
    return save_figure(accuracy_figure(rows, title), stem)


def reliability_figure(bins: Sequence[Mapping[str, Any]], title: str = "") -> Figure:
    """Reliability diagram: accuracy against confidence per bin, with the diagonal."""
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
    _title(ax, title, width=36, fontsize=9)
    fig.tight_layout()
    return fig


def plot_reliability(bins: Sequence[Mapping[str, Any]], path: Path, title: str = "") -> list[Path]:
    """Reliability diagram saved as PNG and SVG (``path``'s suffix is replaced)."""
    return save_figure(reliability_figure(bins, title), path.with_suffix(""))


def heatmap_figure(
    groups: Sequence[str], models: Sequence[str], values: Sequence[Sequence[float]], title: str = ""
) -> Figure:
    """Group × model heatmap of accuracy (percent); ``values[g][m]`` may be NaN (shown blank).

    Args:
        groups: Row labels (``task=NP``…).
        models: Column labels.
        values: Accuracy in ``[0, 1]`` per group and model.
        title: Figure title.
    """
    import numpy as np

    data = np.array(values, dtype=float).reshape(len(groups), len(models)) * 100
    fig, ax = plt.subplots(figsize=(max(4.0, 1.1 * len(models) + 3), max(2.5, 0.3 * len(groups) + 1.5)))
    im = ax.imshow(np.ma.masked_invalid(data), cmap="viridis", vmin=0, vmax=100, aspect="auto")
    ax.set_xticks(range(len(models)), [short_label(m, max_len=28) for m in models], rotation=30, ha="right")
    ax.set_yticks(range(len(groups)), groups)
    for g in range(len(groups)):
        for m in range(len(models)):
            if not math.isnan(data[g, m]):
                ax.text(
                    m,
                    g,
                    f"{data[g, m]:.0f}",
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="white" if data[g, m] < 60 else "black",
                )
    fig.colorbar(im, ax=ax, label="accuracy (%)")
    _title(ax, title, width=int(7 * fig.get_figwidth()))
    fig.tight_layout()
    return fig


def plot_heatmap(
    groups: Sequence[str],
    models: Sequence[str],
    values: Sequence[Sequence[float]],
    stem: Path,
    title: str = "",
) -> list[Path]:
    """Group × model heatmap saved as ``stem.png`` and ``stem.svg``."""
    return save_figure(heatmap_figure(groups, models, values, title), stem)

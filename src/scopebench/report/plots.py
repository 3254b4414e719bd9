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

from scopebench.scoring.baselines import BASELINES

__all__ = [
    "CHANCE_LABEL",
    "accuracy_figure",
    "chance_level",
    "figure_data_uri",
    "has_accuracy",
    "heatmap_figure",
    "localization_figure",
    "models_accuracy_figure",
    "plot_accuracy",
    "plot_heatmap",
    "plot_localization",
    "plot_reliability",
    "reliability_drawn",
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


#: One colour per model, in order (colour-blind-safe "tab10" start).
_COLORS = ("#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860", "#DA8BC3", "#8C8C8C")
#: Label of the chance line in every accuracy figure.
CHANCE_LABEL = "chance (mean 1 / number of options)"


def _interval(rows: Sequence[Mapping[str, Any]], acc: Sequence[float]) -> tuple[list[float], list[float]]:
    """Whisker lengths below and above each accuracy (percent), 0 where the interval is undefined."""
    lo = [
        0.0 if _nan(r["ci_low"]) else max(0.0, a - 100 * float(r["ci_low"]))
        for a, r in zip(acc, rows, strict=True)
    ]
    hi = [
        0.0 if _nan(r["ci_high"]) else max(0.0, 100 * float(r["ci_high"]) - a)
        for a, r in zip(acc, rows, strict=True)
    ]
    return lo, hi


def models_accuracy_figure(
    series: Sequence[tuple[str, Sequence[Mapping[str, Any]]]], title: str = "", chance: float | None = None
) -> Figure:
    """Accuracy per group (task) of every model in ONE panel: grouped bars with 95% CI whiskers.

    Each bar's value is also drawn as a black tick with a white edge, so a 0% bar (no height) is
    still seen; the chance level is a dashed line; the legend sits right of the axes, outside the
    data.

    Args:
        series: ``(model label, metrics rows)`` per model; rows are ``by_task`` (or ``overall``)
            rows with ``group``, ``accuracy``, ``ci_low``, ``ci_high``.
        title: Figure title.
        chance: Chance accuracy in ``[0, 1]`` (the random baseline's expected accuracy), or None.
    """
    groups: list[str] = []
    for _, rows in series:
        for r in rows:
            if not _nan(r["accuracy"]) and r["group"] not in groups:
                groups.append(r["group"])
    k = max(1, len(series))
    width = 0.8 / k
    fig, ax = plt.subplots(
        figsize=(max(4.0, (0.35 * k + 0.35) * len(groups) + 2) + (2.2 if k > 1 else 0), 3.5)
    )
    for m, (label, rows) in enumerate(series):
        by_group = {r["group"]: r for r in rows if not _nan(r["accuracy"])}
        xs = [g + (m - (k - 1) / 2) * width for g, name in enumerate(groups) if name in by_group]
        sel = [by_group[name] for name in groups if name in by_group]
        acc = [100 * float(r["accuracy"]) for r in sel]
        lo, hi = _interval(sel, acc)
        color = _COLORS[m % len(_COLORS)]
        ax.bar(
            xs, acc, width=width * 0.95, yerr=[lo, hi], capsize=2, color=color, label=short_label(label, 32)
        )
        # The value tick: visible for a 0% bar too (clip_on off so it is not hidden by the spine).
        ax.scatter(xs, acc, marker="_", s=120, color="black", linewidths=1.5, zorder=3, clip_on=False)
    if chance is not None and not _nan(chance):
        ax.axhline(100 * chance, ls="--", color="grey", lw=1, label=CHANCE_LABEL, zorder=0)
    ax.set_xticks(range(len(groups)), [str(g).split("=", 1)[-1] for g in groups], rotation=45, ha="right")
    ax.set_ylabel("accuracy (%) with 95% CI")
    ax.set_ylim(0, 100)
    if k > 1 or chance is not None:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    _title(ax, title, width=int(8 * fig.get_figwidth()))
    fig.tight_layout()
    return fig


def accuracy_figure(
    rows: Sequence[Mapping[str, Any]], title: str = "", chance: float | None = None
) -> Figure:
    """Bar chart of one model's accuracy per row (percent) with 95% CI whiskers and chance line."""
    return models_accuracy_figure([("accuracy", rows)], title, chance)


def chance_level(metrics: Mapping[str, Any]) -> float | None:
    """The random baseline's expected accuracy of a metrics dict (mean 1 / options), or None."""
    value = (metrics.get("baselines") or {}).get("random", {}).get("expected_accuracy")
    return None if value is None or _nan(value) else float(value)


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


def plot_accuracy(
    rows: Sequence[Mapping[str, Any]], stem: Path, title: str = "", chance: float | None = None
) -> list[Path]:
    """:func:`accuracy_figure` saved as ``stem.png`` and ``stem.svg``."""
    return save_figure(accuracy_figure(rows, title, chance), stem)


def reliability_figure(bins: Sequence[Mapping[str, Any]], title: str = "") -> Figure:
    """Reliability diagram: accuracy against confidence per bin, with the diagonal.

    Each bar is labelled with its bin's item count, so a bar made of 2 items is not read like one
    of 2,000.
    """
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
    for b in used:
        ax.annotate(
            f"{b['n']}",
            (b["low"] + width / 2, b["accuracy"]),
            xytext=(0, 2),
            textcoords="offset points",
            ha="center",
            va="bottom",
            fontsize=6,
        )
    ax.text(
        0.02, 0.97, "bar labels: items per bin", transform=ax.transAxes, va="top", fontsize=7, color="#555"
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


def reliability_drawn(model: str) -> bool:
    """Whether a run gets a reliability diagram: not the random or frequent-choice baseline.

    Their "confidence" is an artefact of how the baseline picks (uniform or fixed), so a
    diagram of it would look like a calibration result and is not one.
    """
    return model.split(":", 1)[0] not in BASELINES

"""The report's figures: all models in one panel, chance drawn, 0% visible, legends off the data."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import pytest
from matplotlib.transforms import Bbox

from scopebench.report.plots import (
    CHANCE_LABEL,
    chance_level,
    models_accuracy_figure,
    reliability_drawn,
    reliability_figure,
)


def _row(group: str, acc: float, lo: float, hi: float) -> dict:
    return {"group": group, "accuracy": acc, "ci_low": lo, "ci_high": hi, "n": 10}


SERIES = [
    ("model-a", [_row("task=NP", 0.6, 0.4, 0.8), _row("task=HI", 0.0, 0.0, 0.3)]),
    ("model-b", [_row("task=NP", 1.0, 0.7, 1.0), _row("task=HI", 0.5, 0.2, 0.8)]),
    ("random", [_row("task=NP", 0.3, 0.1, 0.6)]),  # lacks HI: no bar there, no crash
]


def _data_boxes(fig, ax) -> list:
    """Display-space boxes of every bar and whisker, the chance line excluded."""
    fig.canvas.draw()
    boxes = [p.get_window_extent() for p in ax.patches]
    # Whiskers and value ticks: every point of every collection, as a tiny box.
    for c in ax.collections:
        pts = [p for seg in getattr(c, "get_segments", lambda: [])() for p in seg]
        pts += list(c.get_offsets()) if c.get_offsets().shape[1] == 2 else []
        boxes += [Bbox.from_bounds(*ax.transData.transform(p), 1, 1) for p in pts]
    assert len(boxes) > 10
    return boxes


def test_all_models_in_one_panel_with_chance_and_visible_zero():
    fig = models_accuracy_figure(SERIES, "acc", chance=0.25)
    assert len(fig.axes) == 1  # one panel, not one per model
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["NP", "HI"]
    heights = sorted(round(p.get_height(), 6) for p in ax.patches)
    assert heights == [0.0, 30.0, 50.0, 60.0, 100.0]
    # Grouped: the two bars of NP sit side by side around x=0, model order left to right.
    np_bars = sorted((p.get_x(), p.get_height()) for p in ax.patches if p.get_x() < 0.5)
    assert [h for _, h in np_bars] == pytest.approx([60.0, 100.0, 30.0])
    # The 0% bar still has a drawn value tick at y=0.
    ticks = [tuple(o) for c in ax.collections if c.get_offsets().shape[1] == 2 for o in c.get_offsets()]
    assert any(y == 0.0 for _, y in ticks)
    # Chance: a horizontal line at 25%, named in the legend.
    chance = [ln for ln in ax.get_lines() if ln.get_label() == CHANCE_LABEL]
    assert len(chance) == 1 and list(chance[0].get_ydata()) == [25.0, 25.0]
    legend = ax.get_legend()
    assert [t.get_text() for t in legend.get_texts()] == [CHANCE_LABEL, "model-a", "model-b", "random"]
    plt.close(fig)


def test_legend_does_not_cover_the_data():
    fig = models_accuracy_figure(SERIES, chance=0.25)
    ax = fig.axes[0]
    legend = ax.get_legend().get_window_extent()
    for box in _data_boxes(fig, ax):
        assert not legend.overlaps(box), (legend, box)
    assert not legend.overlaps(ax.get_window_extent())  # outside the axes entirely
    plt.close(fig)


def test_reliability_bars_carry_their_counts():
    bins = [
        {"low": 0.0, "high": 0.5, "n": 0, "accuracy": math.nan, "confidence": math.nan},
        {"low": 0.5, "high": 1.0, "n": 7, "accuracy": 0.5, "confidence": 0.7},
    ]
    fig = reliability_figure(bins, "r")
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert "7" in texts and "0" not in texts  # an empty bin gets no bar and no count
    plt.close(fig)


def test_no_reliability_diagram_for_baselines_and_chance_from_metrics():
    assert not reliability_drawn("random") and not reliability_drawn("frequent")
    assert reliability_drawn("clip:openai/clip-vit-base-patch32") and reliability_drawn("openai:gpt-4o")
    assert chance_level({"baselines": {"random": {"expected_accuracy": 0.25}}}) == 0.25
    assert chance_level({"baselines": {}}) is None
    assert chance_level({"baselines": {"random": {"expected_accuracy": math.nan}}}) is None


def _legend_clear_of_data(fig) -> None:
    """The legend's box overlaps no bar, no line point and no band/whisker point of the axes."""
    import numpy as np

    ax = fig.axes[0]
    fig.canvas.draw()
    legend = ax.get_legend().get_window_extent()
    boxes = [p.get_window_extent() for p in ax.patches]
    for line in ax.get_lines():
        boxes += [Bbox.from_bounds(*ax.transData.transform(p), 1, 1) for p in np.asarray(line.get_xydata())]
    for c in ax.collections:
        for path in c.get_paths():
            boxes += [Bbox.from_bounds(*ax.transData.transform(p), 1, 1) for p in path.vertices]
    assert len(boxes) > 5
    hits = [b for b in boxes if legend.overlaps(b)]
    assert not hits, f"legend {legend} covers {hits[:3]}"


def _captured(monkeypatch):
    import scopebench.report.plots as plots

    figs: list = []
    monkeypatch.setattr(plots, "save_figure", lambda fig, stem: figs.append(fig) or [])
    return figs


def test_position_bias_legend_does_not_cover_bars(monkeypatch, tmp_path):
    from scopebench.experiments.probes.text_probes import _plot_bias

    figs = _captured(monkeypatch)
    # No position bias: every bar is 25%, as tall as the autoscaled axes, so no corner is free.
    rows = [{"letter": L, "chosen_share": 0.25, "answer_share": 0.25} for L in "ABCD"]
    _plot_bias(rows, tmp_path / "bias")
    _legend_clear_of_data(figs[0])
    plt.close(figs[0])


def test_merge_sweep_legend_does_not_cover_lines(monkeypatch, tmp_path):
    from scopebench.experiments.merge import SweepRow, plot_sweep

    figs = _captured(monkeypatch)
    alphas = [i / 20 for i in range(21)]  # flat task lines every 20 points: no free band
    rows = [
        SweepRow(
            alpha=a,
            n=100,
            correct=int(100 * (0.9 - 0.5 * a)),
            accuracy=0.9 - 0.5 * a,
            ci_low=0.85 - 0.5 * a,
            ci_high=0.95 - 0.5 * a,
            ci_method="wilson",
            by_task={f"t{k}": 0.1 + 0.2 * k for k in range(5)},
            run_dir="r",
            model_dir="m",
            merged_digest="d",
        )
        for a in alphas
    ]
    plot_sweep(rows, tmp_path / "sweep", "sweep")
    _legend_clear_of_data(figs[0])
    plt.close(figs[0])

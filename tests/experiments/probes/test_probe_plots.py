"""What the probe plots and report headings show: per-group chance, legends clear of bars, distinct curves."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from scopebench.cli import main


@pytest.fixture
def figures(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every figure a probe saves, drawn, in order (the files are still written)."""
    import scopebench.report.plots as plots

    seen: list[Any] = []
    real = plots.save_figure

    def capture(fig: Any, stem: Path) -> list[Path]:
        fig.canvas.draw()
        # Measured now: saving closes the figure, after which it has no renderer.
        renderer = fig.canvas.get_renderer()
        legend = fig.axes[0].get_legend()
        fig.measured = {
            "legend": None if legend is None else legend.get_window_extent(renderer),
            "axes": fig.axes[0].get_window_extent(renderer),
            "figure": fig.bbox,
        }
        seen.append(fig)
        return real(fig, stem)

    monkeypatch.setattr(plots, "save_figure", capture)
    return seen


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from scopebench.benchmarks.demo import generate_demo

    return generate_demo(tmp_path_factory.mktemp("demo") / "d", seed=0, n_per_class=1)  # 19 items


def _legend_clear_of_axes(fig: Any) -> None:
    box, axes_box = fig.measured["legend"], fig.measured["axes"]
    assert box is not None
    assert box.x0 >= axes_box.x1  # right of the axes: it cannot cover any bar
    assert box.x1 <= fig.measured["figure"].x1 + 1  # and inside the saved image


def _chance_segments(ax: Any) -> list[tuple[float, float, float]]:
    """(x0, x1, y) of every horizontal dashed segment drawn with ``hlines``."""
    from matplotlib.collections import LineCollection

    out = []
    for coll in ax.collections:
        # Error bars are solid LineCollections too; the reference segments are the dashed ones.
        if isinstance(coll, LineCollection) and any(dashes for _, dashes in coll.get_linestyle()):
            for seg in coll.get_segments():
                (x0, y0), (x1, y1) = seg[0], seg[-1]
                assert y0 == pytest.approx(y1)
                out.append((float(x0), float(x1), float(y0)))
    return out


def test_grouped_bars_draw_chance_per_group_and_keep_the_legend_off_the_bars(
    figures: list[Any], tmp_path: Path
) -> None:
    from scopebench.experiments.probes.base import plot_grouped_bars

    full = {"accuracy": 1.0, "ci_low": 1.0, "ci_high": 1.0}
    half = {"accuracy": 0.5, "ci_low": 0.3, "ci_high": 0.7}
    paths = plot_grouped_bars(
        ["a", "b", "c"],
        {"clean": [full, half, half], "swapped": [half, full, half]},
        tmp_path / "bars",
        title="t",
        group_reference={"chance": [1 / 3, 0.25, float("nan")]},
    )
    assert [p.name for p in paths] == ["bars.png", "bars.svg"]
    (fig,) = figures
    ax = fig.axes[0]
    segs = sorted(_chance_segments(ax))
    assert segs == [
        (pytest.approx(-0.45), pytest.approx(0.45), pytest.approx(100 / 3)),
        (pytest.approx(0.55), pytest.approx(1.45), pytest.approx(25.0)),
    ]  # one per group that has a value, spanning only that group's bars
    assert not [line for line in ax.get_lines() if line.get_linestyle() == "--"]  # no plot-wide line
    _legend_clear_of_axes(fig)
    assert sorted(t.get_text() for t in ax.get_legend().get_texts()) == ["chance", "clean", "swapped"]


def test_matching_plot_legend_does_not_cover_a_full_bar(figures: list[Any], tmp_path: Path) -> None:
    from scopebench.experiments.probes.matching import _plot

    def row(model: str, group: str, acc: float) -> dict[str, Any]:
        return {
            "model": model,
            "group": group,
            "section": "subset",
            "accuracy": acc,
            "ci_low": acc,
            "ci_high": acc,
        }

    result = {
        "benchmark": "pathmmu",
        "runs": [{"model": "m1"}, {"model": "m2"}],
        "rows": [row("m1", "overall", 1.0), row("m2", "overall", 0.4), row("m1", "subset=A", 0.5)],
        "chance": [{"group": "overall", "accuracy": 0.25}],
    }
    _plot(tmp_path / "matching", result)
    (fig,) = figures
    _legend_clear_of_axes(fig)
    assert (tmp_path / "matching.png").is_file()


def test_equal_corruption_curves_stay_distinguishable(figures: list[Any], tmp_path: Path) -> None:
    from scopebench.experiments.probes.image_probes import plot_curves

    rows = [
        {"corruption": name, "level": lv, "accuracy": 0.5, "ci_low": 0.4, "ci_high": 0.6}
        for name in ("jpeg", "hue", "brightness")
        for lv in (0, 1, 5)
    ]  # three identical curves
    plot_curves(rows, ["jpeg", "hue", "brightness"], tmp_path / "c")
    (fig,) = figures
    lines = [line for line in fig.axes[0].get_lines() if line.get_label() in ("jpeg", "hue", "brightness")]
    assert len(lines) == 3
    assert len({line.get_marker() for line in lines}) == 3
    assert len({line.get_linestyle() for line in lines}) == 3
    xs = [tuple(line.get_xdata()) for line in lines]
    assert len(set(xs)) == 3  # offset sideways …
    for x in xs:
        assert [round(v) for v in x] == [0, 1, 5]  # … by less than half a level
    _legend_clear_of_axes(fig)


def test_levels_label_names_the_levels_used() -> None:
    from scopebench.experiments.probes.image_probes import levels_label

    assert levels_label([1, 2, 3, 4, 5]) == "L1–5"
    assert levels_label([1, 5]) == "L1,5"
    assert levels_label([5, 1]) == "L1,5"
    assert levels_label([2, 3]) == "L2–3"
    assert levels_label([3]) == "L3"


def test_paper_source_only_for_pathmmu() -> None:
    from scopebench.experiments.probes.base import paper_source

    assert paper_source("pathmmu", "Table 1") == " (PathMMU Table 1)"
    assert paper_source("demo", "Table 1") == ""


def test_demo_reports_name_their_levels_and_cite_no_paper(
    demo: Path, tmp_path: Path, figures: list[Any]
) -> None:
    common = ["--bench", "demo", "--data", str(demo), "--limit", "6", "--resamples", "50"]
    out = tmp_path / "c"
    argv = ["-q", "probe", "corruptions", *common, "--model", "random", "--out", str(out)]
    assert main([*argv, "--corruptions", "jpeg,brightness", "--levels", "1,5"]) == 0
    md = (out / "corruptions.md").read_text()
    assert md.startswith("# Image corruptions\n")
    assert "| mean L1,5 |" in md and "L1–5" not in md and "PathMMU" not in md
    report = json.loads((out / "corruptions.json").read_text())
    assert report["table"]["head"][-2] == "mean L1,5"

    figures.clear()
    out = tmp_path / "s"
    swap_args = ["--model", "frequent", "--scope", "all", "--out", str(out), "--resamples", "50"]
    assert main(["-q", "probe", "swap", "--bench", "demo", "--data", str(demo), *swap_args]) == 0  # all 19
    swap = json.loads((out / "swap.json").read_text())
    assert "PathMMU" not in (out / "swap.md").read_text()
    (fig,) = figures
    ax = fig.axes[0]
    assert "PathMMU" not in ax.get_title()
    chances = sorted(round(y, 6) for _, _, y in _chance_segments(ax))
    assert chances == sorted(round(100 * r["chance"], 6) for r in swap["rows"])
    assert len(set(chances)) > 1  # demo groups differ in their numbers of options

    out = tmp_path / "n"
    assert main(["-q", "probe", "no-image", *common, "--model", "frequent", "--out", str(out)]) == 0
    md = (out / "no-image.md").read_text()
    assert md.startswith("# With vs without the image\n") and "PathMMU" not in md

"""Every interval the report writes — Markdown, CSV, LaTeX, compare tables, HTML cells, the
localization rows included — is printed as ``[low, high]`` around its estimate.

The walker reads the files as a reader would: a cell ``54.2% [50.1, 58.3]`` or a ``[low, high]``
cell after its estimate's cell (``54.2%``, ``GRIT 0.742``, ``+12.5``). A display that printed the
bounds reversed, or an interval that missed its estimate, fails here.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from html_fixtures import make_html_run

from scopebench.cli import main
from scopebench.config import ReportConfig
from scopebench.report import write_run_outputs
from scopebench.report.html import build_html_report

_INTERVAL = re.compile(r"^\[([+-]?\d+(?:\.\d+)?), ([+-]?\d+(?:\.\d+)?)\]$")
_WITH_INTERVAL = re.compile(r"^([+-]?\d+(?:\.\d+)?)% (\[.*\])$")


def _number(cell: str) -> float | None:
    text = cell.strip().removeprefix("GRIT ").removesuffix("%")
    try:
        return float(text)
    except ValueError:
        return None


def check_table(rows: list[list[str]]) -> int:
    """Assert ``low ≤ estimate ≤ high`` for every interval in ``rows``; returns how many were checked."""
    checked = 0
    for row in rows:
        cells = [c.strip() for c in row]
        for j, cell in enumerate(cells):
            combined = _WITH_INTERVAL.match(cell)
            if combined:
                est: float | None = float(combined.group(1))
                cell = combined.group(2)
            elif _INTERVAL.match(cell):
                est = _number(cells[j - 1]) if j else None
            else:
                continue
            m = _INTERVAL.match(cell)
            assert m, (cell, row)
            lo, hi = float(m.group(1)), float(m.group(2))
            assert lo <= hi, f"reversed interval {cell} in {row}"
            assert est is not None, f"interval {cell} without an estimate beside it in {row}"
            assert lo <= est <= hi, f"{cell} does not contain {est} in {row}"
            checked += 1
    return checked


def md_rows(text: str) -> list[list[str]]:
    return [
        [c.replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        for line in text.splitlines()
        if line.startswith("|") and not line.startswith("|---") and "---" not in line
    ]


def tex_rows(text: str) -> list[list[str]]:
    return [
        [c.replace(r"\%", "%").replace(r"\_", "_") for c in line.removesuffix(r" \\").split(" & ")]
        for line in text.splitlines()
        if line.endswith(r" \\")
    ]


class _Cells(HTMLParser):
    """The text of every ``<td>``/``<th>`` of every table row of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self.rows:
            self.rows[-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def html_rows(html: str) -> list[list[str]]:
    parser = _Cells()
    parser.feed(html)
    return parser.rows


def test_walker_catches_reversed_and_missing_bounds():
    assert check_table([["overall", "12", "54.2%", "[50.1, 58.3]"]]) == 1
    assert check_table([["coarse/all", "54.2% [50.1, 58.3]"], ["a", "b", "+4.0", "[+1.0, +7.5]"]]) == 2
    with pytest.raises(AssertionError, match="reversed"):
        check_table([["overall", "54.2%", "[58.3, 50.1]"]])
    with pytest.raises(AssertionError, match="does not contain"):
        check_table([["overall", "GRIT 0.742", "[0.100, 0.700]"]])
    with pytest.raises(AssertionError, match="reversed"):
        check_table([["coarse/all", "0.0% [24.2, 0.0]"]])


def _detection_run(tmp: Path) -> Path:
    """A demo detection run: exact boxes for every other cell item and every third nucleus item."""
    from scopebench.benchmarks import get_benchmark
    from scopebench.benchmarks.demo import generate_demo

    demo = generate_demo(tmp / "demo", seed=0, n_per_class=3)
    items = get_benchmark("demo").load(str(demo), split="detection").items
    lines = []
    seen: dict[str, int] = {}
    for it in items:
        cls = it.metadata["class_name"]
        seen[cls] = seen.get(cls, -1) + 1
        boxes = "[]"
        if seen[cls] % (2 if cls == "cell" else 3) == 0:
            boxes = "".join(
                f"<box>({b.x1 * 1000 / 128:.0f},{b.y1 * 1000 / 128:.0f}),"
                f"({b.x2 * 1000 / 128:.0f},{b.y2 * 1000 / 128:.0f})</box>"
                for b in it.targets
            )
        lines.append(json.dumps({"item_id": it.id, "response": boxes}))
    replay = tmp / "replay.jsonl"
    replay.write_text("\n".join(lines) + "\n")
    out = tmp / "det"
    args = ["run", "--bench", "demo", "--data", str(demo), "--split", "detection", "--out", str(out)]
    assert main([*args, "--model", f"replay:{replay}"]) == 0
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("display")
    img = root / "images"
    # Extremes on purpose: all right, all wrong, and a mixed run (the fixture's every status).
    mixed = {
        **dict.fromkeys((0, 1, 2, 3, 6, 7), "correct"),
        **dict.fromkeys((4, 5, 8), "wrong"),
        9: "unparsed",
        10: "error",
        11: "missing_image",
    }
    return {
        "mixed": make_html_run(root, "mixed", mixed, img),
        "perfect": make_html_run(root, "perfect", dict.fromkeys(range(12), "correct"), img),
        "zero": make_html_run(root, "zero", dict.fromkeys(range(12), "wrong"), img),
        "det": _detection_run(root),
    }


@pytest.mark.parametrize("policy", ["wrong", "exclude"])
def test_every_report_file_row_holds_its_estimate(runs, tmp_path, policy):
    for name, run in runs.items():
        out = tmp_path / f"{name}-{policy}"
        metrics = write_run_outputs(run, ReportConfig(resamples=200, policy=policy), out_dir=out)
        n_rows = len(metrics["localization"]) + (
            0 if name == "det" else 1 + len(metrics["by_task"]) + len(metrics["owner"]["rows"])
        )
        md = md_rows((out / "metrics.md").read_text(encoding="utf-8"))
        tex = tex_rows((out / "metrics.tex").read_text(encoding="utf-8"))
        assert check_table(md) >= n_rows, name
        assert check_table(tex) >= n_rows, name
        # The CSV keeps numbers: low ≤ estimate ≤ high on every row with an interval.
        rows = list(csv.DictReader(io.StringIO((out / "metrics.csv").read_text(encoding="utf-8"))))
        checked = 0
        for r in rows:
            est = r["score"] if r["section"] == "localization" else r["accuracy"]
            if r["ci_low"] == "":
                assert r["ci_high"] == "", r
                continue
            lo, hi, v = float(r["ci_low"]), float(r["ci_high"]), float(est)
            assert lo <= v + 1e-5 and v - 1e-5 <= hi, r
            assert r["ci_method"], r
            checked += 1
        assert checked >= n_rows and "ci_halfwidth" not in rows[0]
        text = (out / "metrics.md").read_text(encoding="utf-8") + (out / "metrics.tex").read_text()
        assert "±" not in text and r"\pm" not in text
    zero = json.loads((tmp_path / f"zero-{policy}" / "metrics.json").read_text(encoding="utf-8"))
    # 0 of 12 says so: [0.0, 24.2], not [0.0, 0.0].
    assert (
        "| overall | overall | 12 | 0.0% | [0.0, 24.2] |"
        in (tmp_path / f"zero-{policy}" / "metrics.md").read_text()
    )
    assert zero["overall"]["ci_high"] > 0.24


def test_compare_tables_and_pairs_hold_their_estimates(runs, tmp_path):
    out = tmp_path / "cmp"
    args = [str(runs[k]) for k in ("mixed", "perfect", "zero")]
    assert main(["compare", *args, "--out", str(out), "--resamples", "300"]) == 0
    md = md_rows((out / "compare.md").read_text(encoding="utf-8"))
    # 3 runs + 2 baselines; each has an overall interval and owner cells "54.2% [50.1, 58.3]".
    assert check_table(md) >= 5 * 2
    assert check_table(tex_rows((out / "compare.tex").read_text(encoding="utf-8"))) >= 10
    cells = list(csv.reader(io.StringIO((out / "compare.csv").read_text(encoding="utf-8"))))
    assert check_table(cells) >= 10
    result = json.loads((out / "compare.json").read_text(encoding="utf-8"))
    for p in result["pairs"]:
        assert p["ci_low"] <= p["difference"] <= p["ci_high"]
        assert p["difference"] == pytest.approx(p["accuracy_a"] - p["accuracy_b"])
    # perfect vs zero: 12 of 12 vs 0 of 12, a clearly better model — its interval lies above 0.
    best = next(p for p in result["pairs"] if p["run_a"].endswith("perfect") and p["run_b"].endswith("zero"))
    assert best["difference"] == 1.0 and best["ci_low"] > 0


def test_every_html_interval_cell_holds_its_estimate(runs):
    html = build_html_report([runs["mixed"], runs["perfect"], runs["zero"]], ReportConfig(resamples=200)).page
    rows = html_rows(html)
    # Per run: overall, tasks, subsets, splits, metadata, owner and baseline rows; the leaderboard;
    # the pairwise table (difference and its interval).
    assert check_table(rows) >= 3 * 10 + 5 + 3
    pair_rows = [r for r in rows if len(r) == 8 and r[3].startswith(("+", "-"))]
    assert len(pair_rows) == 3 and check_table(pair_rows) == 3
    det = html_rows(build_html_report([runs["det"]], ReportConfig(resamples=200)).page)
    loc = [r for r in det if r and r[0] == "localization"]
    assert len(loc) >= 4  # class=cell, class=nucleus, split rows, overall
    assert check_table(loc) == len(loc)
    assert not any(math.isnan(float(c)) for r in loc for c in r[3:4])


def test_reversed_display_is_caught_end_to_end(runs, tmp_path, monkeypatch):
    from scopebench.report import html as html_mod
    from scopebench.report import tables

    def reversed_interval(row):
        return f"[{100 * float(row['ci_high']):.1f}, {100 * float(row['ci_low']):.1f}]"

    def reversed_score(row):
        return f"[{float(row['ci_high']):.3f}, {float(row['ci_low']):.3f}]"

    monkeypatch.setattr(tables, "format_interval", reversed_interval)
    monkeypatch.setattr(html_mod, "format_interval", reversed_interval)
    monkeypatch.setattr(html_mod, "format_score_interval", reversed_score)
    write_run_outputs(runs["mixed"], ReportConfig(resamples=100), out_dir=tmp_path / "rev")
    with pytest.raises(AssertionError, match="reversed"):
        check_table(md_rows((tmp_path / "rev" / "metrics.md").read_text(encoding="utf-8")))
    det = html_rows(build_html_report([runs["det"]], ReportConfig(resamples=100)).page)
    with pytest.raises(AssertionError, match=r"reversed|does not contain"):
        check_table([r for r in det if r and r[0] == "localization"])


def test_plot_error_bars_are_the_asymmetric_interval():
    # 1 of 12 = 8.3% [1.5, 35.4]: the whisker runs from 1.5 to 35.4, not 8.3 ± something.
    from scopebench.report.plots import accuracy_figure, localization_figure
    from scopebench.scoring.intervals import wilson_interval

    iv = wilson_interval(1, 12)
    row = {"group": "task=NP", "n": 12, "accuracy": 1 / 12, "ci_low": iv.low, "ci_high": iv.high}

    def whisker(fig):
        from matplotlib.container import ErrorbarContainer

        bars = next(c for c in fig.axes[0].containers if isinstance(c, ErrorbarContainer))
        (segment,) = bars.lines[2][0].get_segments()
        return segment

    segment = whisker(accuracy_figure([row]))
    assert [y for _, y in segment] == pytest.approx([100 * iv.low, 100 * iv.high])
    loc = {"group": "class=cell", "n": 6, "score": 0.5, "ci_low": 0.17, "ci_high": 0.83}
    segment = whisker(localization_figure([loc]))
    assert [y for _, y in segment] == pytest.approx([0.17, 0.83])

"""Fixes from the new-user acceptance test of `scopebench report` / `compare`."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from html_fixtures import A_OUTCOMES, B_OUTCOMES, make_html_run

from scopebench.cli import main
from scopebench.config import ReportConfig


def _policy(path: Path) -> str:
    return str(json.loads(path.read_text(encoding="utf-8"))["policy"])


def test_report_never_rewrites_run_metrics_with_other_settings(tmp_path):
    run = make_html_run(tmp_path, "a", A_OUTCOMES, tmp_path / "img")
    metrics = run / "metrics.json"
    # The run's own settings (policy wrong, its seed 0, 1000 resamples) write into the run dir.
    assert main(["report", str(run)]) == 0
    assert _policy(metrics) == "wrong"
    headline = metrics.read_text(encoding="utf-8")
    # --policy exclude with --out: the run dir's metrics.json stays the run's own.
    assert main(["report", str(run), "--policy", "exclude", "--out", str(tmp_path / "x")]) == 0
    assert _policy(tmp_path / "x" / "a" / "metrics.json") == "exclude"
    assert metrics.read_text(encoding="utf-8") == headline
    # Without --out, other settings go to a subfolder, never over the run's files.
    assert main(["report", str(run), "--policy", "exclude", "--resamples", "50"]) == 0
    sub = run / "report-exclude-seed0-50"
    assert _policy(sub / "metrics.json") == "exclude"
    assert (sub / "metrics.md").is_file()
    assert metrics.read_text(encoding="utf-8") == headline
    assert "missing images/responses: wrong" in (run / "metrics.md").read_text(encoding="utf-8")
    # Another seed alone is not the run's own either.
    assert main(["report", str(run), "--seed", "3", "--resamples", "50"]) == 0
    assert (run / "report-wrong-seed3-50" / "metrics.json").is_file()
    assert metrics.read_text(encoding="utf-8") == headline


def test_run_labels_and_folders_are_unique_and_stable(tmp_path):
    from scopebench.scoring.compare import run_folder_names, run_labels

    a, b = tmp_path / "sweep" / "alpha-0.5" / "run", tmp_path / "sweep" / "alpha-1" / "run"
    c = tmp_path / "runs" / "demo" / "random"
    d = tmp_path / "o1" / "random"
    assert run_labels([a, b, c]) == ["alpha-0.5/run", "alpha-1/run", "random"]
    assert run_labels([c, d]) == ["demo/random", "o1/random"]
    assert run_folder_names([a, b, c, d]) == ["alpha-0.5_run", "alpha-1_run", "demo_random", "o1_random"]
    # The same directory twice (once relative): later occurrences get -2.
    rel = Path(os.path.relpath(c))
    assert run_folder_names([c, rel]) == ["random", "random-2"]


def test_report_out_folders_do_not_overwrite_each_other(tmp_path, capsys):
    r1 = make_html_run(tmp_path / "sweep" / "alpha-0.5", "run", A_OUTCOMES, tmp_path / "img")
    r2 = make_html_run(tmp_path / "sweep" / "alpha-1", "run", B_OUTCOMES, tmp_path / "img")
    out = tmp_path / "rep"
    assert main(["report", str(r1), str(r2), "--out", str(out), "--resamples", "50"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["alpha-0.5_run", "alpha-1_run"]
    first = json.loads((out / "alpha-0.5_run" / "metrics.json").read_text(encoding="utf-8"))
    second = json.loads((out / "alpha-1_run" / "metrics.json").read_text(encoding="utf-8"))
    # Run a: 6 of 12 correct; run b: 5 of 12.
    assert (first["overall"]["correct"], second["overall"]["correct"]) == (6, 5)
    # The console says where each run went (whitespace dropped: long paths wrap).
    assert f"{r2}writtento{out / 'alpha-1_run'}/" in "".join(capsys.readouterr().out.split())


def _detection_run(tmp: Path) -> Path:
    """A demo detection run: exact boxes for every cell item, no box for the nuclei."""
    from scopebench.benchmarks import get_benchmark
    from scopebench.benchmarks.demo import generate_demo

    demo = generate_demo(tmp / "demo", seed=0, n_per_class=1)
    items = get_benchmark("demo").load(str(demo), split="detection").items
    lines = []
    for it in items:
        boxes = "[]"
        if it.metadata["class_name"] == "cell":
            boxes = "".join(
                f"<box>({b.x1 * 1000 / 128:.0f},{b.y1 * 1000 / 128:.0f}),"
                f"({b.x2 * 1000 / 128:.0f},{b.y2 * 1000 / 128:.0f})</box>"
                for b in it.targets
            )
        lines.append(json.dumps({"item_id": it.id, "response": boxes}))
    replay = tmp / "replay.jsonl"
    replay.write_text("\n".join(lines) + "\n")
    out = tmp / "det"
    args = ["run", "--bench", "demo", "--data", str(demo), "--split", "detection"]
    assert main([*args, "--model", f"replay:{replay}", "--out", str(out)]) == 0
    return out


def test_detection_run_shows_localization_everywhere(tmp_path, capsys):
    from rich.console import Console

    from scopebench.report import render_metrics_table
    from scopebench.report.html import build_html_report

    run = _detection_run(tmp_path)
    metrics = json.loads((run / "metrics.json").read_text(encoding="utf-8"))
    loc = {r["group"]: r for r in metrics["localization"]}
    cell, overall = loc["class=cell"]["score"], loc["overall"]["score"]
    assert cell > 0.98 and loc["class=nucleus"]["score"] == 0.0
    console = Console(width=200, record=True)
    console.print(render_metrics_table(metrics))
    text = console.export_text()
    assert f"GRIT {cell:.3f}" in text and f"GRIT {overall:.3f}" in text
    assert "split=easy" in text and "split=hard" in text and "class=nucleus" in text
    md = (run / "metrics.md").read_text(encoding="utf-8")
    assert f"| localization | class=cell | 2 | GRIT {cell:.3f}" in md
    tex = (run / "metrics.tex").read_text(encoding="utf-8")
    assert "localization & split=hard & 2 & GRIT 0.000" in tex
    csv_rows = [ln.split(",") for ln in (run / "metrics.csv").read_text(encoding="utf-8").splitlines()]
    assert csv_rows[0][-1] == "score"
    loc_csv = {r[1]: r for r in csv_rows if r[0] == "localization"}
    assert set(loc_csv) == {"class=cell", "class=nucleus", "split=easy", "split=hard", "overall"}
    assert float(loc_csv["overall"][-1]) == pytest.approx(overall, abs=1e-5)
    # No multiple-choice item: no empty accuracy plot, a GRIT plot instead.
    assert not (run / "accuracy_by_task.png").exists()
    assert (run / "localization.png").is_file() and (run / "localization.svg").is_file()
    html = build_html_report([run], ReportConfig(resamples=50)).page
    assert "GRIT localization per class" in html and "Localization (detection items)" in html
    assert '<td class="l">class=cell</td><td>2</td><td>' + f"{cell:.3f}" in html


def test_report_console_is_wide_when_piped_and_names_the_model(html_runs, tmp_path, capsys):
    run_a = html_runs[0]
    assert main(["report", str(run_a), "--out", str(tmp_path / "o"), "--resamples", "50"]) == 0
    text = capsys.readouterr().out
    # Redirected output (pytest's capture is no terminal): 120 columns, no truncated cell.
    assert max(len(line) for line in text.splitlines()) > 80
    assert "…" not in text
    assert "baseline:random" in text and "50.0%" in text and "±" not in text
    assert f"spur — model-a ({run_a})" in " ".join(text.split())


def test_report_checks_runs_before_writing(html_runs, tmp_path, capsys):
    from scopebench.store import RunStore

    other = tmp_path / "pm"
    other.mkdir()
    (other / "run.json").write_text(json.dumps({"benchmark": "pathmmu", "model": "m"}))
    with RunStore(other / "records.sqlite"):
        pass
    out = tmp_path / "rep"
    assert (
        main(["report", str(html_runs[0]), str(other), "--out", str(out), "--html", str(tmp_path / "x.html")])
        == 2
    )
    err = capsys.readouterr().err
    assert "different benchmarks" in err and "nothing was written" in err
    assert not out.exists() and not (tmp_path / "x.html").exists()
    # A folder that is no run and holds none is refused before anything is written.
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["report", str(empty), "--out", str(out)]) == 2
    assert "holds none" in " ".join(capsys.readouterr().err.split())
    assert not out.exists()
    # A parent folder of runs (runs/demo after `make demo`) stands for its runs, in name order
    # (a refusal here would break the README's `report runs/* --html`).
    parent = html_runs[0].parent
    assert main(["report", str(parent), "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["a", "b"]
    assert main(["compare", str(parent)]) == 0


def test_published_leaderboard_rows_name_their_table_and_skip_conditions(html_runs):
    from scopebench.report.html import build_html_report
    from scopebench.report.published import CONDITION_TABLES, PUBLISHED_NOTE, published_leaderboard
    from scopebench.report.tables import leaderboard_table

    clean = published_leaderboard("pathmmu", ["test_tiny/overall"])
    assert clean and {p["source_table"] for p in clean} == {"PathMMU Table 1 (zero-shot accuracy)"}
    every = published_leaderboard("pathmmu", ["test_tiny/overall"], conditions=True)
    assert {p["source_table"] for p in every} >= {
        "PathMMU Table 2 (corruptions averaged over 5 levels, test_tiny)",
        "PathMMU Table 3 (images replaced by Gaussian noise)",
    }
    result = {"leaderboard": [], "baselines": [], "published": clean}
    _head, body = leaderboard_table(result)
    assert {row[1] for row in body} == {f"{PUBLISHED_NOTE}: PathMMU Table 1 (zero-shot accuracy)"}
    assert not any(t in row[1] for row in body for t in CONDITION_TABLES)
    html = build_html_report(list(html_runs), ReportConfig(resamples=20, published=True)).page
    assert f"{PUBLISHED_NOTE}: SPUR main results (excerpt)" in html


def test_plot_labels_are_short_and_titles_fit():
    import matplotlib.pyplot as plt

    from scopebench.report.plots import heatmap_figure, reliability_figure, short_label

    spec = "clip:/root/.cache/huggingface/hub/models--openai--clip/snapshots/abc123"
    assert short_label(spec) == "clip:abc123"
    assert short_label("clip:openai/clip-vit-base-patch32") == "clip:openai/clip-vit-base-patch32"
    assert short_label("x/run: replay:/tmp/a/b/r.jsonl") == "x/run: replay:r.jsonl"
    assert short_label("a" * 50, max_len=10) == "a" * 9 + "…"
    bins = [{"low": k / 15, "high": (k + 1) / 15, "n": 1, "accuracy": 0.5} for k in range(15)]
    fig = reliability_figure(bins, f"reliability: {spec} on the whole pathmmu test split")
    fig.canvas.draw()
    box = fig.axes[0].title.get_window_extent(fig.canvas.get_renderer())
    assert box.x0 >= 0 and box.x1 <= fig.bbox.width, (box, fig.bbox.width)
    assert "clip:abc123" in fig.axes[0].get_title() and "/root" not in fig.axes[0].get_title()
    plt.close(fig)
    fig = heatmap_figure(["task=NP"], [spec, "random"], [[0.5, 0.25]], "accuracy")
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["clip:abc123", "random"]
    plt.close(fig)


def test_report_warns_when_the_run_is_incomplete(tmp_path, capsys):
    """An interrupted run's table covers a subset of its items; the report must say so."""
    import sqlite3

    data = Path(__file__).parents[1] / "fixtures" / "local" / "items.jsonl"
    run = tmp_path / "run"
    assert main(["run", "--bench", "local", "--data", str(data), "--model", "random", "--out", str(run)]) == 0
    capsys.readouterr()
    assert main(["report", str(run), "--out", str(tmp_path / "full")]) == 0
    assert "incomplete" not in capsys.readouterr().out
    # As if stopped after all but two items: their records are gone, their items are not.
    con = sqlite3.connect(run / "records.sqlite")
    (n_items,) = con.execute("SELECT COUNT(*) FROM items").fetchone()
    with con:
        con.execute(
            "DELETE FROM records WHERE item_id IN (SELECT item_id FROM records ORDER BY item_id LIMIT 2)"
        )
    con.close()
    assert main(["report", str(run), "--out", str(tmp_path / "part")]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"holds results for {n_items - 2} of its {n_items} items: the run is incomplete" in out

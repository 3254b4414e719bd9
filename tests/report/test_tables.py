import json
from pathlib import Path

from rich.console import Console

from scopebench.cli import main
from scopebench.config import ReportConfig
from scopebench.items import Record
from scopebench.report import render_metrics_table, write_run_outputs
from scopebench.report.published import PUBLISHED_NOTE, load_published, published_leaderboard
from scopebench.report.tables import format_accuracy, format_interval, format_percent
from scopebench.store import RunStore


def make_run(root: Path, name: str, n_right: int, n: int = 10) -> Path:
    d = root / name
    d.mkdir()
    cfg = {"benchmark": "spur", "model": name, "data_fingerprint": "fp", "protocol": "p", "parser_version": 1}
    (d / "run.json").write_text(json.dumps(cfg))
    recs = [
        Record(
            f"q/{i}",
            name,
            "ok",
            choice=0,
            correct=i < n_right,
            task="NP" if i % 2 else "HI",
            split="test",
            answer_index=0,
            scores=[0.8, 0.2],
        )
        for i in range(n)
    ]
    with RunStore(d / "records.sqlite") as store:
        store.add(recs)
    return d


def test_format_accuracy_and_interval():
    # The interval is shown as its bounds, never "± half-width" (was "54.2% ±3.1").
    row = {"accuracy": 0.5423, "ci_low": 0.51, "ci_high": 0.573}
    assert format_accuracy(row) == "54.2% [51.0, 57.3]"
    assert format_percent(row) == "54.2%"
    assert format_interval(row) == "[51.0, 57.3]"
    assert format_accuracy({"accuracy": 0.5, "ci_low": float("nan"), "ci_high": float("nan")}) == "50.0%"
    assert format_accuracy({"accuracy": float("nan")}) == "n/a"


def test_write_run_outputs(tmp_path):
    run = make_run(tmp_path, "m", 6)
    metrics = write_run_outputs(run, ReportConfig(seed=4, resamples=200))
    # Not the run's own settings (seed 0, 1000 resamples): the files go to a subfolder.
    assert not (run / "metrics.json").exists()
    run = run / "report-wrong-seed4-200"
    for f in (
        "metrics.json",
        "metrics.csv",
        "metrics.md",
        "metrics.tex",
        "accuracy_by_task.png",
        "accuracy_by_task.svg",
        "reliability.png",
        "reliability.svg",
    ):
        assert (run / f).is_file(), f
    saved = json.loads((run / "metrics.json").read_text())
    assert saved["overall"]["accuracy"] == 0.6 and saved["bootstrap"]["seed"] == 4
    assert saved["overall"]["ci_method"] == "wilson"
    assert saved["owner"]["rows"][-1]["subset_or_task"] == "overall"
    assert metrics["calibration"]["n"] == 10
    assert r"\toprule" in (run / "metrics.tex").read_text()
    again = write_run_outputs(run.parent, ReportConfig(seed=4, resamples=200))
    assert again["overall"]["ci_low"] == metrics["overall"]["ci_low"]
    console = Console(width=200, record=True)
    console.print(render_metrics_table(metrics))
    text = console.export_text()
    # 6 of 10: Wilson [31.3, 83.2], printed as bounds (was "60.0% ±…").
    assert "60.0%" in text and "[31.3, 83.2]" in text and "±" not in text and "task=NP" in text
    # The caption says how to read the interval column; rich must not take "[low, high]" for
    # markup and drop it (it printed "95% CI as : wilson …").
    assert "95% CI as [low, high]: wilson" in " ".join(text.split())
    # A task name from the data is shown as written, brackets included.
    bracketed = {**metrics, "by_task": [{**metrics["by_task"][0], "group": "task=[red] stain"}]}
    console = Console(width=200, record=True)
    console.print(render_metrics_table(bracketed))
    assert "task=[red] stain" in console.export_text()


def test_published_rows():
    rows = load_published("spur")
    assert rows and all(r["benchmark"] == "spur" for r in rows)
    board = published_leaderboard("spur", ["test/NP", "test/overall"])
    assert board and all(p["source"] == PUBLISHED_NOTE for p in board)
    assert all(set(p["cells"]) <= {"test/NP", "test/overall"} for p in board)


def test_cli_compare_and_report(tmp_path, capsys):
    r1, r2 = make_run(tmp_path, "a", 3), make_run(tmp_path, "b", 8)
    out = tmp_path / "cmp"
    assert main(["compare", str(r1), str(r2), "--out", str(out), "--published", "--resamples", "100"]) == 0
    for f in ("compare.json", "compare.md", "compare.csv", "compare.tex"):
        assert (out / f).is_file()
    md = (out / "compare.md").read_text()
    assert PUBLISHED_NOTE in md and "| b |" in md
    assert main(["report", str(r1), "--out", str(tmp_path / "rep"), "--resamples", "100"]) == 0
    assert (tmp_path / "rep" / "a" / "metrics.md").is_file()


def test_console_table_never_truncates_and_labels_macro_rows() -> None:
    from rich.console import Console

    from scopebench.report.tables import render_metrics_table

    row = {"n": 52, "correct": 11, "denominator": 52, "accuracy": 0.212, "ci_low": 0.1, "ci_high": 0.3,
           "ci_halfwidth": 0.1, "ci_method": "stratified-percentile", "unparsed": 0, "errors": 0,
           "missing_image": 0, "missing_response": 0}  # fmt: skip
    metrics = {
        "benchmark": "ubench", "policy": "wrong", "overall": {"group": "overall", **row},
        "by_task": [], "by_subset": [], "by_split": [],
        "owner": {"rows": [{"group": "coarse/all", "weighting": "macro over tasks", **row}]},
        "baselines": {name: {"overall": {"group": "overall", **row}, "by_task": [], "owner": []}
                      for name in ("random", "frequent")},
        "localization": [{"group": "class=burgess_et_al_2024_contour/irregular_contours", "n": 1, "score": 1.0,
                          "ci_low": 1.0, "ci_high": 1.0, "ci_halfwidth": 0.0, "ci_method": "degenerate"}],
    }  # fmt: skip
    console = Console(width=120, record=True)
    console.print(render_metrics_table(metrics))
    text = console.export_text()
    assert "…" not in text
    assert "baseline:random" in text and "baseline:frequent" in text
    assert "(macro over" in text and "GRIT 1.000" in text  # the group column folds long labels
    assert max(len(line) for line in text.splitlines()) <= 120

"""Fixes from the new-user acceptance test of `scopebench report` / `compare`."""

from __future__ import annotations

import json
import os
from pathlib import Path

from html_fixtures import A_OUTCOMES, B_OUTCOMES, make_html_run

from scopebench.cli import main


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

"""Fixes from the new-user acceptance test of `scopebench report` / `compare`."""

from __future__ import annotations

import json
from pathlib import Path

from html_fixtures import A_OUTCOMES, make_html_run

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

"""docs/build.md's complete example (the README's offline example), run as written."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from scopebench.cli import main

DOC = Path(__file__).resolve().parents[2] / "docs" / "build.md"
_BLOCK = re.compile(r"<!-- file: (?P<name>[\w.]+) -->\n```\w*\n(?P<body>.*?)```", re.S)


def _files() -> dict[str, str]:
    return {m["name"]: m["body"] for m in _BLOCK.finditer(DOC.read_text(encoding="utf-8"))}


def test_the_doc_has_the_four_files() -> None:
    assert set(_files()) == {"prepare.py", "manifest.yaml", "build.yaml", "run.sh"}


@pytest.mark.slow
def test_docs_example_builds_and_evaluates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = _files()
    for name, body in files.items():
        (tmp_path / name).write_text(body, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    src = str(Path(__file__).resolve().parents[2] / "src")
    subprocess.run([sys.executable, "prepare.py"], check=True, env={"PYTHONPATH": src, "PATH": ""})
    commands = [shlex.split(line) for line in files["run.sh"].splitlines()[1:] if line.strip()]
    for argv in commands:
        assert argv[0] == "scopebench"
        assert main(argv[1:]) == 0, argv

    summary = {
        s: json.loads((tmp_path / "build" / s / "build.json").read_text())
        for s in ("ingest", "questions", "generate", "split", "export")
    }
    # The demo's contour-labelled cells plus 2 × 4 scikit-image crops.
    demo_rows = (tmp_path / "demo_cells.csv").read_text().splitlines()[1:]
    assert summary["ingest"]["items_in"] == len(demo_rows) + 8
    assert (
        summary["ingest"]["kept"] + sum(summary["ingest"]["dropped"].values())
        == summary["ingest"]["items_in"]
    )
    assert summary["split"]["stats"]["images"]["test_tiny"] == 4
    assert summary["split"]["stats"]["leaks"] == 0
    # generate: 8 crops × describe and mcq, 1 open question; one mcq reply names an answer that is
    # not among its options three times (two retries), so it is a failure row, not an item.
    gen = summary["generate"]
    assert (gen["items_in"], gen["kept"], gen["dropped"]) == (17, 16, {"answer_not_in_options": 1})
    assert gen["stats"]["items"] == {"describe": 8, "mcq": 7, "open_to_mcq": 1}
    assert gen["stats"]["ledger"]["total"]["requests"] == 8 + 8 + 2 + 1
    failures = [json.loads(x) for x in (tmp_path / "build/generate/generated.jsonl").read_text().splitlines()]
    failures = [r for r in failures if r["status"] == "failed"]
    assert [(r["row"], r["reason"], len(r["attempts"])) for r in failures] == [
        ("immunohistochemistry-3.png", "answer_not_in_options", 3)
    ]
    # Every local item is one question of one kept image; the run scored all of them.
    items = [json.loads(x) for x in (tmp_path / "build/export/local/data.jsonl").read_text().splitlines()]
    made = sum(summary["questions"]["stats"]["questions"].values())
    assert len(items) == made + 7 + 1
    assert sum(1 for i in items if i.get("explanation")) == 8
    for model in ("random", "frequent"):
        metrics = json.loads((tmp_path / f"runs/example-{model}/metrics.json").read_text())
        assert metrics["overall"]["n"] == len(items) and metrics["overall"]["errors"] == 0
    ubench = json.loads((tmp_path / "runs/example-ubench/metrics.json").read_text())
    assert ubench["overall"]["n"] == made  # the ubench loader reads the split dataset's own questions
    card = (tmp_path / "build/export/hf/README.md").read_text()
    assert "| scopebench_demo |" in card and "| skimage_data |" in card

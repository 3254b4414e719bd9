"""The run options' examples in the docs (blocks after ``<!-- test: run-options -->``), run as written."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from helpers import REPO
from scopebench.cli import main
from scopebench.store import load_run

DOCS = ("README.md", "docs/engine.md", "docs/report.md", "docs/models.md")
BLOCK = re.compile(r"<!-- test: run-options -->\n```console\n(.*?)```", re.S)


def doc_commands() -> list[str]:
    """Every ``scopebench`` command of the tagged blocks, in document order."""
    found = []
    for name in DOCS:
        for block in BLOCK.findall((REPO / name).read_text(encoding="utf-8")):
            found += [line for line in block.splitlines() if line.startswith("scopebench ")]
    return found


@pytest.fixture(scope="module")
def demo_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from scopebench.benchmarks.demo import DEMO_VERSION, generate_demo

    cache = tmp_path_factory.mktemp("cache")
    generate_demo(cache / "demo" / f"v{DEMO_VERSION}-seed0", seed=0)
    return cache


def test_the_documented_run_options_run(
    tmp_path: Path, demo_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Catches: a documented option that the CLI refuses or that does not do what the docs say.
    pytest.importorskip("tensorboardX")
    pytest.importorskip("mlflow")
    monkeypatch.setenv("SCOPEBENCH_CACHE", str(demo_cache))
    monkeypatch.chdir(tmp_path)
    # The eval config the docs run (docs/tables.md shows a full one), small enough for a test.
    (tmp_path / "eval.yaml").write_text(
        "out: runs/eval\nlimit: 10\nmodels: [random]\nbenchmarks: [demo]\n", encoding="utf-8"
    )
    commands = doc_commands()
    assert len(commands) >= 3
    for line in commands:
        assert main(["-q", *shlex.split(line)[1:]]) == 0, line
    auto = json.loads((tmp_path / "runs/demo-auto/run.json").read_text())
    assert (auto["batch_size"], auto["batch_size_used"]) == ("auto", 64)
    assert any((tmp_path / "tb").rglob("events.out.tfevents.*"))
    sample = json.loads((tmp_path / "runs/demo-sample/run.json").read_text())
    assert (sample["tasks"], sample["limit"], sample["seed"]) == (["contour", "texture"], 0.1, 1)
    records = load_run(tmp_path / "runs/demo-sample").records
    assert len(records) == sample["n_items"] > 0 and {r.task for r in records} <= {"contour", "texture"}
    assert (tmp_path / "ml" / "mlflow.db").is_file()

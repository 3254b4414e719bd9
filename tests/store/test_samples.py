"""Records carry what the model was shown: prompt, images by id, question, options and answer key."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

import scopebench
from helpers import FIXTURES
from scopebench.benchmarks import get_benchmark
from scopebench.cli import main
from scopebench.items import SAMPLE_COLUMNS, Record
from scopebench.protocols import render
from scopebench.report.html import write_html_report
from scopebench.store import RunStore, load_run

LEGACY = FIXTURES / "legacy_detection_run"


DATA = FIXTURES / "local" / "items.jsonl"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("runs") / "local-random"
    scopebench.evaluate("local", "random", data=DATA, out=out)
    return out


def test_every_record_stores_its_sample(run_dir: Path) -> None:
    """Catches records without the prompt they answered, or with images by absolute path.

    The prompt is the one :func:`render` builds for the item, byte for byte.
    """
    records = {r.item_id: r for r in load_run(run_dir).records}
    items = {it.id: it for it in get_benchmark("local").load(DATA).items}
    q2 = records["local/q2"].sample
    assert q2 is not None
    assert q2.prompt == render(items["local/q2"]).text
    assert q2.images == ("images/cell1.png", "images/cell2.png")
    assert (q2.question, q2.options, q2.answer_key, q2.protocol) == (
        "Which organelle is labelled green?",
        ("Nucleus", "Mitochondria", "Golgi apparatus"),
        "B",
        "default",
    )
    q3 = records["local/q3"].sample  # its image file is missing: the sample names it all the same
    assert q3 is not None and (q3.answer_key, q3.images) == ("C", ("images/missing.png",))


def test_export_and_to_pandas_show_samples(run_dir: Path, tmp_path: Path) -> None:
    """Catches exports that drop the sample, or keep it as one opaque nested column."""
    out = tmp_path / "records.parquet"
    assert main(["export", str(run_dir), "--format", "parquet", "--out", str(out)]) == 0
    exported = pd.read_parquet(out).set_index("item_id")
    frame = scopebench.load_run(run_dir).to_pandas().set_index("item_id")
    for table in (exported, frame):
        assert set(SAMPLE_COLUMNS) <= set(table.columns) and "sample" not in table.columns
        assert table.loc["local/q2", "answer_key"] == "B"
        assert list(table.loc["local/q2", "options"]) == ["Nucleus", "Mitochondria", "Golgi apparatus"]
        assert "A) Nucleus" in table.loc["local/q2", "prompt"]


def test_html_item_browser_shows_the_prompt(run_dir: Path, tmp_path: Path) -> None:
    """Catches an item browser that shows the reply but not the prompt it answers."""
    page = write_html_report([run_dir], tmp_path / "report.html")
    texts = "".join(p.read_text(encoding="utf-8") for p in (tmp_path / "report_items").iterdir())
    assert page.is_file()
    assert '"prompt": "Two channels of the same field.\\n\\nQuestion: Which organelle' in texts


def test_runs_written_without_samples_still_load(tmp_path: Path) -> None:
    """A run folder from before samples were stored (the legacy fixture's records, byte for byte).

    Catches a record type that requires the new field, and exports that fail on its absence.
    """
    folder = tmp_path / "legacy"
    folder.mkdir()
    shutil.copy(LEGACY / "run.json", folder / "run.json")
    lines = (LEGACY / "records.jsonl").read_text(encoding="utf-8").splitlines()
    assert all('"sample"' not in line for line in lines)
    with RunStore(folder / "records.sqlite"):
        pass
    with sqlite3.connect(folder / "records.sqlite") as db:
        db.executemany(
            "INSERT INTO records VALUES (?, ?, ?)",
            [(json.loads(ln)["item_id"], json.loads(ln)["status"], ln) for ln in lines],
        )
    records = load_run(folder).records
    assert len(records) == len(lines) and all(r.sample is None for r in records)
    flat = records[0].to_flat()
    assert all(flat[name] is None for name in SAMPLE_COLUMNS)
    assert Record.from_dict(records[0].to_dict()) == records[0]


def test_log_samples_false_stores_none(tmp_path: Path) -> None:
    """``run --log-samples false``: records without samples (very large runs), the run otherwise alike.

    Catches the flag being ignored, or breaking exports of the records it leaves bare.
    """
    out = tmp_path / "bare"
    argv = ["-q", "run", "--bench", "local", "--data", str(DATA), "--model", "random", "--out", str(out)]
    assert main([*argv, "--log-samples", "false"]) == 0
    records = load_run(out).records
    assert len(records) == 4 and all(r.sample is None for r in records)
    assert all('"sample": null' in line for line in (out / "records.jsonl").read_text().splitlines())
    assert scopebench.load_run(out).to_pandas()["prompt"].isna().all()

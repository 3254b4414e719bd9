"""Incremental re-runs of ``build run``: per-row and per-content caches, and cold-run identity.

Each test edits one input of a small project, re-runs the build over the earlier output, then
builds a copy of the edited project from nothing and compares the two outputs file by file.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from curate_helpers import make_sources
from PIL import Image

from scopebench.curate import run_build
from scopebench.curate.ingestion import step as ingest_step
from scopebench.curate.ingestion.cache import ConversionStore
from scopebench.curate.ingestion.step import IngestResult
from scopebench.curate.questions import QuestionResult, make_questions
from scopebench.errors import DataFormatError

TEMPLATES = "templates:\n  questions:\n    stain: {text}\n"


def _project(root: Path, template: str = "Which stain is shown?") -> Path:
    """:func:`make_sources` plus a near-duplicate (img0 brightened by one level) and a taxonomy file."""
    make_sources(root)
    px = np.asarray(Image.open(root / "a" / "img0.png")).astype(np.int16)
    Image.fromarray(np.clip(px + 1, 0, 255).astype(np.uint8)).save(root / "a" / "img0b.png")
    csv = root / "a.csv"
    row0 = csv.read_text().splitlines()[1]
    csv.write_text(csv.read_text() + row0.replace("img0.png", "img0b.png") + "\n")
    (root / "tax.yaml").write_text(TEMPLATES.format(text=json.dumps(template)))
    (root / "build.yaml").write_text(
        "manifest: manifest.yaml\nout: out\nseed: 3\ntaxonomy: tax.yaml\n"
        "split: {fractions: {train: 0.5, test: 0.5}, tiny: 2}\n"
    )
    return root / "build.yaml"


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def _files(out: Path) -> dict[str, bytes]:
    """Every output file but the caches (``.cache/``), by path relative to ``out``."""
    files = {}
    for p in sorted(out.rglob("*")):
        rel = p.relative_to(out).as_posix()
        if p.is_file() and not rel.startswith(".cache/"):
            files[rel] = p.read_bytes()
    return files


def _same_as_cold(root: Path, tmp: Path) -> None:
    """The re-run output of ``root`` equals a cold build of the same inputs, byte for byte.

    The re-run output (caches included) moves aside and the project is built again from nothing
    at the same place, so even the absolute paths recorded in summaries and cards agree.
    """
    warm_out = tmp / "warm_out"
    shutil.move(root / "out", warm_out)
    run_build(root / "build.yaml", workers=1)
    warm, cold = _files(warm_out), _files(root / "out")
    assert sorted(warm) == sorted(cold)
    assert any(name.endswith(".parquet") for name in warm) and "export/local/data.jsonl" in warm
    differ = [name for name in warm if warm[name] != cold[name]]
    assert differ == []


def _question(out: Path, task: str, image: str) -> dict[str, Any]:
    items = [json.loads(line) for line in (out / "export/local/data.jsonl").read_text().splitlines()]
    return next(i for i in items if i["task"] == task and i["source_path"] == image)


def test_changed_row_redoes_only_that_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Catches a re-run that converts images again, re-confirms near-duplicates from pixels,
    redraws questions of unchanged rows (or of the row's unchanged tasks), or whose reused work
    makes an output that differs from a cold build of the same inputs."""
    root = tmp_path / "p"
    root.mkdir()
    cold = run_build(_project(root), workers=1)
    ingested, questions = cold.steps[0], cold.steps[1]
    assert isinstance(ingested, IngestResult) and isinstance(questions, QuestionResult)
    assert ingested.stats["near_duplicates"]["grouped"] >= 2  # img0b joins img0 (and the repeat)
    total = questions.made  # every (image, task) with a value, a question or a no-distractor skip
    no_distractor = sum(n for k, n in questions.stats["skipped"].items() if k.endswith("no distractor"))
    assert total == sum(questions.stats["questions"].values()) + no_distractor and questions.reused == 0

    loads: list[Path] = []
    real_grey = ingest_step._grey
    monkeypatch.setattr(ingest_step, "_grey", lambda png: loads.append(png) or real_grey(png))
    _edit(root / "a.csv", "img1.png,light microscopy,brightfield microscopy,pathology,hematopathology,Giemsa",
          "img1.png,light microscopy,brightfield microscopy,pathology,hematopathology,Wright-Giemsa")  # fmt: skip
    again = run_build(root / "build.yaml", workers=1)
    assert [s.cached for s in again.steps] == [False] * 4
    ingested, questions = again.steps[0], again.steps[1]
    assert isinstance(ingested, IngestResult) and isinstance(questions, QuestionResult)
    assert (ingested.converted, loads) == (0, [])  # every image and pair score from the caches
    # Only img1's stain question depends on the changed cell.
    assert (questions.made, questions.reused) == (1, total - 1)
    assert _question(root / "out", "stain", "img1.png")["choices"].count("Wright-Giemsa") == 1
    _same_as_cold(root, tmp_path)


def test_changed_label_is_not_served_from_a_stale_entry(tmp_path: Path) -> None:
    """Catches a question cache keyed by the image alone: the label changes, the image does not,
    and the classification question must offer the new label as its answer."""
    root = tmp_path / "p"
    root.mkdir()
    run_build(_project(root), workers=1)
    before = _question(root / "out", "classification", "img3.png")
    assert before["choices"][before["answer"]] == "basophil"
    _edit(root / "a.csv", "homo sapiens,basophil", "homo sapiens,lymphocyte")  # img3's row
    again = run_build(root / "build.yaml", workers=1)
    assert isinstance(again.steps[0], IngestResult) and again.steps[0].converted == 0
    after = _question(root / "out", "classification", "img3.png")
    assert after["choices"][after["answer"]] == "lymphocyte" and "basophil" in after["choices"]
    _same_as_cold(root, tmp_path)


def test_changed_template_redoes_only_its_task(tmp_path: Path) -> None:
    """Catches a template change that redraws every task's questions, or one that is not seen
    (the old question text served from the cache)."""
    root = tmp_path / "p"
    root.mkdir()
    cold = run_build(_project(root), workers=1)
    assert isinstance(cold.steps[1], QuestionResult)
    stains, total = cold.steps[1].stats["questions"]["stain"], cold.steps[1].made
    (root / "tax.yaml").write_text(TEMPLATES.format(text=json.dumps("Which dye or label is shown?")))
    again = run_build(root / "build.yaml", workers=1)
    assert [s.cached for s in again.steps] == [True, False, False, False]
    questions = again.steps[1]
    assert isinstance(questions, QuestionResult)
    assert (questions.made, questions.reused) == (stains, total - stains)
    assert _question(root / "out", "stain", "img1.png")["question"] == "Which dye or label is shown?"
    _same_as_cold(root, tmp_path)


def test_damaged_caches_are_redone_or_refused(tmp_path: Path, built: dict[str, Any]) -> None:
    """Catches a cache entry of the wrong shape (or unreadable JSON) served as a question, a damaged
    pair-score file that stops ingest, and a cache file that is not SQLite failing with a
    traceback instead of saying to delete it."""
    data = Path(str(built["root"])) / "ingest"
    cache = tmp_path / "q.sqlite"
    first = make_questions(data, tmp_path / "q1", cache=cache)
    with sqlite3.connect(cache) as db:
        keys = [k for (k,) in db.execute("SELECT key FROM memo")]
        db.execute("UPDATE memo SET value = ?", (json.dumps({"distractors": 5}),))
        db.execute("UPDATE memo SET value = 'not json' WHERE key = ?", (keys[0],))
        twice = {"distractors": ["x", "X"], "filled": False, "question": "q", "caption": "c"}
        db.execute("UPDATE memo SET value = ? WHERE key = ?", (json.dumps(twice), keys[1]))
    again = make_questions(data, tmp_path / "q2", cache=cache)
    assert (again.made, again.reused) == (first.made, 0) and first.made == len(keys)
    arrow = sorted((tmp_path / "q1" / "test").glob("*.arrow"))
    assert arrow and [p.read_bytes() for p in arrow] == [
        (tmp_path / "q2" / "test" / p.name).read_bytes() for p in arrow
    ]

    store = ConversionStore(tmp_path / "images")
    store.root.mkdir(parents=True)
    (store.root / "similarity.json").write_text('{"1:a:b": "high", "1:c:d": 0.5')  # cut short
    assert store.similarities() == {}
    (store.root / "similarity.json").write_text('{"1:a:b": "high", "1:c:d": 0.5}')
    assert store.similarities() == {"1:c:d": 0.5}

    cache.write_bytes(b"this is not a database" * 100)
    with pytest.raises(DataFormatError, match="delete it and run again"):
        make_questions(data, tmp_path / "q3", cache=cache)


def test_build_yaml_named_another_way_reuses_every_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Catches step keys that hold paths as the command spelt them: ``build run proj/build.yaml``
    after ``build run /abs/proj/build.yaml`` redid questions, split and export."""
    config = _project(tmp_path / "proj")
    run_build(config.resolve())
    monkeypatch.chdir(tmp_path)
    again = run_build("proj/build.yaml")
    assert [s.cached for s in again.steps] == [True] * len(again.steps)
    monkeypatch.chdir(tmp_path / "proj")
    assert all(s.cached for s in run_build("build.yaml").steps)

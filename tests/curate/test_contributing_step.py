"""CONTRIBUTING.md's build-step example runs as written on a real ingest output.

Catches a recipe that drifted from the step contract (``Step``, ``make_config``), from the dataset
helpers it names (``read_rows``/``save_dataset``/``copy_sources``/``write_summary``), or that drops
rows without a problem row.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest
from curate_helpers import make_sources

from helpers import REPO
from scopebench.curate import ingest, make_questions
from scopebench.curate.output import read_rows
from scopebench.errors import DataFormatError


def _example(tmp_path: Path) -> object:
    text = (REPO / "CONTRIBUTING.md").read_text(encoding="utf-8")
    body = re.search(r"```python\n# file: min_side\.py\n(.*?)```", text, re.S)
    assert body, "CONTRIBUTING.md lost its min_side.py block"
    path = tmp_path / "min_side.py"
    path.write_text(body[1], encoding="utf-8")
    spec = importlib.util.spec_from_file_location("min_side_example", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_documented_build_step_keeps_out_small_images_with_a_problem_each(tmp_path: Path) -> None:
    step = _example(tmp_path).STEP  # type: ignore[attr-defined]
    ingested = ingest(make_sources(tmp_path / "src"), tmp_path / "ingest")
    rows_in = [r for rs in read_rows(tmp_path / "ingest")[0].values() for r in rs]
    # make_sources writes 32×40 PNGs and 30×20 TIFFs: a limit of 30 px keeps the first kind only.
    small = {r["image_id"] for r in rows_in if min(r["width"], r["height"]) < 30}
    assert small and len(small) < len(rows_in)

    result = step.run(tmp_path / "ingest", tmp_path / "big", step.make_config({"min_side": 30}))

    kept = [r for rs in read_rows(tmp_path / "big")[0].values() for r in rs]
    assert {r["image_id"] for r in kept} == {r["image_id"] for r in rows_in} - small
    assert result.items_in == len(rows_in) == result.kept + result.dropped["too_small"]
    problems = [json.loads(line) for line in (tmp_path / "big" / "problems.jsonl").read_text().splitlines()]
    assert sorted(p["row"] for p in problems) == sorted(small)
    # The output is an ordinary build output: the next step reads it, provenance travels on.
    assert (tmp_path / "big" / "provenance" / "ingest.build.json").is_file()
    assert make_questions(tmp_path / "big", tmp_path / "q").items_in == len(kept)
    assert ingested.kept == len(rows_in)


def test_the_documented_step_refuses_a_misspelt_setting(tmp_path: Path) -> None:
    step = _example(tmp_path).STEP  # type: ignore[attr-defined]
    with pytest.raises(DataFormatError, match="unknown key"):
        step.make_config({"minside": 30})

"""Replay files that name items as the benchmark's own files do (SPUR's ``QUESTION_INDEX``)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

import scopebench
from helpers import FIXTURES
from scopebench.benchmarks import get_benchmark

SPUR = FIXTURES / "spur"


def _write(path: Path, lines: dict[str, str]) -> Path:
    path.write_text("".join(json.dumps({"item_id": k, "response": v}) + "\n" for k, v in lines.items()))
    return path


def test_spur_question_index_ids_are_read(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """SPUR's own ids: each QUESTION_INDEX that names one item is read; shared ones are refused.

    Catches "154 of 154 items have no response" for a file in SPUR's id form, and a shared
    QUESTION_INDEX (the single-panel and reason files reuse values) given to one item by guess.
    """
    items = get_benchmark("spur").load(SPUR).items
    by_index: dict[str, list[str]] = {}
    for it in items:
        by_index.setdefault(it.id.rsplit("/", 1)[1], []).append(it.id)
    unique = {k: v[0] for k, v in by_index.items() if len(v) == 1}
    shared = {k: v for k, v in by_index.items() if len(v) > 1}
    assert unique and shared  # the fixture has both kinds
    replies = _write(tmp_path / "spur.jsonl", dict.fromkeys(by_index, "The answer is A"))
    with caplog.at_level(logging.INFO, logger="scopebench.models.replay"):
        res = scopebench.evaluate("spur", f"replay:{replies}", data=SPUR, out=tmp_path / "run")
    status = {r.item_id: r.status for r in res.records}
    assert all(status[item_id] == "ok" for item_id in unique.values())
    assert all(status[i] == "missing_response" for ids in shared.values() for i in ids)
    text = caplog.text
    assert f"{len(shared)} line(s) of {replies} name an id that several items of this run share" in text
    # The warning says which id forms a line may use.
    assert "(item_id as 'spur/single/2010027917_6_1' or 'single/2010027917_6_1' or '2010027917_6_1')" in text


def test_unknown_ids_warning_shows_the_expected_form(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Catches a warning that says items lack responses without the id form this run expects."""
    replies = _write(tmp_path / "r.jsonl", {"question-1": "A"})
    with caplog.at_level(logging.WARNING, logger="scopebench.models.replay"):
        scopebench.evaluate("local", f"replay:{replies}", data=FIXTURES / "local" / "items.jsonl",
                            out=tmp_path / "run")  # fmt: skip
    assert (
        "name items that are not in this run (e.g. 'question-1'); item ids look like 'local/q1' or 'q1'"
        in (caplog.text)
    )

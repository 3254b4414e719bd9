"""metrics.json keeps the layout docs/metrics-schema.md documents (a change must update both)."""

import re

from helpers import REPO
from scopebench.items import Record
from scopebench.scoring.accuracy import AccuracyRow
from scopebench.scoring.metrics import METRICS_SCHEMA_VERSION, compute_metrics

DOC = (REPO / "docs" / "metrics-schema.md").read_text(encoding="utf-8")


def _table_keys(heading: str) -> set[str]:
    """First-column names (in backticks) of the Markdown table under ``## heading``."""
    section = DOC.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    keys: set[str] = set()
    for line in section.splitlines():
        if line.startswith("| `"):
            keys |= set(re.findall(r"`([a-z_]+)`", line.split("|")[1]))
    return keys


def test_documented_version_matches_code():
    assert f"# metrics.json schema (version {METRICS_SCHEMA_VERSION})" in DOC


def test_top_level_keys_are_documented():
    recs = [Record("a", "m", "ok", choice=0, correct=True, task="NP", split="test", answer_index=0)]
    items = {"a": {"id": "a", "task": "NP", "split": "test", "choices": ["x", "y"], "answer_index": 0}}
    keys = set(compute_metrics(recs, benchmark="spur", items=items, resamples=20)) | {"model"}
    assert keys == _table_keys("Top level")


def test_accuracy_row_fields_are_documented():
    fields = set(AccuracyRow.__dataclass_fields__)
    assert fields == _table_keys("Accuracy row")

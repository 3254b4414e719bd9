"""GRIT at metrics time: new records (boxes only) and legacy records (a stored score) score the same."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from scopebench.errors import DataNotFoundError
from scopebench.items import Box, Record
from scopebench.scoring.detection import record_grit, stored_boxes, target_boxes
from scopebench.scoring.metrics import compute_metrics, localization_section
from scopebench.store import RunStore, load_run

LEGACY = Path(__file__).parents[1] / "fixtures" / "legacy_detection_run"

# The item of d1: one truth (0,0)-(100,50) on a 200×100 image.
_ITEM = {"targets": [{"x1": 0, "y1": 0, "x2": 100, "y2": 50, "label": "nucleus"}], "metadata": {}}


def _det(extra: dict[str, Any], status: str = "ok", item_id: str = "x/d1") -> Record:
    return Record(item_id=item_id, model="m", status=status, task="detection", kind="detection", extra=extra)  # type: ignore[arg-type]


def test_box_rows_become_boxes() -> None:
    assert stored_boxes([[1, 2, 3.5, 4]]) == [Box(1.0, 2.0, 3.5, 4.0)]
    # The label is not part of matching: GRIT scores one (image, class) at a time.
    assert target_boxes([{"x1": 0, "y1": 1, "x2": 2, "y2": 3, "label": "cell"}]) == [Box(0.0, 1.0, 2.0, 3.0)]


def test_record_grit_hand_computed() -> None:
    # A perfect box: 1. Half of it, (0,0)-(50,50): IoU 2500/5000 = 0.5 → 0.5 / (1 + 1 − 1).
    assert record_grit(_det({"boxes": [[0, 0, 100, 50]]}), _ITEM) == 1.0
    assert record_grit(_det({"boxes": [[0, 0, 50, 50]]}), _ITEM) == pytest.approx(0.5)
    # A perfect box and 3 complete boxes the parser did not read (its cap): 1 / (4 + 1 − 1).
    assert record_grit(_det({"boxes": [[0, 0, 100, 50]], "boxes_truncated": 3}), _ITEM) == 0.25
    # Nothing predicted: 0 with a truth, 1 without one.
    assert record_grit(_det({"boxes": []}), _ITEM) == 0.0
    assert record_grit(_det({"boxes": []}), {"targets": []}) == 1.0
    # No reply read (error, missing image, an ok record without boxes): a failed detection, 0.
    assert record_grit(_det({}, status="error"), _ITEM) == 0.0
    assert record_grit(_det({"boxes": [[0, 0, 100, 50]]}, status="missing_image"), _ITEM) == 0.0
    assert record_grit(_det({}), _ITEM) == 0.0


def test_legacy_score_is_used_as_stored() -> None:
    # Even where the boxes would score otherwise, and without any item: the legacy run's number.
    assert record_grit(_det({"boxes": [[0, 0, 100, 50]], "grit": 0.3}), _ITEM) == 0.3
    assert record_grit(_det({"grit": 0.3}), None) == 0.3
    assert record_grit(_det({"grit": 1}), None) == 1.0
    assert record_grit(_det({"grit": "0.9"}), None) == 0.0  # not a number: 0, never parsed


def test_boxes_without_their_item_are_refused() -> None:
    rec = _det({"boxes": [[0, 0, 100, 50]]})
    with pytest.raises(DataNotFoundError, match="x/d1 cannot be scored"):
        record_grit(rec, None)
    with pytest.raises(DataNotFoundError, match="ground-truth boxes"):
        record_grit(rec, {"metadata": {}})
    with pytest.raises(DataNotFoundError):
        localization_section([rec], {})


def _write_run(folder: Path, records: list[Record], items: dict[str, Any] | None) -> Path:
    """A run directory holding ``records`` (and the item summaries, unless ``None``)."""
    folder.mkdir()
    (folder / "run.json").write_text((LEGACY / "run.json").read_text(encoding="utf-8"), encoding="utf-8")
    with RunStore(folder / "records.sqlite") as store:
        store.add(records)
    if items is not None:
        with sqlite3.connect(folder / "records.sqlite") as db:
            db.executemany("INSERT INTO items VALUES (?, ?)", [(k, json.dumps(v)) for k, v in items.items()])
    return folder


def _legacy() -> tuple[list[Record], dict[str, Any], list[dict[str, Any]]]:
    lines = (LEGACY / "records.jsonl").read_text(encoding="utf-8").splitlines()
    records = [Record.from_dict(json.loads(ln)) for ln in lines]
    items = json.loads((LEGACY / "items.json").read_text(encoding="utf-8"))
    published = json.loads((LEGACY / "metrics.json").read_text(encoding="utf-8"))["localization"]
    return records, items, published


def _localization(run_dir: Path) -> list[dict[str, Any]]:
    run = load_run(run_dir)
    m = compute_metrics(run.records, benchmark=run.benchmark, items=run.items, seed=0)
    rows: list[dict[str, Any]] = m["localization"]
    return rows


def test_legacy_run_reports_its_published_numbers(tmp_path: Path) -> None:
    records, items, published = _legacy()
    assert all("grit" in r.extra for r in records)  # the fixture is of the old format
    assert _localization(_write_run(tmp_path / "old", records, items)) == published
    # A legacy run without its item summaries (a salvaged store) still scores: the stored scores.
    # (Its easy/hard split rows need the items' metadata, as they always did.)
    no_splits = [r for r in published if not r["group"].startswith("split=")]
    assert _localization(_write_run(tmp_path / "bare", records, None)) == no_splits


def test_new_format_scores_the_same_boxes_identically(tmp_path: Path) -> None:
    records, items, published = _legacy()
    for r in records:
        del r.extra["grit"]  # what the parse stage stores now: the boxes only
    assert _localization(_write_run(tmp_path / "new", records, items)) == published
    # Without the item summaries there is nothing to score the boxes against: refused, not 0.
    with pytest.raises(DataNotFoundError, match="cannot be scored"):
        _localization(_write_run(tmp_path / "bare", records, None))


def test_mixed_run_scores_each_record_its_way(tmp_path: Path) -> None:
    # A legacy run resumed by this version holds both kinds of record; each counts once, as before.
    records, items, published = _legacy()
    for r in records[::2]:
        del r.extra["grit"]
    assert _localization(_write_run(tmp_path / "mixed", records, items)) == published


def test_boxes_without_their_item_say_how_to_store_the_items() -> None:
    with pytest.raises(DataNotFoundError) as exc:
        record_grit(_det({"boxes": [[0, 0, 100, 50]]}), None)
    assert str(exc.value) == (
        "the detection record of x/d1 cannot be scored: the run holds no item summary with its "
        "ground-truth boxes. Run the same `scopebench run` command with --out on this folder once "
        "(nothing is asked again; it stores the items), then report again"
    )


def test_localization_intervals_follow_the_callers_seed_and_resamples() -> None:
    # Nine boxes covering 10%..90% of the truth: GRIT 0.1..0.9, enough spread to bootstrap.
    from scopebench.scoring.bootstrap import bootstrap_ci

    recs = [_det({"boxes": [[0, 0, w, 50]]}, item_id=f"x/d{w}") for w in range(10, 100, 10)]
    items = {r.item_id: _ITEM for r in recs}
    ours = localization_section(recs, items, seed=5, resamples=50)
    metrics = compute_metrics(recs, benchmark="local", items=items, seed=5, resamples=50, baselines=False)
    assert metrics["localization"] == ours
    cls = next(r for r in ours if r["group"].startswith("class="))
    want = bootstrap_ci([record_grit(r, _ITEM) for r in recs], seed=5, resamples=50)
    assert (cls["ci_low"], cls["ci_high"]) == (want.low, want.high)
    # Without a seed: the documented 0.
    assert localization_section(recs, items, resamples=50) == localization_section(
        recs, items, seed=0, resamples=50
    )
    assert localization_section(recs, items, resamples=50) != localization_section(
        recs, items, seed=1, resamples=50
    )

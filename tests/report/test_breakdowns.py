"""SPUR breakdowns (MP by panel category, TA by relation count) from a run's records."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from scopebench.benchmarks.spur import SpurBenchmark
from scopebench.items import Item, Record
from scopebench.report import write_run_outputs
from scopebench.report.breakdowns import panel_category, relation_count, spur_breakdowns
from scopebench.store import RunStore


def _record(item_id: str, task: str, status: str = "ok", correct: bool = True) -> Record:
    return Record(
        item_id=item_id,
        model="m",
        status=status,
        choice=0 if status == "ok" else None,  # type: ignore[arg-type]
        correct=correct,
        task=task,
        subset="x",
        split="test",
        answer_index=0,
    )


def _summary(meta: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": meta}


def _rows(rows: list[dict[str, Any]]) -> dict[str, tuple[int, int]]:
    return {r["group"]: (r["correct"], r["n"]) for r in rows}


@pytest.mark.parametrize(
    ("figure_type", "category"),
    [
        ("Cell Staining Image", "Cell"),
        ("Tissue Staining Image", "Tissue"),
        ("Microorganism Staining Image", "Microorganism"),
        ("Subcellular / Organelle Staining Image", "Subcellular"),
        ("subcellular  /  organelle staining image", "Subcellular"),  # case and spacing ignored
        ("Western Blot", "Western Blot"),  # an unmapped type keeps its own name
        ("", "unknown"),
        (None, "unknown"),
    ],
)
def test_panel_category(figure_type: str | None, category: str) -> None:
    meta = {} if figure_type is None else {"figure_type": figure_type}
    assert panel_category(meta) == category


@pytest.mark.parametrize(
    ("value", "count"),
    [
        ("1", "1"),
        (" 4 ", "4"),
        (3, "3"),
        ("0", "unknown"),
        ("two", "unknown"),
        (None, "unknown"),
        (True, "unknown"),
    ],
)
def test_relation_count(value: Any, count: str) -> None:
    assert relation_count({} if value is None else {"relation_number": value}) == count


def test_hand_built_groups_counts_and_intervals() -> None:
    items = {
        "c1": _summary({"figure_type": "Cell Staining Image"}),
        "c2": _summary({"figure_type": "Cell Staining Image"}),
        "s1": _summary({"figure_type": "Subcellular / Organelle Staining Image"}),
        "u1": _summary({}),
        "t1": _summary({"relation_number": "1"}),
        "t2": _summary({"relation_number": "1"}),
        "t4": _summary({"relation_number": "4"}),
        "tm": _summary({"relation_number": "2"}),
        "np": _summary({"figure_type": "Cell Staining Image"}),  # NP: not in the MP breakdown
    }
    records = [
        _record("c1", "MP"),
        _record("c2", "MP", correct=False),
        _record("s1", "MP"),
        _record("u1", "MP", status="unparsed", correct=False),
        _record("t1", "TA"),
        _record("t2", "TA"),
        _record("t4", "TA", correct=False),
        _record("tm", "TA", status="missing_image", correct=False),
        _record("np", "NP"),
    ]
    out = spur_breakdowns(records, items)
    mp = {r["group"]: r for r in out["mp_by_category"]}
    # The paper's order, unknown last; nothing of MP dropped (4 records in 3 groups).
    assert [r["group"] for r in out["mp_by_category"]] == [
        "category=Cell",
        "category=Subcellular",
        "category=unknown",
    ]
    assert _rows(out["mp_by_category"]) == {
        "category=Cell": (1, 2),
        "category=Subcellular": (1, 1),
        "category=unknown": (0, 1),
    }
    # Wilson 95 % for 1/2: 0.5 ± 1.95996·sqrt(0.125 + 3.84146/16) / (1 + 3.84146/2) = 0.5 ± 0.40547.
    assert mp["category=Cell"]["accuracy"] == 0.5
    assert mp["category=Cell"]["ci_low"] == pytest.approx(0.09453, abs=1e-4)
    assert mp["category=Cell"]["ci_high"] == pytest.approx(0.90547, abs=1e-4)
    assert mp["category=unknown"]["unparsed"] == 1
    assert [r["group"] for r in out["ta_by_relations"]] == ["relations=1", "relations=2", "relations=4"]
    assert _rows(out["ta_by_relations"]) == {
        "relations=1": (2, 2),
        "relations=2": (0, 1),
        "relations=4": (0, 1),
    }
    # Under ``exclude`` the missing image leaves the denominator: relations=2 has nothing to score.
    excl = {r["group"]: r for r in spur_breakdowns(records, items, policy="exclude")["ta_by_relations"]}
    assert excl["relations=2"]["denominator"] == 0 and math.isnan(excl["relations=2"]["accuracy"])
    assert excl["relations=4"]["denominator"] == 1


def _fixture_run(root: Path) -> Path:
    """A SPUR run over the real fixture whose model always answers A (option 0)."""
    from helpers import FIXTURES

    loaded = SpurBenchmark().load(FIXTURES / "spur")
    run = root / "run"
    run.mkdir()
    cfg = {
        "benchmark": "spur",
        "model": "always-A",
        "data": None,
        "data_fingerprint": "fp",
        "protocol": "default",
        "parser_version": "choice-1",
    }
    (run / "run.json").write_text(json.dumps(cfg), encoding="utf-8")
    items: list[Item] = list(loaded.items)

    def rec(it: Item) -> Record:
        return Record(
            item_id=it.id,
            model="always-A",
            status="ok",
            choice=0,
            correct=it.answer_index == 0,
            task=it.task,
            subset=it.subset,
            split=it.split,
            answer_index=it.answer_index,
        )

    with RunStore(run / "records.sqlite") as store:
        store.add_items(items)
        store.add([rec(it) for it in items])
    return run


def test_fixture_run_report_writes_breakdowns(tmp_path: Path) -> None:
    run = _fixture_run(tmp_path)
    write_run_outputs(run, out_dir=tmp_path / "out")
    out = tmp_path / "out"
    data = json.loads((out / "spur_breakdowns.json").read_text(encoding="utf-8"))
    # Counted by hand from tests/fixtures/spur/single-panel_qa_pair.json (Graphical tag; the
    # malformed 2010096149_0_* records are skipped by the loader) and multi-panel (not
    # Cross-Modality): answers A per figure_type / relation_number over all answers.
    assert _rows(data["mp_by_category"]) == {
        "category=Cell": (8, 8),
        "category=Tissue": (0, 5),
        "category=Microorganism": (1, 1),
        "category=Subcellular": (0, 4),
    }
    assert [r["group"] for r in data["mp_by_category"]] == [
        "category=Cell",
        "category=Tissue",
        "category=Microorganism",
        "category=Subcellular",
    ]
    assert _rows(data["ta_by_relations"]) == {
        "relations=1": (1, 5),
        "relations=2": (10, 34),
        "relations=3": (1, 9),
        "relations=4": (0, 1),
    }
    # Every MP / TA item of the run is in exactly one group.
    metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    by_task = {r["group"]: r["n"] for r in metrics["by_task"]}
    assert sum(n for _, n in _rows(data["mp_by_category"]).values()) == by_task["task=MP"]
    assert sum(n for _, n in _rows(data["ta_by_relations"]).values()) == by_task["task=TA"]
    md = (out / "spur_breakdowns.md").read_text(encoding="utf-8")
    assert "| category=Tissue | 5 | 0 | 0.0 |" in md
    # The published values sit beside the matching rows (SPUR summary, shipped CSV).
    assert "| relations=4 | 1 | 0 | 0.0 |" in md and "34.00 (Claude 3.7 Sonnet (thinking))" in md
    assert "42.80 (Ministral 3 14B)" in md
    assert (out / "spur_breakdowns.png").stat().st_size > 0 and (out / "spur_breakdowns.svg").is_file()


def test_other_benchmarks_get_no_breakdowns(tmp_path: Path) -> None:
    run = _fixture_run(tmp_path)
    cfg = json.loads((run / "run.json").read_text(encoding="utf-8"))
    (run / "run.json").write_text(json.dumps({**cfg, "benchmark": "local"}), encoding="utf-8")
    write_run_outputs(run, out_dir=tmp_path / "out")
    assert not (tmp_path / "out" / "spur_breakdowns.json").exists()

"""Typed metrics (scoring/schema.py): the same numbers as the dict, validated, in the same order."""

from __future__ import annotations

import json
import math

import pytest
from pydantic import ValidationError

from scopebench.config import ReportConfig
from scopebench.items import Record
from scopebench.report import json_safe
from scopebench.scoring.metrics import compute_metrics
from scopebench.scoring.schema import AccuracyRow, Metrics, OwnerRow


def _rec(i: int, correct: bool, task: str, status: str = "ok") -> Record:
    return Record(
        item_id=f"x/{i}", model="m", status=status, choice=0 if status == "ok" else None,
        correct=correct if status == "ok" else None, task=task, split="test", answer_index=0,
    )  # fmt: skip


def _ubench_metrics() -> dict:
    # modality 3/4 right, stain 1/2, classification 1/3 (one unparsed), counting 1/1.
    recs = [_rec(i, i < 3, "modality") for i in range(4)] + [
        _rec(10, True, "stain"), _rec(11, False, "stain"),
        _rec(20, True, "classification"), _rec(21, False, "classification", "unparsed"),
        _rec(22, False, "classification"), _rec(30, True, "counting"),
    ]  # fmt: skip
    items = {
        r.item_id: {"id": r.item_id, "task": r.task, "split": "test", "choices": ["a", "b"], "answer_index": 0,
                    "metadata": {"domain": "pathology" if r.item_id in ("x/0", "x/10") else "cell"}}
        for r in recs
    }  # fmt: skip
    return compute_metrics(recs, benchmark="ubench", items=items, seed=0, resamples=50)


def test_typed_metrics_give_back_the_dict_key_for_key_in_order() -> None:
    raw = _ubench_metrics()
    on_disk = json.loads(json.dumps(json_safe(raw)))  # as metrics.json holds it: NaN is null
    for source in (raw, on_disk):
        typed = Metrics.from_dict(source)
        assert json.dumps(json_safe(typed.to_dict())) == json.dumps(json_safe(source))
        # Nested objects too: a μ-Bench owner row's keys are in another order than a plain row's.
        first = typed.owner_rows[0].to_dict()
        assert list(first) == list(source["owner"]["rows"][0])
        assert list(first)[:2] == ["group", "split_or_group"]


def test_typed_metrics_hold_the_hand_computed_numbers() -> None:
    typed = Metrics.from_dict(json.loads(json.dumps(json_safe(_ubench_metrics()))))
    assert (typed.overall.n, typed.overall.correct, typed.overall.unparsed) == (10, 6, 1)
    assert typed.overall.accuracy == pytest.approx(0.6)
    coarse = typed.owner.row("coarse", "all") if typed.owner else None
    assert isinstance(coarse, OwnerRow)
    assert coarse.accuracy == pytest.approx((0.75 + 0.5) / 2)  # macro over modality and stain
    assert coarse.tasks == {"modality": 0.75, "stain": 0.5}
    assert typed.owner is not None and typed.owner.row("nope", "all") is None
    assert [r.group for r in typed.by_task] == [
        "task=classification",
        "task=counting",
        "task=modality",
        "task=stain",
    ]
    assert typed.groups[: len(typed.by_task)] == typed.by_task
    assert set(typed.baselines) == {"random", "frequent"}
    assert typed.baselines["random"].expected_accuracy == pytest.approx(0.5)
    assert typed.counts == {"records": 10, "mcq": 10}


def test_null_is_nan_and_bad_values_are_refused() -> None:
    row = AccuracyRow.from_dict(
        {"group": "task=empty", "n": 0, "correct": 0, "accuracy": None, "denominator": 0,
         "ci_low": None, "ci_high": None, "ci_method": "wilson", "policy": "wrong", "future_field": 1}
    )  # fmt: skip
    assert math.isnan(row.accuracy) and all(math.isnan(x) for x in row.interval)
    assert row.to_dict()["future_field"] == 1  # a newer writer's key is kept, not dropped
    with pytest.raises(ValidationError):
        AccuracyRow.from_dict({"group": "g", "n": "many", "correct": 0, "accuracy": 0.0, "denominator": 0})
    with pytest.raises(ValidationError):
        Metrics.from_dict({"schema_version": 4, "benchmark": "b"})  # no overall row
    with pytest.raises(ValidationError):
        Metrics.from_dict(
            {"overall": {"group": "overall", "n": 3, "correct": 1, "accuracy": 0.3}}
        )  # no denominator
    with pytest.raises(ValidationError):
        row.n = 5  # type: ignore[misc]  # frozen: a typed result cannot drift from the file


def test_leaderboard_entries_read_a_comparison_of_spur_runs(tmp_path) -> None:
    from helpers import FIXTURES
    from scopebench.engine import RunConfig, run_benchmark
    from scopebench.scoring.compare import compare_runs
    from scopebench.scoring.schema import LeaderboardEntry

    dirs = []
    for model in ("random", "frequent"):
        cfg = RunConfig(benchmark="spur", data=str(FIXTURES / "spur"), model=model, limit=30)
        dirs.append(run_benchmark(cfg, tmp_path / model).run_dir)
    result = compare_runs(dirs, ReportConfig(resamples=50))
    entries = [LeaderboardEntry.from_dict(e) for e in result["leaderboard"]]
    for entry, raw in zip(entries, result["leaderboard"], strict=True):
        assert entry.overall.to_dict() == raw["overall"]
        assert entry.overall.n == 30 and entry.run is not None and entry.owner
        # SPUR's owner table: one row per task and split, keyed as the published table.
        assert set(entry.owner_by_column()) == {
            f"{r['split_or_group']}/{r['subset_or_task']}" for r in raw["owner"]
        }
    assert entries[0].overall.accuracy >= entries[1].overall.accuracy  # the leaderboard's order
    baselines = [LeaderboardEntry.from_dict(b) for b in result["baselines"]]
    assert [b.model for b in baselines] == ["random baseline", "frequent baseline"] and baselines[
        0
    ].run is None


def test_a_null_count_reads_as_zero() -> None:
    # metrics.json written by an older version may hold null for a count it did not keep.
    row = AccuracyRow.from_dict(
        {"group": "g", "n": 2, "correct": 1, "accuracy": 0.5, "denominator": 2, "unparsed": None}
    )
    assert row.unparsed == 0 and row.n == 2

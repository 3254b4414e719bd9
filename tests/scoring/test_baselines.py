"""Random and frequent-choice baselines on a run's items (hand-computed)."""

import pytest

from scopebench.items import Item, Record
from scopebench.models.base import ModelOptions
from scopebench.models.baselines import RandomBackend
from scopebench.scoring.baselines import baseline_records, baseline_section
from scopebench.scoring.metrics import METRICS_SCHEMA_VERSION, compute_metrics


def summaries() -> list[dict]:
    # Answers by text: "cat" ×3 (items 0, 1, 2), "dog" ×1 (item 3) → frequent picks "cat" everywhere
    # it is offered. Item 4 has three options (chance 1/3); item 5 has no options (skipped).
    rows = [
        ("NP", ["cat", "dog"], 0),
        ("NP", ["dog", "cat"], 1),
        ("HI", ["Cat.", "dog"], 0),  # same text as "cat" once normalised
        ("HI", ["cat", "dog"], 1),
        ("HI", ["bird", "cat", "fish"], 2),
        ("HI", [], None),
    ]
    return [
        {
            "id": f"i{k}",
            "benchmark": "spur",
            "split": "test",
            "task": t,
            "subset": None,
            "question": "?",
            "choices": c,
            "answer_index": a,
            "metadata": {},
            "kind": "mcq",
        }
        for k, (t, c, a) in enumerate(rows)
    ]


def records() -> list[Record]:
    return [
        Record(s["id"], "m", "ok", choice=0, correct=True, task=s["task"], split="test") for s in summaries()
    ]


def test_frequent_baseline_hand_counted():
    recs = baseline_records(summaries(), seed=0)["frequent"]
    # Picks: i0 cat ✓, i1 cat ✓, i2 Cat. ✓, i3 cat ✗ (answer dog), i4 cat ✗ (answer fish).
    assert [r.item_id for r in recs] == ["i0", "i1", "i2", "i3", "i4"]
    assert [r.choice for r in recs] == [0, 1, 0, 0, 1]
    assert [r.correct for r in recs] == [True, True, True, False, False]


def test_random_baseline_is_the_random_backend():
    recs = baseline_records(summaries(), seed=7)["random"]
    items = [
        Item(s["id"], "spur", "test", s["task"], "?", tuple(s["choices"]), s["answer_index"])
        for s in summaries()[:5]
    ]
    expect = RandomBackend("random", ModelOptions(seed=7)).predict(items)
    assert [r.choice for r in recs] == [e.choice for e in expect]


def test_baseline_section_rows_and_seed():
    items = {s["id"]: s for s in summaries()}
    sec = baseline_section(records(), items, benchmark="spur", seed=3, resamples=200)
    assert set(sec) == {"random", "frequent"}
    freq = sec["frequent"]
    assert freq["n_skipped"] == 1
    assert (freq["overall"]["n"], freq["overall"]["correct"]) == (5, 3)
    assert freq["overall"]["accuracy"] == pytest.approx(0.6)
    assert freq["overall"]["seed"] == 3 and freq["overall"]["ci_method"] == "percentile"
    by_task = {r["group"]: (r["n"], r["correct"]) for r in freq["by_task"]}
    assert by_task == {"task=HI": (3, 1), "task=NP": (2, 2)}
    assert [r["subset_or_task"] for r in freq["owner"]] == ["NP", "HI", "overall"]
    assert sec["random"]["expected_accuracy"] == pytest.approx((0.5 * 4 + 1 / 3) / 5)
    again = baseline_section(records(), items, benchmark="spur", seed=3, resamples=200)
    assert again["random"]["overall"] == sec["random"]["overall"]


def test_compute_metrics_has_baselines_only_with_items():
    items = {s["id"]: s for s in summaries()}
    m = compute_metrics(records(), benchmark="spur", items=items, resamples=100)
    assert m["schema_version"] == METRICS_SCHEMA_VERSION == 4
    assert m["baselines"]["frequent"]["overall"]["correct"] == 3
    assert compute_metrics(records(), benchmark="spur", resamples=100)["baselines"] == {}
    assert (
        compute_metrics(records(), benchmark="spur", items=items, resamples=100, baselines=False)["baselines"]
        == {}
    )

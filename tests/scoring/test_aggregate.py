"""Unit tests of scoring.aggregate: the owner rows' order and grouping (killers of ``make mutation``
survivors; the published-results join in test_metrics.py reads rows by key, not by position)."""

from __future__ import annotations

import math

from scopebench.items import Record
from scopebench.scoring.aggregate import instance_row, macro_row, owner_aggregation
from scopebench.scoring.intervals import owner_macro_basic_ci


def _rec(i: int, subset: str, split: str, correct: bool) -> Record:
    return Record(f"x/{i}", "m", "ok", choice=0, correct=correct, task="t", subset=subset, split=split,
                  answer_index=0)  # fmt: skip


def test_pathmmu_subsets_come_in_the_papers_order_then_the_rest_alphabetically() -> None:
    # Given in reverse; "Aux" is no PathMMU subset and sorts before "PathCLS" alphabetically, so
    # dropping any name from the paper's order moves that subset behind it.
    subsets = ["Aux", "PathCLS", "Atlas", "EduContent", "SocialPath", "PubMed"]
    recs = [_rec(i, s, "test", i % 2 == 0) for i, s in enumerate(subsets)]
    own = owner_aggregation(recs, benchmark="pathmmu")
    assert own is not None
    got = [(r["split_or_group"], r["subset_or_task"], r["n"], r["correct"]) for r in own["rows"]]
    assert got == [
        ("test", "PubMed", 1, 0),
        ("test", "SocialPath", 1, 1),
        ("test", "EduContent", 1, 0),
        ("test", "Atlas", 1, 1),
        ("test", "PathCLS", 1, 0),
        ("test", "Aux", 1, 1),
        ("test", "overall", 6, 3),
    ]


def test_pathmmu_all_rows_pool_both_splits_and_sit_before_other_splits() -> None:
    # PubMed and the non-paper subset "Aux" are in both test splits, "Solo" only in test; a val
    # split comes last. ALL rows: the subsets present in both splits (paper order, then the rest
    # sorted) and the pooled overall, placed right after the test rows.
    spec = [("PubMed", "test_tiny", True), ("PubMed", "test", False), ("Aux", "test_tiny", True),
            ("Aux", "test", True), ("Solo", "test", False), ("PubMed", "val", True)]  # fmt: skip
    recs = [_rec(i, s, sp, c) for i, (s, sp, c) in enumerate(spec)]
    own = owner_aggregation(recs, benchmark="pathmmu")
    assert own is not None
    got = [(r["split_or_group"], r["subset_or_task"], r["n"], r["correct"]) for r in own["rows"]]
    assert got == [
        ("test_tiny", "PubMed", 1, 1),
        ("test_tiny", "Aux", 1, 1),
        ("test_tiny", "overall", 2, 2),
        ("test", "PubMed", 1, 0),
        ("test", "Aux", 1, 1),
        ("test", "Solo", 1, 0),
        ("test", "overall", 3, 1),
        ("ALL", "PubMed", 2, 1),
        ("ALL", "Aux", 2, 2),
        ("ALL", "overall", 5, 3),
        ("val", "PubMed", 1, 1),
        ("val", "overall", 1, 1),
    ]
    assert {r["weighting"] for r in own["rows"]} == {"instance"}
    assert [r.get("pooled_splits") for r in own["rows"] if r["split_or_group"] == "ALL"] == [
        ["test_tiny", "test"]
    ] * 3


def _ub(i: int, task: str, correct: bool, judge: bool = False) -> Record:
    return Record(f"u/{i}", "m", "ok", choice=0, correct=correct, task=task, answer_index=0,
                  extra={"answer_method": "judge"} if judge else {})  # fmt: skip


def test_ubench_macro_row_fields_by_hand() -> None:
    # coarse tasks: modality 2 of 2 right (one by the judge), stain 1 of 2 right.
    recs = [_ub(0, "modality", True), _ub(1, "modality", True, judge=True), _ub(2, "stain", True),
            _ub(3, "stain", False)]  # fmt: skip
    own = owner_aggregation(recs, benchmark="ubench", seed=3, resamples=40)
    assert own is not None
    (row,) = own["rows"]  # no pathology items, no fine or cognition tasks
    assert (row["split_or_group"], row["subset_or_task"], row["weighting"]) == (
        "coarse",
        "all",
        "macro over tasks",
    )
    assert row["tasks"] == {"modality": 1.0, "stain": 0.5}
    assert (row["accuracy"], row["n"], row["correct"], row["denominator"]) == (0.75, 4, 3, 4)
    assert (row["policy"], row["resamples"], row["seed"], row["n_judge"]) == ("wrong", 40, 3, 1)
    assert row["ci_method"] == "stratified-bootstrap-percentile"
    # Judge-free: modality 1 of 2, stain 1 of 2 -> macro 0.5.
    assert row["judge_free_accuracy"] == 0.5


def test_a_record_without_a_split_counts_as_test() -> None:
    own = owner_aggregation([_rec(0, "PubMed", None, True)], benchmark="pathmmu")  # type: ignore[arg-type]
    assert own is not None
    assert [(r["split_or_group"], r["subset_or_task"]) for r in own["rows"]] == [
        ("test", "PubMed"),
        ("test", "overall"),
    ]


def test_pathmmu_all_rows_keep_the_policy() -> None:
    # PubMed in both test splits, one unparsed answer of four. The ALL rows pool them: under "wrong"
    # the unparsed one stays in the denominator (1 of 4), under "exclude" it leaves it (1 of 3); a
    # row built without the run's policy fell to "exclude" (make mutation survivor).
    recs = [
        _rec(0, "PubMed", "test_tiny", True),
        _rec(1, "PubMed", "test", False),
        _rec(2, "PubMed", "test", False),
    ]
    recs.append(Record("x/3", "m", "unparsed", task="t", subset="PubMed", split="test_tiny", answer_index=0))
    for policy, den in (("wrong", 4), ("exclude", 3)):
        own = owner_aggregation(recs, benchmark="pathmmu", policy=policy)
        assert own is not None
        got = [(r["subset_or_task"], r["policy"], r["denominator"], r["accuracy"]) for r in own["rows"]
               if r["split_or_group"] == "ALL"]  # fmt: skip
        assert got == [("PubMed", policy, den, 1 / den), ("overall", policy, den, 1 / den)]


def test_macro_row_scores_each_task_under_the_runs_policy() -> None:
    # Task A: right + unparsed; task B: wrong + right. Under "exclude" A is 1/1 and B 1/2, macro 0.75;
    # under "wrong" A is 1/2, macro 0.5. Tasks scored with the default policy gave 0.5 for both.
    recs = [_ub(0, "A", True), _ub(2, "B", False), _ub(3, "B", True)]
    recs.insert(1, Record("x/1", "m", "unparsed", task="A", answer_index=0))
    for policy, tasks, acc in (("exclude", {"A": 1.0, "B": 0.5}, 0.75), ("wrong", {"A": 0.5, "B": 0.5}, 0.5)):
        row = macro_row("test", "overall", recs, policy, seed=0, resamples=50)
        assert row is not None and (row["tasks"], row["accuracy"]) == (tasks, acc)
        assert (row["n"], row["denominator"], row["policy"]) == (4, 3 if policy == "exclude" else 4, policy)


def test_owner_macro_row_resamples_the_runs_outcomes() -> None:
    # The owner protocol's interval: scipy's basic bootstrap over each task's outcomes under the run's
    # policy (task A without its unparsed record under "exclude"), with the caller's resamples.
    recs = [_ub(0, "A", True), _ub(1, "A", False), _ub(2, "B", False), _ub(3, "B", True), _ub(4, "B", True)]
    recs.append(Record("x/5", "m", "unparsed", task="A", answer_index=0))
    row = macro_row("test", "overall", recs, "exclude", seed=7, resamples=60, protocol="owner")
    iv, _ = owner_macro_basic_ci([[1.0, 0.0], [0.0, 1.0, 1.0]], seed=7, resamples=60)
    assert row is not None and (row["ci_low"], row["ci_high"], row["resamples"]) == (iv.low, iv.high, 60)
    # Under "wrong" the unparsed record is a 0 in task A's outcomes (without the policy it would be
    # left out, as under "exclude": the interval of another denominator than the accuracy's).
    row = macro_row("test", "overall", recs, "wrong", seed=7, resamples=60, protocol="owner")
    iv, _ = owner_macro_basic_ci([[1.0, 0.0, 0.0], [0.0, 1.0, 1.0]], seed=7, resamples=60)
    assert row is not None and (row["ci_low"], row["ci_high"]) == (iv.low, iv.high)
    excluded, _ = owner_macro_basic_ci([[1.0, 0.0], [0.0, 1.0, 1.0]], seed=7, resamples=60)
    assert (iv.low, iv.high) != (excluded.low, excluded.high)


def test_macro_row_without_any_judge_free_task_is_nan() -> None:
    # Every task's answers came from the judge and "exclude" drops them: no task has a judge-free
    # denominator, so the judge-free macro accuracy is NaN (not a division by zero).
    recs = [_ub(0, "A", True, judge=True), _ub(1, "B", False, judge=True)]
    row = macro_row("test", "overall", recs, "exclude", seed=0, resamples=50)
    assert row is not None and row["accuracy"] == 0.5 and math.isnan(row["judge_free_accuracy"])


def test_instance_row_keeps_the_policy() -> None:
    recs = [_ub(0, "A", True), Record("x/1", "m", "unparsed", task="A", answer_index=0)]
    row = instance_row("test", "A", recs, "exclude", 0, 50)
    assert (row["group"], row["policy"], row["denominator"], row["accuracy"], row["weighting"]) == (
        "test/A", "exclude", 1, 1.0, "instance"
    )  # fmt: skip


def test_owner_aggregation_names_its_benchmark_and_draws_from_seed_0_by_default() -> None:
    # metrics.json's "owner" section says which benchmark's table it follows; without a seed the
    # macro rows' bootstrap records (and draws from) the documented default 0.
    recs = [_ub(i, ("A", "B")[i % 2], i % 3 != 0) for i in range(8)]
    own = owner_aggregation(recs, benchmark="ubench", items={}, resamples=50)
    assert (
        own is not None and own["benchmark"] == "ubench" and set(own) == {"benchmark", "description", "rows"}
    )
    assert {r["seed"] for r in own["rows"]} == {0}
    again = owner_aggregation(recs, benchmark="ubench", items={}, seed=0, resamples=50)
    assert again is not None and again["rows"] == own["rows"]

"""Unit tests of scoring.aggregate: the owner rows' order and grouping (killers of ``make mutation``
survivors; the published-results join in test_metrics.py reads rows by key, not by position)."""

from __future__ import annotations

from scopebench.items import Record
from scopebench.scoring.aggregate import owner_aggregation


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

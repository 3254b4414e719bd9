from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from scopebench.cli import main
from scopebench.curate import make_questions
from scopebench.curate.balance import position_stats
from scopebench.curate.questions import NONE_OF_THE_ABOVE, QuestionConfig
from scopebench.curate.taxonomy import load_taxonomy
from scopebench.errors import DataFormatError


def _questions(folder: Path) -> list[tuple[dict, str, dict]]:
    from datasets import load_from_disk

    out = []
    for row in load_from_disk(str(folder))["test"]:
        for task, q in (row["questions"] or {}).items():
            if q:
                out.append((row, task, q))
    return out


def test_chi_square_matches_hand_computation() -> None:
    # counts [2, 2, 1, 1]: expected 1.5 each; (0.25 * 4) / 1.5
    s = position_stats([0, 0, 1, 1, 2, 3], [4] * 6)
    assert s["counts"] == [2, 2, 1, 1] and s["chi2"] == pytest.approx(2 / 3)
    assert (s["chance"], s["max_share"], s["margin"]) == (0.25, pytest.approx(1 / 3), pytest.approx(1 / 6))
    even = position_stats([0, 1, 2] * 3, [3] * 9)
    assert even["chi2"] == 0.0 and even["p"] == pytest.approx(1.0)
    # Mixed option counts: a 2-option item expects half a count on A and on B, none on C or D.
    mixed = position_stats([0, 1, 2, 3, 0, 1], [4, 4, 4, 4, 2, 2])
    assert mixed["chi2"] == pytest.approx(0.0) and mixed["chance"] == pytest.approx((4 / 4 + 2 / 2) / 6)


def test_every_question_is_well_formed_and_hard(built: dict) -> None:
    tax = load_taxonomy()
    qs = _questions(built["root"] / "questions")
    assert Counter(t for _, t, _ in qs) == {
        "modality": 6,
        "submodality": 3,
        "domain": 6,
        "subdomain": 3,
        "stain": 6,
        "classification": 3,
    }  # src_b has one class (no classification) and no submodality/subdomain values
    for row, task, q in qs:
        options, answer = q["options"], int(q["answer_idx"])
        truth = row["label_name"] if task == "classification" else row[task]
        assert options[answer] == truth and options.count(truth) == 1
        assert len({o.casefold() for o in options}) == len(options)
        if task in ("submodality", "stain"):
            # hard: distractors share the answer's parent
            assert set(options) - {truth} <= set(tax.siblings(task, truth))
        cap = row["captions"][f"{task}_0"]
        assert cap["answer_idx"] == q["answer_idx"] and len(cap["options"]) == len(options)
        assert truth in cap["options"][answer]
    # A single-class source gets no classification question, and says so.
    skipped = built["questions"].stats["skipped"]
    assert skipped["classification: no distractor"] == 3


def test_positions_are_balanced_per_task(built: dict) -> None:
    # Catches a task whose letters are not spread evenly (every letter floor or ceil of n/k).
    for task, s in built["questions"].stats["answer_positions"].items():
        counts = s["counts"]
        assert sum(counts) == s["n"] and max(counts) - min(counts) <= 1, task
        assert s["within_margin"] and s["p"] > 0.5, task


def test_seeded_easy_and_none_of_the_above(built: dict, tmp_path: Path) -> None:
    src = built["root"] / "ingest"
    cfg = QuestionConfig(seed=3, difficulty="easy", none_of_the_above=True, tasks=("stain", "submodality"))
    make_questions(src, tmp_path / "a", cfg)
    make_questions(src, tmp_path / "b", cfg)
    a, b = _questions(tmp_path / "a"), _questions(tmp_path / "b")
    assert [q for *_, q in a] == [q for *_, q in b]
    tax = load_taxonomy()
    for row, task, q in a:
        assert q["options"][-1] == NONE_OF_THE_ABOVE and int(q["answer_idx"]) < len(q["options"]) - 1
        truth = row[task]
        others = set(q["options"][:-1]) - {truth}
        # easy: across the tree first (stain of light microscopy has enough non-siblings)
        assert not others & set(tax.siblings(task, truth)), (task, truth, others)
    make_questions(src, tmp_path / "c", QuestionConfig(seed=4, tasks=("stain",)))
    assert [q["options"] for *_, q in _questions(tmp_path / "c")] != [
        q["options"] for _, t, q in _questions(tmp_path / "a") if t == "stain"
    ]


def test_bad_config() -> None:
    with pytest.raises(DataFormatError, match="at least 2"):
        QuestionConfig(options=1)
    with pytest.raises(DataFormatError, match="unknown question task"):
        QuestionConfig(tasks=("colour",))


def test_ubench_run_evaluates_the_questions(built: dict, tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert (
        main(
            [
                "-q",
                "run",
                "--bench",
                "ubench",
                "--data",
                str(built["root"] / "questions"),
                "--model",
                "random",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    import json

    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["overall"]["n"] == 27 and metrics["overall"]["errors"] == 0


def test_hard_runs_short_and_easy_fills_in(built: dict, tmp_path: Path) -> None:
    # brightfield microscopy has 6 sibling submodalities under light microscopy (μ-Bench's Figure 13);
    # 8 options need 7 distractors, so one comes from across the tree, and build.json counts those
    # questions. Catches a draw that repeats a sibling, or stops at 6 options, when hard runs short.
    r = make_questions(
        built["root"] / "ingest", tmp_path / "q", QuestionConfig(options=8, tasks=("submodality",))
    )
    assert r.stats["filled"] == {"submodality": 3}
    siblings = set(load_taxonomy().siblings("submodality", "brightfield microscopy"))
    assert len(siblings) == 6
    for _, _, q in _questions(tmp_path / "q"):
        assert len(q["options"]) == 8
        assert set(q["options"]) - siblings - {"brightfield microscopy"}
        assert len(set(q["options"]) & siblings) == 6


def test_card_reports_positions_and_coverage(built: dict) -> None:
    card = (built["root"] / "questions" / "README.md").read_text()
    s = built["questions"].stats["answer_positions"]["domain"]
    assert f"| domain | 6 | {s['counts']} | {s['chi2']:.3f} | {s['p']:.3f} |" in card
    assert (
        "| modality × domain | modality | submodality | domain | subdomain | stain | classification |" in card
    )
    assert "| light microscopy × pathology | 3 | 3 | 3 | 3 | 3 | 3 |" in card
    assert "| fluorescence microscopy × biology | 3 | 0 | 3 | 0 | 3 | 0 |" in card

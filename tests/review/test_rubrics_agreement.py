"""Rubric decisions and agreement statistics against hand-computed values."""

from __future__ import annotations

import numpy as np
import pytest

from scopebench.review.agreement import alpha_with_ci, kappa_with_ci, project_agreement
from scopebench.review.errors import Invalid
from scopebench.review.rubrics import Rubric, builtin_rubrics, load_rubric


def test_shipped_rubrics() -> None:
    assert builtin_rubrics() == ["hle", "pathmmu", "spur", "spur-hle"]
    pathmmu = load_rubric("pathmmu")
    assert [c.key for c in pathmmu.criteria] == [
        "answerable_without_image",
        "answer_inferable",
        "key_wrong",
        "atypical",
    ]
    spur = load_rubric("spur")
    assert [(c.min, c.max, c.flag_below) for c in spur.criteria] == [(1, 5, 3)] * 3


def test_decisions() -> None:
    r = load_rubric("spur-hle")
    good = {"scientific_validity": 3, "task_alignment": 5, "visual_reasoning_necessity": 4}
    valid = {"problem": "valid", "answer": "valid", "rationale": "valid"}
    assert r.decide(*r.rate(good, valid)) == ("keep", [])
    assert r.decide(*r.rate(good | {"task_alignment": "2"}, valid)) == ("drop", ["task_alignment=2"])
    assert r.decide(*r.rate(good, valid | {"rationale": "invalid"})) == ("drop", ["rationale=invalid"])
    # Uncertain wins over a flag: the senior sees both reasons.
    assert r.decide(*r.rate(good | {"scientific_validity": 1}, valid | {"answer": "uncertain"})) == (
        "uncertain",
        ["answer=uncertain", "scientific_validity=1"],
    )
    with pytest.raises(Invalid, match="from 1 to 5"):
        r.rate(good | {"task_alignment": 6}, valid)
    with pytest.raises(Invalid, match="missing"):
        r.rate({}, valid)
    with pytest.raises(Invalid, match="unknown"):
        r.rate(good | {"clarity": 3}, valid)


def test_custom_rubric_validation() -> None:
    with pytest.raises(Invalid, match="type"):
        Rubric.from_dict({"name": "x", "criteria": [{"key": "a", "type": "stars"}]})
    with pytest.raises(Invalid, match="neither"):
        Rubric.from_dict({"name": "x", "criteria": []})
    own = Rubric.from_dict(
        {"name": "x", "criteria": [{"key": "clear", "type": "choice", "options": ["y", "n"], "flag": ["n"]}]}
    )
    assert own.decide(*own.rate({"clear": "n"}, {})) == ("drop", ["clear=n"])


def test_kappa_matches_hand_computation() -> None:
    # 10 items, labels 0/1. Agreement on 7 (po = 0.7); rater a says 1 on 5, rater b on 6:
    # pe = 0.5*0.6 + 0.5*0.4 = 0.5, κ = (0.7 - 0.5) / (1 - 0.5) = 0.4.
    a = [1, 1, 1, 1, 1, 0, 0, 0, 0, 0]
    b = [1, 1, 1, 1, 0, 1, 1, 0, 0, 0]
    out = kappa_with_ci(a, b, seed=3, resamples=200)
    assert out["value"] == pytest.approx(0.4)
    assert out["ci_low"] <= 0.4 <= out["ci_high"]
    assert kappa_with_ci(a, b, seed=3, resamples=200) == out  # seeded: identical
    assert kappa_with_ci([1, 1], [1, 1], seed=0, resamples=50)["value"] is None  # one category: undefined


def test_alpha_matches_hand_computation() -> None:
    # Two raters, four items, nominal: pairs (0,0) (1,1) (0,1) (1,1). Coincidences: o00=2, o01=o10=1,
    # o11=4 (n=8, n0=3, n1=5). Do = 2/8 = 0.25; De = 2*3*5/(8*7) = 0.5357; α = 1 - 0.25/0.5357 = 0.5333.
    m = np.array([[0, 1, 0, 1], [0, 1, 1, 1]], dtype=float)
    out = alpha_with_ci(m, "nominal", seed=0, resamples=100)
    assert out["value"] == pytest.approx(1 - 0.25 / (2 * 3 * 5 / (8 * 7)))
    assert out["value"] == pytest.approx(8 / 15)
    assert out["n_items"] == 4


def test_project_agreement_pairs_and_variables() -> None:
    ratings = [
        {"item": i, "rater": r, "answer": v, "decision": "keep"}
        for i, (x, y) in enumerate([(0, 0), (1, 1), (2, 1), (0, 0)])
        for r, v in (("A", x), ("B", y))
    ]
    out = project_agreement(ratings, {"answer": "nominal", "decision": "nominal"}, seed=5, resamples=50)
    assert (out["seed"], out["resamples"]) == (5, 50)
    kap = {k["variable"]: k for k in out["kappa"]}
    assert kap["answer"]["n"] == 4 and kap["answer"]["a"] == "A" and kap["answer"]["b"] == "B"
    assert kap["decision"]["value"] is None  # everyone kept everything: κ undefined, not 1 or 0
    assert out["alpha"]["decision"]["value"] is None

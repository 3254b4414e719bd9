"""The shortcut gate: k-of-n models, r-of-R tries, the choices-only test and blind accuracies."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gate_helpers import Scripted

from scopebench.curate import llm
from scopebench.curate.filtering.shortcut import (
    CHOICES_ONLY_QUESTION,
    BackendAnswerer,
    GateItem,
    ShortcutGateConfig,
    run_shortcut_gate,
)
from scopebench.errors import DataFormatError
from scopebench.protocols import render


def _item(i: str) -> GateItem:
    return GateItem(
        id=i, image_id="img", task="stain", question=f"stain of {i}?", options=("A", "B", "C", "D"), answer=0
    )


ITEMS = [_item(i) for i in ("q1", "q2", "q3", "q4")]


def _script() -> Scripted:
    # Seeds 10, 11, 12 (seed 10, three tries).
    a: dict[tuple[str, int, str], str] = {}
    for s in (10, 11):
        a["m1", s, "q1"] = "c"  # q1: m1 right in 2/3, m2 in 3/3 → both models right → dropped
    for s in (10, 11, 12):
        a["m2", s, "q1"] = "c"
        a["m1", s, "q2"] = "c"  # q2: m1 3/3, m2 1/3 → one model right of the k=2 needed → kept
    a["m2", 10, "q2"] = "c"
    a["m1", 10, "q3"] = a["m1", 11, "q3"] = "c"  # q3: m1 2/3 (+ unparsed); m2 1/3 (+ 2 errors)
    a["m1", 12, "q3"] = "u"
    a["m2", 10, "q3"] = "c"
    a["m2", 11, "q3"] = a["m2", 12, "q3"] = "e"
    for m in ("m1", "m2"):
        for s in (10, 11, 12):
            a[m, s, "q4#choices-only"] = "c"  # q4: wrong with the question, right without it
    return Scripted(a)


def test_k_of_n_models_r_of_r_tries_and_blind_accuracies() -> None:
    cfg = ShortcutGateConfig(models=("m1", "m2"), tries=3, min_models=2, min_tries=2)
    got = run_shortcut_gate(ITEMS, cfg, seed=10, answerer=_script())
    assert got.dropped == {"q1": "shortcut"}
    rec = {r["id"]: r for r in got.records}
    assert rec["q3"]["correct_tries"] == {"m1": 2, "m2": 1}  # unparsed and errors are not correct
    assert [a["status"] for a in rec["q3"]["answers"]["m2"]] == ["correct", "error", "error"]
    assert rec["q4"]["choices_only_flagged"] is True and rec["q4"]["decision"] == "kept"
    st = got.stats
    # Correct tries: q1 5, q2 4, q3 3, q4 0 → 12 of 4 × 2 × 3 = 24; kept q2–q4: 7 of 18.
    assert st["text_only"]["entering"] == pytest.approx(12 / 24)
    assert st["text_only"]["kept"] == pytest.approx(7 / 18)
    assert st["text_only"]["per_model_entering"] == pytest.approx({"m1": 7 / 12, "m2": 5 / 12})
    # Choices only: q4 right in all 6 tries → 6 of 24; of the kept, 6 of 18.
    assert st["choices_only"]["entering"] == pytest.approx(6 / 24)
    assert st["choices_only"]["kept"] == pytest.approx(6 / 18)
    assert st["chance_entering"] == pytest.approx(0.25) and st["seeds"] == [10, 11, 12]


def test_one_model_enough_and_choices_only_drops_when_asked() -> None:
    cfg = ShortcutGateConfig(models=("m1", "m2"), tries=3, min_models=1, min_tries=2, drop_choices_only=True)
    got = run_shortcut_gate(ITEMS, cfg, seed=10, answerer=_script())
    # k=1: q2 (m1 3/3) and q3 (m1 2/3) now drop too; q4 by the choices-only test.
    assert got.dropped == {"q1": "shortcut", "q2": "shortcut", "q3": "shortcut", "q4": "choices_only"}
    assert got.stats["text_only"]["kept"] is None  # nothing kept: no accuracy, not 0


def test_spur_rule_needs_r_correct_tries() -> None:
    # SPUR: one model, dropped when right in at least 3 of 3 tries: only q2 (m1 3/3).
    cfg = ShortcutGateConfig(models=("m1",), tries=3, min_models=1, min_tries=3, choices_only=False)
    got = run_shortcut_gate(ITEMS, cfg, seed=10, answerer=_script())
    assert got.dropped == {"q2": "shortcut"} and got.stats["choices_only"] is None


def test_bad_rules() -> None:
    with pytest.raises(DataFormatError, match="min_models must be between 1 and the 2"):
        ShortcutGateConfig(models=("a", "b"), min_models=3)
    with pytest.raises(DataFormatError, match="min_tries must be between 1 and tries \\(2\\)"):
        ShortcutGateConfig(models=("a",), tries=2, min_tries=3)
    with pytest.raises(DataFormatError, match="twice"):
        ShortcutGateConfig(models=("a", "a"))
    with pytest.raises(DataFormatError, match="at least one"):
        ShortcutGateConfig(models=())


def test_backend_answerer_parses_replayed_text(tmp_path: Path) -> None:
    lines = [
        {"item_id": "q1", "response": "The answer is (A)"},
        {"item_id": "q2", "response": "B"},
        {"item_id": "q3", "response": "I cannot tell without the image."},
        {"item_id": "q1#choices-only", "response": "Answer: A"},
    ]
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    who = BackendAnswerer()
    got = who.answer(f"replay:{path}", ITEMS, 0)
    assert [(a.index, a.status) for a in got] == [
        (0, "correct"),
        (1, "wrong"),
        (None, "unparsed"),
        (None, "missing_response"),
    ]
    blind = who.answer(f"replay:{path}", ITEMS[:1], 0, key_suffix="#choices-only")
    assert blind[0].status == "correct"
    who.close()


def test_backends_see_no_image_and_no_question_in_the_choices_only_test(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from scopebench.models.base import Response

    seen: list[tuple[bool, int, str, tuple[str, ...], int]] = []

    class Fake:
        answer_labels = "letters"

        def __init__(self, opts: object) -> None:
            self.opts = opts

        def render(self, item: object) -> object:
            # The Request stage, as Backend.render does it (the gate reads the labels from it).
            return render(item, "default", no_image=self.opts.no_image)

        def answer(self, requests: list) -> list[Response]:
            return self.predict([r.item for r in requests])

        def predict(self, items: list) -> list[Response]:
            for it in items:
                seen.append((self.opts.no_image, self.opts.seed, it.question, it.choices, len(it.images)))
            return [Response(it.id, scores=[0.1, 0.7, 0.1, 0.1]) for it in items]

        def close(self) -> None:
            pass

        def identity(self) -> dict:
            return {"spec": "fake"}

    monkeypatch.setattr(llm, "load_model", lambda spec, opts: Fake(opts))  # gate backends load through llm
    who = BackendAnswerer()
    got = who.answer("x", ITEMS[:1], 3, key_suffix="#choices-only")
    assert seen == [(True, 3, CHOICES_ONLY_QUESTION, ("A", "B", "C", "D"), 0)]
    assert (got[0].index, got[0].status) == (1, "wrong")  # scores: the highest option wins


def test_blind_answers_are_cached_by_content_and_failures_are_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scopebench.models.base import Response

    asked: list[str] = []

    class Fake:
        answer_labels = "letters"

        def __init__(self, opts: object) -> None:
            self.opts = opts

        def render(self, item: object) -> object:
            # The Request stage, as Backend.render does it (the gate reads the labels from it).
            return render(item, "default", no_image=self.opts.no_image)

        def answer(self, requests: list) -> list[Response]:
            return self.predict([r.item for r in requests])

        def predict(self, items: list) -> list[Response]:
            asked.extend(it.id for it in items)
            return [
                Response(it.id, status="error", error="timeout")
                if it.id == "q2"
                else Response(it.id, text="A")
                for it in items
            ]

        def identity(self) -> dict:
            return {"spec": "fake", "weights": "w1"}

        def close(self) -> None:
            pass

    monkeypatch.setattr(llm, "load_model", lambda spec, opts: Fake(opts))  # gate backends load through llm
    cache = tmp_path / "llm.sqlite"
    first = BackendAnswerer(cache)
    got = first.answer("x", ITEMS[:2], 0)
    assert [a.status for a in got] == ["correct", "error"] and asked == ["q1", "q2"]
    assert first.errors == 1  # the filter step is then marked incomplete (build run asks again)
    assert first.ledger.to_json()["steps"]["filter/blind"] == {
        "requests": 2,
        "cached": 0,
        "failed": 1,
        "input_tokens": 0,
        "output_tokens": 0,
        "price": None,
    }
    first.close()
    asked.clear()
    again = BackendAnswerer(cache)  # a re-run: only the failed call is asked again
    assert [a.status for a in again.answer("x", ITEMS[:2], 0)] == ["correct", "error"] and asked == ["q2"]
    asked.clear()
    again.answer("x", ITEMS[:1], 1)  # another seed is another call
    changed = GateItem(**{**ITEMS[0].__dict__, "question": "reworded?"})
    again.answer("x", [changed], 0)  # so is a changed question
    assert asked == ["q1", "q1"]
    again.close()

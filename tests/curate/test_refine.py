"""RefineBot: one code per question, provenance of every round, rewriters never judge."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gate_helpers import Scripted

from scopebench.curate.filtering.refine import RefineConfig, parse_equivalence, parse_rewrite, run_refine
from scopebench.curate.filtering.shortcut import GateItem
from scopebench.errors import DataFormatError


def _item(i: str) -> GateItem:
    return GateItem(i, "img", "stain", f"Which stain, {i}?", ("Giemsa", "H&E", "PAS"), 1)


def _rewrite(q: str, answer: int = 1) -> str:
    return "Here it is: " + json.dumps({"question": q, "options": ["Giemsa", "H&E", "PAS"], "answer": answer})


CFG = RefineConfig(rewriters=("rw",), testers=("t1",), judges=("j1",), rounds=2, seeds=(0, 1), min_tries=2)


def _script() -> Scripted:
    a: dict[tuple[str, int, str], str] = {("t1", 0, "a"): "c"}  # a: right in 1 of 2 seeds → unchanged
    for i in ("b", "c", "d", "e"):
        a["t1", 0, i] = a["t1", 1, i] = "c"  # answerable to begin with
    for k in (1, 2):
        a["t1", 0, f"c@round{k}"] = a["t1", 1, f"c@round{k}"] = "c"  # c: every rewrite still answerable
    a["t1", 0, "b@round1"] = a["t1", 1, "b@round1"] = "c"  # b: round 1 still answerable, round 2 not
    chats: dict[tuple[str, str], str] = {}
    for i in ("b", "c", "d", "e"):
        for k in (1, 2):
            chats["rw", f"{i}@cue{k}"] = f"the word {i} gives it away"
            chats["rw", f"{i}@rewrite{k}"] = _rewrite(f"{i} rewritten in round {k}?")
            chats["j1", f"{i}@equiv{k}"] = "SAME"
    chats["rw", "e@rewrite1"] = chats["rw", "e@rewrite2"] = "I would rather not."  # e: never valid JSON
    chats["j1", "d@equiv1"] = "DIFFERENT"  # d: every rewrite changes the meaning
    chats["j1", "d@equiv2"] = "They differ; DIFFERENT."
    return Scripted(a, chats)


def test_every_question_ends_with_one_code() -> None:
    who = _script()
    got = run_refine([_item(i) for i in "abcde"], CFG, who)
    assert got.codes == {
        "a": "unchanged",
        "b": "fixed",
        "c": "gave_up",
        "d": "meaning_drifted",
        "e": "gave_up",
    }
    assert got.stats["codes"] == {"unchanged": 1, "fixed": 1, "gave_up": 2, "meaning_drifted": 1}
    # b keeps its round-2 rewrite; a and the others keep what they had (c its last accepted rewrite).
    assert (
        got.final["b"].question == "b rewritten in round 2?" and got.final["a"].question == "Which stain, a?"
    )
    assert got.final["c"].question == "c rewritten in round 2?"
    assert got.final["d"].question == "Which stain, d?"  # drifted rewrites are never accepted
    # Round 2 starts from the accepted round-1 rewrite, and its cue prompt says so.
    assert "b rewritten in round 1?" in who.prompts["b@cue2"]
    assert "Which stain, d?" in who.prompts["d@cue2"]


def test_provenance_of_every_round() -> None:
    got = run_refine([_item(i) for i in "abcde"], CFG, _script())
    rec = {r["id"]: r for r in got.records}
    assert rec["a"]["rounds"] == [] and rec["a"]["initial_blind"]["correct_tries"] == {"t1": 1}
    b1, b2 = rec["b"]["rounds"]
    assert (b1["round"], b1["rewriter"], b1["seed"], b1["equivalent"], b1["answerable"]) == (
        1,
        "rw",
        1,
        True,
        True,
    )
    assert (b2["seed"], b2["answerable"], b2["blind"]["correct_tries"]) == (2, False, {"t1": 0})
    assert b2["cue"] == "the word b gives it away" and b2["rewrite_raw"].startswith("Here it is")
    e1 = rec["e"]["rounds"][0]
    assert e1["rewrite"] is None and e1["invalid"] == "no JSON object in the reply" and "equivalent" not in e1
    d1 = rec["d"]["rounds"][0]
    assert d1["equivalent"] is False and d1["equivalence"]["j1"]["verdict"] is False and "blind" not in d1
    assert rec["c"]["decision"] == "review" and rec["d"]["decision"] == "dropped"


def test_rewriters_never_judge() -> None:
    who = _script()
    run_refine([_item(i) for i in "abcde"], CFG, who)
    by_model: dict[str, set[str]] = {}
    for kind, model, key, _ in who.calls:
        by_model.setdefault(model, set()).add(kind + ":" + key.split("@")[-1].rstrip("0123456789"))
    assert by_model["rw"] == {"chat:cue", "chat:rewrite"}
    assert by_model["j1"] == {"chat:equiv"}
    assert all(k.startswith("answer:") for k in by_model["t1"])


@pytest.mark.parametrize(
    ("rewriters", "testers", "judges", "clash"),
    [
        (("openai:gpt-4o",), ("openai:gpt-4o",), ("hf:judge",), "openai:gpt-4o"),
        (("vllm:Qwen/Qwen2-7B",), ("hf:t",), ("openai:Qwen/Qwen2-7B",), "Qwen/Qwen2-7B"),
    ],
)
def test_overlapping_rewriters_and_judges_are_refused(
    rewriters: tuple[str, ...], testers: tuple[str, ...], judges: tuple[str, ...], clash: str
) -> None:
    with pytest.raises(DataFormatError, match=f"{clash}.*both rewrites and judges"):
        RefineConfig(rewriters=rewriters, testers=testers, judges=judges)


def test_parse_rewrite_rejects_what_is_not_one_answer_among_distinct_options() -> None:
    it = _item("x")
    ok, why = parse_rewrite('```json\n{"question": "Q?", "options": ["a", "b"], "answer": 1}\n```', it)
    assert ok is not None and (ok.question, ok.options, ok.answer, ok.id) == ("Q?", ("a", "b"), 1, "x")
    for text, reason in [
        ('{"question": "Q?", "options": ["a", "A"], "answer": 0}', "two options are the same"),
        (
            '{"question": "Q?", "options": ["a", "b"], "answer": 2}',
            "answer must be an option index from 0 to 1",
        ),
        ('{"question": "Q?", "options": ["a", "b"], "answer": true}', "answer must be"),
        ('{"question": "", "options": ["a", "b"], "answer": 0}', "no question text"),
        ('{"question": "Q?", "options": "a", "answer": 0', "no JSON object in the reply"),
        (None, "empty reply"),
    ]:
        got, why = parse_rewrite(text, it)
        assert got is None and why is not None and why.startswith(reason)


def test_parse_equivalence() -> None:
    assert parse_equivalence("SAME") is True
    assert parse_equivalence("They are equivalent.") is True
    assert parse_equivalence("different") is False
    assert parse_equivalence("not equivalent") is False
    assert parse_equivalence("SAME question, DIFFERENT answer") is None
    assert parse_equivalence("maybe") is None and parse_equivalence(None) is None


def test_replay_files_drive_refinebot_through_the_cached_backends(tmp_path: Path) -> None:
    from scopebench.curate.filtering.shortcut import BackendAnswerer

    def write(name: str, lines: dict[str, str]) -> str:
        path = tmp_path / name
        path.write_text("".join(json.dumps({"item_id": k, "response": v}) + "\n" for k, v in lines.items()))
        return f"replay:{path}"

    testers = write("t.jsonl", {"x": "The answer is (B)", "x@round1": "The answer is (A)"})
    rewriters = write(
        "rw.jsonl", {"x@cue1": "'H&E' is the only common stain", "x@rewrite1": _rewrite("Which dye?")}
    )
    judges = write("j.jsonl", {"x@equiv1": "SAME"})
    cfg = RefineConfig(rewriters=(rewriters,), testers=(testers,), judges=(judges,), rounds=2, seeds=(0, 1))
    who = BackendAnswerer(tmp_path / "llm.sqlite")
    got = run_refine([_item("x")], cfg, who)
    assert got.codes == {"x": "fixed"} and got.final["x"].question == "Which dye?"
    ledger = who.ledger.to_json()["steps"]
    # Blind: 2 seeds at round 0 and 2 at round 1; one cue, one rewrite, one equivalence check.
    assert {k: v["requests"] for k, v in ledger.items()} == {
        "filter/blind": 4,
        "filter/cue": 1,
        "filter/rewrite": 1,
        "filter/equiv": 1,
    }
    who.close()
    again = BackendAnswerer(tmp_path / "llm.sqlite")
    assert run_refine([_item("x")], cfg, again).codes == {"x": "fixed"}
    assert sum(v["requests"] for v in again.ledger.to_json()["steps"].values()) == 0  # all cached
    again.close()

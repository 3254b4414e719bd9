"""The text-shortcut filter: the counting rule on hand-built records, then end to end on the PathMMU fixture."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from helpers import FIXTURES, make_items
from scopebench.cli import build_cli
from scopebench.errors import ScopebenchError
from scopebench.experiments.probes.shortcut import (
    ShortcutRule,
    flag_items,
    model_answers_correctly,
    model_slug,
    summarize,
)
from scopebench.items import Item, Record
from scopebench.store import load_run

PATHMMU = str(FIXTURES / "pathmmu")


def _rec(item: Item, status: str = "ok", correct: bool | None = None, error: str | None = None) -> Record:
    choice = None
    if status == "ok":
        assert item.answer_index is not None
        choice = item.answer_index if correct else (item.answer_index + 1) % len(item.choices)
    return Record(item_id=item.id, model="m", status=status, choice=choice,  # type: ignore[arg-type]
                  correct=correct if status == "ok" else None, error=error, task=item.task, subset=item.subset)  # fmt: skip


def _runs(items: list[Item], pattern: dict[str, list[list[str]]]) -> dict[str, list[dict[str, Record]]]:
    """``pattern[model][try][i]``: ``c`` correct, ``w`` wrong, ``u`` unparsed, ``e`` error, ``-`` no record."""
    out: dict[str, list[dict[str, Record]]] = {}
    for model, tries in pattern.items():
        out[model] = []
        for codes in tries:
            by_id = {}
            for it, code in zip(items, codes, strict=True):
                if code == "c":
                    by_id[it.id] = _rec(it, correct=True)
                elif code == "w":
                    by_id[it.id] = _rec(it, correct=False)
                elif code == "u":
                    by_id[it.id] = _rec(it, "unparsed", error="no single option")
                elif code == "e":
                    by_id[it.id] = _rec(it, "error", error="server said 500")
            out[model].append(by_id)
    return out


# The counting logic ---------------------------------------------------------------------------------


def test_k_of_n_boundary() -> None:
    items = make_items(3)
    # Item 0: 3 of 4 models right (flagged at K=3); item 1: 2 of 4 (kept); item 2: 4 of 4.
    runs = _runs(
        items,
        {"a": [["c", "c", "c"]], "b": [["c", "c", "c"]], "c": [["c", "w", "c"]], "d": [["w", "w", "c"]]},
    )
    v = flag_items(items, runs, ShortcutRule(min_models=3))
    assert [x.flagged for x in v] == [True, False, True]
    assert [len(x.models_correct) for x in v] == [3, 2, 4]
    assert v[0].models_correct == ["a", "b", "c"] and v[0].rules == ["min-models"]
    assert [x.flagged for x in flag_items(items, runs, ShortcutRule(min_models=2))] == [True, True, True]
    assert [x.flagged for x in flag_items(items, runs, ShortcutRule(min_models=4))] == [False, False, True]


def test_r_of_r_boundary() -> None:
    items = make_items(2)
    # One model, 10 tries: item 0 right in 5 (flagged at r=5), item 1 right in 4 (kept).
    tries = [["c", "c"]] * 4 + [["c", "w"]] + [["w", "w"]] * 5
    v = flag_items(items, _runs(items, {"gpt": tries}), ShortcutRule(min_tries=5))
    assert [x.correct_tries["gpt"] for x in v] == [5, 4]
    assert [x.flagged for x in v] == [True, False]
    assert v[0].rules == ["min-tries"] and v[1].rules == []


def test_any_model_reaching_r_tries_is_enough() -> None:
    items = make_items(1)
    runs = _runs(items, {"a": [["c"], ["w"], ["w"]], "b": [["c"], ["c"], ["w"]]})
    v = flag_items(items, runs, ShortcutRule(min_tries=2))[0]
    assert v.correct_tries == {"a": 1, "b": 2} and v.max_correct_tries == 2 and v.flagged


@pytest.mark.parametrize(
    ("n_correct", "n_tries", "majority", "any_", "all_"),
    [(0, 1, False, False, False), (1, 1, True, True, True), (2, 4, False, True, False),
     (3, 4, True, True, False), (2, 3, True, True, False), (3, 3, True, True, True), (0, 0, False, False, False)],
)  # fmt: skip
def test_when_a_model_answers_correctly(
    n_correct: int, n_tries: int, majority: bool, any_: bool, all_: bool
) -> None:
    assert model_answers_correctly(n_correct, n_tries, "majority") is majority
    assert model_answers_correctly(n_correct, n_tries, "any") is any_
    assert model_answers_correctly(n_correct, n_tries, "all") is all_


def test_majority_over_tries_feeds_the_k_of_n_rule() -> None:
    items = make_items(1)
    # a: 2 of 4 tries (not a majority), b: 3 of 4 (majority) → 1 model answers correctly.
    runs = _runs(items, {"a": [["c"], ["c"], ["w"], ["w"]], "b": [["c"], ["c"], ["c"], ["w"]]})
    assert flag_items(items, runs, ShortcutRule(min_models=2))[0].flagged is False
    assert flag_items(items, runs, ShortcutRule(min_models=1))[0].models_correct == ["b"]
    assert flag_items(items, runs, ShortcutRule(min_models=2, model_correct="any"))[0].flagged is True


def test_unparsed_and_failed_tries_are_not_correct_and_are_reported() -> None:
    items = make_items(4)
    runs = _runs(items, {"a": [["u", "e", "-", "c"]], "b": [["c", "c", "c", "c"]]})
    v = flag_items(items, runs, ShortcutRule(min_models=2))
    assert [x.flagged for x in v] == [False, False, False, True]
    assert v[0].outcomes == {"a": ["unparsed"], "b": ["correct"]}
    assert v[0].problems == ["a try 0: unparsed (no single option)"]
    assert v[1].problems == ["a try 0: error (server said 500)"] and v[1].has_errors
    assert v[2].problems == ["a try 0: no_record (the run has no record of it)"] and v[2].has_errors
    assert not v[0].has_errors  # unparsed is an answer, just not a usable one
    s = summarize(v, n_models=2, n_tries=1)
    assert s["tries"] == {"correct": 5, "wrong": 0, "unparsed": 1, "error": 1, "missing_image": 0,
                          "missing_response": 0, "no_record": 1}  # fmt: skip
    assert (s["items"], s["flagged"], s["kept"]) == (4, 1, 3)
    assert s["items_with_errors"] == 2 and s["kept_items_with_errors"] == 2 and s["items_with_unparsed"] == 1
    assert s["histogram_models_correct"] == [0, 3, 1]
    assert s["by_task"] == [
        {"group": "task=t1", "items": 2, "flagged": 0, "kept": 2, "flagged_fraction": 0.0},
        {"group": "task=t2", "items": 2, "flagged": 1, "kept": 1, "flagged_fraction": 0.5},
    ]


def test_both_rules_flag_when_either_fires() -> None:
    items = make_items(3)
    runs = _runs(items, {"a": [["c", "c", "w"], ["c", "c", "w"]], "b": [["c", "w", "w"], ["c", "w", "w"]]})
    v = flag_items(items, runs, ShortcutRule(min_models=2, min_tries=2))
    assert [x.rules for x in v] == [["min-models", "min-tries"], ["min-tries"], []]
    assert summarize(v, 2, 2)["flagged_by"] == {"min-models only": 0, "min-tries only": 1, "both": 1}


def test_rules_are_validated() -> None:
    items = make_items(1)
    runs = _runs(items, {"a": [["c"]], "b": [["c"]]})
    with pytest.raises(ScopebenchError, match="at least one rule"):
        flag_items(items, runs, ShortcutRule())
    with pytest.raises(ScopebenchError, match="--min-models"):
        flag_items(items, runs, ShortcutRule(min_models=3))
    with pytest.raises(ScopebenchError, match="--min-tries"):
        flag_items(items, runs, ShortcutRule(min_tries=2))
    with pytest.raises(ScopebenchError, match="same number of tries"):
        flag_items(items, _runs(items, {"a": [["c"]], "b": [["c"], ["c"]]}), ShortcutRule(min_models=1))


def test_model_slugs_never_collide() -> None:
    taken: set[str] = set()
    a = model_slug("replay:/tmp/a b.jsonl", taken)
    b = model_slug("replay:/tmp/a_b.jsonl", taken)
    assert a == "replay_tmp_a_b.jsonl" and b != a and b.startswith("replay_tmp_a_b.jsonl-")


# End to end ----------------------------------------------------------------------------------------


def _probe(argv: list[str]) -> int:
    # The click command itself, not main(): our errors propagate, for pytest.raises.
    code: int = build_cli().main(["probe", *argv], prog_name="scopebench", standalone_mode=False)
    return code


@pytest.fixture(scope="module")
def pathmmu_items() -> list[Item]:
    from scopebench.benchmarks import get_benchmark

    return list(get_benchmark("pathmmu").load(PATHMMU, split="test_tiny").items)


def _replay(path: Path, items: list[Item], right: set[int], *, unparsed: set[int] = frozenset(),  # type: ignore[assignment]
            missing: set[int] = frozenset()) -> str:  # type: ignore[assignment]  # fmt: skip
    with open(path, "w", encoding="utf-8") as fh:
        for k, it in enumerate(items):
            assert it.answer_index is not None
            if k in missing:
                continue
            if k in unparsed:
                text = "I cannot tell without the image."
            else:
                idx = it.answer_index if k in right else (it.answer_index + 1) % len(it.choices)
                text = f"The answer is ({'ABCD'[idx]})."
            fh.write(json.dumps({"item_id": it.id, "response": text}) + "\n")
    return f"replay:{path}"


def test_replayed_models_flag_the_hand_computed_items(pathmmu_items: list[Item], tmp_path: Path) -> None:
    items = pathmmu_items
    assert len(items) == 30
    a = _replay(tmp_path / "a.jsonl", items, set(range(15)))
    b = _replay(tmp_path / "b.jsonl", items, set(range(10, 25)), unparsed={12})
    c = _replay(tmp_path / "c.jsonl", items, set(range(20, 30)) | set(range(5)), missing={3})
    out = tmp_path / "out"
    argv = ["shortcut", "--bench", "pathmmu", "--data", PATHMMU, "--split", "test_tiny", "--out", str(out),
            "--models", f"{a},{b}", "--model", c, "--min-models", "2"]  # fmt: skip
    assert _probe(argv) == 0
    # A right on 0–14, B on 10–24 but unparsed on 12, C on 0–4 and 20–29 but silent on 3.
    want = {0, 1, 2, 4, 10, 11, 13, 14, 20, 21, 22, 23, 24}
    flagged = (out / "flagged.txt").read_text(encoding="utf-8").splitlines()
    kept = (out / "kept.txt").read_text(encoding="utf-8").splitlines()
    assert flagged == sorted(items[k].id for k in want)
    assert kept == sorted(items[k].id for k in range(30) if k not in want)
    report = json.loads((out / "shortcut.json").read_text(encoding="utf-8"))
    counts = report["counts"]
    assert (counts["items"], counts["flagged"], counts["kept"]) == (30, 13, 17)
    assert counts["histogram_models_correct"] == [0, 17, 13, 0]
    assert counts["tries"]["unparsed"] == 1 and counts["tries"]["missing_response"] == 1
    assert counts["items_with_errors"] == 1 and counts["kept_items_with_errors"] == 1
    by_id = {it["item_id"]: it for it in report["items"]}
    assert by_id[items[3].id]["problems"][0].startswith(f"{c} try 0: missing_response")
    assert by_id[items[12].id]["outcomes"][b] == ["unparsed"]
    assert [m["tries"][0]["seed"] for m in report["models"]] == [0, 0, 0]
    assert report["models"][0]["tries"][0]["correct"] == 15
    # The per-item CSV and the per-task counts agree with the lists.
    rows = list(csv.DictReader((out / "items.csv").read_text(encoding="utf-8").splitlines()))
    assert sorted(r["item_id"] for r in rows if r["flagged"] == "1") == flagged
    assert "| overall | overall | 30 | 13 | 17 | 43.3 |" in (out / "shortcut.md").read_text(encoding="utf-8")
    assert (out / "shortcut_hist.png").stat().st_size > 0 and (out / "shortcut_hist.svg").is_file()
    assert (out / "runs" / model_slug(a) / "try-0" / "records.jsonl").is_file()

    # `scopebench run --exclude flagged.txt` evaluates exactly the kept items.
    from scopebench.cli import main

    run_dir = tmp_path / "filtered"
    code = main(["-q", "run", "--bench", "pathmmu", "--data", PATHMMU, "--split", "test_tiny", "--model", "random",
                 "--out", str(run_dir), "--exclude", str(out / "flagged.txt")])  # fmt: skip
    assert code == 0
    assert sorted(r.item_id for r in load_run(run_dir).records) == kept


def test_random_tries_follow_seeds_and_resume(tmp_path: Path) -> None:
    out = tmp_path / "out"
    argv = ["shortcut", "--bench", "pathmmu", "--data", PATHMMU, "--split", "test_tiny", "--out", str(out),
            "--models", "random", "--tries", "4", "--seed", "7", "--min-tries", "2", "--min-models", "1",
            "--temperature", "0.7"]  # fmt: skip
    assert _probe(argv) == 0
    report = json.loads((out / "shortcut.json").read_text(encoding="utf-8"))
    tries = report["models"][0]["tries"]
    assert [t["seed"] for t in tries] == [7, 8, 9, 10]
    assert report["models"][0]["temperature"] is None  # random does not sample: not passed
    assert "not passed (backend does not sample)" in (out / "shortcut.md").read_text(encoding="utf-8")
    assert report["models"][0]["tries_identical"] is False
    # Recompute every flag from the four runs' stored records.
    correct: dict[str, int] = {}
    for r in range(4):
        run = load_run(out / "runs" / "random" / f"try-{r}")
        assert run.config["seed"] == 7 + r and run.config["no_image"] is True
        for rec in run.records:
            correct[rec.item_id] = correct.get(rec.item_id, 0) + bool(rec.correct)
    want = sorted(i for i, k in correct.items() if k >= 2)  # r-of-R; majority (≥3) implies it
    assert (out / "flagged.txt").read_text(encoding="utf-8").splitlines() == want
    assert report["counts"]["histogram_max_correct_tries"] == [
        sum(v == k for v in correct.values()) for k in range(5)
    ]
    assert sum(t["correct"] for t in tries) == sum(correct.values())
    # A second invocation resumes every run and gives the same lists (no errors to retry).
    assert _probe([*argv, "--retry-errors"]) == 0
    again = json.loads((out / "shortcut.json").read_text(encoding="utf-8"))
    assert [t["n_new"] for t in again["models"][0]["tries"]] == [0, 0, 0, 0]
    assert again["counts"] == report["counts"]


def test_temperature_goes_to_sampling_backends_as_a_model_arg(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import scopebench.engine.runner as runner
    import scopebench.experiments.probes.shortcut as shortcut

    seen: list[tuple[str, int, dict[str, object]]] = []
    real = runner.run_benchmark

    def spy(config: runner.RunConfig, out_dir: Path, **kw: object) -> runner.RunResult:
        seen.append((config.model, config.seed, dict(config.model_args)))
        return real(config, out_dir, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(runner, "run_benchmark", spy)
    monkeypatch.setattr(shortcut, "run_benchmark", spy)  # imported by the probe module
    monkeypatch.setattr(shortcut, "SAMPLING_SCHEMES", frozenset({"random"}))  # pretend random samples
    from scopebench.models.baselines import FrequentBackend, RandomBackend

    # ... and reads these options (model args are checked against what a backend reads).
    monkeypatch.setattr(RandomBackend, "model_args", frozenset({"temperature", "max_new_tokens"}))
    monkeypatch.setattr(FrequentBackend, "model_args", frozenset({"max_new_tokens"}))
    out = tmp_path / "out"
    argv = ["shortcut", "--bench", "pathmmu", "--data", PATHMMU, "--split", "test_tiny", "--limit", "4",
            "--out", str(out), "--models", "random,frequent", "--tries", "2", "--min-tries", "2",
            "--temperature", "0.7", "--model-arg", "max_new_tokens=8"]  # fmt: skip
    assert _probe(argv) == 0
    assert seen == [("random", 0, {"max_new_tokens": 8, "temperature": 0.7}),
                    ("random", 1, {"max_new_tokens": 8, "temperature": 0.7}),
                    ("frequent", 0, {"max_new_tokens": 8}), ("frequent", 1, {"max_new_tokens": 8})]  # fmt: skip
    report = json.loads((out / "shortcut.json").read_text(encoding="utf-8"))
    assert [(m["temperature"], m["samples"]) for m in report["models"]] == [(0.7, True), (None, False)]


def test_deterministic_tries_are_reported_identical(tmp_path: Path) -> None:
    out = tmp_path / "out"
    argv = ["shortcut", "--bench", "pathmmu", "--data", PATHMMU, "--split", "test_tiny", "--limit", "6",
            "--out", str(out), "--models", "frequent", "--tries", "2", "--min-tries", "2"]  # fmt: skip
    assert _probe(argv) == 0
    report = json.loads((out / "shortcut.json").read_text(encoding="utf-8"))
    assert report["models"][0]["tries_identical"] is True
    assert "tries identical" in (out / "shortcut.md").read_text(encoding="utf-8")


def test_user_errors_are_scopebench_errors(tmp_path: Path) -> None:
    base = [
        "shortcut",
        "--bench",
        "pathmmu",
        "--data",
        PATHMMU,
        "--split",
        "test_tiny",
        "--out",
        str(tmp_path),
    ]
    with pytest.raises(ScopebenchError, match="--models"):
        _probe([*base, "--min-models", "1"])
    with pytest.raises(ScopebenchError, match="listed twice"):
        _probe([*base, "--models", "random,random", "--min-models", "1"])
    with pytest.raises(ScopebenchError, match="at least one rule"):
        _probe([*base, "--models", "random"])
    with pytest.raises(ScopebenchError, match="unknown model spec"):
        _probe([*base, "--models", "nosuch:x", "--min-models", "1"])


def test_non_mcq_items_are_kept_and_counted_as_not_judged(tmp_path: Path) -> None:
    out = tmp_path / "out"
    data = str(FIXTURES / "local" / "items.jsonl")
    argv = ["shortcut", "--bench", "local", "--data", data, "--out", str(out), "--models", "frequent",
            "--min-models", "1"]  # fmt: skip
    assert _probe(argv) == 0
    report = json.loads((out / "shortcut.json").read_text(encoding="utf-8"))
    assert report["not_judged"] == ["local/items-4"] and report["counts"]["not_judged"] == 1
    assert report["counts"]["items"] == 4  # the four multiple-choice items
    kept = (out / "kept.txt").read_text(encoding="utf-8").splitlines()
    flagged = (out / "flagged.txt").read_text(encoding="utf-8").splitlines()
    assert "local/items-4" in kept and len(kept) + len(flagged) == 5

"""build generate: validated LLM items, failure rows, retries, content-keyed cache, ledger, export."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from scopebench.curate.generation.schema import Invalid, validate_reply
from scopebench.curate.generation.step import GenerateConfig, generate, load_templates, read_generated
from scopebench.curate.llm import Prices
from scopebench.errors import DataFormatError, ModelSpecError
from scopebench.models import ChatMessage, ModelOptions, Response
from scopebench.models.replay import ReplayBackend


def _mcq(*questions: tuple[str, list[str], Any]) -> str:
    return json.dumps(
        {
            "questions": [
                {"question": q, "options": o, "answer": a, "explanation": f"why {q}"} for q, o, a in questions
            ]
        }
    )


# --------------------------------------------------------------------------- validation


def test_valid_replies_resolve_the_answer_by_text_letter_or_index() -> None:
    opts = ["round", "elongated", "irregular", "flat"]
    for answer in ("elongated", " Elongated. ", "B", "(B)", 1):
        got = validate_reply(_mcq(("Shape?", opts, answer)), "mcq", n=1, options=4)
        assert not isinstance(got, Invalid), answer
        assert got[0][1] == 1
    fenced = "Here it is:\n```json\n" + json.dumps({"description": "Dense nuclei."}) + "\n```"
    assert validate_reply(fenced, "description") == "Dense nuclei."


@pytest.mark.parametrize(
    ("reply", "kind"),
    [
        ("The answer is B", "invalid_json"),
        ("", "invalid_json"),
        ("[1, 2]", "invalid_json"),
        (json.dumps({"questions": [{"question": "Q", "options": ["a", "b", "c", "d"]}]}), "schema"),
        (_mcq(("Q", ["a", "b", "c", "d"], "e")), "answer_not_in_options"),
        (_mcq(("Q", ["a", "b", "c", "d"], 4)), "answer_not_in_options"),
        (_mcq(("Q", ["a", "b", "B ", "d"], "a")), "duplicate_options"),
        (_mcq(("Q", ["a", "b", "c"], "a")), "wrong_count"),
        (_mcq(("Q", ["a", "b", "c", "d"], "a"), ("Q2", ["a", "b", "c", "d"], "b")), "wrong_count"),
    ],
)
def test_invalid_replies_name_their_fault(reply: str, kind: str) -> None:
    got = validate_reply(reply, "mcq", n=1, options=4)
    assert isinstance(got, Invalid) and got.kind == kind


def test_open_to_mcq_needs_exactly_one_none_of_the_above() -> None:
    six = ["a", "b", "c", "d", "e", "None of the above"]
    ok = validate_reply(_mcq(("Q", six, 5)), "mcq_nota", n=1, options=6)
    assert not isinstance(ok, Invalid) and ok[0][1] == 5  # it may be the correct one (1 in 6)
    none = validate_reply(_mcq(("Q", ["a", "b", "c", "d", "e", "f"], 0)), "mcq_nota", n=1, options=6)
    assert isinstance(none, Invalid) and none.kind == "no_nota"


def test_templates_are_data_and_user_files_merge_over_them(tmp_path: Path) -> None:
    shipped = load_templates()
    spur = {"spur_np", "spur_mp", "spur_il", "spur_ta", "spur_hi", "spur_qual", "spur_quant"}
    assert {"describe", "mcq", "open_to_mcq"} | spur <= set(shipped["tasks"])
    assert shipped["tasks"]["mcq"]["n"] == 3  # PathMMU: three questions per image
    assert shipped["tasks"]["open_to_mcq"]["options"] == 6  # μ-Bench: six with "None of the above"
    (tmp_path / "t.yaml").write_text(
        "tasks:\n  mcq:\n    n: 2\n  mine:\n    kind: description\n    prompt: Hi\n"
    )
    merged = load_templates(tmp_path / "t.yaml")
    assert (
        merged["tasks"]["mcq"]["n"] == 2
        and merged["tasks"]["mcq"]["prompt"] == shipped["tasks"]["mcq"]["prompt"]
    )
    assert merged["tasks"]["mine"]["prompt"] == "Hi"
    (tmp_path / "bad.yaml").write_text("tasks:\n  mine:\n    kind: essay\n    prompt: Hi\n")
    with pytest.raises(DataFormatError, match="mine"):
        load_templates(tmp_path / "bad.yaml")


# --------------------------------------------------------------------------- the step

OPTS = ["round", "elongated", "irregular", "flat"]
#: Replies per call id: a list is a transcript, reply k answering attempt k.
REPLIES: dict[str, list[str]] = {
    "describe/src_a/img0.png": [json.dumps({"description": "Basophil with dark granules."})],
    "describe/src_a/img1.png": [
        "Sure! The image shows a lymphocyte.",
        json.dumps({"description": "A lymphocyte."}),
    ],
    "describe/src_a/img3.png": ["no json", "{'description': 'single quotes'}", "still no"],
    "mcq/src_a/img0.png": [
        _mcq(("Shape?", OPTS, "round"), ("Granules?", ["few", "many", "none", "some"], "many"))
    ],
    "mcq/src_a/img1.png": [
        _mcq(("Shape?", OPTS, "oval"), ("Size?", ["small", "large", "tiny", "huge"], "small")),
        _mcq(("Shape?", ["round", "Round", "flat", "oval"], "flat"), ("Size?", ["s", "l", "t", "h"], "s")),
        _mcq(("Shape?", OPTS, "B"), ("Size?", ["small", "large", "tiny", "huge"], 0)),
    ],
    "mcq/src_a/img3.png": [_mcq(("Shape?", ["a", "a", "b", "c"], "b"), ("Q", OPTS, "flat"))] * 3,
}
CAPTIONS = "source,image,caption\nsrc_a,img0.png,A basophil.\nsrc_a,img1.png,A lymphocyte.\nsrc_a,img3.png,Another basophil.\nsrc_a,nope.png,Lost row.\n"


def _setup(tmp_path: Path, replies: dict[str, list[str]] = REPLIES) -> tuple[Path, Path]:
    (tmp_path / "replies.jsonl").write_text(
        "".join(json.dumps({"item_id": k, "responses": v}) + "\n" for k, v in replies.items())
    )
    (tmp_path / "texts.csv").write_text(CAPTIONS)
    return tmp_path / "replies.jsonl", tmp_path / "texts.csv"


def _cfg(replay: Path, texts: Path, **kw: Any) -> GenerateConfig:
    settings: dict[str, Any] = {"tasks": ("describe", "mcq"), "questions_per_image": 2, **kw}
    return GenerateConfig(model=f"replay:{replay}", inputs=str(texts), **settings)


def test_items_failures_and_retries_are_counted_exactly(built: dict[str, Any], tmp_path: Path) -> None:
    replay, texts = _setup(tmp_path)
    res = generate(built["root"] / "questions", tmp_path / "gen", _cfg(replay, texts))
    # 3 captioned images × 2 tasks; img3's describe fails (invalid JSON ×3), so its mcq reads the
    # caption instead; img3's mcq repeats an option 3 times.
    assert (res.items_in, res.kept) == (6, 4)
    assert dict(res.dropped) == {"invalid_json": 1, "duplicate_options": 1}
    assert res.stats["items"] == {"describe": 2, "mcq": 4}
    # describe: img1 once, img3 twice; mcq: img1 twice (wrong answer, then duplicate), img3 twice.
    assert res.stats["retries"] == {"describe": 3, "mcq": 4}
    ledger = json.loads((tmp_path / "gen" / "ledger.json").read_text())
    assert ledger["steps"]["describe"]["requests"] == 6 and ledger["steps"]["mcq"]["requests"] == 7
    assert ledger["total"] == {"requests": 13, "cached": 0, "failed": 0, "input_tokens": 0,
                               "output_tokens": 0, "price": None}  # fmt: skip
    # The images without a caption (src_b's) are skipped, not failed.
    n_images = built["questions"].kept
    assert res.stats["skipped_no_input"] == {"describe": n_images - 3, "mcq": n_images - 3}

    recs = read_generated(tmp_path / "gen")
    assert len(recs) == 2 + 4 + 2  # nothing dropped: items and failure rows
    fails = [r for r in recs if r["status"] == "failed"]
    assert sorted((r["task"], r["row"], r["reason"]) for r in fails) == [
        ("describe", "img3.png", "invalid_json"),
        ("mcq", "img3.png", "duplicate_options"),
    ]
    d3 = next(r for r in fails if r["task"] == "describe")
    assert d3["raw"] == "still no" and [a["seed"] for a in d3["attempts"]] == [0, 1, 2]
    assert d3["attempt"] == 2 and d3["model"]["spec"].startswith("replay:")
    ok = next(r for r in recs if r["task"] == "mcq" and r["row"] == "img1.png" and r["id"].endswith("mcq-0"))
    assert ok["attempt"] == 2 and ok["seed"] == 2 and ok["options"][ok["answer_idx"]] == "elongated"
    assert "A lymphocyte." in ok["prompt"]  # the description of attempt 2 of describe fed the mcq
    assert sorted(ok["options"]) == sorted(OPTS) and ok["explanation"] == "why Shape?"
    problems = [json.loads(x) for x in (tmp_path / "gen" / "problems.jsonl").read_text().splitlines()]
    assert sorted((p["source"], p["row"], p["kind"]) for p in problems) == [
        ("src_a", "img3.png", "duplicate_options"),
        ("src_a", "img3.png", "invalid_json"),
        ("texts.csv", "3", "unknown_image"),
    ]


def test_rerun_costs_no_request_and_a_changed_template_redoes_only_its_task(
    built: dict[str, Any], tmp_path: Path
) -> None:
    replay, texts = _setup(tmp_path)
    cache = tmp_path / "llm.sqlite"
    first = generate(built["root"] / "questions", tmp_path / "g1", _cfg(replay, texts), cache=cache)
    again = generate(built["root"] / "questions", tmp_path / "g2", _cfg(replay, texts), cache=cache)
    assert again.stats["ledger"]["total"]["requests"] == 0 and again.stats["ledger"]["total"]["cached"] == 13
    same = lambda d: [{k: v for k, v in r.items() if k != "attempts"} for r in read_generated(d)]  # noqa: E731
    assert same(tmp_path / "g1") == same(tmp_path / "g2")
    assert first.stats["items"] == again.stats["items"]

    (tmp_path / "t.yaml").write_text(
        "tasks:\n  mcq:\n    prompt: 'Write {n} questions with {options} options about: {description}'\n"
    )
    changed = generate(
        built["root"] / "questions",
        tmp_path / "g3",
        _cfg(replay, texts, templates=str(tmp_path / "t.yaml")),
        cache=cache,
    )
    steps = changed.stats["ledger"]["steps"]
    assert (steps["describe"]["requests"], steps["describe"]["cached"]) == (0, 6)
    assert (steps["mcq"]["requests"], steps["mcq"]["cached"]) == (7, 0)


class _Crashing(ReplayBackend):
    """A replay backend that dies (like a killed process) on its ``crash_at``-th chat call."""

    crash_at = 2
    calls = 0

    def chat(
        self,
        conversations: Sequence[Sequence[ChatMessage]],
        item_ids: Sequence[str],
        *,
        max_new_tokens: int | None = None,
    ) -> list[Response]:
        type(self).calls += 1
        if type(self).calls == self.crash_at:
            raise KeyboardInterrupt
        return super().chat(conversations, item_ids, max_new_tokens=max_new_tokens)


def test_a_crashed_build_resumes_without_repeating_a_call(built: dict[str, Any], tmp_path: Path) -> None:
    replay, texts = _setup(tmp_path)
    cache = tmp_path / "llm.sqlite"
    crashing = _Crashing(f"replay:{replay}", ModelOptions(batch_size=2))
    with pytest.raises(KeyboardInterrupt):
        generate(
            built["root"] / "questions", tmp_path / "g", _cfg(replay, texts), cache=cache, backend=crashing
        )
    # The first batch (2 describe calls) was committed before the crash.
    resumed = generate(built["root"] / "questions", tmp_path / "g", _cfg(replay, texts), cache=cache)
    total = resumed.stats["ledger"]["total"]
    assert (total["cached"], total["requests"]) == (2, 11)  # 13 calls in all, none sent twice
    assert (resumed.items_in, resumed.kept) == (6, 4)


def test_a_model_that_cannot_write_text_is_refused(built: dict[str, Any], tmp_path: Path) -> None:
    with pytest.raises(ModelSpecError, match="cannot write text"):
        generate(built["root"] / "questions", tmp_path / "g", GenerateConfig(model="random"))
    replay, texts = _setup(tmp_path)
    with pytest.raises(DataFormatError, match="unknown task"):
        generate(built["root"] / "questions", tmp_path / "g", _cfg(replay, texts, tasks=("essay",)))


def test_open_to_mcq_and_spur_tasks(built: dict[str, Any], tmp_path: Path) -> None:
    six = ["mitosis", "apoptosis", "necrosis", "senescence", "autophagy", "None of the above"]
    replies = {
        "open_to_mcq/src_a/img0.png": [_mcq(("What process?", six, 0))],
        "open_to_mcq/src_a/img1.png": [_mcq(("What process?", [*six[:5], "none"], 0))] * 3,
        "spur_ta/src_a/img0.png": [_mcq(("Trend?", ["up", "down", "flat", "u-shaped"], "up"))],
    }
    replay, _ = _setup(tmp_path, replies)
    (tmp_path / "qa.csv").write_text(
        "source,image,question,answer,caption\nsrc_a,img0.png,What is happening?,mitosis,Panel A\n"
        "src_a,img1.png,What is happening?,mitosis,\n"
        "src_a,img3.png,What is this?,a basophil,\n"  # the replay file has no reply for it
    )
    cfg = GenerateConfig(
        model=f"replay:{replay}", tasks=("open_to_mcq", "spur_ta"), inputs=str(tmp_path / "qa.csv")
    )
    res = generate(built["root"] / "questions", tmp_path / "g", cfg)
    assert res.stats["items"] == {"open_to_mcq": 1, "spur_ta": 1}
    assert dict(res.dropped) == {"no_nota": 1, "call_failed": 1}
    lost = next(r for r in read_generated(tmp_path / "g") if r.get("reason") == "call_failed")
    assert (lost["row"], lost["raw"], len(lost["attempts"])) == (
        "img3.png",
        None,
        1,
    )  # not retried: asked next run
    assert res.stats["skipped_no_input"]["spur_ta"] == built["questions"].kept - 1  # only img0 has a caption
    item = next(
        r for r in read_generated(tmp_path / "g") if r["task"] == "open_to_mcq" and r["status"] == "ok"
    )
    assert item["options"][-1] == "None of the above"  # kept last when options are shuffled
    assert item["options"][item["answer_idx"]] == "mitosis"
    assert (
        "Input Question: What is happening?" in item["prompt"] and "Correct Answer: mitosis" in item["prompt"]
    )


def test_generated_items_are_split_exported_and_evaluated(built: dict[str, Any], tmp_path: Path) -> None:
    from scopebench.cli import main
    from scopebench.curate import export, split

    replay, texts = _setup(tmp_path)
    generate(built["root"] / "questions", tmp_path / "gen", _cfg(replay, texts))
    split(tmp_path / "gen", tmp_path / "split")
    export(tmp_path / "split", tmp_path / "export")
    items = [json.loads(x) for x in (tmp_path / "export/local/data.jsonl").read_text().splitlines()]
    gen = [i for i in items if i["task"] == "mcq"]
    assert len(gen) == 4 and all(i["explanation"].startswith("why ") for i in gen)
    assert all(i["choices"][i["answer"]] in {"round", "many", "elongated", "small"} for i in gen)
    made = sum(built["questions"].stats["questions"].values())
    assert len(items) == made + 4
    assert main(["run", "--bench", "local", "--data", str(tmp_path / "export/local"), "--model", "random",
                 "--out", str(tmp_path / "run")]) == 0  # fmt: skip
    metrics = json.loads((tmp_path / "run/metrics.json").read_text())
    assert metrics["overall"]["n"] == len(items)


def test_cli_generate(built: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from scopebench.cli import main

    replay, texts = _setup(tmp_path)
    argv = ["build", "generate", str(built["root"] / "questions"), "--out", str(tmp_path / "g"), "--model",
            f"replay:{replay}", "--inputs", str(texts), "--questions-per-image", "2"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "LLM calls of this run" in out and "invalid_json: 1" in out
    assert main(argv) == 0  # again: every call from the cache (OUT/../.cache/llm.sqlite)
    ledger = json.loads((tmp_path / "g" / "ledger.json").read_text())
    assert (ledger["total"]["requests"], ledger["total"]["cached"]) == (0, 13)
    assert (tmp_path / ".cache" / "llm.sqlite").is_file()


def test_build_run_chains_generate_between_questions_and_split(tmp_path: Path) -> None:
    from curate_helpers import make_sources

    from scopebench.curate import run_build

    make_sources(tmp_path)
    _setup(tmp_path)
    (tmp_path / "t.yaml").write_text("tasks: {}\n")
    (tmp_path / "build.yaml").write_text(
        "manifest: manifest.yaml\nout: build\n"
        "generate:\n  model: replay:replies.jsonl\n  inputs: texts.csv\n  templates: t.yaml\n"
        "  questions_per_image: 2\n  prices: {input_per_mtok: 1.0, output_per_mtok: 2.0}\n"
    )
    first = run_build(tmp_path / "build.yaml")
    assert [s.step for s in first.steps] == ["ingest", "questions", "generate", "split", "export"]
    gen = first.steps[2]
    assert (gen.items_in, gen.kept, gen.stats["ledger"]["total"]["requests"]) == (6, 4, 13)
    items = [json.loads(x) for x in (tmp_path / "build/export/local/data.jsonl").read_text().splitlines()]
    assert sum(i["task"] == "mcq" for i in items) == 4

    again = run_build(tmp_path / "build.yaml")
    assert all(s.cached for s in again.steps)

    (tmp_path / "t.yaml").write_text(
        "tasks:\n  mcq:\n    prompt: 'Questions ({n}, {options}) on {description}'\n"
    )
    changed = run_build(tmp_path / "build.yaml")
    assert [s.cached for s in changed.steps] == [True, True, False, False, False]
    steps = changed.steps[2].stats["ledger"]["steps"]
    assert (steps["describe"]["requests"], steps["mcq"]["requests"]) == (0, 7)


@pytest.mark.slow
def test_a_tiny_local_hf_model_goes_through_the_same_path(built: dict[str, Any], tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    from scopebench.testing.tiny import build_tiny_generative

    model = build_tiny_generative(tmp_path / "tiny", "qwen2-vl", seed=0)
    _, texts = _setup(tmp_path)
    cfg = GenerateConfig(model=f"hf:{model}", tasks=("describe",), inputs=str(texts), retries=1,
                         max_new_tokens=6, model_args={"device": "cpu"}, max_fail_fraction=1.0)  # fmt: skip
    res = generate(built["root"] / "questions", tmp_path / "g", cfg, cache=tmp_path / "c.sqlite")
    # An untrained model writes no JSON: 3 images × 2 attempts, then 3 failure rows with the raw text.
    assert (res.items_in, res.kept, dict(res.dropped)) == (3, 0, {"invalid_json": 3})
    assert res.stats["ledger"]["total"]["requests"] == 6 and res.stats["retries"] == {"describe": 3}
    recs = read_generated(tmp_path / "g")
    assert len(recs) == 3 and all(r["status"] == "failed" and r["raw"] is not None for r in recs)
    assert all(r["model"]["spec"].startswith("hf:") for r in recs)
    again = generate(built["root"] / "questions", tmp_path / "g2", cfg, cache=tmp_path / "c.sqlite")
    assert again.stats["ledger"]["total"] == {**again.stats["ledger"]["total"], "requests": 0, "cached": 6}


def test_fixing_one_caption_redoes_only_that_images_calls(built: dict[str, Any], tmp_path: Path) -> None:
    replay, texts = _setup(tmp_path)
    cache = tmp_path / "llm.sqlite"
    generate(built["root"] / "questions", tmp_path / "g1", _cfg(replay, texts), cache=cache)
    texts.write_text(CAPTIONS.replace("Another basophil.", "A basophil (fixed caption)."))
    res = generate(built["root"] / "questions", tmp_path / "g2", _cfg(replay, texts), cache=cache)
    steps = res.stats["ledger"]["steps"]
    # img3: its describe prompt changed (3 attempts), and its mcq reads the caption because its
    # describe fails, so its mcq prompt changed too (3 attempts); every other call is cached.
    assert (steps["describe"]["requests"], steps["describe"]["cached"]) == (3, 3)
    assert (steps["mcq"]["requests"], steps["mcq"]["cached"]) == (3, 4)


class _Priced(ReplayBackend):
    """Replay that reports 100 prompt and 20 completion tokens per reply, as an API server would."""

    def chat(
        self,
        conversations: Sequence[Sequence[ChatMessage]],
        item_ids: Sequence[str],
        *,
        max_new_tokens: int | None = None,
    ) -> list[Response]:
        out = super().chat(conversations, item_ids, max_new_tokens=max_new_tokens)
        for r in out:
            r.extra["usage"] = {"prompt_tokens": 100, "completion_tokens": 20}
        return out


def test_the_ledger_counts_tokens_and_price(built: dict[str, Any], tmp_path: Path) -> None:
    replay, texts = _setup(tmp_path)
    backend = _Priced(f"replay:{replay}", ModelOptions())
    cfg = _cfg(replay, texts, prices=Prices(input_per_mtok=1.0, output_per_mtok=2.0))
    res = generate(built["root"] / "questions", tmp_path / "g", cfg, backend=backend)
    ledger = json.loads((tmp_path / "g" / "ledger.json").read_text())
    assert ledger == res.stats["ledger"]
    # describe 6 requests, mcq 7: 600 + 700 prompt tokens, 120 + 140 completion tokens.
    d, m, t = ledger["steps"]["describe"], ledger["steps"]["mcq"], ledger["total"]
    assert (d["input_tokens"], d["output_tokens"], m["input_tokens"], m["output_tokens"]) == (
        600,
        120,
        700,
        140,
    )
    assert d["price"] == pytest.approx((600 * 1.0 + 120 * 2.0) / 1e6)
    assert t["price"] == pytest.approx((1300 * 1.0 + 260 * 2.0) / 1e6)  # 0.00182
    card = (tmp_path / "g" / "README.md").read_text()
    assert "| mcq | 7 | 0 | 0 | 700 | 140 | 0.0010 |" in card


def test_build_run_asks_again_for_calls_that_got_no_reply(tmp_path: Path) -> None:
    from curate_helpers import make_sources

    from scopebench.curate import run_build

    make_sources(tmp_path)
    replies = {k: v for k, v in REPLIES.items() if k != "mcq/src_a/img0.png"}  # one reply missing
    _setup(tmp_path, replies)
    (tmp_path / "build.yaml").write_text(
        "manifest: manifest.yaml\nout: build\n"
        "generate:\n  model: replay:replies.jsonl\n  inputs: texts.csv\n  questions_per_image: 2\n"
    )
    first = run_build(tmp_path / "build.yaml").steps[2]
    assert dict(first.dropped) == {"invalid_json": 1, "duplicate_options": 1, "call_failed": 1}
    assert first.stats["incomplete"] is True and first.stats["items"] == {"describe": 2, "mcq": 2}
    # Not stamped: the next run asks the one unanswered call again (and only it); what it wrote is
    # unchanged, so split and export are reused.
    again = run_build(tmp_path / "build.yaml").steps
    assert [s.cached for s in again] == [True, True, False, True, True]
    assert again[2].stats["ledger"]["total"]["requests"] == 1
    _setup(tmp_path)  # the reply is there now (a new replay file is a new model: every call again)
    fixed = run_build(tmp_path / "build.yaml").steps
    assert [s.cached for s in fixed] == [True, True, False, False, False]
    assert fixed[2].stats["incomplete"] is False and fixed[2].stats["items"] == {"describe": 2, "mcq": 4}


def test_the_package_exports_the_function() -> None:
    import scopebench.curate
    import scopebench.curate.generation.step  # a submodule import must not shadow the function

    assert scopebench.curate.generate is generate and callable(scopebench.curate.generate)


def test_a_second_input_row_for_an_image_is_a_problem_not_a_silent_overwrite(
    built: dict[str, Any], tmp_path: Path
) -> None:
    replay, texts = _setup(tmp_path)
    texts.write_text(CAPTIONS + "src_a,img0.png,A different caption.\n")
    res = generate(built["root"] / "questions", tmp_path / "g", _cfg(replay, texts, tasks=("describe",)))
    dup = [p for p in res.problems if p.kind == "duplicate_input"]
    assert [(p.source, p.row) for p in dup] == [("texts.csv", "4")]
    d0 = next(r for r in read_generated(tmp_path / "g") if r["row"] == "img0.png")
    assert "Original caption: A basophil." in d0["prompt"]
    with pytest.raises(DataFormatError, match="each task once"):
        _cfg(replay, texts, tasks=("mcq", "mcq"))


@pytest.mark.parametrize(
    ("options", "keeps_order"),
    [
        (["round", "flat", "oval", "None of the above"], False),
        (["round", "flat", "A and B", "long"], True),
        (["round", "flat", "Both A and C", "long"], True),
        (["round", "flat", "All of the above", "long"], True),
        (["round", "flat", "Option B with more cells", "long"], True),
        # Panel letters are not option references: multi-panel figures name them all the time.
        (["Panels A and C", "Panel B", "Panels B-D", "Fig. 2A"], False),
        (["Type A cells", "B cells", "T cells", "NK cells"], False),
    ],
)
def test_only_option_texts_that_name_other_options_keep_their_order(
    options: list[str], keeps_order: bool
) -> None:
    # Catches the old check that looked at the question and explanation (and so at panel letters).
    from scopebench.curate.balance import layout

    assert (layout(options, 0).slots == ()) is keeps_order

"""The judge phase of a run (``--judge``): only unparsed answers are sent, verdicts are stored,
counted, resumable, and one run never mixes two judges."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import pytest

from scopebench.cli import main
from scopebench.config import ReportConfig
from scopebench.engine import RunConfig, run_benchmark
from scopebench.errors import ConfigMismatchError, ModelSpecError, RunInterruptedError
from scopebench.models import ChatMessage, Response
from scopebench.models.replay import ReplayBackend
from scopebench.parsing.judge import build_judge_prompt
from scopebench.store import load_run

# Unit items: item i asks "Question i?", options "option 0".."option 3", answer i % 4; tasks
# alternate t1 (even i) / t2 (odd i).
ANSWERS = {
    "unit/000": "A",  # parser: A, correct
    "unit/001": "The answer is B",  # parser: B, correct
    "unit/002": "(a)",  # parser: A, wrong (answer C)
    "unit/003": "I cannot tell from this image.",  # unparsed → judge "none"
    "unit/004": "A or B",  # unparsed (two options) → judge "B": wrong (answer A)
    "unit/005": "My best reading is the lower left structure.",  # unparsed → judge "B": correct
    "unit/006": "Hmm.",  # unparsed → judge replies a sentence: unreadable
    "unit/007": "",  # blank: unparsed, never sent to the judge
    # unit/008: no line → missing_response, never sent to the judge
}
VERDICTS = {
    "unit/000": "D",  # never asked: the parser read this one
    "unit/003": "none",
    "unit/004": "B",
    "unit/005": "B",
    "unit/006": "The answer is C",
}
UNPARSED_SENT = ["unit/003", "unit/004", "unit/005", "unit/006"]


def _jsonl(path: Path, rows: dict[str, str]) -> Path:
    path.write_text("".join(json.dumps({"item_id": k, "response": v}) + "\n" for k, v in rows.items()))
    return path


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    return _jsonl(tmp_path / "answers.jsonl", ANSWERS), _jsonl(tmp_path / "judge.jsonl", VERDICTS)


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Every (item id, prompt) a replay judge is asked, in order."""
    calls: list[tuple[str, str]] = []
    real = ReplayBackend.chat

    def spy(
        self: ReplayBackend,
        conversations: Sequence[Sequence[ChatMessage]],
        item_ids: Sequence[str],
        *,
        max_new_tokens: int | None = None,
    ) -> list[Response]:
        for conv, i in zip(conversations, item_ids, strict=True):
            assert [m.role for m in conv] == ["user"] and conv[0].images == ()
            calls.append((i, conv[0].text))
        return real(self, conversations, item_ids, max_new_tokens=max_new_tokens)

    monkeypatch.setattr(ReplayBackend, "chat", spy)
    return calls


def _cfg(answers: Path, judge: Path | None, **kw: object) -> RunConfig:
    return RunConfig(
        benchmark="unit",
        data="9",
        model=f"replay:{answers}",
        judge=f"replay:{judge}" if judge else None,
        **kw,  # type: ignore[arg-type]
    )


def test_only_unparsed_responses_are_sent_with_exact_prompts(
    tmp_path: Path, files: tuple[Path, Path], sent: list[tuple[str, str]]
) -> None:
    answers, judge = files
    run_benchmark(_cfg(answers, judge), tmp_path / "run")
    opts = ["option 0", "option 1", "option 2", "option 3"]
    expected = [
        (i, build_judge_prompt(f"Question {int(i[-3:])}?", opts, ANSWERS[i], "letters"))
        for i in UNPARSED_SENT
    ]
    assert sent == expected
    # The literal text of one prompt, so a change of the template is a deliberate one.
    assert sent[1][1].endswith(
        "Options:\nA. option 0\nB. option 1\nC. option 2\nD. option 3\n\n"
        'Model\'s answer:\n"""\nA or B\n"""\n\n'
        "If the answer commits to exactly one option, reply with that option's letter only "
        "(A, B, C, D). If it commits to no option, or to more than one, reply with the single word "
        "none. Reply with nothing else."
    )


def test_records_keep_verdict_reply_and_parser_outcome(tmp_path: Path, files: tuple[Path, Path]) -> None:
    answers, judge = files
    run_benchmark(_cfg(answers, judge), tmp_path / "run")
    recs = {r.item_id: r for r in load_run(tmp_path / "run").records}
    methods = {k: r.extra.get("answer_method") for k, r in recs.items()}
    assert methods == {
        "unit/000": "parser",
        "unit/001": "parser",
        "unit/002": "parser",
        "unit/003": "parser",
        "unit/004": "judge",
        "unit/005": "judge",
        "unit/006": "parser",
        "unit/007": "parser",
        "unit/008": None,  # no response at all: nothing answered it
    }
    r4, r5 = recs["unit/004"], recs["unit/005"]
    assert (r4.status, r4.choice, r4.correct, r4.error) == ("ok", 1, False, None)
    assert (r5.status, r5.choice, r5.correct) == ("ok", 1, True)
    assert r4.extra["judge"]["reply"] == "B" and r4.extra["judge"]["verdict"] == "B"
    assert r4.extra["judge"]["parser_error"]  # the parser's reason is kept
    assert r4.extra["judge"]["spec"] == f"replay:{judge}"
    assert r4.extra["judge"]["prompt"].startswith("You read a model's answer")
    r3, r6 = recs["unit/003"], recs["unit/006"]
    assert (r3.status, r3.choice, r3.extra["judge"]["verdict"], r3.extra["judge"]["status"]) == (
        "unparsed",
        None,
        "none",
        "ok",
    )
    assert (r6.status, r6.extra["judge"]["verdict"], r6.extra["judge"]["status"]) == (
        "unparsed",
        None,
        "unreadable",
    )
    assert r6.extra["judge"]["reply"] == "The answer is C"
    assert "not one of A, B, C, D or none" in r6.extra["judge"]["error"]
    assert r6.error == r6.extra["judge"]["parser_error"]  # still the parser's reason
    assert "judge" not in recs["unit/000"].extra and "judge" not in recs["unit/007"].extra


def test_metrics_count_judge_answers_and_judge_free_accuracy(
    tmp_path: Path, files: tuple[Path, Path]
) -> None:
    answers, judge = files
    m = run_benchmark(_cfg(answers, judge), tmp_path / "run").metrics
    o = m["overall"]
    # Correct: 000, 001 (parser) and 005 (judge) of 9; without the judge 005 is unparsed.
    assert (o["n"], o["correct"], o["unparsed"], o["missing_response"]) == (9, 3, 3, 1)
    assert o["accuracy"] == pytest.approx(3 / 9)
    assert o["n_judge"] == 2
    assert o["judge_free_accuracy"] == pytest.approx(2 / 9)
    tasks = {r["group"]: r for r in m["by_task"]}
    # t1 = 000, 002, 004, 006, 008: only 000 correct; 004 is the judge's (wrong) answer.
    assert (tasks["task=t1"]["n_judge"], tasks["task=t1"]["accuracy"]) == (1, pytest.approx(1 / 5))
    assert tasks["task=t1"]["judge_free_accuracy"] == pytest.approx(1 / 5)
    # t2 = 001, 003, 005, 007: 001 and 005 correct; without the judge only 001.
    assert (tasks["task=t2"]["n_judge"], tasks["task=t2"]["accuracy"]) == (1, pytest.approx(2 / 4))
    assert tasks["task=t2"]["judge_free_accuracy"] == pytest.approx(1 / 4)
    j = m["judge"]
    assert (j["specs"], j["asked"], j["answered"], j["none"], j["unreadable"], j["failed"]) == (
        [f"replay:{judge}"],
        4,
        2,
        1,
        1,
        0,
    )
    free = j["judge_free"]
    assert (free["correct"], free["unparsed"], free["accuracy"]) == (2, 5, pytest.approx(2 / 9))
    assert free["ci_low"] <= 2 / 9 <= free["ci_high"]
    cfg = json.loads((tmp_path / "run" / "run.json").read_text())
    assert cfg["judge"]["spec"] == f"replay:{judge}"
    assert cfg["judge"]["identity"]["file_sha256"] and cfg["judge"]["prompt_version"] == 1


def test_exclude_policy_judge_free_denominator(tmp_path: Path, files: tuple[Path, Path]) -> None:
    from scopebench.scoring import compute_metrics

    answers, judge = files
    run_benchmark(_cfg(answers, judge), tmp_path / "run")
    m = compute_metrics(load_run(tmp_path / "run").records, benchmark="unit", policy="exclude", resamples=20)
    # Answered: 000, 001, 002, 004, 005 → 3/5; without the judge 000, 001, 002 → 2/3.
    assert m["overall"]["accuracy"] == pytest.approx(3 / 5)
    assert m["overall"]["judge_free_accuracy"] == pytest.approx(2 / 3)
    assert m["judge"]["judge_free"]["denominator"] == 3


def test_no_judge_metrics_unchanged_and_null_section(tmp_path: Path, files: tuple[Path, Path]) -> None:
    answers, _ = files
    m = run_benchmark(_cfg(answers, None), tmp_path / "run").metrics
    assert m["judge"] is None
    assert m["overall"]["n_judge"] == 0
    assert m["overall"]["judge_free_accuracy"] == m["overall"]["accuracy"] == pytest.approx(2 / 9)
    assert json.loads((tmp_path / "run" / "run.json").read_text())["judge"] is None


def test_rerun_sends_nothing(tmp_path: Path, files: tuple[Path, Path], sent: list[tuple[str, str]]) -> None:
    answers, judge = files
    first = run_benchmark(_cfg(answers, judge), tmp_path / "run")
    n = len(sent)
    again = run_benchmark(_cfg(answers, judge), tmp_path / "run")
    assert len(sent) == n == 4
    assert again.metrics["overall"] == first.metrics["overall"]


def test_resume_after_interruption_sends_nothing_twice(
    tmp_path: Path, files: tuple[Path, Path], sent: list[tuple[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    answers, judge = files
    spy = ReplayBackend.chat

    def flaky(self: ReplayBackend, conversations: Sequence[Sequence[ChatMessage]], item_ids: Sequence[str], **kw: object) -> list[Response]:  # fmt: skip
        if len(sent) >= 2:
            raise KeyboardInterrupt
        return spy(self, conversations, item_ids, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(ReplayBackend, "chat", flaky)
    cfg = _cfg(answers, judge, judge_args={"batch_size": 1})
    with pytest.raises(RunInterruptedError, match="interrupted while judging"):
        run_benchmark(cfg, tmp_path / "run")
    assert [i for i, _ in sent] == UNPARSED_SENT[:2]
    # The interrupted run still exported what it kept: two verdicts.
    kept = [json.loads(line) for line in (tmp_path / "run" / "records.jsonl").read_text().splitlines()]
    assert sum("judge" in r["extra"] for r in kept) == 2
    monkeypatch.setattr(ReplayBackend, "chat", spy)
    res = run_benchmark(cfg, tmp_path / "run")
    assert [i for i, _ in sent] == UNPARSED_SENT  # 003 and 004 were not asked again
    assert (res.metrics["overall"]["n_judge"], res.metrics["judge"]["asked"]) == (2, 4)


def test_failed_judge_calls_are_retried_by_the_next_run(
    tmp_path: Path, files: tuple[Path, Path], sent: list[tuple[str, str]]
) -> None:
    answers, _ = files
    partial = _jsonl(tmp_path / "partial.jsonl", {"unit/003": "none", "unit/004": "B"})
    res = run_benchmark(_cfg(answers, partial), tmp_path / "run")
    assert (res.metrics["judge"]["failed"], res.metrics["judge"]["answered"]) == (2, 1)
    rec = {r.item_id: r for r in load_run(tmp_path / "run").records}["unit/005"]
    assert (rec.status, rec.extra["judge"]["status"]) == ("unparsed", "error")
    assert "no reply" in rec.extra["judge"]["error"]
    n = len(sent)
    run_benchmark(_cfg(answers, partial), tmp_path / "run")
    assert [i for i, _ in sent[n:]] == ["unit/005", "unit/006"]  # only the failed calls


def test_adding_a_judge_to_a_finished_run_judges_its_unparsed_records(
    tmp_path: Path, files: tuple[Path, Path], sent: list[tuple[str, str]]
) -> None:
    answers, judge = files
    run_benchmark(_cfg(answers, None), tmp_path / "run")
    res = run_benchmark(_cfg(answers, judge), tmp_path / "run")
    assert [i for i, _ in sent] == UNPARSED_SENT
    assert res.n_new == 0 and res.metrics["overall"]["n_judge"] == 2
    assert res.metrics["overall"]["accuracy"] == pytest.approx(3 / 9)


def test_another_judge_or_none_is_refused_without_rejudge(tmp_path: Path, files: tuple[Path, Path]) -> None:
    answers, judge = files
    run_benchmark(_cfg(answers, judge), tmp_path / "run")
    other = _jsonl(tmp_path / "other.jsonl", {**VERDICTS, "unit/005": "C"})
    with pytest.raises(
        ConfigMismatchError, match=r"hold verdicts of judge 'replay:.*judge\.jsonl'.*--rejudge"
    ):
        run_benchmark(_cfg(answers, other), tmp_path / "run")
    # Same spec, changed file: another version of the judge (its identity differs).
    _jsonl(judge, {**VERDICTS, "unit/005": "C"})
    with pytest.raises(
        ConfigMismatchError, match=r"has another version of it.*one run never mixes two judges"
    ):
        run_benchmark(_cfg(answers, judge), tmp_path / "run")
    with pytest.raises(ConfigMismatchError, match="this run has no --judge"):
        run_benchmark(_cfg(answers, None), tmp_path / "run")
    # Nothing was changed by the refusals.
    assert load_run(tmp_path / "run").records[5].extra["judge"]["verdict"] == "B"


def test_rejudge_replaces_every_verdict(
    tmp_path: Path, files: tuple[Path, Path], sent: list[tuple[str, str]]
) -> None:
    answers, judge = files
    run_benchmark(_cfg(answers, judge), tmp_path / "run")
    other = _jsonl(tmp_path / "other.jsonl", {**VERDICTS, "unit/005": "C", "unit/006": "none"})
    res = run_benchmark(_cfg(answers, other), tmp_path / "run", rejudge=True)
    assert [i for i, _ in sent] == UNPARSED_SENT * 2  # every unparsed answer asked again
    # Now 004 → B (wrong) and 005 → C (wrong): 2 correct of 9, judge-free still 2 of 9.
    o = res.metrics["overall"]
    assert (o["correct"], o["n_judge"], o["judge_free_accuracy"]) == (2, 2, pytest.approx(2 / 9))
    assert res.metrics["judge"]["specs"] == [f"replay:{other}"] and res.metrics["judge"]["none"] == 2
    # --rejudge without --judge: back to the parser's verdicts, no trace of a judge.
    res = run_benchmark(_cfg(answers, None), tmp_path / "run", rejudge=True)
    assert res.metrics["judge"] is None and res.metrics["overall"]["correct"] == 2
    recs = load_run(tmp_path / "run").records
    assert all("judge" not in r.extra for r in recs)
    assert recs[4].status == "unparsed" and recs[4].error  # the parser's reason is back


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("random", "random models cannot write text"),
        ("clip:openai/clip-vit-base-patch32", "clip models cannot write text"),
        ("nosuch:x", "unknown model spec 'nosuch:x'"),
    ],
)
def test_bad_judge_refused_before_any_work(
    tmp_path: Path, files: tuple[Path, Path], spec: str, message: str
) -> None:
    answers, _ = files
    cfg = RunConfig(benchmark="unit", data="9", model=f"replay:{answers}", judge=spec)
    with pytest.raises(ModelSpecError, match=message):
        run_benchmark(cfg, tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_bad_judge_batch_size_refused(tmp_path: Path, files: tuple[Path, Path]) -> None:
    answers, judge = files
    with pytest.raises(ModelSpecError, match="batch_size must be a whole number"):
        run_benchmark(_cfg(answers, judge, judge_args={"batch_size": 0}), tmp_path / "run")


def test_judge_args_without_judge_refused(tmp_path: Path, files: tuple[Path, Path]) -> None:
    answers, _ = files
    with pytest.raises(ModelSpecError, match="add --judge SPEC"):
        run_benchmark(_cfg(answers, None, judge_args={"batch_size": 2}), tmp_path / "run")


def test_judge_is_text_only_and_takes_its_own_options(tmp_path: Path, files: tuple[Path, Path]) -> None:
    from scopebench.engine.judging import build_judge

    answers, judge = files
    cfg = _cfg(answers, judge, device="cpu", judge_args={"batch_size": 3, "labels": "numbers"})
    backend = build_judge(cfg)
    assert backend.options.no_image and backend.options.batch_size == 3 and backend.options.device == "cpu"
    assert backend.options.extra == {"labels": "numbers"}
    with pytest.raises(ModelSpecError, match="unknown --model-arg nosuch for replay"):
        build_judge(_cfg(answers, judge, judge_args={"nosuch": 1}))


def test_cli_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "d.jsonl"
    rows = [
        {"id": "q0", "question": "Which stain?", "choices": ["H&E", "IHC"], "answer": 1},
        {"id": "q1", "question": "Which organ?", "choices": ["liver", "lung"], "answer": 0},
    ]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ans = _jsonl(tmp_path / "a.jsonl", {"local/q0": "Either H&E or IHC, hard to say", "local/q1": "A"})
    jdg = _jsonl(tmp_path / "j.jsonl", {"local/q0": "B"})
    base = [
        "run",
        "--bench",
        "local",
        "--data",
        str(data),
        "--model",
        f"replay:{ans}",
        "--out",
        str(tmp_path / "r"),
    ]
    assert main([*base, "--judge", f"replay:{jdg}", "--judge-arg", "batch_size=4"]) == 0
    out = capsys.readouterr().out
    assert "judge" in out and "judge-free" in out
    # The judge-free column is printed, not cropped at the 120 columns of a log or pipe: the
    # overall row ends in the judge-free accuracy (1 of 2 without the judge).
    [row] = [line for line in out.splitlines() if line.startswith("│ overall ")]
    assert row.rstrip().endswith(" 50.0% │") and "[34.2, 100.0]" in row, row
    m = json.loads((tmp_path / "r" / "metrics.json").read_text())
    assert (m["overall"]["correct"], m["overall"]["n_judge"]) == (2, 1)
    assert m["overall"]["judge_free_accuracy"] == pytest.approx(0.5)
    md = (tmp_path / "r" / "metrics.md").read_text()
    assert "judge-free" in md and "1 answer(s) came from the answer-extraction judge" in md
    csv_head = (tmp_path / "r" / "metrics.csv").read_text().splitlines()[0]
    assert csv_head.endswith(",n_judge,judge_free_accuracy")
    # Dropping --judge on the judged run is refused with a message, no traceback.
    assert main(base) == 2
    assert "--rejudge" in capsys.readouterr().err
    assert main([*base, "--judge", "clip:x"]) == 2
    assert "cannot write text" in capsys.readouterr().err
    assert main([*base, "--judge", f"replay:{jdg}", "--judge-arg", "oops"]) == 2
    assert "--judge-arg expects key=value" in capsys.readouterr().err


def test_judge_free_nan_when_every_answer_is_the_judges(tmp_path: Path) -> None:
    from scopebench.scoring import compute_metrics

    ans = _jsonl(tmp_path / "a.jsonl", {f"unit/00{i}": "A or B" for i in range(2)})
    jdg = _jsonl(tmp_path / "j.jsonl", {"unit/000": "A", "unit/001": "B"})
    run_benchmark(
        RunConfig(benchmark="unit", data="2", model=f"replay:{ans}", judge=f"replay:{jdg}"), tmp_path / "r"
    )
    m = compute_metrics(load_run(tmp_path / "r").records, benchmark="unit", policy="exclude", resamples=20)
    assert m["overall"]["accuracy"] == 1.0 and math.isnan(m["overall"]["judge_free_accuracy"])


def test_openai_judge_is_cached_on_disk(
    tmp_path: Path, files: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from openai_server import ChatServer, request_text

    monkeypatch.setenv("SCOPEBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    answers, _ = files
    with ChatServer() as server:
        cfg = RunConfig(
            benchmark="unit",
            data="9",
            model=f"replay:{answers}",
            judge="openai:say:B",
            judge_args={"base_url": server.base_url},
        )
        res = run_benchmark(cfg, tmp_path / "run")
        sent = [request_text(e.body) for e in server.state.log]
        # Text only, one request per unparsed response, each the judge prompt of that response.
        assert [n_images for _, n_images in sent] == [0, 0, 0, 0]
        # (Requests go out concurrently: compare as sets of prompts.)
        assert sorted(text for text, _ in sent) == sorted(
            build_judge_prompt(
                f"Question {int(i[-3:])}?", [f"option {j}" for j in range(4)], ANSWERS[i], "letters"
            )
            for i in UNPARSED_SENT
        )
        # "B" for all four: 003 (answer D) and 004 (answer A) wrong, 005 (answer B) right, 006 wrong.
        assert (res.metrics["overall"]["n_judge"], res.metrics["overall"]["correct"]) == (4, 3)
        # Judging again from scratch (--rejudge) is answered by the disk cache: no request.
        again = run_benchmark(cfg, tmp_path / "run", rejudge=True)
        assert len(server.state.log) == 4
        assert again.metrics["overall"] == res.metrics["overall"]
    cfg_json = json.loads((tmp_path / "run" / "run.json").read_text())
    assert cfg_json["judge"]["identity"]["model"] == "say:B"
    assert "sk-test" not in (tmp_path / "run" / "run.json").read_text()


@pytest.mark.slow
def test_local_hf_judge_replies_are_read_strictly(tmp_path: Path, files: tuple[Path, Path]) -> None:
    pytest.importorskip("transformers")
    from scopebench.testing.tiny import build_tiny_generative

    answers, _ = files
    model = build_tiny_generative(tmp_path / "tiny", "qwen2-vl", seed=0)
    cfg = RunConfig(
        benchmark="unit",
        data="9",
        model=f"replay:{answers}",
        judge=f"hf:{model}",
        judge_args={"device": "cpu", "max_new_tokens": 4},
    )
    m = run_benchmark(cfg, tmp_path / "run").metrics
    # An untrained model's 4 tokens are no bare label: every reply is the judge's failure, kept
    # verbatim, and no answer changes.
    assert (m["judge"]["asked"], m["judge"]["unreadable"], m["overall"]["n_judge"]) == (4, 4, 0)
    assert m["overall"]["correct"] == 2 and m["overall"]["unparsed"] == 5
    recs = [r for r in load_run(tmp_path / "run").records if "judge" in r.extra]
    assert all(r.status == "unparsed" and r.extra["judge"]["reply"] for r in recs)


def test_reports_show_judge_and_judge_free_side_by_side(tmp_path: Path, files: tuple[Path, Path]) -> None:
    from rich.console import Console

    from scopebench.report import render_metrics_table, write_run_outputs
    from scopebench.report.html import build_html_report

    answers, judge = files
    run_benchmark(_cfg(answers, judge), tmp_path / "run")
    m = write_run_outputs(tmp_path / "run")
    md = (tmp_path / "run" / "metrics.md").read_text()
    assert "| judge | judge-free |" in md
    # The overall row: 33.3% with the judge, 22.2% without, 2 answers from the judge.
    [overall] = [line for line in md.splitlines() if line.startswith("| overall | overall |")]
    assert overall.startswith("| overall | overall | 9 | 33.3% | [") and overall.endswith("| 2 | 22.2% |")
    assert "2 answer(s) came from the answer-extraction judge replay:" in md
    assert "asked about 4 unparsed response(s) (1 none, 1 unreadable, 0 failed)" in md
    tex = (tmp_path / "run" / "metrics.tex").read_text()
    assert "judge & judge-free" in tex and r"22.2\%" in tex
    console = Console(width=250, record=True)
    console.print(render_metrics_table(m))
    text = console.export_text()
    assert "judge-free" in text and "22.2%" in text
    report = build_html_report([tmp_path / "run"], ReportConfig(resamples=20))
    page = report.page + "".join(report.files.values())  # the judge notes are in the item files
    assert '<th class="l">judge-free</th>' in page
    assert "answer used" in page and "answer not used" in page
    assert "The answer is C" in page  # the unreadable reply is shown, escaped
    # Without a judge the tables keep their old columns.
    run_benchmark(_cfg(answers, None), tmp_path / "plain")
    write_run_outputs(tmp_path / "plain")
    plain = (tmp_path / "plain" / "metrics.md").read_text()
    assert "judge-free" not in plain and "answer-extraction" not in plain
    assert (tmp_path / "plain" / "metrics.csv").read_text().splitlines()[0].endswith("missing_response,score")


def test_compare_warns_when_runs_differ_in_judge(tmp_path: Path, files: tuple[Path, Path]) -> None:
    from scopebench.scoring.compare import compare_runs

    answers, judge = files
    run_benchmark(_cfg(answers, judge), tmp_path / "judged")
    run_benchmark(_cfg(answers, None), tmp_path / "plain")
    result = compare_runs([tmp_path / "judged", tmp_path / "plain"], ReportConfig(resamples=20))
    [warning] = [w for w in result["warnings"] if "judge" in w]
    assert f"judged='replay:{judge}'" in warning and "plain=None" in warning
    assert "judge_free_accuracy" in warning
    same = compare_runs([tmp_path / "plain", tmp_path / "plain"], ReportConfig(resamples=20))
    assert not [w for w in same["warnings"] if "answer-extraction judge" in w]

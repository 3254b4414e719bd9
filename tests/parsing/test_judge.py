"""The judge's prompt, the strict reading of its reply, and the judge-free view of a record."""

from __future__ import annotations

import pytest

from scopebench.items import Record
from scopebench.parsing.judge import (
    JudgeVerdict,
    answered_by_judge,
    build_judge_prompt,
    judge_free,
    read_judge_reply,
)

_HEAD = (
    "You read a model's answer to a multiple-choice question and report which option the answer "
    "commits to. Do not solve the question yourself, and do not judge whether the answer is right: "
    "report only what the answer says.\n\n"
)


def test_prompt_letters_exact() -> None:
    got = build_judge_prompt(
        "Which stain?", ["H&E", "IHC", "PAS"], "Either the first or the second.", "letters"
    )
    assert got == (
        _HEAD + "Question:\nWhich stain?\n\n"
        "Options:\nA. H&E\nB. IHC\nC. PAS\n\n"
        'Model\'s answer:\n"""\nEither the first or the second.\n"""\n\n'
        "If the answer commits to exactly one option, reply with that option's letter only (A, B, C). "
        "If it commits to no option, or to more than one, reply with the single word none. "
        "Reply with nothing else."
    )


def test_prompt_numbers_use_the_runs_label_style() -> None:
    # MicroVQA's owner protocol numbers the options: the judge must see (and answer) numbers too.
    got = build_judge_prompt("Q?", ["x", "y"], "resp", "numbers")
    assert "Options:\n1. x\n2. y\n" in got
    assert "that option's number only (1, 2)" in got
    assert "A." not in got


def test_prompt_never_asks_to_solve() -> None:
    got = build_judge_prompt("Q?", ["x", "y"], "resp", "letters")
    assert "Do not solve the question yourself" in got
    # The correct answer is not an input of the prompt at all: nothing to leak.
    assert "correct" not in got.replace("whether the answer is right", "")


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("B", JudgeVerdict(1, "B")),
        ("  B\n", JudgeVerdict(1, "B")),
        ("B.", JudgeVerdict(1, "B")),
        # the space before the forgiven period goes too (it is stripped from the right)
        ("B .", JudgeVerdict(1, "B")),
        ("none .", JudgeVerdict(None, "none")),
        ("b", JudgeVerdict(1, "B")),
        ("none", JudgeVerdict(None, "none")),
        ("None.", JudgeVerdict(None, "none")),
        ("NONE", JudgeVerdict(None, "none")),
    ],
)
def test_reply_read_strictly_accepts(reply: str, expected: JudgeVerdict) -> None:
    assert read_judge_reply(reply, 4, "letters") == expected


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        ("The answer is B", "not one of A, B, C, D or none: 'The answer is B'"),
        ("(B)", "not one of A, B, C, D or none"),
        ("B or C", "not one of A, B, C, D or none"),
        ("E", "not one of A, B, C, D or none: 'E'"),  # a label that is no option of this item
        ("2", "not one of A, B, C, D or none"),  # a number where letters were asked
        ("", "the judge's reply is empty"),
        (None, "the judge's reply is empty"),
        ("B..", "not one of"),  # only one trailing period is forgiven
    ],
)
def test_reply_anything_else_is_the_judges_failure(reply: str | None, error: str) -> None:
    got = read_judge_reply(reply, 4, "letters")
    assert (got.index, got.verdict) == (None, None)
    assert got.error is not None and error in got.error


def test_reply_numbers() -> None:
    assert read_judge_reply("3", 3, "numbers") == JudgeVerdict(2, "3")
    assert read_judge_reply("4", 3, "numbers").verdict is None
    assert read_judge_reply("C", 3, "numbers").verdict is None


def _judged(correct: bool) -> Record:
    return Record(
        "a",
        "m",
        "ok",
        choice=1,
        correct=correct,
        response="A or B",
        answer_index=1 if correct else 0,
        extra={
            "answer_method": "judge",
            "parse_method": "none",
            "judge": {"spec": "replay:j", "verdict": "B", "status": "ok", "parser_error": "several options"},
        },
    )


def test_judge_free_restores_the_parsers_verdict() -> None:
    rec = _judged(True)
    free = judge_free(rec)
    assert (free.status, free.choice, free.correct, free.error) == ("unparsed", None, None, "several options")
    assert free.extra["answer_method"] == "parser"
    assert free.extra["judge"]["verdict"] == "B"  # the judge's reply stays visible
    assert rec.status == "ok" and rec.extra["answer_method"] == "judge"  # the input is not mutated
    assert answered_by_judge(rec) and not answered_by_judge(free)


def test_judge_free_without_the_parsers_reason_says_no_option_chosen() -> None:
    # A judged record stored without ``parser_error`` (the parser found nothing to go on) goes
    # back to the parser's own wording, not to an empty or altered reason.
    rec = _judged(False)
    rec.extra["judge"] = {"spec": "replay:j", "verdict": "B", "status": "ok"}
    free = judge_free(rec)
    assert (free.status, free.choice, free.error) == ("unparsed", None, "no option chosen")


def test_judge_free_leaves_parser_records_alone() -> None:
    rec = Record("a", "m", "ok", choice=0, correct=True, extra={"answer_method": "parser"})
    assert judge_free(rec) is rec
    none = Record(
        "b", "m", "unparsed", error="x", extra={"answer_method": "parser", "judge": {"verdict": "none"}}
    )
    assert judge_free(none) is none


def test_a_long_reply_is_quoted_up_to_80_characters() -> None:
    exact = "x" * 80
    assert read_judge_reply(exact, 4, "letters").error == (
        f"the judge's reply is not one of A, B, C, D or none: {exact!r}"
    )
    longer = "y" * 81  # 79 characters and an ellipsis: 80 in all
    assert read_judge_reply(longer, 4, "letters").error == (
        f"the judge's reply is not one of A, B, C, D or none: {'y' * 79 + '…'!r}"
    )


def test_an_empty_reply_says_exactly_that() -> None:
    assert read_judge_reply(" . ", 4, "letters") == JudgeVerdict(None, None, "the judge's reply is empty")

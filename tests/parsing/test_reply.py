"""What the engine knows about a reply, applied before the rules: echoes, cuts, loops."""

from __future__ import annotations

import pytest

from scopebench.parsing import parse_choice
from scopebench.parsing._reply import collapse_repeats, drop_cut_fragment, strip_echo

FOUR = ("Whorled pattern", "Spindle cells", "Rosette formation", "Necrosis")
PROMPT = (
    "Question: What is seen?\nOptions:\nA) Whorled pattern\nB) Spindle cells\nC) Rosette formation\n"
    "D) Necrosis\nAnswer with the letter of the correct option (A, B, C, D) only."
)


@pytest.mark.parametrize(
    "reply",
    [
        f"USER: <image>\n{PROMPT} ASSISTANT: C",
        f"{PROMPT}\nASSISTANT: C",
        f"<|im_start|>user\n{PROMPT}<|im_end|>\n<|im_start|>assistant\nC",
        "<|im_start|>assistant\nC",
        " ".join(PROMPT.split()) + " C",  # whitespace collapsed
        PROMPT.replace("Options:", "**Options:**") + "\n\nC",  # markdown added
        f"[INST] {PROMPT} [/INST] C",
        f"### Human: {PROMPT}\n### Assistant: The answer is C.",
    ],
)
def test_echoed_prompt_is_read_after_the_echo(reply: str) -> None:
    # Catches: the echoed options read as a list of labels (none) or the echoed "A)" read as A.
    assert parse_choice(reply, FOUR, prompt=PROMPT).index == 2


def test_echo_with_nothing_after_it_commits_to_nothing() -> None:
    # Catches: an echoed prompt read as its first option; the reason says what happened.
    got = parse_choice(f"USER: {PROMPT}\nASSISTANT:", FOUR, prompt=PROMPT)
    assert got.index is None and got.reason == "the reply only repeats the prompt"


def test_reply_that_only_resembles_the_prompt_is_untouched() -> None:
    # Catches: an over-eager echo match eating a reply that merely starts like the question.
    reply = "Question: What is seen? The answer is B."
    assert strip_echo(reply, PROMPT) == reply
    assert strip_echo("The answer is B.", PROMPT) == "The answer is B."


def test_a_user_turn_without_an_assistant_turn_is_no_reply() -> None:
    # Catches: a repeated user turn (the model never answered) read as an answer.
    assert strip_echo(f"USER: {PROMPT}", None) == ""


@pytest.mark.parametrize(
    ("reply", "kept"),
    [
        ("The answer is C. The cells form rosettes and the", "The answer is C."),
        ("A) no.\nB) no.\nC) Rosette", "A) no.\nB) no.\n"),
        ("C) Rosette formation is the", "C) Rosette formation is the"),  # nothing finished: kept
    ],
)
def test_drop_cut_fragment(reply: str, kept: str) -> None:
    # Catches: the cut sentence kept ("The answer is C" from "… Cholangio…") or a whole reply dropped.
    assert drop_cut_fragment(reply) == kept


def test_cut_reply_reads_only_an_explicit_verdict() -> None:
    # Catches: elimination on a cut walk-through, and a cut verdict sentence read as an answer.
    walk = (
        "A) Whorled pattern: not seen.\nB) Spindle cells: unlikely.\nD) Necrosis: absent.\nRosette formation"
    )
    assert parse_choice(walk, FOUR).index == 2  # finished: option text, as before
    cut = parse_choice(walk, FOUR, finish_reason="length")
    assert cut.index is None and "max_new_tokens" in cut.reason
    assert parse_choice("The answer is B. Then A) is", FOUR, finish_reason="length").index == 1
    # The unfinished sentence may have gone on ("the answer is C" from "… Cholangio…"): not read.
    assert parse_choice("Necrosis is absent. The answer is C", FOUR, finish_reason="length").index is None
    # A reply with no finished sentence at all is read whole (a budget of one token: "C").
    assert parse_choice("C", FOUR, finish_reason="length").index == 2


@pytest.mark.parametrize(
    ("reply", "index"),
    [
        ("A\nA\nA\nA\nA", 0),
        ("C) Rosette formation\nC) Rosette formation\nC) Rosette formation", 2),
        (" ".join(["A. Whorled pattern B. Spindle cells C. Rosette formation D. Necrosis"] * 3), None),
        ("A B C D A B C D A B C D", None),
    ],
)
def test_degenerate_loops(reply: str, index: int | None) -> None:
    # Catches: "A\nA\nA" missed as a list of labels, and the options echoed on one line read as A.
    assert parse_choice(reply, FOUR).index == index


def test_collapse_repeats_keeps_different_lines() -> None:
    # Catches: a list of different labels collapsed to its first.
    assert collapse_repeats("A\nB\nA") == "A\nB\nA"
    assert collapse_repeats("B\n\n  B  \nB") == "B"

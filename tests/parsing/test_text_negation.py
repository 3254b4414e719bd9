"""Ruling-out words and hypotheses (parsing/_text.py: ``_is_negation`` and ``ClauseIndex``).

Guards which words make an option's mention a ruling-out ("rule out X", "can't be X", "X rather
than differential interference contrast") and which clauses before an answer phrase keep it from
committing ("If the cells were larger, I would say C") — read through :func:`parse_choice`, the
way a user's reply is. Each row names the mutants it kills.
"""

from __future__ import annotations

import pytest

from scopebench.parsing import parse_choice
from scopebench.parsing._text import _cues, _is_negation

TUMOURS = ["Lymphoma", "Adenocarcinoma", "Carcinoid tumour", "Melanoma"]
MICROSCOPY = ["Phase contrast", "Differential interference contrast", "Fluorescence", "Dark field"]
FOUR = ["Whorled pattern", "Spindle cells", "Rosette formation", "Necrosis"]


@pytest.mark.parametrize(
    ("response", "choices", "index", "why"),
    [
        # _is_negation 9 (i > 0 or …): any "differential" after a mention ruled it out
        (
            "Phase contrast rather than differential interference contrast.",
            MICROSCOPY,
            0,
            "'differential' opening an option's own text is no 'in the differential'",
        ),
        # _is_negation 11 (i > 1): "The differential" opening the reply was not seen
        (
            "The differential was considered, as was melanoma, but adenocarcinoma fits best.",
            TUMOURS,
            1,
            "'as was melanoma' shares the differential's open status: not the verdict",
        ),
        # _is_negation 21 (i > 1): "Can't" opening the reply was not a negation
        ("Can't be lymphoma. Adenocarcinoma fits best.", TUMOURS, 1, "a reply opening with 'Can't'"),
        # _is_negation 28-30, 33-35: "rule out" as written, the particle after the verb
        (
            "We can rule out lymphoma; adenocarcinoma fits best.",
            TUMOURS,
            1,
            "'rule out X' rules X out",
        ),
        # _is_negation 32 (i > 1): "out" as the second token of the reply
        (
            "Ruling out lymphoma, adenocarcinoma is the best fit.",
            TUMOURS,
            1,
            "'Ruling out X' opening the reply",
        ),
        # _is_negation 26/27/28: "rule in" is the opposite of "rule out"
        (
            "The glands and mucin rule in adenocarcinoma.",
            TUMOURS,
            1,
            "'rule in X' affirms X",
        ),
        # _is_negation 27/35: "out" without a rule verb
        (
            "Adenocarcinoma stands out as the best fit.",
            TUMOURS,
            1,
            "'stands out' is no ruling-out",
        ),
    ],
)
def test_ruling_out_words(response: str, choices: list[str], index: int, why: str) -> None:
    got = parse_choice(response, choices)
    assert (got.index, got.method) == (index, "option_text"), why


def test_first_token_has_no_left_neighbour() -> None:
    # _is_negation 10, 20, 31 (i >= 0): at token 0, tokens[i - 1] is the reply's LAST token.
    # Tested on the helper: a public reply must open with "differential"/"t"/"out" and end with
    # a determiner/contraction stem/rule verb, which no reply shape we know does.
    assert not _is_negation(["differential", "contrast", "the"], 0, _cues().after)
    assert not _is_negation(["t", "cells", "isn"], 0, _cues().before)
    assert not _is_negation(["out", "of", "rule"], 0, _cues().before)
    # ...while the same words after their neighbour are negations
    assert _is_negation(["in", "the", "differential"], 2, _cues().after)
    assert _is_negation(["isn", "t", "lymphoma"], 1, _cues().before)
    assert _is_negation(["rule", "out", "lymphoma"], 1, _cues().before)


@pytest.mark.parametrize(
    ("response", "index", "why"),
    [
        # ClauseIndex.__init__ 13/16/17 (clause starts for sentences): a hypothesis two clauses back
        (
            "If the cells were larger, in my view, I would say C.",
            None,
            "the 'If' reaches across both commas to the end of its sentence",
        ),
        # not_asserted 15 (sentences[idx - 2]) and 21 (range(idx)): a hypothesis in the sentence
        # before does not reach this one
        (
            "If the stain were negative, it would be A. So the answer is B.",
            1,
            "the earlier sentence's 'If' does not condition 'So the answer is B'",
        ),
        (
            "If the cells were larger, necrosis would fit. Here they are small and the answer is B.",
            1,
            "the same, with the 'If' further back",
        ),
        # not_asserted 31 (tokens[idx - 2]): the clause gap was looked for one token too early
        (
            "The nuclei are round. Unlikely the answer is A; it is B.",
            1,
            "'Unlikely' opening the sentence negates the phrase right after it",
        ),
        # _conditional 4 (i > 0 or …): an "if" not opening the reply was never a hypothesis
        ("Well, if the cells were larger, I would say C.", None, "a hypothesis after 'Well,'"),
        # _conditional 5 (i >= 0): values[-1] ("of", the reply's last word) taken as the word
        # before the opening "If", which made it a concession ("even if")
        (
            "If the nuclei were larger, I would say C. They are small, so the answer is B, which I am most sure of.",
            1,
            "the opening 'If' has no word before it",
        ),
        # _conditional 16 (unless or …): every "if I" was taken as "unless I"
        ("If I saw mitoses, I would say C.", None, "'If I saw' is a hypothesis"),
        # _conditional 27/29: "If forced to choose" is a way of choosing, not a hypothesis
        ("If forced to choose, I would say C.", 2, "'If forced to choose' commits"),
        # _conditional 30 (… or after[1] in _FORCED_I): "were" without "I" is a hypothesis
        ("If it were larger, I would say C.", None, "'If it were' is a hypothesis"),
        # _conditional 42 (… or after[1] in _LOOKING): "review" after any word was a way of choosing
        ("If further review shows mitoses, I would say C.", None, "a hypothesis about a review"),
        # _conditional 50/51 ("you") and 52/53 ("one"): the other subjects of a way of looking. "one"
        # matches only with the verb's bare form (see the report: "If one looks" is a known miss)
        ("If you look closely, the answer is C.", 2, "'If you look closely' commits"),
        ("If one look closely, the answer is C.", 2, "'If one look closely' commits"),
    ],
)
def test_hypotheses_before_an_answer_phrase(response: str, index: int | None, why: str) -> None:
    got = parse_choice(response, FOUR)
    assert got.index == index, f"{why} | {got.method}: {got.reason}"

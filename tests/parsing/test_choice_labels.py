"""Exact readings of replies decided by a label: whole-response, first-line and leading labels.

Guards the label rules of :mod:`scopebench.parsing.choice` (``_bare_label``, ``_first_line_label``
and ``_first_line_rule``, ``_leading_label`` with ``_leading_kinds`` and ``_number_dash``), the lone
labels and introductory clauses of ``_lone_commits``, the label test after an answer phrase
(``_accepts``), ordinals past the last option (``_ordinal_label``) and the early returns of
``parse_choice``. Each row asserts the whole :class:`ParseResult` a user sees — index, method and
reason — because the slips these tests catch mostly change
only the method or the reason, which reports print next to every unparsed reply.
"""

from __future__ import annotations

import pytest

from scopebench.parsing.choice import LabelStyle, ParseResult, parse_choice

#: A brain-tumour item: four histological patterns.
TUMOUR = ["Rosette formation", "Whorled pattern", "Palisading necrosis", "Psammoma bodies"]
#: A MicroVQA-style item, read with number labels (its owner protocol).
CELLS = [
    "Increased glycolysis",
    "Reduced mitochondrial membrane potential",
    "Nuclear envelope rupture",
    "Autophagy induction",
]
#: Statement-combination options ("which statements are true?"), as exam items write them.
STATEMENTS = ["Only I", "I and II", "II and III", "I, II and III"]


def _result(index: int | None, method: str, reason: str) -> ParseResult:
    return ParseResult(index, method, reason)


@pytest.mark.parametrize(
    ("reply", "choices", "expected", "why"),
    [
        (
            "C",
            [],
            _result(None, "none", "no options to choose from"),
            "an item without options says so, whatever the reply",
        ),
        (
            "**",
            TUMOUR,
            _result(None, "none", "empty response"),
            "a reply of markdown only is empty once cleaned (the second empty check, after clean)",
        ),
    ],
)
def test_nothing_to_read_says_why(reply: str, choices: list[str], expected: ParseResult, why: str) -> None:
    assert parse_choice(reply, choices) == expected, why


@pytest.mark.parametrize(
    ("reply", "choices", "labels", "expected", "why"),
    [
        (
            "The answer is B... no, (C).",
            TUMOUR,
            "letters",
            _result(2, "answer_phrase", "answer phrase names C"),
            "a bracketed lone label after a change of mind is read from its own group, at its own place",
        ),
        (
            "The TMRM signal drops in the treated cells. So, 02.",
            CELLS,
            "numbers",
            _result(1, "answer_phrase", "answer phrase names 2"),
            "a zero-padded lone number is the option 2, the same label 'So' commits to, not a second one",
        ),
        (
            "The answer is B. Wait. After careful consideration, C.",
            TUMOUR,
            "letters",
            _result(2, "answer_phrase", "answer after the self-correction 'Wait' names C"),
            "the introductory clause's label stands after 'Wait', so it replaces B; placed at 0 it would "
            "come before the marker and the answer would read as withdrawn",
        ),
        (
            "After careful consideration, C. Whorled pattern.",
            TUMOUR,
            "letters",
            _result(None, "answer_phrase", "label C is followed by the text of option B"),
            "a label after an introductory clause followed by another option's text contradicts itself",
        ),
        (
            "All things considered, C. Perhaps not.",
            TUMOUR,
            "letters",
            _result(None, "none", "no option committed to"),
            "a label doubted at once commits to nothing (and the doubt is no crash)",
        ),
    ],
)
def test_lone_labels_and_introductory_clauses(
    reply: str, choices: list[str], labels: LabelStyle, expected: ParseResult, why: str
) -> None:
    assert parse_choice(reply, choices, labels=labels) == expected, why


@pytest.mark.parametrize(
    ("reply", "choices", "labels", "expected", "why"),
    [
        (
            "The answer is the fifth option.",
            TUMOUR,
            "letters",
            _result(None, "none", "no option committed to"),
            "an ordinal past the last of four options names no option (not E out of range)",
        ),
        (
            "The answer is the fifth option.",
            CELLS,
            "numbers",
            _result(None, "none", "no option committed to"),
            "the same with number labels",
        ),
        (
            "The answer is the fourth option.",
            TUMOUR,
            "letters",
            _result(3, "answer_phrase", "answer phrase names D"),
            "the last option by its ordinal is still read",
        ),
    ],
)
def test_ordinals_past_the_options_name_nothing(
    reply: str, choices: list[str], labels: LabelStyle, expected: ParseResult, why: str
) -> None:
    assert parse_choice(reply, choices, labels=labels) == expected, why


@pytest.mark.parametrize(
    ("reply", "expected", "why"),
    [
        (
            "The answer is C based on the pattern seen.",
            _result(2, "answer_phrase", "answer phrase names C"),
            "an upper-case label other than A or I followed by an ordinary word is the answer",
        ),
        (
            "Answer: A diagnosis of meningioma is favoured, given the whorled pattern.",
            _result(1, "option_text", "text of option B found"),
            "'A' before a word is the article, so the reply is read by its option text, never as A",
        ),
        (
            "Answer: I think it is B.",
            _result(1, "answer_phrase", "answer phrase names B"),
            "'I' before a word is the pronoun, not a ninth option next to B",
        ),
    ],
)
def test_a_label_followed_by_a_word_after_an_answer_phrase(
    reply: str, expected: ParseResult, why: str
) -> None:
    assert parse_choice(reply, TUMOUR) == expected, why


@pytest.mark.parametrize(
    ("reply", "expected", "why"),
    [
        (
            "- C",
            _result(2, "bare_label", "whole response names C"),
            "a bulleted label is still the whole reply",
        ),
        (
            "Okay, definitely C.",
            _result(2, "bare_label", "whole response names C"),
            "a filler word after an interjection is skipped from where the interjection ended",
        ),
        (
            "Hmm, perhaps C?",
            _result(2, "bare_label", "whole response names C"),
            "a tentative word after an interjection makes the question mark a hedge, not a question",
        ),
        (
            "- Hmm, perhaps C?",
            _result(2, "bare_label", "whole response names C"),
            "bullet, interjection and tentative word: each read from where the one before ended",
        ),
        (
            "C? Probably.",
            _result(2, "bare_label", "label asked and confirmed names C"),
            "a label asked and then confirmed is the answer, with its own reason",
        ),
        (
            "Perhaps A or C?",
            _result(None, "none", "no option committed to"),
            "two labels asked, even tentatively, are a question: no rule reads them, not 'several named'",
        ),
    ],
)
def test_the_whole_reply_is_a_label(reply: str, expected: ParseResult, why: str) -> None:
    assert parse_choice(reply, TUMOUR) == expected, why


@pytest.mark.parametrize(
    ("reply", "choices", "expected", "why"),
    [
        (
            " B\nThe spindle cells are arranged in concentric layers.",
            TUMOUR,
            _result(1, "leading_label", "response starts with label B"),
            "a first line that is only a label, after a leading space many APIs return",
        ),
        (
            "B\nThe other options are less likely, especially C.",
            TUMOUR,
            _result(None, "leading_label", "starts with label B but ends with C"),
            "a reply that opens on B and ends on a bare C changed its mind without a marker",
        ),
        (
            "B, I and II\nStatement III does not apply here.",
            STATEMENTS,
            _result(1, "option_text", "text of option B found"),
            "'B, I' reads as two labels, so the first line is no lone label; B is read by its text",
        ),
    ],
)
def test_a_label_alone_on_the_first_line(
    reply: str, choices: list[str], expected: ParseResult, why: str
) -> None:
    assert parse_choice(reply, choices) == expected, why


@pytest.mark.parametrize(
    ("reply", "choices", "labels", "expected", "why"),
    [
        (
            " C) The tumour cells line up around a necrotic focus.",
            TUMOUR,
            "letters",
            _result(2, "leading_label", "response starts with label C"),
            "a leading label after a leading space",
        ),
        (
            "Option C - the cells line up around the necrotic focus.",
            TUMOUR,
            "letters",
            _result(2, "leading_label", "response starts with label C"),
            "'Option C' (a keyword label) opens an answer",
        ),
        (
            "(C) The cells line up around the necrotic focus, as in option C.",
            TUMOUR,
            "letters",
            _result(2, "leading_label", "response starts with label C"),
            "ending on the same label as the opening one is no change of mind",
        ),
        (
            "E. None of the listed patterns is convincing here.",
            TUMOUR,
            "letters",
            _result(None, "leading_label", "letter E out of range for 4 options"),
            "an opening label past the options, with no option text to go on, is reported as such",
        ),
        (
            "I. Observations\nThe cells line up around a necrotic focus.",
            TUMOUR,
            "letters",
            _result(None, "leading_label", "letter I out of range for 4 options"),
            "a Roman-numeral heading is no answer either",
        ),
        (
            "B. Actually no, I'm not sure.",
            TUMOUR,
            "letters",
            _result(None, "leading_label", "label withdrawn after 'Actually' with no new one"),
            "an opening label withdrawn at once",
        ),
        (
            "C) Whorled pattern.\nThe cells line up around necrosis.",
            TUMOUR,
            "letters",
            _result(None, "leading_label", "label C is followed by the text of option B"),
            "an opening label followed by another option's text contradicts itself",
        ),
        (
            "2 - a drop in the TMRM signal is visible in the treated cells.",
            CELLS,
            "numbers",
            _result(1, "leading_label", "response starts with label 2"),
            "a number, a dash, then a one-letter word: an answer with its reason, not a range",
        ),
    ],
)
def test_a_reply_that_starts_with_a_label(
    reply: str, choices: list[str], labels: LabelStyle, expected: ParseResult, why: str
) -> None:
    assert parse_choice(reply, choices, labels=labels) == expected, why

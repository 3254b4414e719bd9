"""Option texts, enumerations and contradictions in ``parse_choice`` (parsing/choice.py).

Guards the helpers that decide whether a label is really the start of an option's text ("B.
subtilis", "B cells"), whether a reply walks through the options rather than answering, whether a
label contradicts the text after it or the label at the reply's end, and how option text alone is
read (set-aside options, mislabelled mentions, indecision, the specific verdict). Each row is a
reply a VLM writes to a pathology/microscopy question and the exact result a user reads: the
index, the rule (``method``) and its ``reason``. The rows were written against mutation testing
(``make mutation``, bench/RESULTS.md): each one fails under at least one mutant that the earlier
tests let survive.
"""

from __future__ import annotations

import pytest

from scopebench.parsing import parse_choice
from scopebench.parsing.choice import LabelStyle

FOUR = ("Adenocarcinoma", "Fibrosis", "Granuloma", "Necrosis")
# The longest option has three words, so a label is read with four words after it.
LONG = ("Squamous cell carcinoma", "Fibrosis", "Granuloma", "Necrosis")
STAINS = ("Nuclear", "Cytoplasmic", "Membranous", "Mitochondrial")
XANTHO = ("Xanthogranulomatous inflammation", "Xanthoma", "Granuloma", "Necrosis")
# Species whose abbreviated genus looks like a punctuated label ("B. subtilis").
SPECIES = ("C. albicans", "E. coli", "S. aureus", "B. subtilis")
CELLS = ("B cells", "T cells", "NK cells", "Macrophages")
CARCINOMAS = ("Carcinoma", "Small cell carcinoma", "Lymphoma", "Sarcoma")

Row = tuple[str, tuple[str, ...], LabelStyle, int | None, str, str, str]


def _check(
    reply: str,
    choices: tuple[str, ...],
    labels: LabelStyle,
    index: int | None,
    method: str,
    reason: str,
    why: str,
) -> None:
    got = parse_choice(reply, choices, labels=labels)
    assert (got.index, got.method, got.reason) == (index, method, reason), why


ANSWER_PHRASES: list[Row] = [
    (
        "The answer is B. Actually wait. C? Yes.",
        FOUR,
        "letters",
        2,
        "answer_phrase",
        "answer after the self-correction 'Actually' names C",
        "C asked after the marker and confirmed: its place is after 'Actually', not the reply's start",
    ),
    (
        "The answer is B. Actually wait. (C)? Yes.",
        FOUR,
        "letters",
        2,
        "answer_phrase",
        "answer after the self-correction 'Actually' names C",
        "the bracketed form: the position of the '(C)' group, not of the bare one",
    ),
    (
        "The answer is 4. 04? Yes.",
        STAINS,
        "numbers",
        3,
        "answer_phrase",
        "answer phrase names 4",
        "a zero-padded asked number is the same label as 4, not a second option",
    ),
    (
        "E (none of the above) is the most likely answer.",
        FOUR,
        "letters",
        None,
        "leading_label",
        "letter E out of range for 4 options",
        "a gloss after an out-of-range label is not its own text: no answer phrase, rule 4 reports E",
    ),
    (
        "The answer is adenocarcinoma or a granuloma.",
        FOUR,
        "letters",
        None,
        "answer_phrase",
        "several options named: A, C",
        "the article after 'or' is skipped, so the second option's text is an alternative",
    ),
    (
        "The answer is granuloma and the adjacent fibrosis is reactive.",
        FOUR,
        "letters",
        2,
        "answer_phrase",
        "answer phrase names C",
        "an option's text later in the clause after 'and the ...' is no alternative to the answer",
    ),
    (
        "The answer is B cells",
        CELLS,
        "letters",
        0,
        "answer_phrase",
        "answer phrase names A",
        "'B cells' is option A's text, not label B; the reply has no clause end",
    ),
    (
        "The answer is C with fibrosis around it.",
        LONG,
        "letters",
        2,
        "answer_phrase",
        "answer phrase names C",
        "option text a few words after the label does not make the label an option's first word",
    ),
]


@pytest.mark.parametrize(("reply", "choices", "labels", "index", "method", "reason", "why"), ANSWER_PHRASES)
def test_answer_phrase_labels_against_option_texts(
    reply: str,
    choices: tuple[str, ...],
    labels: LabelStyle,
    index: int | None,
    method: str,
    reason: str,
    why: str,
) -> None:
    _check(reply, choices, labels, index, method, reason, why)


LEADING_LABELS: list[Row] = [
    (
        "C. Fibrosis",
        FOUR,
        "letters",
        None,
        "leading_label",
        "label C is followed by the text of option B",
        "the '. ' after the label is skipped before the text is compared",
    ),
    (
        "C) Xanthoma",
        XANTHO,
        "letters",
        None,
        "leading_label",
        "label C is followed by the text of option B",
        "only separators are skipped after the label, never an option's first letter",
    ),
    (
        "C) Fibrosis. The stroma is dense.",
        LONG,
        "letters",
        None,
        "leading_label",
        "label C is followed by the text of option B",
        "the text after the label is compared up to its clause end",
    ),
    (
        "B. subtilis - the endospores are typical.",
        SPECIES,
        "letters",
        3,
        "option_text",
        "text of option D found",
        "'B.' opens the species name of option D; it is not label B",
    ),
    (
        "B\nE. Further workup is needed.",
        FOUR,
        "letters",
        1,
        "leading_label",
        "response starts with label B",
        "an out-of-range 'E.' line is no second label with its own text: B on the first line stands",
    ),
    (
        "C) Granuloma. The mitotic count is 12.",
        FOUR,
        "letters",
        2,
        "leading_label",
        "response starts with label C",
        "a number ending a reply in letters is no second label",
    ),
    (
        "D) Necrosis, not B.",
        FOUR,
        "letters",
        3,
        "leading_label",
        "response starts with label D",
        "the closing label is denied ('not B'), not chosen",
    ),
    (
        "D) Necrosis is more likely than B.",
        FOUR,
        "letters",
        3,
        "leading_label",
        "response starts with label D",
        "'than B' denies B: the word right before the label's separator counts",
    ),
    (
        "(2) Diffuse signal in the cell body, 3.",
        STAINS,
        "numbers",
        None,
        "leading_label",
        "starts with label 2 but ends with 3",
        "numbers: a reply opening on 2 and closing on 3 names neither",
    ),
    (
        "(2) The staining is cytoplasmic, as in 02.",
        STAINS,
        "numbers",
        1,
        "leading_label",
        "response starts with label 2",
        "a zero-padded closing number is the same label as the opening one",
    ),
    (
        "B) Dense collagen fills the stroma, B.",
        FOUR,
        "letters",
        1,
        "leading_label",
        "response starts with label B",
        "the same letter at both ends is one answer",
    ),
]


@pytest.mark.parametrize(("reply", "choices", "labels", "index", "method", "reason", "why"), LEADING_LABELS)
def test_leading_label_against_its_text_and_the_closing_label(
    reply: str,
    choices: tuple[str, ...],
    labels: LabelStyle,
    index: int | None,
    method: str,
    reason: str,
    why: str,
) -> None:
    _check(reply, choices, labels, index, method, reason, why)


# A reply that walks through labels at line starts (or names several inline) is no leading-label
# answer; these are then read by option text (rule 7), which users see as method "option_text".
WALKS: list[Row] = [
    (
        "B. Fibrosis fits best.\n- A. no glands\n- C. no giant cells",
        FOUR,
        "letters",
        1,
        "option_text",
        "text of option B found",
        "labels after '- ' bullets count as walked",
    ),
    (
        "(b) Fibrosis fits best.\n(a) no glands\n(c) no giant cells",
        FOUR,
        "letters",
        1,
        "option_text",
        "text of option B found",
        "lower-case bracketed labels at line starts (the inline pattern knows only upper case)",
    ),
    (
        "[B] Fibrosis fits best.\n[A] no glands\n[C] no giant cells",
        FOUR,
        "letters",
        1,
        "option_text",
        "text of option B found",
        "square-bracketed labels at line starts",
    ),
    (
        "b) Fibrosis fits best.\na) no glands\nc) no giant cells",
        FOUR,
        "letters",
        1,
        "option_text",
        "text of option B found",
        "lower-case closed labels at line starts",
    ),
    (
        "(2) Cytoplasmic staining fits.\nChoice #1: no nuclear signal.\nChoice #3: no membrane signal.",
        STAINS,
        "numbers",
        1,
        "option_text",
        "text of option 2 found",
        "'Choice #N:' lines (keyword labels the inline pattern does not read)",
    ),
    (
        "(2) Cytoplasmic staining fits; option 3 and option 4 do not.",
        STAINS,
        "numbers",
        1,
        "option_text",
        "text of option 2 found",
        "numbers named inline as 'option N'",
    ),
    (
        "(B) Fibrosis fits, unlike (A), and (C) would show giant cells.",
        FOUR,
        "letters",
        1,
        "option_text",
        "text of option B found",
        "a contrasted '(A)' is skipped, but the '(C)' after it is still walked",
    ),
    (
        "(03) The staining is membranous.",
        STAINS,
        "numbers",
        2,
        "leading_label",
        "response starts with label 3",
        "a zero-padded label read at the line start and inline is one label, not a walk",
    ),
]


@pytest.mark.parametrize(("reply", "choices", "labels", "index", "method", "reason", "why"), WALKS)
def test_walks_through_labels_are_no_leading_answer(
    reply: str,
    choices: tuple[str, ...],
    labels: LabelStyle,
    index: int | None,
    method: str,
    reason: str,
    why: str,
) -> None:
    _check(reply, choices, labels, index, method, reason, why)


OPTION_TEXTS: list[Row] = [
    (
        "Features of granuloma or necrosis overlap considerably here.",
        FOUR,
        "letters",
        None,
        "option_text",
        "options named only to be ruled out: C, D",
        "Y joined by 'or' to a described X is set aside too; the reason lists both",
    ),
    (
        "Neither granuloma nor\nnecrosis is present.",
        FOUR,
        "letters",
        None,
        "option_text",
        "options named only to be ruled out: C, D",
        "a hard-wrapped line after 'nor': Y is joined to the set-aside X, not a new clause's verdict",
    ),
    (
        "The stroma shows dense fibrosis (C).",
        FOUR,
        "letters",
        None,
        "option_text",
        "text of option B is labelled C",
        "option B's text labelled C contradicts itself",
    ),
    (
        "Fibrosis is absent; the stroma shows necrosis (C).",
        FOUR,
        "letters",
        None,
        "option_text",
        "text of option D is labelled C",
        "a mention without a label does not end the search for a mislabelled one",
    ),
    (
        "Fibrosis (2) is minimal; the dominant change is necrosis (C).",
        FOUR,
        "letters",
        None,
        "option_text",
        "text of option D is labelled C",
        "a number in brackets is no letter label, and the search goes on past it",
    ),
    (
        "The signal is cytoplasmic (03).",
        STAINS,
        "numbers",
        None,
        "option_text",
        "text of option 2 is labelled 3",
        "numbers: the label in brackets is read as a number",
    ),
    (
        "The stroma shows fibrosis (option b).",
        FOUR,
        "letters",
        1,
        "option_text",
        "text of option B found",
        "option B's text with its own label (any case) is option B",
    ),
    (
        "Either fibrosis or necrosis.",
        FOUR,
        "letters",
        None,
        "option_text",
        "option text with indecision ('Either')",
        "the reason quotes the word of indecision",
    ),
    (
        "This is a carcinoma, specifically small cell carcinoma.",
        CARCINOMAS,
        "letters",
        1,
        "option_text",
        "option B named as the specific verdict",
        "the specific verdict's reason names its letter",
    ),
]


@pytest.mark.parametrize(("reply", "choices", "labels", "index", "method", "reason", "why"), OPTION_TEXTS)
def test_option_text_set_aside_mislabelled_and_specific(
    reply: str,
    choices: tuple[str, ...],
    labels: LabelStyle,
    index: int | None,
    method: str,
    reason: str,
    why: str,
) -> None:
    _check(reply, choices, labels, index, method, reason, why)

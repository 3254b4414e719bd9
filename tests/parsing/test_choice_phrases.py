"""Answer tags, answer phrases and what follows them: the exact reading a user gets.

Guards rule 1 of :mod:`scopebench.parsing.choice` as the parser's own functions see it:
``_answer_markers`` (tags, and the opening label joining the phrases), ``_phrase_commits`` (every
kind of phrase and where its commitment is placed), ``_read_answer`` (the label, filler, ordinal
or option text after a phrase) and ``_text_then_label`` ("rosette formation (option C)"). Each
row asserts the index, the rule (``method``) and the ``reason`` a report shows, and its ``why``
names the slip it catches; the numbers in brackets are the mutmut mutants of that function it
kills (the mutation-testing figures are in bench/RESULTS.md).
"""

from __future__ import annotations

import pytest

from scopebench.parsing import LabelStyle, parse_choice

TISSUE = ["Fibrosis", "Necrosis", "Rosette formation", "Whorled pattern"]
ORGANELLES = ["Mitochondria", "Nuclear envelope", "Golgi apparatus", "Endoplasmic reticulum"]
KARYOTYPES = ["Turner syndrome", "Normal female", "Klinefelter syndrome", "Triple X syndrome"]
PANELS = [
    "Panel A shows more signal than Panel B",
    "Panel B shows a decrease relative to Panel A",
    "Both panels are equal",
    "No signal in either panel",
]

Reading = tuple[int | None, str, str]


def _row(
    reply: str, options: list[str], labels: LabelStyle, expected: Reading, why: str, *, key: str
) -> object:
    return pytest.param(reply, options, labels, expected, why, id=key)


def _check(reply: str, options: list[str], labels: LabelStyle, expected: Reading, why: str) -> None:
    got = parse_choice(reply, options, labels=labels)
    assert (got.index, got.method, got.reason) == expected, why


# --- _answer_markers: tags, and the opening label among the commitments ---------------------------

TAGS_AND_OPENINGS = [
    _row(
        "<ANSWER> Answer: C</ANSWER>",
        TISSUE,
        "letters",
        (2, "answer_tag", "answer tag names C"),
        "a phrase nested in a tag after a space is still the tag's answer, read as a tag (11); "
        "the reason says 'answer tag' (114, 115)",
        key="tag-nested-phrase-after-space",
    ),
    _row(
        "<ANSWER>C) Whorled pattern</ANSWER>",
        TISSUE,
        "letters",
        (None, "answer_tag", "label C is followed by the text of option D"),
        "a tag whose label carries another option's text contradicts itself: none, not C (31)",
        key="tag-self-contradiction",
    ),
    _row(
        "<ANSWER>B</ANSWER>\nWait, I misread the stain. <ANSWER>C</ANSWER>",
        TISSUE,
        "letters",
        (2, "answer_tag", "answer after the self-correction 'Wait' names C"),
        "a corrected answer given in a tag is reported as a tag (33, 37, 38, 39)",
        key="tag-after-correction",
    ),
    _row(
        "(E)\nOn reflection, the answer is rosette formation.",
        TISSUE,
        "letters",
        (2, "answer_phrase", "answer after the self-correction 'On reflection' names C"),
        "an out-of-range first-line label stays a commitment the correction replaces; the opening "
        "rule is only consulted when there is no first-line label (73)",
        key="first-line-label-then-correction",
    ),
    _row(
        "(2) The arrow points at the nuclear envelope. Actually, the answer is 3.",
        ORGANELLES,
        "numbers",
        (2, "answer_phrase", "answer after the self-correction 'Actually' names 3"),
        "a correction marker alone (no switch word) brings the opening label in (75)",
        key="opening-label-correction-only",
    ),
    _row(
        "C) Rosettes are seen here. Sorry, the answer is B.",
        TISSUE,
        "letters",
        (1, "answer_phrase", "answer after the self-correction 'Sorry' names B"),
        "a switch word alone (no correction marker) brings the opening label in (75)",
        key="opening-label-switch-only",
    ),
    _row(
        "C) Rosettes are seen here. I'd go with D.",
        TISSUE,
        "letters",
        (None, "answer_phrase", "several options named: C, D"),
        "the opening label is named in the item's label style, C not 3 (98)",
        key="opening-label-in-letters",
    ),
]


@pytest.mark.parametrize(("reply", "options", "labels", "expected", "why"), TAGS_AND_OPENINGS)
def test_tags_and_opening_labels(
    reply: str, options: list[str], labels: LabelStyle, expected: Reading, why: str
) -> None:
    _check(reply, options, labels, expected, why)


# --- _phrase_commits: every kind of phrase, and where its commitment sits ---------------------------

PHRASES = [
    _row(
        "Or perhaps D.",
        TISSUE,
        "letters",
        (None, "none", "no option committed to"),
        "'or' at the reply's very first character still makes the prefix an alternative (27)",
        key="or-at-start-prefix",
    ),
    _row(
        "Or the second option is correct.",
        TISSUE,
        "letters",
        (None, "none", "no option committed to"),
        "'or' at the first character makes an ordinal verdict an alternative too (168)",
        key="or-at-start-ordinal",
    ),
    _row(
        "Or (D) is correct.",
        TISSUE,
        "letters",
        (None, "none", "no option committed to"),
        "'or' at the first character makes a reverse verdict an alternative too (209)",
        key="or-at-start-reverse",
    ),
    _row(
        "C or D is correct.",
        TISSUE,
        "letters",
        (None, "none", "no option committed to"),
        "the 'or' just before 'D is correct' is looked for right before D, not at the reply's "
        "end nor after D (203, 204, 210)",
        key="or-before-reverse",
    ),
    _row(
        "A or D is the answer here, I think; really, option C fits best overall.",
        TISSUE,
        "letters",
        (2, "answer_phrase", "answer phrase names C"),
        "an alternative skipped does not stop the later verdicts from being read (212)",
        key="alternative-then-verdict",
    ),
    _row(
        "I would say (B) or (C); on balance the answer is C.",
        TISSUE,
        "letters",
        (2, "answer_phrase", "answer phrase names C"),
        "two labels after a hedge are a list, not an answer, so only the later phrase counts "
        "(45, 82, 87, 90)",
        key="hedge-then-list",
    ),
    _row(
        "So (A) and (B) are excluded. The answer is C.",
        TISSUE,
        "letters",
        (2, "answer_phrase", "answer phrase names C"),
        "two labels after a terse prefix are a list of exclusions (45, 96, 102, 106)",
        key="prefix-then-list",
    ),
    _row(
        "The answer is B. No wait, C because the rosettes are clear.",
        TISSUE,
        "letters",
        (2, "answer_phrase", "answer after the self-correction 'wait' names C"),
        "a prefix holding a correction marker places its answer after the marker (53)",
        key="prefix-holding-marker",
    ),
    _row(
        "I would choose rosette formation.",
        TISSUE,
        "letters",
        (2, "answer_phrase", "answer phrase names C"),
        "an option's text after a verb of choosing is that phrase's answer (68)",
        key="choose-then-text",
    ),
    _row(
        "答案是 Rosette formation",
        TISSUE,
        "letters",
        (2, "option_text", "text of option C found"),
        "after a Chinese phrase only a label counts; the option's text is left to rule 7 (115)",
        key="chinese-phrase-then-text",
    ),
    _row(
        "选项2正确",
        ORGANELLES,
        "numbers",
        (1, "answer_phrase", "answer phrase names 2"),
        "'option 2 is correct' in Chinese under number labels (129, 130, 144, 145)",
        key="chinese-reverse-number",
    ),
    _row(
        "选项B正确",
        ORGANELLES,
        "numbers",
        (None, "none", "no option committed to"),
        "a letter under number labels is no label (126; the mutant crashed on int('B'))",
        key="chinese-reverse-letter-under-numbers",
    ),
    _row(
        "选项02正确",
        ORGANELLES,
        "numbers",
        (1, "answer_phrase", "answer phrase names 2"),
        "a zero-padded number is reported as the option's number, 2 not 02 (139)",
        key="chinese-reverse-zero-padded",
    ),
    _row(
        "答案是B。等等，选项C正确。",
        TISSUE,
        "letters",
        (2, "answer_phrase", "answer after the self-correction '等等' names C"),
        "a Chinese verdict is placed where it stands, after the correction (137)",
        key="chinese-reverse-after-correction",
    ),
    _row(
        "The answer is B. Wait, the third option is correct.",
        TISSUE,
        "letters",
        (2, "answer_phrase", "answer after the self-correction 'Wait' names C"),
        "an ordinal verdict is placed where it stands, after the correction (175)",
        key="ordinal-after-correction",
    ),
    _row(
        "Option 02 is correct.",
        ORGANELLES,
        "numbers",
        (1, "answer_phrase", "answer phrase names 2"),
        "a zero-padded reverse verdict is reported as 2 (224)",
        key="reverse-zero-padded",
    ),
    _row(
        "Panel B shows a decrease relative to Panel A is the answer. Option B is correct.",
        PANELS,
        "letters",
        (1, "answer_phrase", "answer phrase names B"),
        "a panel name skipped as no label does not stop the later verdict 'Option B is correct' (239)",
        key="panel-name-then-verdict",
    ),
    _row(
        "C (fibrosis) is the answer. On reflection D is the best fit.",
        TISSUE,
        "letters",
        (3, "answer_phrase", "answer phrase names D"),
        "a label glossed with another option's text is skipped, and the later verdict is still read (253)",
        key="foreign-gloss-then-verdict",
    ),
]


@pytest.mark.parametrize(("reply", "options", "labels", "expected", "why"), PHRASES)
def test_answer_phrases(
    reply: str, options: list[str], labels: LabelStyle, expected: Reading, why: str
) -> None:
    _check(reply, options, labels, expected, why)


# --- _read_answer: what follows a phrase or fills a tag -----------------------------------------------

AFTER_PHRASE = [
    _row(
        "Answer: definitely C",
        TISSUE,
        "letters",
        (2, "answer_phrase", "answer phrase names C"),
        "a hedge word between the phrase and its label is skipped, after the space (9, 13)",
        key="filler-before-label",
    ),
    _row(
        "Answer: clearly the third option",
        TISSUE,
        "letters",
        (2, "answer_phrase", "answer phrase names C"),
        "an ordinal is read after the filler (9, 13, 111)",
        key="filler-before-ordinal",
    ),
    _row(
        "I'd go with the fifth option.",
        TISSUE,
        "letters",
        (None, "none", "no option committed to"),
        "an ordinal past the last option names nothing (118; the mutant crashed)",
        key="ordinal-out-of-range",
    ),
    _row(
        "I would say (c).",
        TISSUE,
        "letters",
        (2, "answer_phrase", "answer phrase names C"),
        "after a hedge a bracketed lower-case letter counts (27)",
        key="hedge-bracketed-lower",
    ),
    _row(
        "I would say c.",
        TISSUE,
        "letters",
        (None, "none", "no option committed to"),
        "after a hedge a bare lower-case letter does not (27)",
        key="hedge-bare-lower",
    ),
    _row(
        "I would say (C)\n: rosettes are seen around a central lumen.",
        TISSUE,
        "letters",
        (2, "answer_phrase", "answer phrase names C"),
        "a colon on the next line (a definition-list reason) is no walk item (46)",
        key="colon-on-next-line",
    ),
    _row(
        "Per option: A : no. B : no. C : yes. D : no.",
        TISSUE,
        "letters",
        (None, "none", "no option committed to"),
        "'A :' with a space before the colon is a walk item, not the answer A (47)",
        key="spaced-colon-walk",
    ),
    _row(
        "I'd say (B) XX: two X chromosomes and no Y.",
        KARYOTYPES,
        "letters",
        (1, "answer_phrase", "answer phrase names B"),
        "a karyotype after the label is not skipped on the way to a colon (48)",
        key="karyotype-then-colon",
    ),
    _row(
        "The answer is C with rosettes around a lumen.",
        TISSUE,
        "letters",
        (2, "answer_phrase", "answer phrase names C"),
        "after a connector an upper-case label before an ordinary word counts (63)",
        key="label-before-word",
    ),
    _row(
        "Is the answer C. ?",
        TISSUE,
        "letters",
        (None, "none", "no option committed to"),
        "a question mark after a stray period and a space still asks (75, 76)",
        key="spaced-question",
    ),
    _row(
        "Is the answer C ?",
        TISSUE,
        "letters",
        (None, "none", "no option committed to"),
        "a question mark after a space still asks (76)",
        key="space-before-question",
    ),
    _row(
        "Answer: (D) XXX? That fits the three Barr bodies.",
        KARYOTYPES,
        "letters",
        (3, "answer_phrase", "answer phrase names D"),
        "a karyotype's question mark is not the label's (79)",
        key="karyotype-question",
    ),
]


@pytest.mark.parametrize(("reply", "options", "labels", "expected", "why"), AFTER_PHRASE)
def test_what_follows_a_phrase(
    reply: str, options: list[str], labels: LabelStyle, expected: Reading, why: str
) -> None:
    _check(reply, options, labels, expected, why)


# --- _text_then_label: an option's text, then its own label ------------------------------------------

TEXT_THEN_LABEL = [
    _row(
        "I would say definitely rosette formation (option C).",
        TISSUE,
        "letters",
        (2, "answer_phrase", "answer phrase names C"),
        "the pair is read after the filler, so the hedge commits (5)",
        key="after-filler",
    ),
    _row(
        "I would say rosette formation - (c).",
        TISSUE,
        "letters",
        (2, "option_text", "text of option C found"),
        "a bare bracketed lower-case letter is no label of a pair; rule 7 reads the text (10, 16, 17, 18)",
        key="lower-case-without-option",
    ),
    _row(
        "I would say rosette formation - option c.",
        TISSUE,
        "letters",
        (2, "answer_phrase", "answer phrase names C"),
        "with 'option' a lower-case letter is a label (15, 16, 17, 18)",
        key="lower-case-with-option",
    ),
    _row(
        "I would say nuclear envelope (option 2).",
        ORGANELLES,
        "numbers",
        (1, "answer_phrase", "answer phrase names 2"),
        "a number label under number labels (13, 14, 26, 27)",
        key="number-label",
    ),
    _row(
        "I would say nuclear envelope (option C).",
        ORGANELLES,
        "numbers",
        (1, "option_text", "text of option 2 found"),
        "a letter under number labels is no label of a pair (10, 13, 14: crashed on int('C'))",
        key="letter-under-numbers",
    ),
    _row(
        "I would say nuclear envelope (option 02).",
        ORGANELLES,
        "numbers",
        (1, "answer_phrase", "answer phrase names 2"),
        "a zero-padded label is reported as 2 (21)",
        key="zero-padded-number",
    ),
    _row(
        "I would say the rosette formation (option C).",
        TISSUE,
        "letters",
        (2, "answer_phrase", "answer phrase names C"),
        "an article before the option's text is dropped (54-60)",
        key="article-before-text",
    ),
    _row(
        "I would say a rosette formation (option C).",
        TISSUE,
        "letters",
        (2, "answer_phrase", "answer phrase names C"),
        "one article only is dropped, not two words (60)",
        key="indefinite-article",
    ),
    _row(
        "I would say the the rosette formation (option C).",
        TISSUE,
        "letters",
        (2, "option_text", "text of option C found"),
        "the pair's text is read over at most one token more than the longest option, so a "
        "doubled article leaves it to rule 7 (32, 34)",
        key="doubled-article",
    ),
    _row(
        "I would say perivascular pseudorosettes (option C).",
        TISSUE,
        "letters",
        (None, "none", "no option committed to"),
        "a text naming no option with a label is no pair and no answer (66: crashed)",
        key="text-of-no-option",
    ),
    _row(
        "The answer is most likely fibrosis (option C).",
        TISSUE,
        "letters",
        (None, "answer_phrase", "text of option A is labelled C"),
        "another option's text under a label contradicts itself, named in letters (76)",
        key="foreign-text-in-letters",
    ),
]


@pytest.mark.parametrize(("reply", "options", "labels", "expected", "why"), TEXT_THEN_LABEL)
def test_text_then_its_label(
    reply: str, options: list[str], labels: LabelStyle, expected: Reading, why: str
) -> None:
    _check(reply, options, labels, expected, why)

"""How commitments become one answer (parsing/_commits.py), tested on the helpers directly."""

from __future__ import annotations

import pytest

from scopebench.parsing import parse_choice
from scopebench.parsing._commits import (
    Commit,
    Ctx,
    _alternative_after,
    _first_thought_before,
    _given_up,
    decide,
    names_a_thing,
    withdrawal,
)
from scopebench.parsing._labels import LabelStyle
from scopebench.parsing._text import option_tokens

FOUR = Ctx(options=(("a",), ("b",), ("c",), ("d",)), style="letters")
NUMBERS = Ctx(options=(("x",), ("y",), ("z",)), style="numbers")


def test_alternative_after_names_the_other_label() -> None:
    text = "D is the best fit, or perhaps C."
    assert _alternative_after(text, 0, ["D"], FOUR) == "alternative C offered after the answer"
    # the same label again, a label out of range, or a number with letters is no alternative
    assert _alternative_after("D, or perhaps D.", 0, ["D"], FOUR) is None
    assert _alternative_after("D, or perhaps F.", 0, ["D"], FOUR) is None
    assert _alternative_after("D, or perhaps 3.", 0, ["D"], FOUR) is None
    assert _alternative_after("2. Or maybe 3.", 0, ["2"], NUMBERS) == "alternative 3 offered after the answer"


def test_given_up_only_for_an_answer_about_to_be_given_then_turned_from() -> None:
    text = "I was going to say A, however B is also possible."
    first = text.index("going")
    assert _given_up(text, [Commit(("A",), pos=first)])
    kept = "I was going to say A, and it is A."
    assert not _given_up(kept, [Commit(("A",), pos=kept.index("going"))])
    # a later commitment after the turn is the final answer, not a first thought set aside
    later = "I was going to say A, however … so B."
    assert not _given_up(
        later, [Commit(("A",), pos=later.index("going")), Commit(("B",), pos=len(later) - 2)]
    )
    # "final" is no turn away from the first answer
    final = "I was going to say A, final answer A."
    assert not _given_up(final, [Commit(("A",), pos=final.index("going"))])


def test_first_thought_may_run_past_the_commitment() -> None:
    text = "I was going to say A."
    assert _first_thought_before(text, text.index("going"))
    assert not _first_thought_before("The answer is A. I was going to add more.", 4)


def test_reflection_markers_withdraw_or_switch() -> None:
    assert withdrawal("The answer is C. On reflection, I am not sure.", 15) is not None
    assert withdrawal("The answer is C. Thinking again, I am not sure.", 15) is not None
    assert withdrawal("The answer is C. The cells are clear.", 15) is None


def test_decide_after_reflection_takes_the_later_answer() -> None:
    text = "The answer is B. On reflection, the final answer is D."
    got = decide(
        [Commit(("B",), pos=0), Commit(("D",), pos=text.index("the final"))], "answer_phrase", "x", FOUR, text
    )
    assert (got.index, got.reason) == (3, "answer after the self-correction 'On reflection' names D")


def test_changed_unread_names_the_later_label_as_written() -> None:
    # The reason quotes the later label without its brackets, in the run's
    # label style, and the answer is none (D is taken back, the new label is not read).
    text = "Answer: D. Actually, on closer inspection: (X)"
    got = decide([Commit(("D",), pos=0)], "answer_phrase", "answer phrase", FOUR, text)
    assert (got.index, got.reason) == (None, "answer changed after 'Actually' to 'X', not read")
    text = "Answer: 2. Actually, on closer inspection: (3)"
    got = decide([Commit(("2",), pos=0)], "answer_phrase", "answer phrase", NUMBERS, text)
    assert (got.index, got.reason) == (None, "answer changed after 'Actually' to '3', not read")


def test_placeholder_is_dropped_only_when_out_of_range_next_to_real_answers() -> None:
    # 'The answer is (X)' echoed from the instructions, then two labels: X is dropped, the other
    # out-of-range label (F) is not, so the answer stays "several", never B alone.
    three = [Commit(("X",), pos=0), Commit(("B",), pos=10), Commit(("F",), pos=20)]
    got = decide(three, "answer_phrase", "answer phrase", FOUR)
    assert (got.index, got.reason) == (None, "several options named: B, F")
    # Nothing in range: no label is dropped, X included.
    got = decide([Commit(("X",), pos=0), Commit(("F",), pos=5)], "answer_phrase", "answer phrase", FOUR)
    assert (got.index, got.reason) == (None, "several options named: X, F")


def test_decide_reasons_a_user_reads() -> None:
    options = ["Whorled pattern", "Spindle cells", "Rosette formation", "Necrosis"]
    cases = [
        ("B\nBecause the cells are spindle-shaped.", 1, "leading_label", "response starts with label B"),
        (
            "The answer is C) Whorled pattern.",
            None,
            "answer_phrase",
            "label C is followed by the text of option A",
        ),
        (
            "I was going to say A, however B is also possible.",
            None,
            "answer_phrase",
            "A named only as a first thought, then set aside",
        ),
        # an "I was going to say" two sentences earlier is not this answer's first thought
        (
            "Hmm. I was going to say something else. The answer is A, but let me explain why.",
            0,
            "answer_phrase",
            "answer phrase names A",
        ),
        # the same across lines: the first thought's sentence is its line, not a later or earlier one
        (
            "Hmm\nI was going to say something else\nThe answer is A, but let me explain why",
            0,
            "answer_phrase",
            "answer phrase names A",
        ),
        (
            "I was going to say A, however B is also possible.\nThat is all.",
            None,
            "answer_phrase",
            "A named only as a first thought, then set aside",
        ),
    ]
    for text, index, method, reason in cases:
        got = parse_choice(text, options)
        assert (got.index, got.method, got.reason) == (index, method, reason), text


# --- Every surviving mutant of _commits.py judged ----------------------

_ROSETTES = (
    "The small round blue cells are arranged around central fibrillary cores, which are Homer Wright "
    "rosettes, and this pattern is seen in most of the high-power fields examined. There is no whorled "
    "arrangement, and the cells are not spindle-shaped. Necrosis is present only focally and is not "
    "the dominant feature. Neuroblastoma and medulloblastoma both show this appearance, and "
    "synaptophysin staining would be expected to be diffusely positive in either tumour. "
)
_GLANCE = (
    "At first glance, the section shows sheets of small round blue cells with scant cytoplasm and fine "
    "chromatin. Mitoses are frequent, the stroma is thin and fibrovascular, and there are scattered "
    "apoptotic bodies throughout. The background contains a few lymphocytes and some haemorrhage near "
    "the edge. "
)
_FOUR_TEXTS = ["Whorled pattern", "Spindle cells", "Rosette formation", "Necrosis"]


@pytest.mark.parametrize(
    ("response", "labels", "index", "reason", "why"),
    [
        (
            "The answer is C.\n\n"
            + _ROSETTES
            + "Spindle cells would suggest a different tumour, such as A or B.",
            "letters",
            2,
            "answer phrase names C",
            # _alternative_after 6 (no end to the window) and 9 (3 windows): an "or B" 535
            # characters on, in the explanation, is no alternative to the answer
            "an 'A or B' far into the explanation offers no alternative",
        ),
        (
            "The answer is D; such tumours are graded 2 or 3. Or perhaps C.",
            "letters",
            None,
            "alternative C offered after the answer",
            # _alternative_after 20 (continue -> break): the number, not a letter label, ended the look
            "a number after 'or' is passed over, the letter after it is the alternative",
        ),
        (
            "The answer is 2. Or perhaps 03.",
            "numbers",
            None,
            "alternative 3 offered after the answer",
            # _alternative_after 23 (raw.upper() for numbers): the reason said "03"
            "a zero-padded alternative is named as the option's number",
        ),
    ],
)
def test_alternative_offered_after_the_answer(
    response: str, labels: LabelStyle, index: int | None, reason: str, why: str
) -> None:
    got = parse_choice(response, _FOUR_TEXTS, labels=labels)
    assert (got.index, got.method, got.reason) == (index, "answer_phrase", reason), why


@pytest.mark.parametrize(
    ("response", "index", "reason", "why"),
    [
        (
            "I was going to say A, and it is A. The nuclei are small but atypical.",
            0,
            "answer phrase names A",
            # _given_up 37/43/45/52 (the turn looked for past the first thought's sentence)
            "a 'but' in a later sentence does not set the first thought aside",
        ),
        (
            "Hmm! I was going to say A, however B is also possible.",
            None,
            "A named only as a first thought, then set aside",
            # _given_up 41 (sentence end searched from 0 found the "!" before the first thought)
            "the first thought's sentence ends after it, not at an exclamation before it",
        ),
        (
            "I was going to say A, but B is also possible",
            None,
            "A named only as a first thought, then set aside",
            # _given_up 44/45: with no sentence end at all the mutant read end.start() of None
            "a reply with no final full stop",
        ),
        (
            "I was about to write final answer: B, but the rosettes point elsewhere.",
            None,
            "B named only as a first thought, then set aside",
            # _given_up 53 (turn searched from first - 1): found the answer phrase's own "final"
            "the 'final' of the first thought's own phrase is no turn; the 'but' after it is",
        ),
    ],
)
def test_first_thought_set_aside_within_its_sentence(
    response: str, index: int | None, reason: str, why: str
) -> None:
    got = parse_choice(response, _FOUR_TEXTS)
    assert (got.index, got.method, got.reason) == (index, "answer_phrase", reason), why


@pytest.mark.parametrize(
    ("response", "index", "reason", "why"),
    [
        (
            "The answer is A. Wait, the answer is F.",
            None,
            "several options named: A, F",
            # _after_correction 31 (or -> and): the out-of-range F became index 5 of four options
            "a correction to a letter out of range is no answer",
        ),
        (
            "The answer is A. Wait, the answer is B or C.",
            None,
            "several options named: A, B, C",
            # _after_correction 28 (no ctx: crashed) and 31 (read B, the first of the two)
            "a correction that names two options chooses neither",
        ),
        (
            "The answer is A. I mean B. Wait, no, C.",
            2,
            "answer after the self-correction 'Wait' names C",
            # _after_correction 48 (>= before): named "I mean", the marker of the B it replaced
            "the reason names the marker that leads to the final answer",
        ),
        (
            _GLANCE + "The answer is B. However, the answer is D.",
            None,
            "several options named: B, D",
            # _first_thought_before 5 (searched from 0): "At first glance" 300 characters back made
            # "However" a correction marker, so D
            "'At first' far before the first answer names no first thought",
        ),
    ],
)
def test_corrections_and_first_thoughts(response: str, index: int | None, reason: str, why: str) -> None:
    got = parse_choice(response, _FOUR_TEXTS)
    assert (got.index, got.method, got.reason) == (index, "answer_phrase", reason), why


_FIGURES = [
    "Fig. B shows more necrosis than Fig. A",
    "Fig. A shows more necrosis than Fig. B",
    "Both figures show equal necrosis",
    "Neither figure shows necrosis",
]


@pytest.mark.parametrize(
    ("response", "choices", "index", "reason", "why"),
    [
        (
            "**Fig. B shows more necrosis than Fig. A** is the answer.",
            _FIGURES,
            0,
            "text of option A found",
            # names_a_thing 18/19 (rstrip(None) / lstrip): "fig." kept its full stop, so the closing
            # "Fig. A" read as the label A, against option A's text (a contradiction: none)
            "'Fig.' matches the option's 'Fig' token without its full stop",
        ),
        (
            "Fig. A shows more necrosis than Fig. B is correct.",
            _FIGURES,
            1,
            "text of option B found",
            "the same, option B quoted",
        ),
        (
            "Type C is the answer.",
            ["Type I collagen", "Type II collagen", "Type III collagen", "Type IV collagen"],
            2,
            "answer phrase names C",
            # names_a_thing 26 (or) and 34 (!=): "type" followed by another label in an option
            # made "Type C" a name
            "no option holds 'Type C': the label reads as C",
        ),
        (
            "Panel A is the answer.",
            ["Nodule with a fibrous capsule", "Diffuse infiltration", "Sheets of small cells", "Necrosis"],
            0,
            "answer phrase names A",
            # names_a_thing 26 (or): the article "a" in option A matched the label alone
            "an option's article 'a' is not the pair 'panel a'",
        ),
    ],
)
def test_naming_word_pairs(response: str, choices: list[str], index: int, reason: str, why: str) -> None:
    got = parse_choice(response, choices)
    assert (got.index, got.reason) == (index, reason), why


def test_naming_word_is_looked_for_in_the_twelve_characters_before_the_label() -> None:
    # names_a_thing 14 (13 characters): the look-back is bounded so it stays constant per label;
    # "figures" and its spacing must end in the 12 characters before the label. Tested on the
    # helper: only a run of 5+ spaces or tabs reaches the bound, no reply shape we have seen.
    ctx = Ctx(options=(option_tokens("Figures C and D"), option_tokens("Figures A and B")), style="letters")
    inside = "Figures" + " " * 5 + "C is the answer."
    outside = "Figures" + " " * 6 + "C is the answer."
    assert names_a_thing(inside, inside.index("C"), "C", ctx)
    assert not names_a_thing(outside, outside.index("C"), "C", ctx)


@pytest.mark.parametrize(
    ("response", "choices", "index", "reason", "why"),
    [
        (
            "I was going to say it, therefore, Final stage of mitosis - option C, but let me explain why.",
            ["Prophase", "Metaphase", "Final stage of mitosis", "Interphase"],
            2,
            "answer phrase names C",
            # _given_up 54 (turn searched from first + 2): passed over the "Final" one character
            # after the answer's position and took the later "but" as the turn
            "'Final' opening the option's own text is read as 'final', no turn",
        ),
        (
            "I was going to say C, therefore Yet another mitotic phase - option C.",
            ["Prophase", "Metaphase", "Yet another mitotic phase", "Interphase"],
            2,
            "answer phrase names C",
            # _given_up 62 (c.pos <= turn.start()): the "Yet" at the second answer's own position
            # counted as a turn after it, so C was set aside
            "a contrast word opening the answer itself is not a turn after it",
        ),
        (
            "Therefore Initially reversible cell injury - option B. However, the answer is D.",
            ["Prophase", "Initially reversible cell injury", "Apoptosis", "Necrosis"],
            3,
            "answer after the self-correction 'However' names D",
            # _first_thought_before 14 (m.start() < pos): "Initially" at the answer's own position
            # was no first thought, so "However" was no marker and the answer several
            "a first-thought word at the first answer's position still names a first thought",
        ),
    ],
)
def test_option_text_opening_with_a_marker_word(
    response: str, choices: list[str], index: int, reason: str, why: str
) -> None:
    # These options are odd on purpose: an answer prefix ("therefore") commits at its end, where
    # the option's own text ("… - option C") starts, so a marker word opening that text sits
    # exactly at the commitment's position, the boundary these rules compare against.
    got = parse_choice(response, choices)
    assert (got.index, got.method, got.reason) == (index, "answer_phrase", reason), why

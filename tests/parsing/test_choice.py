"""Table-driven tests for scopebench.parsing.parse_choice."""

from __future__ import annotations

import importlib.util
import string
from collections.abc import Sequence

import pytest

from scopebench.parsing import PARSER_VERSION, LabelStyle, ParseResult, parse_choice

# C is "Rosette formation" throughout, as in the examples of the design brief.
FOUR = ("Whorled pattern", "Spindle cells", "Rosette formation", "Necrosis")
THREE = ("Mitochondria", "Nucleus", "Golgi apparatus")
FIVE = ("Brightfield", "Phase contrast", "Fluorescence", "Electron microscopy", "None of the above")
NESTED = ("Stroma", "Cancer stroma", "Lymphocyte", "Lymphocytes")
CELLS = ("T cells", "B cells", "NK cells", "Macrophages")
MICRO = ("Increase", "Decrease", "No change", "Cannot determine", "Oscillates")

CASES: list[tuple[str, str | None, tuple[str, ...], str, int | None, str]] = [
    # (id, response, choices, labels, expected index, expected method)
    # --- bare labels in every usual form
    ("bare", "C", FOUR, "letters", 2, "bare_label"),
    ("bare-paren", "(C)", FOUR, "letters", 2, "bare_label"),
    ("bare-dot", "C.", FOUR, "letters", 2, "bare_label"),
    ("bare-close", "C)", FOUR, "letters", 2, "bare_label"),
    ("bare-colon", "C:", FOUR, "letters", 2, "bare_label"),
    ("bare-bold", "**C**", FOUR, "letters", 2, "bare_label"),
    ("bare-code", "`C`", FOUR, "letters", 2, "bare_label"),
    ("bare-square", "[C]", FOUR, "letters", 2, "bare_label"),
    ("bare-quoted", "'C'", FOUR, "letters", 2, "bare_label"),
    ("bare-dquoted", '"C"', FOUR, "letters", 2, "bare_label"),
    ("bare-lower", "c", FOUR, "letters", 2, "bare_label"),
    ("bare-lower-paren", "(c)", FOUR, "letters", 2, "bare_label"),
    ("bare-a-lower", "a", FOUR, "letters", 0, "bare_label"),
    ("bare-whitespace", "  \n C \n", FOUR, "letters", 2, "bare_label"),
    ("bare-option", "Option C", FOUR, "letters", 2, "bare_label"),
    ("bare-option-paren", "option (c).", FOUR, "letters", 2, "bare_label"),
    ("bare-fullwidth", "（Ｃ）", FOUR, "letters", 2, "bare_label"),
    # --- answer phrases
    ("phrase-answer-colon", "Answer: C", FOUR, "letters", 2, "answer_phrase"),
    ("phrase-lower", "answer: (c)", FOUR, "letters", 2, "answer_phrase"),
    ("phrase-lower-bare", "answer: c", FOUR, "letters", 2, "answer_phrase"),
    ("phrase-bold", "**Answer:** C", FOUR, "letters", 2, "answer_phrase"),
    ("phrase-is", "The answer is C", FOUR, "letters", 2, "answer_phrase"),
    ("phrase-correct-bold", "The correct answer is **C**.", FOUR, "letters", 2, "answer_phrase"),
    ("phrase-with-text", "The answer is C) Rosette formation", FOUR, "letters", 2, "answer_phrase"),
    ("phrase-final", "Final answer: C", FOUR, "letters", 2, "answer_phrase"),
    ("phrase-newline", "Answer:\n\nC", FOUR, "letters", 2, "answer_phrase"),
    ("phrase-option", "The correct option is (B).", FOUR, "letters", 1, "answer_phrase"),
    ("phrase-i-choose", "After weighing them, I would choose D.", FOUR, "letters", 3, "answer_phrase"),
    (
        "phrase-because",
        "The answer is C because the cells form rosettes.",
        FOUR,
        "letters",
        2,
        "answer_phrase",
    ),
    ("phrase-a-because", "The answer is a because the spiral is clear.", FOUR, "letters", 0, "answer_phrase"),
    ("phrase-likely", "The answer is most likely B.", FOUR, "letters", 1, "answer_phrase"),
    ("phrase-option-text", "The answer is a rosette formation.", FOUR, "letters", 2, "answer_phrase"),
    ("phrase-to-question", "The answer to this question is D.", FOUR, "letters", 3, "answer_phrase"),
    ("phrase-reverse", "Looking again, B is the correct answer.", FOUR, "letters", 1, "answer_phrase"),
    (
        "phrase-repeated",
        "The answer is B. Checking once more... Final answer: B",
        FOUR,
        "letters",
        1,
        "answer_phrase",
    ),
    (
        "cot-phrase-wins",
        "Option A is wrong because the nuclei are not arranged.\nOption B is plausible.\nThe answer is B",
        FOUR,
        "letters",
        1,
        "answer_phrase",
    ),
    (
        "phrase-not-then-final",
        "The answer is not obvious at first.\nFinal answer: D",
        FOUR,
        "letters",
        3,
        "answer_phrase",
    ),
    ("phrase-b-cells-text", "The answer is B cells.", CELLS, "letters", 1, "answer_phrase"),
    (
        "phrase-b-cells-swapped",
        "The answer is B cells.",
        ("B cells", "T cells"),
        "letters",
        0,
        "answer_phrase",
    ),
    ("phrase-boxed", r"Therefore $\boxed{\text{C}}$", FOUR, "letters", 2, "answer_tag"),
    # --- answer tags (SPUR)
    ("tag", "<ANSWER> C </ANSWER>", FOUR, "letters", 2, "answer_tag"),
    (
        "tag-evidence",
        "<ANSWER> B </ANSWER>\n<EVIDENCE> The cells form a spindle. </EVIDENCE>",
        FOUR,
        "letters",
        1,
        "answer_tag",
    ),
    ("tag-lower", "<answer>c</answer>", FOUR, "letters", 2, "answer_tag"),
    ("tag-unclosed", "Step by step... <ANSWER> D", FOUR, "letters", 3, "answer_tag"),
    ("tag-text", "<ANSWER> Rosette formation </ANSWER>", FOUR, "letters", 2, "answer_tag"),
    ("tag-agrees-phrase", "The answer is C.\n<ANSWER> C </ANSWER>", FOUR, "letters", 2, "answer_tag"),
    # --- leading labels
    ("leading-close", "C) Rosette formation", FOUR, "letters", 2, "leading_label"),
    (
        "leading-dot-because",
        "C. because the cells are arranged radially",
        FOUR,
        "letters",
        2,
        "leading_label",
    ),
    ("leading-paren", "(C) The cells form rosettes around a lumen.", FOUR, "letters", 2, "leading_label"),
    ("leading-option", "option (C): Rosette formation", FOUR, "letters", 2, "leading_label"),
    ("leading-lower", "c) rosettes are visible", FOUR, "letters", 2, "leading_label"),
    ("leading-five", "E. None of the above fits the image.", FIVE, "letters", 4, "leading_label"),
    ("leading-three", "(B) The dark body in the middle.", THREE, "letters", 1, "leading_label"),
    # --- option text
    ("text-exact", "Rosette formation", FOUR, "letters", 2, "option_text"),
    ("text-sentence", "The pattern is a rosette formation.", FOUR, "letters", 2, "option_text"),
    ("text-case-space", "ROSETTE   formation!", FOUR, "letters", 2, "option_text"),
    ("text-a-article", "This is a whorled pattern", FOUR, "letters", 0, "option_text"),
    ("text-none-of-above", "none of the above", FIVE, "letters", 4, "option_text"),
    ("text-nested-longer", "I see cancer stroma here.", NESTED, "letters", 1, "option_text"),
    ("text-nested-shorter", "Mostly stroma.", NESTED, "letters", 0, "option_text"),
    ("text-plural-exact", "Many lymphocytes infiltrate.", NESTED, "letters", 3, "option_text"),
    ("text-singular", "A single lymphocyte is visible.", NESTED, "letters", 2, "option_text"),
    ("text-plural-tolerated", "The organelles are mitochondrias.", THREE, "letters", 0, "option_text"),
    ("text-hyphen", "This is phase-contrast imaging.", FIVE, "letters", 1, "option_text"),
    ("text-three", "It is the Golgi apparatus.", THREE, "letters", 2, "option_text"),
    ("text-word-boundary", "Nucleolus visible.", THREE, "letters", None, "none"),
    # --- negative cases: commits to nothing or to several
    ("empty", "", FOUR, "letters", None, "none"),
    ("none-response", None, FOUR, "letters", None, "none"),
    ("blank", "  \n\t ", FOUR, "letters", None, "none"),
    ("markup-only", "** **", FOUR, "letters", None, "none"),
    ("a-cell", "A cell shows a large nucleus.", FOUR, "letters", None, "none"),
    ("pronoun-i", "I cannot tell from this image.", FOUR, "letters", None, "none"),
    ("i-think", "I think it could be several things.", FOUR, "letters", None, "none"),
    ("answer-a-article", "The answer is a difficult one to give.", FOUR, "letters", None, "none"),
    ("several-and", "A and C", FOUR, "letters", None, "bare_label"),
    ("several-comma", "A, C", FOUR, "letters", None, "bare_label"),
    ("several-either", "Either B or D", FOUR, "letters", None, "bare_label"),
    ("several-or", "A or B", FOUR, "letters", None, "bare_label"),
    ("several-phrase-or", "The answer is A or B.", FOUR, "letters", None, "answer_phrase"),
    (
        "phrases-disagree",  # choice-6: "On reflection" is now a switch, so no marker here
        "The answer is B.\nAll told, the final answer is D.",
        FOUR,
        "letters",
        None,
        "answer_phrase",
    ),
    ("tag-phrase-disagree", "The answer is B.\n<ANSWER> C </ANSWER>", FOUR, "letters", None, "answer_tag"),
    ("out-of-range-bare", "F", FOUR, "letters", None, "bare_label"),
    ("out-of-range-phrase", "The answer is F.", FOUR, "letters", None, "answer_phrase"),
    ("out-of-range-three", "D", THREE, "letters", None, "bare_label"),
    (
        "enumeration",
        "Let's analyze each option.\nA) whorls are absent\nB) no spindles\n",
        FOUR,
        "letters",
        None,
        "none",
    ),
    ("enumeration-inline", "Let's analyze each option. A) ... B) ... C) ...", FOUR, "letters", None, "none"),
    ("enumeration-leading", "A) not whorled\nB) not spindle\nC) maybe", FOUR, "letters", None, "none"),
    ("text-several", "Either a whorled pattern or rosette formation.", FOUR, "letters", None, "option_text"),
    ("text-nested-two", "Stroma and lymphocytes.", NESTED, "letters", None, "option_text"),
    ("label-text-conflict", "C) Whorled pattern", FOUR, "letters", None, "leading_label"),
    ("phrase-text-conflict", "The answer is C) Whorled pattern", FOUR, "letters", None, "answer_phrase"),
    ("e-g-not-label", "e.g. the cells are unclear", FOUR, "letters", None, "none"),
    ("gibberish", "Xyz qrs 123", FOUR, "letters", None, "none"),
    ("no-options", "C", (), "letters", None, "none"),
    # --- echoed placeholder ignored next to a real answer
    ("placeholder", 'Format: "The answer is (X)".\nThe answer is (B).', FOUR, "letters", 1, "answer_phrase"),
    # --- numbers mode (MicroVQA owner protocol)
    ("num-phrase-paren", "Thinking... The answer is (3)", MICRO, "numbers", 2, "answer_phrase"),
    ("num-phrase-bare", "answer is 3", MICRO, "numbers", 2, "answer_phrase"),
    ("num-bare", "3", MICRO, "numbers", 2, "bare_label"),
    ("num-bare-paren", "(2)", MICRO, "numbers", 1, "bare_label"),
    ("num-out-of-range", "(6)", MICRO, "numbers", None, "bare_label"),
    ("num-zero", "The answer is (0)", MICRO, "numbers", None, "answer_phrase"),
    ("num-leading", "(4): Cannot determine", MICRO, "numbers", 3, "leading_label"),
    ("num-decimal-not-label", "The ratio rose 3.5 fold overall", MICRO, "numbers", None, "none"),
    ("num-list-steps", "1. Look at the cells.\n2. Count them.", MICRO, "numbers", None, "none"),
    ("num-text", "It would decrease.", MICRO, "numbers", 1, "option_text"),
    ("num-disagree", "The answer is (2). Final answer: (5)", MICRO, "numbers", None, "answer_phrase"),
    ("num-letter-ignored", "C", MICRO, "numbers", None, "none"),
]


@pytest.mark.parametrize(
    ("response", "choices", "labels", "index", "method"),
    [pytest.param(*case[1:], id=case[0]) for case in CASES],
)
def test_parse_choice(
    response: str | None, choices: tuple[str, ...], labels: str, index: int | None, method: str
) -> None:
    got = parse_choice(response, choices, labels=labels)  # type: ignore[arg-type]
    assert (got.index, got.method) == (index, method), got.reason


@pytest.mark.parametrize(
    ("response", "choices", "reason"),
    [
        ("", FOUR, "empty response"),
        (None, FOUR, "empty response"),
        ("A, C", FOUR, "several options named: A, C"),
        ("The answer is F", FOUR, "letter F out of range for 4 options"),
        ("Hmm.", FOUR, "no option committed to"),
        ("The answer is B. Final answer: D", FOUR, "several options named: B, D"),
        ("Rosette formation or necrosis", FOUR, "several options named: C, D"),
    ],
)
def test_reasons(response: str | None, choices: tuple[str, ...], reason: str) -> None:
    assert parse_choice(response, choices).reason == reason


def test_number_out_of_range_reason() -> None:
    assert parse_choice("(6)", MICRO, labels="numbers").reason == "option 6 out of range for 5 options"


def test_result_shape_and_version() -> None:
    got = parse_choice("C", FOUR)
    assert isinstance(got, ParseResult)
    assert PARSER_VERSION.startswith("choice-")
    with pytest.raises(AttributeError):
        got.index = 1  # type: ignore[misc]


def test_bad_label_style() -> None:
    with pytest.raises(ValueError, match="letters"):
        parse_choice("C", FOUR, labels="roman")  # type: ignore[arg-type]


def test_deterministic() -> None:
    text = "Let's analyze each option. A) ... B) ..."
    assert len({parse_choice(text, FOUR) for _ in range(20)}) == 1


# --- property-style checks ------------------------------------------------------------------------

# hypothesis is optional: the deterministic sweeps below check the same properties without it.
HAVE_HYPOTHESIS = importlib.util.find_spec("hypothesis") is not None

_FRAGMENTS = [
    "A",
    "a",
    "(C)",
    "The answer is",
    "Answer:",
    "<ANSWER>",
    "</ANSWER>",
    "I",
    "\n",
    " ",
    "and",
    "or",
    ",",
    ".",
    "**",
    "option",
    "B)",
    "(3)",
    "3",
    "stroma",
    "cancer",
    "\\boxed{",
    "}",
    "is",
    "the",
    "Z",
]
_OPTION_LISTS = [
    FOUR,
    THREE,
    FIVE,
    NESTED,
    CELLS,
    MICRO,
    ("",),
    ("a", "b"),
    ("A", "I", "X"),
    tuple("ABCDEFGHIJ"),
]
_VALID_METHODS = {"answer_tag", "answer_phrase", "bare_label", "leading_label", "option_text", "none"}


def _check_invariants(text: str, choices: tuple[str, ...] | list[str], labels: str) -> None:
    got = parse_choice(text, choices, labels=labels)  # type: ignore[arg-type]
    assert got.index is None or 0 <= got.index < len(choices)
    assert got.reason
    assert got.method in _VALID_METHODS


def test_sweep_never_raises_and_stays_in_range() -> None:
    # Every 3-fragment response against every option list: exhaustive, so no seed is needed.
    for a in _FRAGMENTS:
        for b in _FRAGMENTS:
            for c in _FRAGMENTS:
                for choices in (FOUR, NESTED):
                    _check_invariants(f"{a}{b} {c}", choices, "letters")
                _check_invariants(f"{a} {b}{c}", MICRO, "numbers")


@pytest.mark.parametrize("choices", _OPTION_LISTS)
def test_sweep_bare_label_maps_to_its_index(choices: tuple[str, ...]) -> None:
    for idx in range(len(choices)):
        letter = string.ascii_uppercase[idx]
        assert parse_choice(letter, choices) == ParseResult(
            idx, "bare_label", f"whole response names {letter}"
        )
        assert parse_choice(str(idx + 1), choices, labels="numbers").index == idx


if HAVE_HYPOTHESIS:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    _OPTION = st.text(max_size=30)
    _TEXT = st.text(max_size=200) | st.lists(st.sampled_from(_FRAGMENTS), max_size=40).map("".join)

    @settings(max_examples=300, deadline=None)
    @given(text=_TEXT, choices=st.lists(_OPTION, min_size=1, max_size=8), numbers=st.booleans())
    def test_never_raises_and_stays_in_range(text: str, choices: list[str], numbers: bool) -> None:
        _check_invariants(text, choices, "numbers" if numbers else "letters")

    @settings(max_examples=200, deadline=None)
    @given(choices=st.lists(_OPTION, min_size=1, max_size=26), data=st.data())
    def test_bare_label_maps_to_its_index(choices: list[str], data: st.DataObject) -> None:
        idx = data.draw(st.integers(0, len(choices) - 1))
        letter = string.ascii_uppercase[idx]
        assert parse_choice(letter, choices) == ParseResult(
            idx, "bare_label", f"whole response names {letter}"
        )
        assert parse_choice(str(idx + 1), choices, labels="numbers").index == idx


# --- conflicts between rules (issue 20) -------------------------------------------------------------
# Each case has two rules pointing different ways; the id says which must win, the last field why.
# Reordering the rules (or dropping a guard) makes at least one of these fail.
SARC_SWAPPED = ("I band", "A band", "H zone", "Z line")

CONFLICTS: list[tuple[str, str, tuple[str, ...], int | None, str, str]] = [
    (
        "lone-label-beats-later-option-text",
        "B\n\nExplanation: the cells are elongated; a whorled pattern would look different.",
        FOUR,
        1,
        "leading_label",
        "a label alone on the first line is the answer; the explanation may name other options",
    ),
    (
        "lone-label-vs-later-phrase-is-none",
        "B\n\nLooking at the nuclei, the answer is C.",
        FOUR,
        None,
        "answer_phrase",
        "two explicit commitments and no correction marker: never guess which one counts",
    ),
    (
        "phrase-after-correction-beats-lone-label",
        "B\n\nWait, the nuclei are arranged around a lumen, so the answer is C.",
        FOUR,
        2,
        "answer_phrase",
        "an answer after an explicit self-correction replaces the earlier one",
    ),
    (
        "phrase-after-correction-beats-phrase",
        "The answer is D. Wait - the cells surround a lumen, so the answer is C.",
        FOUR,
        2,
        "answer_phrase",
        "last answer after the correction marker wins",
    ),
    (
        "phrases-without-correction-are-none",
        "The answer is D. Looking at the lumen, the answer is C.",
        FOUR,
        None,
        "answer_phrase",
        "two answers, no marker saying which replaces which",
    ),
    (
        "phrase-beats-option-text",
        "The cells show a whorled pattern in places, but the answer is C.",
        FOUR,
        2,
        "answer_phrase",
        "an explicit answer phrase outranks option text elsewhere",
    ),
    (
        "former-after-two-options-beats-option-text",
        "Whorled pattern or rosette formation? The former fits better.",
        FOUR,
        0,
        "former_latter",
        "'the former' names the first of exactly two options just before; option text sees two",
    ),
    (
        "latter-after-two-labels",
        "Option A or option C? I'd lean towards the latter.",
        FOUR,
        2,
        "former_latter",
        "'the latter' names the second of the two labels named just before",
    ),
    (
        "former-after-two-option-walk",
        "A) Whorled pattern: possible.\nC) Rosette formation: possible.\nOf these two, the former fits better.",
        FOUR,
        0,
        "former_latter",
        "a two-option walk-through followed by 'the former': the walk marks neither, the reference decides",
    ),
    (
        "former-after-three-options-is-none",
        "Whorled pattern, spindle cells or necrosis? The former fits better.",
        FOUR,
        None,
        "option_text",
        "three options named: 'the former' is not resolved, option text sees three",
    ),
    (
        "former-ruled-out-is-none",
        "Whorled pattern or necrosis? The former is unlikely.",
        FOUR,
        None,
        "former_latter",
        "the reference rules its option out, which says nothing about the other",
    ),
    (
        "former-and-latter-together-is-none",
        "Whorled pattern or necrosis? The former is common; the latter fits.",
        FOUR,
        None,
        "option_text",
        "both references: a description of each, not resolved",
    ),
    (
        "answer-phrase-beats-former",
        "Whorled pattern or necrosis? The former fits better, but the answer is C.",
        FOUR,
        2,
        "answer_phrase",
        "an explicit answer phrase outranks the reference",
    ),
    (
        "walk-through-beats-option-text",
        "- A. Whorled pattern \u2717\n- B. Spindle cells \u2717\n- C. Rosette formation \u2713\n- D. Necrosis \u2717",
        FOUR,
        2,
        "walk_through",
        "every option walked, only C marked: option text would see all four",
    ),
    (
        "walk-with-two-fitting-is-none",
        "A: yes. B: no. C: yes. D: no.",
        FOUR,
        None,
        "none",
        "two options marked as fitting",
    ),
    (
        "walk-missing-an-option-is-none",
        "A: no. B: no. C: yes.",
        FOUR,
        None,
        "none",
        "D not walked: no single fitting option can be concluded",
    ),
    (
        "final-verdict-beats-walk",
        "A: no. B: yes. C: no. D: no. On reflection the answer is C.",
        FOUR,
        2,
        "answer_phrase",
        "an explicit answer phrase outranks the walk's marks",
    ),
    (
        "lone-label-after-switch-beats-leading-label",
        "C... no, D.",
        FOUR,
        3,
        "answer_phrase",
        "a label that is a sentence of its own after 'no,' replaces the opening label",
    ),
    (
        "trailing-other-label-voids-leading-label",
        "A. All told, D.",  # choice-6: was "A. Thinking again, D.", which now has a marker
        FOUR,
        None,
        "answer_phrase",
        "the opening label joins the closing one; no known marker between them: neither is taken",
    ),
    (
        "change-of-mind-marker-beats-leading-label",
        "A. Thinking again, D.",
        FOUR,
        3,
        "answer_phrase",
        "'thinking again' / 'on reflection' switch like 'on second thought' (choice-6): the later wins",
    ),
    (
        "labels-asked-are-not-leading",
        "C? A? I'm unsure.",
        FOUR,
        None,
        "none",
        "a label followed by '?' asks; the leading-label rule does not read it",
    ),
    (
        "sorry-after-answer-is-no-withdrawal",
        "The answer is C. Sorry for the long explanation.",
        FOUR,
        2,
        "answer_phrase",
        "'sorry' only switches between two answers, it never withdraws one",
    ),
    (
        "changed-to-unread-label-is-none",
        "Answer: D\nActually, on closer inspection, B might fit better.",
        FOUR,
        None,
        "answer_phrase",
        "a marker then a label the rules cannot read: the earlier answer is not kept",
    ),
    (
        "changed-after-closer-inspection-prefix",
        "Answer: D\nActually, on closer inspection: B",
        FOUR,
        1,
        "answer_phrase",
        "choice-5 reads 'on closer inspection:' as a prefix, so the corrected answer B is read",
    ),
    (
        "prefix-before-walk-item-is-no-answer",
        "Per option: A: no. B: no. C: yes. D: no.",
        FOUR,
        2,
        "walk_through",
        "'option:' followed by 'A:' is the first item of a walk, not an answer",
    ),
    (
        "option-text-A-band-beats-label-A",
        "The answer is A band.",
        SARC_SWAPPED,
        1,
        "answer_phrase",
        "'A' followed by the rest of option B's text is that text, not label A",
    ),
    (
        "option-text-I-band-beats-label-I",
        "I band",
        SARC_SWAPPED,
        0,
        "option_text",
        "'I band' is option A's text, not an out-of-range label I",
    ),
    (
        "hedge-I-d-say-beats-label-I",
        "I'd say B.",
        FOUR,
        1,
        "answer_phrase",
        "the pronoun in 'I'd' is no label (was: 'letter I out of range')",
    ),
    (
        "affirmed-text-beats-ruled-out-text",
        "This is not a whorled pattern; it is rosette formation.",
        FOUR,
        2,
        "option_text",
        "a mention ruled out by 'not' does not count against the affirmed one",
    ),
    (
        "negated-reverse-verdict-loses-to-phrase",
        "I don't think B is the correct answer. The answer is C.",
        FOUR,
        2,
        "answer_phrase",
        "'B is the correct answer' inside a negated clause commits to nothing",
    ),
    (
        "denied-label-loses-to-affirmed",
        "It is not A, it is C.",
        FOUR,
        2,
        "answer_phrase",
        "'it is not A' commits to nothing; the clause after the comma commits to C",
    ),
    (
        "label-list-lines-are-not-a-lone-label",
        "A\nB\nC\nD",
        FOUR,
        None,
        "none",
        "several lone-label lines are a list, not a first-line answer",
    ),
    (
        "first-line-label-own-text-then-walk",
        "C. Rosette formation\n\nOption A (whorled pattern) is absent, option B (spindle cells) too.",
        FOUR,
        2,
        "leading_label",
        "label with its own option text on the first line commits despite inline option mentions",
    ),
    (
        "conditional-mention-loses",
        "If it were a whorled pattern we would see concentric layers. The cells show rosette formation.",
        FOUR,
        2,
        "option_text",
        "a mention inside an 'if' clause is a hypothesis, not an answer",
    ),
    (
        "ruled-out-then-chosen-label",
        "I would rule out D and choose A.",
        FOUR,
        0,
        "answer_phrase",
        "'rule out' negates D only; 'and choose' opens a new clause that commits to A",
    ),
    (
        "argued-against-then-favoured-text",
        "The features argue against whorled pattern and favour rosette formation.",
        FOUR,
        2,
        "answer_phrase",
        "'against' rules out the first option only; 'and favour' opens a new clause that commits",
    ),
    (
        "less-likely-than-favours-the-second",
        "Whorled pattern is less likely than rosette formation here.",
        FOUR,
        2,
        "option_text",
        "'X is less likely than Y': 'less' after X rules X out, 'less … than' before Y favours Y",
    ),
    (
        "specific-option-beats-the-general-one-inside-it",
        "This is a carcinoma, specifically small cell carcinoma.",
        ("Carcinoma", "Lymphoma", "Small cell carcinoma", "Sarcoma"),
        2,
        "option_text",
        "'specifically' introduces the option whose text ends with the general option's text",
    ),
    (
        "nested-answer-phrase-in-tag",
        "<ANSWER>Answer: B</ANSWER> The answer is C.",
        FOUR,
        None,
        "answer_tag",
        "the tag's nested phrase reads B; a different answer outside it conflicts, so none",
    ),
    # choice-5
    (
        "opening-label-with-denied-alternative",
        "C rather than B.",
        FOUR,
        2,
        "bare_label",
        "the closing B is denied by 'rather than': the whole reply is the label C and its denial",
    ),
    (
        "glossed-walk-then-answer-phrase",
        "- A (Whorled pattern): no\n- B (Spindle cells): no\n- C (Rosette formation): yes\n"
        "- D (Necrosis): no\nSo the answer is B.",
        FOUR,
        1,
        "answer_phrase",
        "a verdict phrase outranks the walk's marks, also for glossed walk items",
    ),
    (
        "contrasted-option-mention-is-no-walk",
        "B - because the cells are spindled, whereas option D would show necrosis.",
        FOUR,
        1,
        "leading_label",
        "'whereas option D' is set against the answer; it does not make the reply a walk",
    ),
    (
        "description-then-verdict-text",
        "The features of necrosis include karyorrhexis. This is a rosette formation.",
        FOUR,
        2,
        "option_text",
        "the described option is no verdict, so the one option named otherwise wins",
    ),
    (
        "object-verdict-then-correction",
        "This leaves D. Wait - that makes C the best option.",
        FOUR,
        2,
        "answer_phrase",
        "'makes X the best option' after a correction marker replaces the earlier 'leaves D'",
    ),
    (
        "suggests-then-different-answer",
        "The pattern suggests B. The answer is C.",
        FOUR,
        None,
        "answer_phrase",
        "'suggests B' commits; a different answer phrase with no correction marker: none",
    ),
    # choice-6
    (
        "alternative-after-reverse-verdict",
        "D is the best fit, or perhaps C.",
        FOUR,
        None,
        "answer_phrase",
        "an alternative offered after the verdict names a second option; the verdict alone would read D",
    ),
    (
        "text-labelled-as-another-option",
        "In summary, necrosis - option C.",
        FOUR,
        None,
        "answer_phrase",
        "the text of D labelled C contradicts itself; option text alone (rule 7) would have read D",
    ),
    (
        "ordinal-answer-beats-option-text",
        "Spindle cells are present, but I would go with the fourth option.",
        FOUR,
        3,
        "answer_phrase",
        "an answer phrase naming an ordinal (rule 1) outranks a plain mention of B's text (rule 7)",
    ),
    (
        "answer-about-to-be-given-is-set-aside",
        "I was going to say A, however B is also possible.",
        FOUR,
        None,
        "answer_phrase",
        "'going to say A' is a first thought set aside by 'however'; no final answer follows",
    ),
    (
        "tentative-label-asked-is-an-answer",
        "Perhaps A?",
        FOUR,
        0,
        "bare_label",
        "a tentative adverb makes the asked label a hedged answer; a bare 'A?' stays a question",
    ),
    (
        "leading-label-withdrawn",
        "C. Wait, I am not sure.",
        FOUR,
        None,
        "leading_label",
        "a correction marker after the opening label with no new answer withdraws it",
    ),
    (
        "hedged-lead-against-leading-label",
        "B. Hard to be sure, but D.",
        FOUR,
        None,
        "answer_phrase",
        "the hedged lead-in commits to D and brings the opening B in; no correction marker: none",
    ),
    (
        "but-more-likely-switches",
        "Possibly C, but more likely B.",
        FOUR,
        1,
        "answer_phrase",
        "'but more likely' ranks the later label above the earlier one, as a switch does",
    ),
    (
        "noun-before-closing-label",
        "C. The cells in panel B are smaller.",
        FOUR,
        2,
        "leading_label",
        "'panel B' belongs to a noun; it neither ends the reply as a new answer nor voids C",
    ),
    # choice-7 (exam 3)
    (
        "leading-label-against-rejected-option-text",
        "D. The other choices, such as rosette formation, do not match the observed pattern.",
        FOUR,
        3,
        "leading_label",
        "'the other choices, such as X' sets X aside; 'choices' is no inline option S, so D leads",
    ),
    (
        "withdrawal-after-dash-against-first-answer",
        "I'd say B - hmm, scratch that. C (Rosette formation) is more consistent.",
        FOUR,
        2,
        "answer_phrase",
        "'scratch that' after a dash corrects the answer of its own sentence; the glossed C wins",
    ),
    (
        "gloss-of-another-option",
        "I'd say B - scratch that. C (Necrosis) is more consistent.",
        FOUR,
        None,
        "answer_phrase",
        "C glossed with D's text is read as neither; B was withdrawn: none",
    ),
    (
        "coordinated-option-texts-set-aside",
        "Features of spindle cells and necrosis overlap considerably here.",
        FOUR,
        None,
        "option_text",
        "'features of X and Y': Y shares X's description, neither is a verdict",
    ),
]


@pytest.mark.parametrize(
    ("response", "choices", "index", "method", "why"),
    [pytest.param(*case[1:], id=case[0]) for case in CONFLICTS],
)
def test_rule_conflicts(
    response: str, choices: tuple[str, ...], index: int | None, method: str, why: str
) -> None:
    got = parse_choice(response, choices)
    assert (got.index, got.method) == (index, method), f"{why} | {got.reason}"


def test_correction_reason_names_the_marker() -> None:
    got = parse_choice("The answer is D. Wait, the answer is C.", FOUR)
    assert got.reason == "answer after the self-correction 'Wait' names C"


def test_ruled_out_only_reason() -> None:
    got = parse_choice("There is no evidence of necrosis.", FOUR)
    assert (got.index, got.reason) == (None, "options named only to be ruled out: D")


def test_echoed_option_list_is_no_answer() -> None:
    # Each line is a label with its own text: the model repeated the options, it chose none.
    got = parse_choice("A. Whorled pattern\nB. Spindle cells\nC. Rosette formation\nD. Necrosis", FOUR)
    assert got.index is None


@pytest.mark.parametrize(
    ("response", "index"),
    [
        ("I think B is incorrect.", None),
        ("So B is excluded; the answer is C.", 2),
        ("Thus, A and B are excluded. The answer is D.", 3),
        ("I think B because the cells are elongated.", 1),
    ],
)
def test_hedge_before_a_remark_is_no_answer(response: str, index: int | None) -> None:
    # After a hedge or terse prefix, "B is …" is a remark about B unless a reason follows.
    assert parse_choice(response, FOUR).index == index


@pytest.mark.parametrize(
    ("response", "index", "reason"),
    [
        ("This is A. Actually no, I'm not sure.", None, "answer withdrawn after 'Actually' with no new one"),
        ("The answer is C. Actually, rosettes are classic here.", 2, "answer phrase names C"),
        ("The answer is actually C.", 2, "answer phrase names C"),
        ("Is the answer C? I don't know.", None, "no option committed to"),
        ("A: no. B: no. C: yes. D: no.", 2, "walk-through marks only option C as fitting"),
    ],
)
def test_withdrawn_questioned_and_inline_walks(response: str, index: int | None, reason: str) -> None:
    # A withdrawn answer, a question and an inline "X: no." walk are no commitments.
    got = parse_choice(response, FOUR)
    assert (got.index, got.reason) == (index, reason)


PANELS = [
    "Panel B shows an increase in nuclear size relative to Panel A",
    "Panel B shows a decrease in nuclear size relative to Panel A",
    "Panels A and B show no difference in nuclear size",
    "Nuclear size cannot be compared between panels",
]


@pytest.mark.parametrize(
    ("response", "choices", "index", "reason"),
    [
        # choice-8 (exam 5): "Panel A" inside option B's quoted text is a name, so B's text wins.
        (
            "**Panel B shows a decrease in nuclear size relative to Panel A** is the answer.",
            PANELS,
            1,
            "text of option B found",
        ),
        # The same phrase with no option text around it names a panel, not an option: no guess.
        ("Panel A is the answer.", PANELS, None, "no option committed to"),
        # "option A" is no naming word: still the label, even though options mention Panel A.
        ("Option A is the answer.", PANELS, 0, "answer phrase names A"),
        # No option holds "Panel A": the label reads as A, as before.
        ("Panel A is the answer.", FOUR, 0, "answer phrase names A"),
    ],
)
def test_label_named_inside_an_option(
    response: str, choices: Sequence[str], index: int | None, reason: str
) -> None:
    got = parse_choice(response, choices)
    assert (got.index, got.reason) == (index, reason)


@pytest.mark.parametrize(
    ("response", "index"),
    [
        # choice-8 (exam 5): a commitment after "but" outweighs "an argument for <option text>".
        ("I can see an argument for rosette formation, but I'd still settle on A.", 0),
        ("There is a case for necrosis, but I'll stick with B.", 1),
        ("I'd come down on the side of B.", 1),
        ("I'm sticking with C.", 2),
        # The commitment is itself doubted by an alternative: no guess.
        ("I can see an argument for necrosis, but I'd still settle on C. Or maybe B.", None),
    ],
)
def test_commitment_verbs_after_a_concession(response: str, index: int | None) -> None:
    assert parse_choice(response, FOUR).index == index


def test_parser_version() -> None:
    # Bumped with every behaviour change; results are recorded with it.
    assert PARSER_VERSION == "choice-10"


@pytest.mark.parametrize(
    ("response", "choices", "labels", "index", "reason"),
    [
        # choice-9 (exam 7): a label opening the line right before another option's full text
        ("Findings:\nA. Rosette formation", FOUR, "letters", None, "text of option C is labelled A"),
        ("The slide shows:\n(C) rosette formation", FOUR, "letters", 2, "text of option C found"),
        (
            "Findings:\n2. The protein localizes to mitochondria",
            (
                "The protein localizes to the nucleus",
                "The protein localizes to the Golgi",
                "The protein localizes to mitochondria",
            ),
            "numbers",
            None,
            "text of option 3 is labelled 2",
        ),
        # a zero-padded label is that number: its own text, no contradiction
        (
            "Findings:\n03. The protein localizes to mitochondria",
            (
                "The protein localizes to the nucleus",
                "The protein localizes to the Golgi",
                "The protein localizes to mitochondria",
            ),
            "numbers",
            2,
            "text of option 3 found",
        ),
    ],
)
def test_a_label_opening_the_line_of_an_option_text(
    response: str, choices: tuple[str, ...], labels: LabelStyle, index: int | None, reason: str
) -> None:
    got = parse_choice(response, choices, labels=labels)
    assert (got.index, got.method, got.reason) == (index, "option_text", reason)

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
        "phrases-disagree",  # "On reflection" is now a switch, so no marker here
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
        # "Panel A" inside option B's quoted text is a name, so B's text wins.
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
        # a commitment after "but" outweighs "an argument for <option text>".
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
        # a label opening the line right before another option's full text
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

"""How commitments become one answer (parsing/_commits.py), tested on the helpers directly."""

from __future__ import annotations

from scopebench.parsing import parse_choice
from scopebench.parsing._commits import (
    Commit,
    Ctx,
    _alternative_after,
    _first_thought_before,
    _given_up,
    decide,
    withdrawal,
)

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
    # Session 4 (mutation): the reason quotes the later label without its brackets, in the run's
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

"""The choice parser's label reader (parsing/_labels.py): every written form and what it yields."""

from __future__ import annotations

import pytest

from scopebench.parsing._labels import LabelRead, label_for, label_index, read_label, read_label_list


def _kind(text: str, style: str = "letters") -> str | None:
    got = read_label(text, 0, style)  # type: ignore[arg-type]
    return None if got is None else got.kind


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("(C)", "bracketed"), ("[c]", "bracketed"), ("{C}", "bracketed"), ("'C'", "bracketed"),
        ('"C"', "bracketed"), ("( C )", "bracketed"), ("(C]", None), ("(C because", None),
        ("C)", "closed"), ("c]", "closed"), ("C}", "closed"), ("C'", "punct"),
        ("Option C", "keyword"), ("the choice C.", "keyword"), ("letters C, then", "keyword"),
        ("C.", "punct"), ("C: yes", "punct"), ("C; yes", "punct"), ("C, yes", "punct"), ("C!", "punct"),
        ("C?", "punct"), ('C."', "punct"), ("C.)", "punct"), ("C.<", "punct"), ("C - yes", "punct"),
        ("C -", "punct"), ("C (stroma)", "punct"), ("C [x]", "punct"), ("C <b>", "punct"),
        ('C "x"', "punct"), ("C ' x", "punct"), ("I'd say", None),
        ("C", "end"), ("C  ", "end"), ("C\n", "end"), ("C \r\n", "end"), ("C\tis", "connective"),
        ("C.elegans", None), ("e.g.", None), ("C-peptide", None), ("C5", None), ("C -x", None),
        ("A cell", "word"), ("A because", "connective"), ("I think", "word"), ("C 5", None),
        ("Option C because", "keyword"), ("Option C cell", "word"), ("C X", "word"), ("C X yes", "word"), ("A b", "word"), ("C.x", None), ("C.X", None),
    ],
)  # fmt: skip
def test_label_kinds(text: str, kind: str | None) -> None:
    assert _kind(text) == kind


def test_every_connective_word() -> None:
    # Spelled out here so that a word lost from the list fails.
    for word in (
        "because",
        "since",
        "as",
        "is",
        "are",
        "which",
        "and",
        "or",
        "but",
        "given",
        "due",
        "hence",
        "here",
    ):
        assert _kind(f"A {word} x") == "connective", word
        assert _kind(f"A {word.upper()} x") == "connective", word
    assert _kind("A whorled x") == "word"


def test_read_label_positions_case_and_numbers() -> None:
    assert read_label("I pick (b).", 7, "letters") == LabelRead("B", 7, 8, 10, "bracketed", True)
    assert read_label("Option C: yes", 0, "letters") == LabelRead("C", 0, 7, 8, "keyword", False)
    assert read_label("so C is it", 3, "letters") == LabelRead("C", 3, 3, 4, "connective", False)
    assert read_label("so b) x", 3, "letters") == LabelRead("B", 3, 3, 5, "closed", True)
    assert read_label("(3)", 0, "numbers") == LabelRead("3", 0, 1, 3, "bracketed", False)
    assert read_label("03.", 0, "numbers") == LabelRead("3", 0, 0, 2, "punct", False)
    assert read_label("12", 0, "numbers") == LabelRead("12", 0, 0, 2, "end", False)
    assert read_label("3.5", 0, "numbers") is None and read_label("123", 0, "numbers") is None
    assert read_label("3,5", 0, "numbers") is None
    assert read_label("C", 0, "numbers") is None and read_label("3", 0, "letters") is None
    assert read_label("xy C", 0, "letters") is None  # only exactly at pos
    assert read_label("xy C", 3, "letters") == LabelRead("C", 3, 3, 4, "end", False)
    assert read_label("C.", 0, "letters").strong  # type: ignore[union-attr]
    assert not read_label("A cell", 0, "letters").strong  # type: ignore[union-attr]
    assert not read_label("A because", 0, "letters").strong  # type: ignore[union-attr]


def test_label_lists() -> None:
    def labels(text: str, style: str = "letters") -> list[str]:
        first = read_label(text, 0, style)  # type: ignore[arg-type]
        assert first is not None
        return [x.label for x in read_label_list(text, first, style)]  # type: ignore[arg-type]

    assert labels("A and C") == ["A", "C"]
    assert labels("A, C or D.") == ["A", "C", "D"]
    assert labels("A, and C") == ["A", "C"] and labels("A, or C") == ["A", "C"]
    assert labels("A and/or C") == ["A", "C"]
    assert labels("(A)/C") == ["A", "C"] and labels("A; C") == ["A", "C"]
    assert labels("(A) & C") == ["A", "C"] and labels("(A) + (C)") == ["A", "C"]
    assert labels("B or D because") == ["B", "D"]  # a connective after the second label is fine
    assert labels("A and a cell") == ["A"]  # "a cell": an article, not a label
    assert labels("A andC") == ["A"] and labels("A and then") == ["A"]
    assert labels("1 and 3", "numbers") == ["1", "3"]
    got = read_label_list("A and C", LabelRead("A", 0, 0, 1, "end", False), "letters")
    assert [(x.start, x.end) for x in got] == [(0, 1), (6, 7)]


def test_label_index_and_back() -> None:
    assert [label_index(x, "letters") for x in "ABZ"] == [0, 1, 25]
    assert [label_index(x, "numbers") for x in ("1", "2", "12")] == [0, 1, 11]
    assert [label_for(i, "letters") for i in (0, 1, 25)] == ["A", "B", "Z"]
    assert [label_for(i, "numbers") for i in (0, 1, 11)] == ["1", "2", "12"]


@pytest.mark.parametrize(
    ("text", "style", "kind"),
    [
        # angle brackets are a bare tag; a lone ">" closes nothing ("C>B" is a comparison)
        ("<C>", "letters", "bracketed"), ("<3>", "numbers", "bracketed"), ("<C", None, None), ("C>B", "letters", None),
        # a CJK character closes a label as punctuation does ("选B比较合适"), unless it joins a second
        # label (也 also, 或 or, 和 and, 、 list comma): then it is no label at all
        ("B比较合适", "letters", "punct"), ("2比较合适", "numbers", "punct"), ("C也可能", "letters", None),
        ("B或C", "letters", None), ("2和3", "numbers", None), ("B、C", "letters", None),
        # a tail after the label keeps it a label ("D for sure.", "2 maybe.", "B after reconsideration.")
        ("D for sure.", "letters", "punct"), ("2 maybe.", "numbers", "punct"),
        ("B after reconsideration.", "letters", "punct"), ("D for example", "letters", "word"),
    ],
)  # fmt: skip
def test_label_kinds_choice_6(text: str, style: str | None, kind: str | None) -> None:
    assert _kind(text, style or "letters") == kind


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        # "!"/"?" ends a label before a space, the end, a closing mark or another "!"/"?" only: glued
        # to a letter (even "X") it is part of a token, not the label's punctuation
        ("C?X", None), ("C!X", None), ("C?!", "punct"), ("C!?", "punct"),
        # both ends of the CJK range that closes a label like punctuation (U+3400 and U+9FFF)
        ("B\u3400", "punct"), ("B\u9fff", "punct"),
    ],
)  # fmt: skip
def test_label_end_boundaries(text: str, kind: str | None) -> None:
    assert _kind(text) == kind

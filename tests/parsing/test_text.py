"""The choice parser's text helpers (parsing/_text.py), each rule checked on its own."""

from __future__ import annotations

from scopebench.parsing._text import (
    TextMatch,
    clean,
    equals_option,
    find_mentions,
    named_options,
    option_tokens,
    resolve,
    tokenize,
)


def test_clean_folds_typographic_quotes_and_dashes() -> None:
    # Every character of the table, spelled out here (not imported) so a lost entry fails.
    quotes = "\u2018\u2019\u201a\u2032"
    doubles = "\u201c\u201d\u201e\u00ab\u00bb"
    dashes = "\u2010\u2011\u2012\u2013\u2014\u2015\u2212"
    assert clean(quotes) == "''''"
    assert clean(doubles) == '"""""'
    assert clean(dashes) == "-------"
    assert clean("ﬁbre Ａ") == "fibre A"  # NFKC: ligature and full-width letter


def test_clean_drops_heading_underlines_and_rules_only() -> None:
    # "Answer\n------\nC" is a setext heading; its underline is no answer text. A dash
    # inside a line ("B - C", "1 - 2 weeks") and fewer than three dashes stay.
    assert clean("Answer\n------\nC") == "Answer\n\nC"
    assert clean("Answer\n=====\nC") == "Answer\n\nC"
    # the whitespace ending a reply goes too (a closing label is looked for in the last
    # characters, which blank lines would otherwise fill).
    assert clean("B --- C\n--\n") == "B --- C\n--"
    assert clean("C) Giant cells, B.\n\n\n\n\n\n\n\n\n\n\t ") == "C) Giant cells, B."


def test_clean_unwraps_latex_and_strips_markup() -> None:
    for cmd in ("text", "textbf", "textit", "mathrm", "mathbf", "mathit"):
        assert clean(f"\\{cmd}{{C}}") == "C", cmd
    assert clean("\\textbf {B) stroma}") == "B) stroma"
    assert clean("\\emph{C}") == "\\emph{C}"  # not a wrapper we know: left alone
    assert clean("**C**") == "C" and clean("`B`") == "B" and clean("$A$") == "A"
    assert clean("## Answer\n> C") == "Answer\nC"
    assert clean("_C_ cell_type") == "C cell_type"


def test_tokens_keep_distinguishing_symbols() -> None:
    assert [t.value for t in tokenize("CD4+ and CD8- T-cells, 5% ±1")] == [
        "cd4", "+", "and", "cd8", "-", "t", "cells", "5", "%", "±", "1",
    ]  # fmt: skip
    toks = tokenize("Big  cell")
    assert [(t.value, t.start, t.end) for t in toks] == [("big", 0, 3), ("cell", 5, 9)]
    assert option_tokens("**T-Cell**") == ("t", "cell") == option_tokens("T cell")
    assert option_tokens("") == ()


def test_plurals_are_tolerated_only_for_words_of_three_letters_or_more() -> None:
    assert equals_option(("cats",), ("cat",)) and equals_option(("boxes",), ("box",))
    assert not equals_option(("as",), ("a",)) and not equals_option(("ox", "es"), ("ox",))
    assert not equals_option(("ones",), ("on",))
    assert not equals_option((), ())
    assert not equals_option(("cat", "dog"), ("cat",))
    # An empty option (no tokens) matches nothing and does not stop the search.
    m = find_mentions(("big", "cats"), [(), ("cat",), ("big", "cat")])
    assert m == [TextMatch(1, 1, 2, False, 3), TextMatch(2, 0, 2, False, 6)]
    assert find_mentions(("cat",), [("cat",)]) == [TextMatch(0, 0, 1, True, 3)]


def test_longer_or_exact_matches_win_at_the_same_place() -> None:
    stroma = TextMatch(0, 1, 2, True, 6)
    cancer_stroma = TextMatch(1, 0, 2, True, 12)
    assert resolve([stroma, cancer_stroma]) == [cancer_stroma]
    plural = TextMatch(0, 0, 1, False, 10)  # "lymphocytes" read as a plural of "lymphocyte"
    exact = TextMatch(1, 0, 1, True, 11)  # …and exactly as "lymphocytes"
    assert resolve([plural, exact]) == [exact]
    same = TextMatch(0, 0, 1, True, 5)
    assert resolve([same, TextMatch(0, 0, 2, True, 9)]) == [same, TextMatch(0, 0, 2, True, 9)]  # one option
    # Two options with the same text tie: both stay (the parser then calls it ambiguous).
    tie = [TextMatch(0, 0, 1, True, 4), TextMatch(1, 0, 1, True, 4)]
    assert resolve(tie) == tie
    assert named_options(("cell",), [("cell",), ("cell",)]) == [0, 1]
    apart = [TextMatch(0, 0, 1, True, 5), TextMatch(1, 2, 3, True, 5)]
    assert resolve(apart) == apart


def test_named_options_in_order_of_first_mention() -> None:
    said = ("stroma", "then", "fat", "then", "stroma")
    opts = [("fat",), ("stroma",), ("bone",)]
    assert named_options(said, opts) == [1, 0]
    assert named_options(said, opts, at_start=True) == [1]  # only what the text starts with
    assert named_options(("the", "fat"), opts, at_start=True) == []
    assert named_options(("the", "fat"), opts) == [0]
    assert named_options(("cancer", "stroma"), [("stroma",), ("cancer", "stroma")]) == [1]

"""The language files: what ships, what each key does, and that each language has corpus rows."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from scopebench.parsing import parse_choice
from scopebench.parsing.languages import language_commits, languages, refuses

CORPUS = Path(__file__).parent / "corpus" / "languages.jsonl"
TEN = {"en", "zh", "de", "fr", "es", "pt", "it", "ja", "ko", "ru"}
FOUR = ("Whorled pattern", "Spindle cells", "Rosette formation", "Necrosis")


def test_ten_languages_ship_with_every_key() -> None:
    # Catches: a language file missing from the package (package-data) or one with no refusals.
    found = {lang.code: lang for lang in languages()}
    assert set(found) >= TEN
    for lang in found.values():
        assert lang.name and lang.refusal, lang.code


def test_every_language_has_corpus_rows_of_both_kinds() -> None:
    # Catches: a language added as a file without rows, or rows that only ever commit (a refusal
    # or negation read as an answer would then go unnoticed).
    rows = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()]
    committed = Counter(r["language"] for r in rows if r["expected"] is not None)
    none = Counter(r["language"] for r in rows if r["expected"] is None)
    for code in {lang.code for lang in languages()} - {"en"}:  # English rows live in every other file
        assert committed[code] >= 2 and none[code] >= 1, code


@pytest.mark.parametrize(
    ("reply", "labels"),
    [
        ("Die Antwort ist C.", [("C",)]),
        ("Nicht A, sondern C.", [("C",)]),  # the denied label commits to nothing
        ("Es könnte A oder C sein, die Antwort ist A oder C.", [("A", "C")]),
        ("La respuesta es a.", []),  # a lower-case letter is a word, not a label
        ("A resposta é B.", [("B",)]),  # Portuguese article A is no label
        ("Ответ: В", [("B",)]),  # Cyrillic В read as B
        ("Antwort: Cholangiocarcinoma", []),  # a word starting with a label letter is no label
    ],
)
def test_language_commits(reply: str, labels: list[tuple[str, ...]]) -> None:
    # Catches: negation, alternatives, case and word boundaries read wrongly by the phrase rule.
    assert [c.labels for c in language_commits(reply, "letters")] == labels


def test_refusal_keeps_option_text_from_committing() -> None:
    # Catches: "I can't say whether it is X" in another language read as X (choice-9 did).
    reply = "Ich kann nicht sicher sagen, ob es sich um Necrosis handelt."
    assert refuses(reply) is not None
    got = parse_choice(reply, FOUR)
    assert got.index is None and "refusal" in got.reason


def test_language_rule_is_linear() -> None:
    # Catches: a phrase pattern that backtracks on a long reply (one pass per pattern).
    # Not timed: the check is that 200k characters of phrases parse and commit to one label.
    reply = "Die Antwort ist C. " * 10_000
    assert parse_choice(reply, FOUR).index == 2

"""The language files: what ships, what each key does, and that each language has corpus rows."""

from __future__ import annotations

import itertools
import json
import re
import tomllib
from collections import Counter
from importlib import resources
from pathlib import Path

import pytest

from scopebench.errors import LanguageFileError
from scopebench.parsing import parse_choice
from scopebench.parsing._language_files import expand
from scopebench.parsing.languages import language_commits, languages, languages_from, refuses
from scopebench.parsing.vocabulary import PHRASE_KEYS, english_phrases, english_words

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
    # Catches: "I can't say whether it is X" in another language read as X.
    reply = "Ich kann nicht sicher sagen, ob es sich um Necrosis handelt."
    assert refuses(reply) is not None
    got = parse_choice(reply, FOUR)
    assert got.index is None and "refusal" in got.reason


def test_language_rule_is_linear() -> None:
    # Catches: a phrase pattern that backtracks on a long reply (one pass per pattern).
    # Not timed: the check is that 200k characters of phrases parse and commit to one label.
    reply = "Die Antwort ist C. " * 10_000
    assert parse_choice(reply, FOUR).index == 2


def test_adding_a_language_as_documented(tmp_path: Path) -> None:
    # Catches: docs/parser.md's "Adding a language" example going stale (a key renamed, a file
    # the loader refuses) or a language file whose phrases do not reach the language rule.
    doc = (Path(__file__).resolve().parents[2] / "docs" / "parser.md").read_text(encoding="utf-8")
    section = doc.split("## Adding a language\n", 1)[1].split("\n## ", 1)[0]
    (tmp_path / "nl.toml").write_text(section.split("```toml\n", 1)[1].split("```", 1)[0], encoding="utf-8")
    for lang in resources.files("scopebench.parsing.languages").iterdir():
        if lang.name.endswith(".toml"):
            (tmp_path / lang.name).write_text(lang.read_text(encoding="utf-8"), encoding="utf-8")
    replies = {"Het antwoord is C.": 2, "Niet A, maar C.": 2, "Het is niet C.": None}
    assert [parse_choice(r, FOUR).index for r in replies] == [None, None, None]  # not shipped
    with languages_from(tmp_path):
        assert "nl" in {lang.code for lang in languages()}
        assert [parse_choice(r, FOUR).index for r in replies] == list(replies.values())
        assert parse_choice("Ik kan het niet zeggen, misschien Necrosis.", FOUR).index is None
    assert parse_choice("Het antwoord is C.", FOUR).index is None  # the package's files again


def test_english_words_are_data_read_by_the_rules() -> None:
    # Catches: a list in en.toml's [words] that neither a rule nor a phrasing reads any more
    # (edited to no effect), a rule reading a key en.toml lacks (KeyError at import), a [phrases]
    # key no rule compiles, or a language file's [words] table read as phrases of the language rule.
    src = Path(__file__).resolve().parents[2] / "src" / "scopebench" / "parsing"
    code = "".join(p.read_text(encoding="utf-8") for p in src.rglob("*.py"))
    read = set(re.findall(r'(?:english_(?:words|phrases)|_one_of)\("([a-z_]+)"\)', code))
    data = tomllib.loads((src / "languages" / "en.toml").read_text(encoding="utf-8"))
    slots = {
        m for p in itertools.chain(*data["phrases"].values()) for m in re.findall(r"\{([a-z_]+)\??\}", p)
    }
    assert read | slots == set(data["words"]) and len(read) >= 8 and len(slots) >= 50
    assert set(data["phrases"]) == set(PHRASE_KEYS)
    assert set(re.findall(r'_phrasings\("([a-z_]+)"\)', code)) == set(PHRASE_KEYS)
    assert "not" in english_words("negation_before") and "because" in english_words("reason")
    with pytest.raises(KeyError):
        english_phrases("no_such_list")
    english = next(lang for lang in languages() if lang.code == "en")
    assert english.answer_before == () and english.refusal  # [words] is not a phrase list


def _package_copy(folder: Path) -> Path:
    """The package's language files, copied into ``folder`` (to edit one before reading them)."""
    for lang in resources.files("scopebench.parsing.languages").iterdir():
        if lang.name.endswith(".toml"):
            (folder / lang.name).write_text(lang.read_text(encoding="utf-8"), encoding="utf-8")
    return folder


def _edit_english(folder: Path, old: str, new: str) -> None:
    path = folder / "en.toml"
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, old  # the edit lands exactly once
    path.write_text(text.replace(old, new), encoding="utf-8")


def test_english_phrases_are_what_the_rules_are_compiled_from(tmp_path: Path) -> None:
    # Catches: en.toml's [phrases], slot lists and word sets being decorative (the English rules
    # compiled from a copy in code, or cached from the package's file, so an added phrase or word
    # reads nothing), and the package's phrases not coming back after languages_from.
    folder = _package_copy(tmp_path)
    _edit_english(folder, "hedge = [\n", 'hedge = [\n  "the slide {screams} for",\n')
    _edit_english(folder, 'say = ["say",', 'say = ["posit", "say",')
    _edit_english(folder, "\n[words]\n", '\n[words]\nscreams = ["screams", "shouts"]\n')
    _edit_english(folder, 'negation_after = ["absent",', 'negation_after = ["nixed", "absent",')
    _edit_english(folder, 'walk_no = ["absent",', 'walk_no = ["nah", "absent",')
    replies = {
        "The slide screams for C.": 2,  # a new phrasing with a new slot
        "The slide shouts for D.": 3,
        "I would posit B.": 1,  # a new entry of an existing slot
        "Necrosis is nixed. Rosette formation.": 2,  # a new word of a set the clause index reads
        "A: nah. B: nah. C: yes. D: nah.": 2,  # a new word of a set the walk-through reads
    }
    assert [parse_choice(r, FOUR).index for r in replies] == [None] * len(replies)
    with languages_from(folder):
        assert [parse_choice(r, FOUR).index for r in replies] == list(replies.values())
        assert parse_choice("I'd say A.", FOUR).index == 0  # the rest of en.toml still read
    assert parse_choice("I would posit B.", FOUR).index is None


@pytest.mark.parametrize(
    ("old", "new", "named"),
    [
        # a misspelt slot, an unclosed one, an unknown [phrases] key, an unknown top-level key,
        ('"I {would?} {opt_for}",', '"I {wuold?} {opt_for}",', ["en.toml", "hedge", "{wuold?}"]),
        ('"{pick} one",', '"{pick one",', ["en.toml", "prefix_key", "brace"]),
        ("prefix_clause = [", "prefix_clauses = [", ["en.toml", "prefix_clauses", "[phrases]"]),
        ('name = "English"', 'name = "English"\nwords_typo = []', ["en.toml", "words_typo"]),
        # a word list that is no list, and a file that is not TOML
        ('that = ["that"]', 'that = "that"', ["en.toml", "that", "list"]),
        ('name = "English"', 'name = "English', ["en.toml", "TOML"]),
    ],
)
def test_unknown_slot_or_key_in_a_language_file_is_an_error(
    tmp_path: Path, old: str, new: str, named: list[str]
) -> None:
    # Catches: a typo in en.toml silently reading nothing (an unknown slot left as literal text, a
    # key no rule reads) instead of an error that names the file and the key to fix.
    folder = _package_copy(tmp_path)
    _edit_english(folder, old, new)
    with languages_from(folder), pytest.raises(LanguageFileError) as err:
        parse_choice("The cells are round.", FOUR)  # a reply every rule reads
    assert all(part in str(err.value) for part in named), str(err.value)


def test_a_folder_without_en_toml_is_refused(tmp_path: Path) -> None:
    # Catches: languages_from on a folder holding only a new language file failing with a bare
    # FileNotFoundError (or reading English from nowhere) instead of saying what to copy.
    (tmp_path / "nl.toml").write_text(
        'name = "Dutch"\nrefusal = ["ik kan het niet zeggen"]\n', encoding="utf-8"
    )
    with (
        languages_from(tmp_path),
        pytest.raises(LanguageFileError, match=r"en\.toml.*copy the package's files"),
    ):
        parse_choice("Het antwoord is C.", FOUR)


def test_english_tables_in_another_language_file_are_refused(tmp_path: Path) -> None:
    # Catches: a [phrases] or [words] table in de.toml (en.toml copied as a template) silently
    # ignored, since only en.toml's are compiled.
    folder = _package_copy(tmp_path)
    (folder / "de.toml").write_text(
        (folder / "de.toml").read_text(encoding="utf-8") + '\n[phrases]\nhedge = ["ich sage"]\n',
        encoding="utf-8",
    )
    with languages_from(folder), pytest.raises(LanguageFileError, match=r"de\.toml.*phrases.*en\.toml only"):
        parse_choice("The cells are round.", FOUR)


@pytest.mark.parametrize(
    ("phrasing", "matches", "misses"),
    [
        (
            "I {would?} {say}",
            ["I say", "I'd say", "I would  guess", "i WILL say"],
            ["Id say", "I would", "I 'd say"],
        ),
        ("{the?} final {say}", ["final say", "the final guess", "my final say"], ["thefinal say", "the say"]),
        ("let {us} go", ["let's go", "let us go"], ["let go", "let 's go"]),
        ("I {am} {unsure}, but", ["I'm not sure, but", "I am unsure, but"], ["I'm not sure but"]),
    ],
)
def test_slot_syntax(phrasing: str, matches: list[str], misses: list[str]) -> None:
    # Catches: the documented slot rules going wrong: the space before an optional slot left
    # behind ("I  say"), an apostrophe entry needing a space ("I 'd"), an opening optional slot
    # keeping its space ("final" alone missed), or an entry matched inside a word.
    words = {
        "would": ("'d", "would", "will"),
        "say": ("say", "guess"),
        "the": ("the", "my"),
        "us": ("'s", "us"),
        "am": ("'m", "am"),
        "unsure": ("not sure", "unsure"),
    }
    pattern = re.compile(expand(phrasing, words, where="test"), re.I)
    assert [t for t in matches if pattern.fullmatch(t)] == matches
    assert [t for t in misses if pattern.fullmatch(t)] == []

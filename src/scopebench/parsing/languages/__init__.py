"""Answer phrases, hedges, negations, alternatives and refusals per language, as data.

One TOML file per language in this folder (``de.toml``, ``ja.toml`` …), each with the keys of
:class:`Language`. :func:`language_commits` reads every file's phrases at once: a label right after
an answer phrase or a hedge ("Die Antwort ist C", "Probablemente B", "答えはCです"), or right
before one ("C ist richtig", "Cが正解", "C가 정답"), is a commitment; one denied ("nicht A",
"Aではありません") is not, and a label after a word of contrast that follows a denied one ("nicht
A, sondern C", "AではなくC") is; two labels joined by an alternative ("A oder B") name both.
:func:`refuses` tells whether a reply holds a refusal, so that option text in it commits to
nothing ("Je ne peux pas dire s'il s'agit de X").

Adding a language is adding its file here and its rows to ``tests/parsing/corpus/languages.jsonl``.
English (``en.toml``) holds only refusals under these keys: its answer phrases are its
``[phrases]`` and ``[words]`` tables, read by the answer-marker rule (:func:`.vocabulary.english`).
Matching is case-insensitive; a space in a phrase matches any run of whitespace. Every search is
one pass of a compiled pattern over the reply, so the rule stays linear in the reply's length.
"""

from __future__ import annotations

import bisect
import re
import tomllib
from dataclasses import dataclass, fields
from importlib.resources.abc import Traversable
from typing import Any

from scopebench.errors import LanguageFileError
from scopebench.parsing._commits import Commit, Ctx, ParseResult, decide
from scopebench.parsing._labels import LabelStyle
from scopebench.parsing._language_files import folder_cached, language_folder, languages_from

__all__ = [
    "Language",
    "LanguageCommit",
    "language_commits",
    "language_rule",
    "languages",
    "languages_from",
    "load_languages",
    "refuses",
]


@dataclass(frozen=True, slots=True)
class Language:
    """One language's phrases (every key of its data file).

    Attributes:
        code: The file's stem (``de``).
        name: The language's English name.
        answer_before: Phrases after which a label is the answer ("la réponse est").
        answer_after: Phrases after a label that make it the answer ("est correcte").
        hedge_before: Tentative phrases before a label that still commit ("probablemente").
        hedge_after: Tentative phrases after a label that still commit ("でしょう").
        negation_before: Words that deny the label right after them ("nicht", "не").
        negation_after: Words that deny the label right before them ("ではありません").
        instead: Words that, after a denied label, introduce the chosen one ("sondern", "而是").
        alternative: Words joining two labels offered as alternatives ("oder", "или").
        refusal: Phrases of refusal or inability; option text in such a reply commits to nothing.
    """

    code: str
    name: str
    answer_before: tuple[str, ...] = ()
    answer_after: tuple[str, ...] = ()
    hedge_before: tuple[str, ...] = ()
    hedge_after: tuple[str, ...] = ()
    negation_before: tuple[str, ...] = ()
    negation_after: tuple[str, ...] = ()
    instead: tuple[str, ...] = ()
    alternative: tuple[str, ...] = ()
    refusal: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class LanguageCommit:
    """Labels one phrase commits to, and where (the end of the phrase or label)."""

    labels: tuple[str, ...]
    pos: int


@folder_cached
def languages() -> tuple[Language, ...]:
    """Every language file shipped in this package, in code order (:func:`load_languages`).

    While :func:`languages_from` is in effect, the files of its folder instead.
    """
    return load_languages(language_folder())


def load_languages(folder: Traversable) -> tuple[Language, ...]:
    """Every ``*.toml`` language file in ``folder``, in code order.

    Raises:
        LanguageFileError: When a file has a key :class:`Language` does not know (a typo would
            otherwise silently drop its phrases).
    """
    known = {f.name for f in fields(Language)} - {"code"}
    # "words" and "phrases": the English rules' vocabulary and phrasings, read from en.toml only
    # (scopebench.parsing.vocabulary); in another file they would be silently ignored
    english = {"words", "phrases"}
    found: list[Language] = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".toml"):
            continue
        try:
            data = tomllib.loads(entry.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as e:
            raise LanguageFileError(f"{entry.name}: not valid TOML ({e}); fix the file's syntax") from e
        allowed = known | english if entry.name == "en.toml" else known
        unknown = set(data) - allowed
        if unknown:
            raise LanguageFileError(
                f"{entry.name}: unknown keys {sorted(unknown)}; known: {sorted(allowed)}"
                + (" ([words] and [phrases] are read from en.toml only)" if unknown & english else "")
            )
        not_phrases = ("name", "words", "phrases")  # not phrase lists of the language rule
        lists = {k: tuple(str(p) for p in v) for k, v in data.items() if k not in not_phrases}
        found.append(Language(code=entry.name.removesuffix(".toml"), name=str(data.get("name", "")), **lists))
    return tuple(found)


# A label as languages write it: an upper-case Latin letter (or a Cyrillic look-alike), or a
# number; never followed by another letter or digit ("Cholangiocarcinoma" is no label C).
_CYRILLIC = str.maketrans("АВСЕ", "ABCE")
_LETTER = r"(?-i:(?P<lab>[A-ZАВСЕ]))(?![A-Za-zА-Яа-я0-9])"
_NUMBER = r"(?P<lab>\d{1,2})(?![A-Za-z0-9]|[.,]\d)"
# Before a label: an article ("la B", "l'option C", "a opção D"), a word for "option", a bracket.
_OPEN = (
    r"(?:(?i:la|el|lo|il|le|a|o|die|der|das)[ \t]+|(?i:l'))?"
    r"(?:(?i:option|opción|opção|opzione|alternativa|antwort|вариант|选项|選択肢|선택지)[ \t]*)?"
    r"[(\[（「\"'“]?[ \t]*"
)
_SEP = r"[ \t:：\-=,，、]"


def _alternation(phrases: tuple[str, ...]) -> str:
    """A pattern matching any of ``phrases``, on word boundaries for alphabets.

    Built as a trie (phrases sharing a start share its test), so a position that starts no phrase
    costs one character class and one that does costs the length of its phrase: with a flat
    alternation of every language's phrases, long replies took seconds.
    """
    trie: dict[str, Any] = {}
    for phrase in {" ".join(p.casefold().split()) for p in phrases if p.strip()}:
        node = trie
        for ch in phrase:
            node = node.setdefault(ch, {})
        node[""] = {}  # the end of a phrase
    return _trie_pattern(trie, first=True) if trie else "(?!)"


def _trie_pattern(node: dict[str, Any], *, first: bool = False, last: str = "") -> str:
    """The regex of one trie node: each child's character then its subtree; longer matches first."""
    branches = []
    for ch in sorted((c for c in node if c), key=lambda c: -_depth(node[c])):
        piece = r"\s+" if ch == " " else re.escape(ch)
        start = r"(?<!\w)" if first and _is_alphabet(ch) else ""
        branches.append(start + piece + _trie_pattern(node[ch], last=ch))
    if "" in node:  # a phrase ends here: after an alphabet letter, only at a word's end
        branches.append(r"(?!\w)" if _is_alphabet(last) else "")
    return branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"


def _depth(node: dict[str, Any]) -> int:
    return 1 + max((_depth(child) for child in node.values()), default=0)


def _is_alphabet(ch: str) -> bool:
    """Whether ``ch`` belongs to a script written with spaces between words (Latin, Cyrillic)."""
    return ch.isalpha() and ord(ch) < 0x1100  # below Hangul Jamo and every CJK block


@dataclass(frozen=True, slots=True)
class _Patterns:
    before: re.Pattern[str]
    after: re.Pattern[str]
    denied_before: re.Pattern[str]
    denied_after: re.Pattern[str]
    instead: re.Pattern[str]
    alternative_after: re.Pattern[str]
    alternative_before: re.Pattern[str]
    refusal: re.Pattern[str]


def _gather(key: str) -> tuple[str, ...]:
    return tuple(p for lang in languages() for p in getattr(lang, key))


def _patterns(style: LabelStyle) -> _Patterns:
    return _both_patterns()[style]


@folder_cached
def _both_patterns() -> dict[str, _Patterns]:
    """The patterns of the language files read now, for letters and for numbers."""
    return {"letters": _build_patterns("letters"), "numbers": _build_patterns("numbers")}


def _build_patterns(style: LabelStyle) -> _Patterns:
    label = _LETTER if style == "letters" else _NUMBER
    # After an alphabet phrase a separator is needed ("Antwort: C", not "AntwortC"); CJK and
    # Korean phrases take the label straight after them ("答えはC").
    before_phr = _alternation(_gather("answer_before") + _gather("hedge_before"))
    after_phr = _alternation(_gather("answer_after") + _gather("hedge_after"))
    lead = r"(?<![A-Za-z0-9])"
    flags = re.IGNORECASE
    negated_after, alternative = _alternation(_gather("negation_after")), _alternation(_gather("alternative"))
    return _Patterns(
        before=re.compile(f"{before_phr}{_SEP}*{_OPEN}{label}", flags),
        after=re.compile(f"{lead}{label}[)）\\]」\"'”]?{_SEP}*{after_phr}", flags),
        denied_before=re.compile(f"{_alternation(_gather('negation_before'))}{_SEP}*{_OPEN}{label}", flags),
        denied_after=re.compile(f"{lead}{label}[)）]?{_SEP}*{negated_after}", flags),
        instead=re.compile(f"{_alternation(_gather('instead'))}{_SEP}*{_OPEN}{label}", flags),
        alternative_after=re.compile(
            f"[ \t]*{_alternation(_gather('alternative'))}[ \t]*{_OPEN}{label}", flags
        ),
        alternative_before=re.compile(f"{lead}{label}[)）]?[ \t]*{alternative}[ \t]*{_OPEN}\\Z", flags),
        refusal=re.compile(_alternation(_gather("refusal")), flags),
    )


def _label(raw: str, style: LabelStyle) -> str:
    return raw.translate(_CYRILLIC) if style == "letters" else str(int(raw))


def language_commits(text: str, style: LabelStyle) -> list[LanguageCommit]:
    """Every label the language phrases commit to in ``text`` (cleaned), in order.

    Args:
        text: The cleaned reply.
        style: ``"letters"`` or ``"numbers"``.
    """
    pats = _patterns(style)
    denied = {m.start("lab") for m in pats.denied_before.finditer(text)}
    denied |= {m.start("lab") for m in pats.denied_after.finditer(text)}
    spots: list[tuple[int, int, str]] = []  # (label start, commit position, raw label)
    for m in pats.before.finditer(text):
        spots.append((m.start("lab"), m.end("lab"), m["lab"]))
    for m in pats.after.finditer(text):
        spots.append((m.start("lab"), m.end(), m["lab"]))
    ordered = sorted(denied)
    for m in pats.instead.finditer(text):
        # "nicht A, sondern C": the contrast chooses only after a label it denies (in the 60
        # characters before it; found by bisection, so a long reply stays linear)
        k = bisect.bisect_left(ordered, m.start() - 60)
        if k < len(ordered) and ordered[k] < m.start():
            spots.append((m.start("lab"), m.end("lab"), m["lab"]))
    commits: dict[int, LanguageCommit] = {}
    for start, pos, raw in sorted(spots):
        if start in denied or start in commits:
            continue
        labels = [_label(raw, style)]
        for alt in (
            pats.alternative_after.match(text, start + len(raw)),
            pats.alternative_before.search(text[max(0, start - 24) : start]),
        ):
            if alt is not None:
                labels.append(_label(alt["lab"], style))  # "A oder B": both named
        commits[start] = LanguageCommit(tuple(labels), pos)
    return sorted(commits.values(), key=lambda c: c.pos)


def refuses(text: str) -> str | None:
    """The first refusal phrase in ``text`` (cleaned), if any."""
    m = _patterns("letters").refusal.search(text)
    return None if m is None else m.group()


def language_rule(text: str, ctx: Ctx) -> ParseResult | None:
    """The rule ``language_phrase``: what the language phrases commit to, weighed as answer phrases are.

    Several labels committed to give none unless a self-correction decides (:func:`decide`).
    """
    found = language_commits(text, ctx.style)
    if not found:
        return None
    commits = [Commit(c.labels, pos=c.pos, method="language_phrase") for c in found]
    return decide(commits, "language_phrase", "language phrase", ctx, text)

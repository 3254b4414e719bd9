"""Where the language files are read from, and the slot syntax of English phrasings.

The language files (``languages/<code>.toml``) are read from the package's folder, or from the
folder of :func:`languages_from` while it is in effect; every pattern built from them is cached
with :func:`folder_cached`, so it is built again from the new folder's files. This module imports
nothing of the package, so the English vocabulary (:mod:`.vocabulary`) and the language rule
(:mod:`.languages`) both read their files through it.

A phrasing of ``en.toml``'s ``[phrases]`` is text with slots (:func:`expand`): ``{name}`` is any
entry of the list ``name`` of the same file's ``[words]``, ``{name?}`` the same or nothing.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from functools import cache
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, TypeVar

from scopebench.errors import LanguageFileError

__all__ = ["alternation", "expand", "folder_cached", "language_folder", "languages_from", "read_language"]

_T = TypeVar("_T")
_PACKAGE = Path(__file__).parent / "languages"
#: The folders :func:`languages_from` put in effect, innermost last.
_FOLDERS: list[Traversable] = []
#: The cache clearers of every :func:`folder_cached` function.
_CLEARERS: list[Callable[[], None]] = []
# "{name}" or "{name?}", with the one space before it that belongs to it (see expand)
_SLOT = re.compile(r"(?P<space> ?)\{(?P<name>[^{}]*)\}")
_NAME = re.compile(r"(?P<name>[a-z_]+)(?P<optional>\??)")


def language_folder() -> Traversable:
    """The folder language files are read from now: the package's, or :func:`languages_from`'s."""
    return _FOLDERS[-1] if _FOLDERS else _PACKAGE


def read_language(name: str) -> dict[str, Any]:
    """The parsed TOML of the language file ``name`` (``"en.toml"``) in :func:`language_folder`.

    Raises:
        LanguageFileError: When the file is missing or not valid TOML.
    """
    path = language_folder() / name
    if not path.is_file():
        raise LanguageFileError(
            f"{name} is not in {language_folder()}: a folder given to languages_from needs every "
            "language file the parser reads (copy the package's files next to yours)"
        )
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise LanguageFileError(f"{name}: not valid TOML ({e}); fix the file's syntax") from e


def folder_cached(fn: Callable[[], _T]) -> Callable[[], _T]:
    """Cache ``fn`` (built from language files) until :func:`languages_from` changes the folder."""
    cached = cache(fn)
    _CLEARERS.append(cached.cache_clear)
    return cached


@contextmanager
def languages_from(folder: Traversable) -> Iterator[None]:
    """Read the language files of ``folder`` instead of the package's while the block runs.

    For trying a language file, or a change to ``en.toml``, before adding it to the package
    (docs/parser.md, "Adding a language"); the package's files are read again afterwards. Every
    file the parser reads must then be in ``folder`` (copy the package's files next to a new one).
    """
    _FOLDERS.append(folder)
    _clear()
    try:
        yield
    finally:
        _FOLDERS.pop()
        _clear()


def _clear() -> None:
    for clear in _CLEARERS:
        clear()


def _words(entry: str) -> str:
    """One phrase as a pattern: escaped, each run of spaces matching any run of whitespace."""
    return r"\s+".join(re.escape(word) for word in entry.split())


def alternation(phrases: tuple[str, ...]) -> str:
    """A non-capturing group matching any of ``phrases`` in order; a space matches any whitespace."""
    return "(?:" + "|".join(_words(p) for p in phrases) + ")"


def expand(phrasing: str, words: Mapping[str, tuple[str, ...]], *, where: str) -> str:
    """The regular expression of one phrasing with slots, as a non-capturing group.

    A space matches any run of whitespace. ``{name}`` matches any entry of ``words[name]``, tried
    in order (so a longer entry goes before a shorter one it starts with: "leaning towards" before
    "leaning"); ``{name?}`` matches one of them or nothing. The space before a slot belongs to it:
    an optional slot takes it along, and an entry starting with an apostrophe ("'d", "'m") is
    written straight after the word before it ("I'd"). An optional slot opening the phrasing takes
    the space after it instead ("{the?} final answer" also matches "final answer"). Each slot is
    one alternation of literal entries, so the expansion matches in time linear in the text.

    Args:
        phrasing: The phrasing, e.g. ``"I {would?} {say}"``.
        words: The word lists slots name (``en.toml``'s ``[words]``).
        where: The file and key the phrasing comes from, for the error message.

    Raises:
        LanguageFileError: When a slot names no list of ``words`` or is malformed.
    """
    phrasing = " ".join(phrasing.split())
    if "{" in _SLOT.sub("", phrasing) or "}" in _SLOT.sub("", phrasing):
        raise LanguageFileError(f"{where}: unbalanced brace in {phrasing!r}; write a slot as {{name}}")
    out: list[str] = []
    at, spaced = 0, True  # spaced: False right after an opening optional slot took its space
    for m in _SLOT.finditer(phrasing):
        out.append(_literal(phrasing[at : m.start()], spaced=spaced))
        spaced = spaced or m.start() > at  # the text before the slot took the opening slot's space
        at = m.end()
        spec = _NAME.fullmatch(m["name"])
        if spec is None or spec["name"] not in words:
            raise LanguageFileError(
                f"{where}: the slot {{{m['name']}}} in {phrasing!r} names no list of [words]; "
                f"use one of {', '.join(sorted(words))}, or add the list to [words]"
            )
        entries = [_words(e) for e in words[spec["name"]]]
        optional = spec["optional"] == "?"
        opening = optional and m.start() == 0 and phrasing[at : at + 1] == " "
        out.append(
            _slot(entries, before=bool(m["space"]) and spaced, after=opening) + ("?" if optional else "")
        )
        spaced = not opening  # "{the?} final": the slot took the space, so "final" alone too
    out.append(_literal(phrasing[at:], spaced=spaced))
    return "(?:" + "".join(out) + ")"


def _slot(entries: list[str], *, before: bool, after: bool) -> str:
    r"""One slot's group: its entries, with the whitespace before or after them that it owns.

    The whitespace is matched once for all entries (``\s+(?:a|b)``), not once per entry; an
    entry starting with an apostrophe ("'d") takes none before it.
    """
    if after:
        return "(?:(?:" + "|".join(entries) + r")\s+)"
    if not before:
        return "(?:" + "|".join(entries) + ")"
    attached = [e for e in entries if e.startswith("'")]
    spaced = [e for e in entries if not e.startswith("'")]
    return "(?:" + "|".join([*attached, *([r"\s+(?:" + "|".join(spaced) + ")"] if spaced else [])]) + ")"


def _literal(text: str, *, spaced: bool) -> str:
    """The pattern of the text between slots; a space it starts with matches any whitespace."""
    return (r"\s+" if text.startswith(" ") and spaced else "") + _words(text)

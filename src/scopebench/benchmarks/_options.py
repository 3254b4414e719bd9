"""Option-text helpers shared by the loaders: strip labels, split option lists, read answer cells.

Benchmarks write their options in many ways: ``"A) text"`` items in a list (PathMMU), or one
string holding every option (SPUR: ``"[A. … B. … E. …]"``, ``"A. …<br>B. …"``, one option per line,
or just ``"A. … B. …"``). These helpers turn both into plain ordered option texts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scopebench.items import LETTERS

__all__ = [
    "ParsedAnswer",
    "describe_cell",
    "normalize_text",
    "parse_answer_label",
    "resolve_answer",
    "split_labelled_options",
    "strip_label",
]

# A leading option label: "(A)", "[A]", "A)", "A.", "A:", with any spaces around. "A." and "A:"
# must be followed by whitespace or the end, so "A.5 mg" or "C.elegans" are never read as labels;
# a closing bracket is unmistakable even without a space ("B)tight").
_LABEL_RE = re.compile(
    r"^\s*(?:[\(\[]\s*(?P<bracketed>[A-Za-z])\s*[\)\]]\s*[.:]?|(?P<paren>[A-Za-z])\s*\)"
    r"|(?P<dotted>[A-Za-z])\s*[.:](?=\s|$))\s*"
)
# A bare answer letter, optionally wrapped or followed by punctuation: "D", "(D)", "D)", "D.".
_BARE_RE = re.compile(r"^\s*[\(\[]?\s*([A-Za-z])\s*[\)\]]?\s*[.:]?\s*$")

# Words after which "B. " is a reference to a panel, figure or option rather than an option
# label ("see Fig. B. for", "unlike option B. the"), or a genus abbreviation ("in E. coli").
_REFERENCE_WORDS = frozenset(
    {
        "fig.",
        "fig",
        "figs.",
        "figure",
        "figures",
        "panel",
        "panels",
        "option",
        "options",
        "e.g.",
        "i.e.",
        "vs.",
        "cf.",
        "see",
        "in",
        "of",
        "and",
        "or",
        "with",
        "from",
    }
)


def normalize_text(text: str) -> str:
    """Casefold and collapse whitespace, for comparing an answer text with an option text."""
    return " ".join(text.split()).casefold()


def strip_label(option: str, expected: str | None = None) -> tuple[str | None, str]:
    """Split a labelled option such as ``"A) Whorled pattern"`` into its label and text.

    Args:
        option: One option as written in the data.
        expected: The label this option should carry (its position's letter). When given, a
            leading letter that differs from it is kept as text unless it is written as an
            unmistakable label (so an unlabelled option "B cells" stays whole).

    Returns:
        ``(label, text)``: the upper-case label letter (``None`` when there is none) and the option
        text without label and surrounding spaces.
    """
    m = _LABEL_RE.match(option)
    if m is None:
        return None, option.strip()
    label = (m.group("bracketed") or m.group("paren") or m.group("dotted")).upper()
    if expected is not None and label != expected.upper() and m.group("dotted") is not None:
        # "I. …" in position B is more likely text (a roman numeral, an initial) than a label.
        return None, option.strip()
    return label, option[m.end() :].strip()


@dataclass(frozen=True, slots=True)
class ParsedAnswer:
    """An answer as written in the data, split into its parts.

    Attributes:
        letter: The upper-case label letter, when the answer starts with one or is a bare letter.
        text: The answer text after the label (or the whole answer when it has no label); ``None``
            for a bare letter.
    """

    letter: str | None
    text: str | None


def parse_answer_label(answer: str) -> ParsedAnswer:
    """Parse an answer such as ``"D) Whorled pattern"``, ``"D"``, ``"(D)"`` or ``"Whorled pattern"``."""
    bare = _BARE_RE.match(answer)
    if bare is not None:
        return ParsedAnswer(letter=bare.group(1).upper(), text=None)
    label, text = strip_label(answer)
    return ParsedAnswer(letter=label, text=text or None)


# "X. " at the start, or after whitespace, "[" or ">" (the end of "<br>"), for each label X.
_LABEL_AT = {label: re.compile(r"(?:^|(?<=[\s\[>]))" + label + r"\.(?=\s)") for label in LETTERS}


def _candidates(text: str, label: str, start: int) -> list[int]:
    """Positions (of the label letter) where ``label + ". "`` may start an option, after ``start``."""
    return [m.start() for m in _LABEL_AT[label].finditer(text, start)]


def _is_weak(text: str, pos: int, label: str) -> bool:
    """Whether a candidate label at ``pos`` looks like a reference inside an option's text."""
    before = text[:pos].rstrip()
    prev_word = before.rsplit(None, 1)[-1].casefold() if before else ""
    prev_word = prev_word.lstrip("([")
    if prev_word in _REFERENCE_WORDS:
        return True
    # "B. B. Cells die": the first "B." belongs to the previous option ("… as in Fig. B.").
    return text[pos + 2 :].lstrip().startswith(f"{label}. ")


def split_labelled_options(text: str) -> list[str]:
    """Split one string holding labelled options (``"A. … B. … C. …"``) into the option texts.

    Separators handled: a bracketed list ``"[A. … B. …]"``, ``"<br>"``, newlines (trailing spaces
    allowed) or plain spaces. Labels must appear in order (A., B., C., …): the text is only ever
    split on the *next expected* label, preceded by the start, whitespace, ``<br>``, a newline or
    ``[`` and followed by whitespace, so an option's own text may mention "A." or "e.g.". When
    several places could start the next option, one that follows a reference word ("Fig. B.",
    "option C.", "in E. coli") or that is itself followed by the same label again is passed over
    in favour of the others; it is used only when there is no other.

    Args:
        text: The options string.

    Returns:
        The option texts in order, without labels, brackets, ``<br>`` or surrounding spaces.
        An empty list when the text does not start with the label ``A.``.
    """
    body = text.strip()
    if body.startswith("[") and body.endswith("]"):
        body = body[1:-1].strip()
    body = re.sub(r"<br\s*/?>", "\n", body, flags=re.IGNORECASE)
    starts = _candidates(body, "A", 0)
    if not starts or starts[0] != 0:
        return []
    positions = [0]
    for label in LETTERS[1:]:
        found = _candidates(body, label, positions[-1] + 2)
        if not found:
            break
        # Line-separated lists split only at line starts, so text on a line may say "B. " freely.
        if "\n" in body:
            at_line_start = [p for p in found if body[:p].rstrip(" \t").endswith("\n")]
            if at_line_start:
                found = at_line_start
        strong = [p for p in found if not _is_weak(body, p, label)]
        positions.append((strong or found)[0])
    ends = [*positions[1:], len(body)]
    # `p + 2` skips the label and its dot; whitespace inside an option is collapsed to one space.
    return [" ".join(body[p + 2 : e].split()) for p, e in zip(positions, ends, strict=True)]


_INT_TEXT = re.compile(r"^[+-]?\d+$")


def resolve_answer(value: Any, choices: tuple[str, ...]) -> tuple[int | None, str]:
    """Turn an ``answer`` cell into a 0-based choice index.

    Accepted forms, tried in this order: an integer index (also an integral float, which is how
    pandas stores an int column with gaps); a single letter (case-insensitive); the exact text of
    one choice (whitespace and case ignored); an integer written as text (CSV cells are text).

    Args:
        value: The cell value.
        choices: The item's choices.

    Returns:
        ``(index, "")`` on success, else ``(None, reason)``.
    """
    n = len(choices)
    span = f"{n} choices (A–{LETTERS[n - 1]}, 0–{n - 1})"
    if isinstance(value, bool) or value is None:
        return None, f"answer {describe_cell(value)} is neither an index, a letter nor a choice's text"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int):
        if 0 <= value < n:
            return value, ""
        return None, f"answer index {value} is out of range for {span}"
    if not isinstance(value, str):
        return None, f"answer {describe_cell(value)} is neither an index, a letter nor a choice's text"
    text = value.strip()
    if len(text) == 1 and text.isascii() and text.isalpha():
        index = LETTERS.index(text.upper())
        if index < n:
            return index, ""  # both readings possible: the letter wins (documented)
    matches = [i for i, c in enumerate(choices) if normalize_text(c) == normalize_text(text)]
    if len(matches) == 1:
        return matches[0], ""
    if len(matches) > 1:
        return None, f"answer {text!r} matches several identical choices"
    if _INT_TEXT.match(text):
        return resolve_answer(int(text), choices)
    if len(text) == 1 and text.isascii() and text.isalpha():
        # Only now: a one-letter option's text ("F" of ["T", "F"]) is read as text first.
        return None, f"answer letter {text!r} is out of range for {span} and matches no choice's text"
    return None, f"answer {text!r} matches no choice's text and is not a letter or index for {span}"


def describe_cell(value: Any, limit: int = 60) -> str:
    """A data cell for messages: short, and never an image's bytes (only their length)."""
    if isinstance(value, (bytes, bytearray)):
        return f"<{len(value)} bytes>"
    if isinstance(value, Mapping) and "bytes" in value:
        data = value.get("bytes")
        return f"<image: {len(data)} bytes>" if data else f"<image: path {describe_cell(value.get('path'))}>"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k!r}: {describe_cell(v, 20)}" for k, v in list(value.items())[:5]) + "}"
    if isinstance(value, (list, tuple)):
        inner = ", ".join(describe_cell(v, 20) for v in value[:5])
        return f"[{inner}{', …' if len(value) > 5 else ''}]"
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"

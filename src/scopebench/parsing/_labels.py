"""Reading option labels ("C", "(c)", "Option C:", "(3)") out of response text (private).

A label read carries *how* it was written (:attr:`LabelRead.kind`), because only some forms are
safe for the English words "a" and "I": a bracket, a following punctuation mark or the end of the
text make a letter a label; a following ordinary word ("a whorled pattern", "I think") does not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

LabelStyle = Literal["letters", "numbers"]

#: How a label was written, strongest first. ``word`` means "followed by an ordinary word".
LabelKind = Literal["bracketed", "closed", "keyword", "punct", "end", "connective", "word"]

#: Kinds that make any letter, lower-case or not, a label.
STRONG_KINDS: frozenset[str] = frozenset({"bracketed", "closed", "keyword", "punct", "end"})

# "Option C", "option (B)", "choice #2", "No. 3"
# "option number 4", "choice no. 2"
_KEYWORD = (
    r"(?:(?:the\s+)?(?:(?:options?|choices?)\s+(?:number|no\.)|options?|choices?|letters?|numbers?)"
    r"(?:\s*\#\s*|\s+|(?=[(\[])|(?=\d)))"
)
# angle brackets too ("<A>", a bare tag); "<ANSWER>" is no label (one letter only)
_OPEN = r"(?:(?P<open>[(\[{<'\"])\s*)"
_CLOSE = r"(?:\s*(?P<close>[)\]}>'\"]))"
# A CJK character may follow a label directly ("选B比较合适": choose B, more fitting).
_CJK = "\u3400-\u9fff"
# CJK words joining a label to another: 也 (also), 或/或者 (or), 还是 (or), 和/与/及 (and), 、 (list comma)
_CJK_JOINERS = "也或还和与及、"
_LETTER = re.compile(rf"(?P<kw>{_KEYWORD})?{_OPEN}?(?P<lab>[A-Za-z])(?![^\W{_CJK}]){_CLOSE}?", re.I)
# A number label is one or two digits that are not part of a decimal ("3.5") or a longer number.
_NUMBER = re.compile(rf"(?P<kw>{_KEYWORD})?{_OPEN}?(?P<lab>\d{{1,2}})(?![^\W{_CJK}]|[.,]\d){_CLOSE}?", re.I)
_PAIRS = {"(": ")", "[": "]", "{": "}", "<": ">", "'": "'", '"': '"'}

# Words that may follow a label but never follow the article "a" or the pronoun "I" in English,
# so "A because …" is option A while "A cell …" is not.
_CONNECTIVES = frozenset(
    {
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
        "without",
    }
)
_WORD = re.compile(r"[^\W\d_]+")
# A hedge closing the sentence after a label ("D I think.", "C to me.", "B on this one."), or a
# denied alternative ("C rather than B."): the label still ends its clause, as before punctuation.
_TAIL = re.compile(
    r"(?:here|to\s+me|for\s+me|most\s+likely|probably|maybe|perhaps|possibly"
    r"|after\s+(?:re-?consideration|reflection|review|further\s+thought)|for\s+(?:sure|certain)|(?:on|for)\s+this(?:\s+one)?|it\s+is"
    r"|I\s+(?:think|believe|guess|suppose|reckon)|I(?:'d|\s+would)\s+(?:say|guess)|no\s+doubt"
    # a denied alternative ("C rather than B.", "D, not A"): the label still ends its clause
    r"|(?:rather\s+than|instead\s+of|not)\s+(?:(?:option|choice)\s+)?[(\[]?(?:[A-Za-z]|\d{1,2})[)\]]?(?![\w']))"
    r"[ \t]*(?:[.!;,]|$)",
    re.I | re.M,
)

# Words joining labels into a list: "A and C", "A, C", "B or D", "A/C", "B, or maybe C".
_JOINER = re.compile(
    r"[ \t]*(?:(?:,[ \t]*(?:and|or)\b|and/or\b|and\b|or\b)"
    r"(?:[ \t]*(?:maybe|perhaps|possibly|probably|likely)\b)?|[,;/&+])[ \t]*",
    re.I,
)


@dataclass(frozen=True, slots=True)
class LabelRead:
    """One label found at a given position.

    Attributes:
        label: Canonical label: an upper-case letter or a decimal number string.
        start: Where the label form starts (keyword or opening bracket included).
        label_start: Where the letter or digits themselves start.
        end: Just after the label (and its closing bracket, if any).
        kind: How it was written; see :data:`LabelKind`.
        lower: Whether a letter was written in lower case.
    """

    label: str
    start: int
    label_start: int
    end: int
    kind: LabelKind
    lower: bool

    @property
    def strong(self) -> bool:
        """Whether the form alone makes this a label, whatever the letter."""
        return self.kind in STRONG_KINDS


def read_label(text: str, pos: int, style: LabelStyle) -> LabelRead | None:
    """Read a label starting exactly at ``pos``, or return ``None``."""
    m = (_LETTER if style == "letters" else _NUMBER).match(text, pos)
    if m is None:
        return None
    raw, opened, closed = m["lab"], m["open"], m["close"]
    label = raw.upper() if style == "letters" else str(int(raw))
    lower = raw.islower()
    if opened is not None:
        if closed is None or _PAIRS[opened] != closed:
            return None  # "(C because" or "'s": not a clean label form
        return LabelRead(label, m.start(), m.start("lab"), m.end(), "bracketed", lower)
    end = m.end("lab")
    if closed is not None and closed in ")]}":  # a lone ">" is no closing bracket ("C>B")
        return LabelRead(label, m.start(), m.start("lab"), m.end(), "closed", lower)
    kind = _kind_after(text, end)
    if kind is None:
        return None
    if m["kw"] and kind in ("punct", "end", "connective"):
        kind = "keyword"
    return LabelRead(label, m.start(), m.start("lab"), end, kind, lower)


def _kind_after(text: str, end: int) -> LabelKind | None:
    """Classify what follows a bare label ending at ``end``."""
    j = end
    while j < len(text) and text[j] in " \t":
        j += 1
    if j >= len(text) or text[j] in "\r\n":
        return "end"
    ch = text[j]
    nxt = text[j + 1] if j + 1 < len(text) else ""
    # "C." / "C:" count only before a space or the end, so "e.g." and "C.elegans" are no labels.
    if ch in ".:;,!?" and (nxt == "" or nxt.isspace() or nxt in "\"')]<" or (ch in "!?" and nxt in "!?")):
        return "punct"
    if ch == "-" and (nxt == "" or nxt.isspace()):
        return "punct"
    # An apostrophe before a letter is a contraction ("I'd say B", "I'm"), not a quote.
    if ch == "'" and nxt.isalpha():
        return None
    if ch in _CJK_JOINERS:
        return None  # "可能是C也可能是D", "B或C": one of alternatives, never an answer alone
    if ch in "([<\"'" or "\u3400" <= ch <= "\u9fff":
        return "punct"  # a CJK character closes the label as punctuation does
    if j > end and _TAIL.match(text, j):
        return "punct"
    if j > end:
        word = _WORD.match(text, j)
        if word is not None:
            return "connective" if word.group().casefold() in _CONNECTIVES else "word"
    return None


def read_label_list(text: str, first: LabelRead, style: LabelStyle) -> list[LabelRead]:
    """Extend ``first`` with the labels joined to it ("A and C", "B, D or E")."""
    items = [first]
    pos = first.end
    while True:
        join = _JOINER.match(text, pos)
        if join is None:
            break
        nxt = read_label(text, join.end(), style)
        # A second label must be unmistakable: "A and a cell" is one label, not two.
        if nxt is None or not (nxt.strong or nxt.kind == "connective"):
            break
        items.append(nxt)
        pos = nxt.end
    return items


def label_index(label: str, style: LabelStyle) -> int:
    """0-based option index a canonical label stands for (may be out of range)."""
    return ord(label) - ord("A") if style == "letters" else int(label) - 1


def label_for(index: int, style: LabelStyle) -> str:
    """Canonical label of a 0-based option index."""
    return chr(ord("A") + index) if style == "letters" else str(index + 1)

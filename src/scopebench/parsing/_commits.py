"""How the commitments found in a reply become one answer, or none (private to ``choice.py``).

:func:`decide` takes every commitment the answer-phrase rules found, in order, and applies the
self-correction rules of the module docstring of :mod:`scopebench.parsing.choice`: agreement,
correction markers, named first thoughts, withdrawals, alternatives offered afterwards. Kept
apart so ``choice.py`` holds the rules that find commitments and this module the ones that weigh
them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from scopebench.parsing._labels import LabelStyle, label_index
from scopebench.parsing.vocabulary import (
    ABOUT_TO,
    CONTRAST,
    CORRECTION,
    FIRST_THOUGHT,
    LABEL_LETTER,
    LABEL_NUMBER,
    NO_AFTER,
    OR_LATER,
    PLACEHOLDER,
    SENTENCE_END,
    SWITCH,
    WINDOW,
    WITHDRAW_BREAK,
)


@dataclass(frozen=True, slots=True)
class ParseResult:
    """What :func:`parse_choice` made of a response.

    Attributes:
        index: 0-based option index, or ``None`` when the response commits to no single option.
        method: The rule that decided: ``"answer_tag"``, ``"answer_phrase"``, ``"bare_label"``,
            ``"leading_label"``, ``"walk_through"``, ``"former_latter"``, ``"option_text"`` or
            ``"none"``.
        reason: Human-readable account, in particular why nothing was chosen.
    """

    index: int | None
    method: str
    reason: str


@dataclass(frozen=True, slots=True)
class Commit:
    """Labels one tag, phrase or leading label commits to, where, and by which rule.

    ``conflict`` explains a self-contradiction.
    """

    labels: tuple[str, ...]
    conflict: str | None = None
    pos: int = 0
    method: str = "answer_phrase"


@dataclass(frozen=True, slots=True)
class Ctx:
    """The item being parsed: option tokens, label style, and whether the reply was cut.

    ``truncated``: generation stopped at the length limit, so only an explicit verdict before the
    cut may commit (never option text, which would read an option not yet ruled out as chosen).
    """

    options: tuple[tuple[str, ...], ...]
    style: LabelStyle
    truncated: bool = False

    @property
    def n(self) -> int:
        return len(self.options)

    def in_range(self, label: str) -> bool:
        return 0 <= label_index(label, self.style) < self.n

    @property
    def span(self) -> int:
        """Tokens worth reading after a label or phrase: one more than the longest option."""
        return max(len(o) for o in self.options) + 1


def _distinct(commits: Sequence[Commit], ctx: Ctx) -> list[str]:
    named: list[str] = []
    for c in commits:
        for label in c.labels:
            if label not in named:
                named.append(label)
    if len(named) > 1 and any(ctx.in_range(x) for x in named):
        named = [x for x in named if not (x == PLACEHOLDER and not ctx.in_range(x))]
    return named


def decide(commits: Sequence[Commit], method: str, what: str, ctx: Ctx, text: str = "") -> ParseResult:
    for c in commits:
        if c.conflict is not None:
            return ParseResult(None, method, c.conflict)
    named = _distinct(commits, ctx)
    withdrawn = withdrawal(text, commits[-1].pos)
    if withdrawn is not None:
        return ParseResult(None, method, f"answer withdrawn after {withdrawn.group()!r} with no new one")
    changed = _changed_unread(text, commits[-1].pos, ctx) or _alternative_after(
        text, commits[-1].pos, named, ctx
    )
    if changed is not None:
        return ParseResult(None, method, changed)
    if len(named) > 1:
        corrected = _after_correction(commits, ctx, text)
        if corrected is not None:
            return corrected
        return ParseResult(None, method, f"several options named: {', '.join(named)}")
    (label,) = named
    if not ctx.in_range(label):
        return ParseResult(None, method, out_of_range(label, ctx))
    if _given_up(text, commits):
        return ParseResult(None, method, f"{label} named only as a first thought, then set aside")
    if all(c.method == "leading_label" for c in commits):
        method, what = "leading_label", "response starts with label"
        return ParseResult(label_index(label, ctx.style), method, f"{what} {label}")
    return ParseResult(label_index(label, ctx.style), method, f"{what} names {label}")


def _alternative_after(text: str, last: int, named: Sequence[str], ctx: Ctx) -> str | None:
    """Why there is no single answer when another option is offered after the last one.

    "D is the best fit, or perhaps C." / "… so D. Or maybe C.": the "or" names an alternative.
    """
    for m in OR_LATER.finditer(text, last, last + 2 * WINDOW):
        raw = m["a"] or m["b"]
        if raw.isdigit() != (ctx.style == "numbers"):
            continue
        other = raw.upper() if ctx.style == "letters" else str(int(raw))
        if other not in named and ctx.in_range(other):
            return f"alternative {other} offered after the answer"
    return None


def _given_up(text: str, commits: Sequence[Commit]) -> bool:
    """Whether the only answer is one the reply was about to give, then set aside with "but".

    "I was going to say A, however B is also possible." commits to nothing: A was not given and
    no final answer follows. "I was going to say A, and it is A" stays A.
    """
    first = commits[0].pos
    sentence = max(text.rfind(".", 0, first), text.rfind("\n", 0, first)) + 1
    about = ABOUT_TO.search(text, sentence)
    if about is None or about.start() > first:
        return False
    end = SENTENCE_END.search(text, first)
    stop = end.start() if end is not None else len(text)
    turn = CONTRAST.search(text, first + 1, stop)
    return (
        turn is not None and turn.group().casefold() != "final" and all(c.pos < turn.start() for c in commits)
    )


def withdrawal(text: str, last: int) -> re.Match[str] | None:
    """A correction marker in a sentence after the last commitment, with no answer after it.

    "This is A. Actually no, I'm not sure." withdraws A. A plain "Actually," is often just
    emphasis ("Actually, rosettes are classic here"), so only "actually no" counts.
    """
    end = WITHDRAW_BREAK.search(text, last)
    if end is None:
        return None
    for m in CORRECTION.finditer(text, end.end()):
        if m.group().casefold() != "actually" or NO_AFTER.match(text, m.end()):
            return m
    return None


def _changed_unread(text: str, last: int, ctx: Ctx) -> str | None:
    """Why the answer stands changed when a marker after it is followed by a label not read.

    "Answer: D. Actually, on closer inspection: E": the later label is in no form the rules
    read, but keeping D would report the answer the model took back.
    """
    end = WITHDRAW_BREAK.search(text, last)
    if end is None:
        return None
    label = LABEL_LETTER if ctx.style == "letters" else LABEL_NUMBER
    # Only the first marker needs a look: a label after a later one is also after the first.
    found = [m for m in (CORRECTION.search(text, end.end()), SWITCH.search(text, end.end())) if m is not None]
    if not found:
        return None
    marker = min(found, key=lambda m: m.start())
    later = label.search(text, marker.end())
    if later is None:
        return None
    return f"answer changed after {marker.group()!r} to {later.group().strip('()')!r}, not read"


def _after_correction(commits: Sequence[Commit], ctx: Ctx, text: str) -> ParseResult | None:
    """The answer given after the last self-correction marker, when that answer is single.

    "The answer is D. Wait — … so the answer is C": the commitments after the last marker that
    has commitments on both sides replace all earlier ones; if those name several, none wins.
    """
    # A marker may itself be the phrase of the later answer ("Actually, C."), so ``<=``.
    found = [*CORRECTION.finditer(text), *SWITCH.finditer(text)]
    if _first_thought_before(text, commits[0].pos):
        found.extend(CONTRAST.finditer(text))  # "At first I thought B. However, … the answer is D"
    markers = [m for m in found if commits[0].pos < m.start() <= commits[-1].pos]
    if not markers:
        return None
    marker = max(markers, key=lambda m: m.start())
    later = [c for c in commits if c.pos >= marker.start()]
    named = _distinct(later, ctx)
    if len(named) != 1 or not ctx.in_range(named[0]):
        return None
    method = later[-1].method
    # Name the first of adjacent markers ("Wait — no, …" names "Wait"), as the reader sees it.
    before = max(c.pos for c in commits if c.pos < marker.start())
    shown = min((m for m in markers if m.start() > before), key=lambda m: m.start())
    return ParseResult(
        label_index(named[0], ctx.style),
        method,
        f"answer after the self-correction {shown.group()!r} names {named[0]}",
    )


def _first_thought_before(text: str, pos: int) -> bool:
    """Whether a first thought is named just before the first commitment ("At first I thought B").

    The marker must start at or before ``pos`` but may run past it ("I was going to say A": the
    commitment is read from "going to say").
    """
    m = FIRST_THOUGHT.search(text, max(0, pos - WINDOW))
    return m is not None and m.start() <= pos


def out_of_range(label: str, ctx: Ctx) -> str:
    noun = "letter" if ctx.style == "letters" else "option"
    return f"{noun} {label} out of range for {ctx.n} options"


# A word that makes the label after it a name ("Panel A", "Fig. 2", "grade 3").
_NAMING_WORD = re.compile(
    r"(?<![\w'])(?P<w>(?i:panels?|figures?|fig\.?|lanes?|groups?|types?|grades?|class|stages?|phases?))"
    r"[ \t]+\**[ \t]*\Z"
)


def names_a_thing(text: str, start: int, raw: str, ctx: Ctx) -> bool:
    """Whether a label at ``start`` is a name ("Panel A", "grade 2") that an option's text contains.

    "**Panel B shows a decrease ... relative to Panel A** is the answer." quotes option B as the
    verdict; its closing "A" names a panel, not option A. The label counts as a name
    only when the word before it is a naming word and some option holds that same word pair, so
    "Panel A is the answer" with no panel in any option still reads as A.
    """
    before = _NAMING_WORD.search(text, max(0, start - 12), start)
    if before is None:
        return False
    pair = (before["w"].casefold().rstrip("."), raw.casefold())
    for option in ctx.options:
        for i in range(len(option) - 1):
            if option[i].rstrip(".") == pair[0] and option[i + 1] == pair[1]:
                return True
    return False

"""The label rules: a reply that is a label, opens with one, or has one alone on its first line.

The rules ``bare_label``, ``first_line_label`` and ``leading_label`` of
:data:`scopebench.parsing.choice.RULES`, and the label tests the answer-phrase rule shares with
them (whether a label is followed by a reason, by its own option text or by another option's).
Models answer first and explain after, so a label opening the reply is its answer unless the
reply lists several labels or echoes the options.
"""

from __future__ import annotations

import re

from scopebench.parsing._commits import Commit as _Commit
from scopebench.parsing._commits import Ctx as _Ctx
from scopebench.parsing._commits import ParseResult
from scopebench.parsing._commits import decide as _decide
from scopebench.parsing._commits import out_of_range as _out_of_range
from scopebench.parsing._commits import withdrawal as _withdrawal
from scopebench.parsing._labels import LabelRead, label_for, label_index, read_label, read_label_list
from scopebench.parsing._option_text import option_text
from scopebench.parsing._text import equals_option, named_options, tokenize
from scopebench.parsing.vocabulary import (
    ASKS,
    BARE_TAIL,
    BULLET,
    CLAUSE_END,
    CONFIRMED,
    CONTRASTED,
    DENIED_AFTER,
    DENIED_BEFORE,
    FILLER,
    INLINE_LETTERS,
    INLINE_NUMBERS,
    INTERJECTION,
    NOUN_BEFORE,
    REST_OK,
    SENTENCE_CUT,
    TENTATIVE,
    TRAILING_LABEL,
    WRONG_AFTER,
    english_words,
)

__all__ = [
    "accepts",
    "bare_label",
    "contradiction",
    "first_line_label",
    "first_line_rule",
    "leading_label",
    "option_starts_at",
    "reason_follows",
    "skip_space",
]


def reason_follows(text: str, read: LabelRead) -> bool:
    """Whether the word after a label is a reason ("B because …"), not a remark ("B is wrong")."""
    word = text[read.end :].split(None, 1)
    return bool(word) and word[0].casefold() in english_words("reason")


def accepts(read: LabelRead, ctx: _Ctx, *, loose: bool) -> bool:
    """Whether a label read after an answer phrase or in a tag commits to that label."""
    if read.strong or read.kind == "connective":
        return True
    # Followed by an ordinary word: "the answer is a whorled…" and "Answer: I think…" are English.
    return loose and read.kind == "word" and not read.lower and read.label not in ("A", "I")


def option_starts_at(text: str, read: LabelRead, ctx: _Ctx) -> bool:
    """Whether a label followed by a word is really the start of an option's text ("B cells")."""
    if read.kind != "word":
        return False
    # not cut at the clause's end, so an option text with brackets or commas of its own
    # ("B cells (CD20+)") is still found; the tokens are bounded by the longest option.
    words = [t.value for t in tokenize(text[read.label_start :], ctx.span)]
    return bool(named_options(words, ctx.options, at_start=True))


def contradiction(text: str, read: LabelRead, ctx: _Ctx) -> str | None:
    """A reason when a label is directly followed by the full text of a different option."""
    if not ctx.in_range(read.label):
        return None
    rest = text[read.end :].lstrip(" \t.,:)]-")  # also after a comma ("C, Fibrosis")
    if rest.startswith("("):
        # a bracketed gloss is compared too ("C (fibrosis) is the most likely answer."
        # with fibrosis B contradicts itself)
        rest = rest[1:].split(")", 1)[0]
    cut = CLAUSE_END.search(rest)
    # the clause, and the sentence too, which keeps an option's own brackets and commas
    # ("1) Colocalization is moderate (Pearson's r ≈ 0.5)")
    end = SENTENCE_CUT.search(rest)
    said = [
        [t.value for t in tokenize(rest[: cut.start()] if cut else rest, ctx.span)],
        [t.value for t in tokenize(rest[: end.start()] if end else rest, ctx.span)],
    ]
    own = label_index(read.label, ctx.style)
    if any(equals_option(words, ctx.options[own]) for words in said):
        return None
    for idx, opt in enumerate(ctx.options):
        if idx != own and any(equals_option(words, opt) for words in said):
            return f"label {read.label} is followed by the text of option {label_for(idx, ctx.style)}"
    return None


# --- bare_label: the whole response is a label -----------------------------------------------------


def bare_label(text: str, ctx: _Ctx) -> ParseResult | None:
    """The rule ``bare_label``: a reply that is only a label (several labels are none)."""
    body = text.strip()
    bullet = BULLET.match(body)
    pos = bullet.end() if bullet is not None else 0
    interjection = INTERJECTION.match(body, pos)
    if interjection is not None:
        pos = interjection.end()
    filler = FILLER.match(body, pos)
    if filler is not None:
        pos = filler.end()
    tentative = TENTATIVE.match(body, pos)
    if tentative is not None:
        pos = tentative.end()
    read = read_label(body, pos, ctx.style)
    if read is None or not (read.strong or read.kind == "connective"):
        return None
    items = read_label_list(body, read, ctx.style)
    end = items[-1].end
    if CONFIRMED.match(body, end) and len(items) == 1:
        return _decide([_Commit((read.label,))], "bare_label", "label asked and confirmed", ctx)
    if ASKS.match(body, end) and (tentative is None or len(items) > 1):
        return None  # "B?" asks; "Perhaps A?" answers, tentatively
    if tentative is None and body.rstrip().endswith("?"):
        return None  # "D is it?" asks too
    tail = BARE_TAIL.match(body, end)
    if not REST_OK.match(body, tail.end() if tail is not None else end):
        return None
    return _decide([_Commit(tuple(r.label for r in items))], "bare_label", "whole response", ctx)


# --- first_line_label: a label alone on the first line -------------------------------------------------


def first_line_label(text: str, ctx: _Ctx) -> LabelRead | None:
    """A label that is the whole first line, or opens it with its reason or its own text.

    "B", "**B**", "(B).", "Option B", "B because …" or "B. Spindle cells" — provided no other
    line is also a lone label or a label with its own text (then the lines are a list, not an
    answer).
    """
    body = text.lstrip()
    line, _, rest = body.partition("\n")
    read = read_label(line, 0, ctx.style)
    if read is None or ASKS.match(line, read.end):
        return None
    if read.kind == "connective":
        if not reason_follows(line, read):
            return None
    elif not (read.strong and (REST_OK.match(line, read.end) or _own_text_follows(line, read, ctx))):
        return None
    if len(read_label_list(line, read, ctx.style)) > 1:
        return None
    for other in rest.splitlines():
        other = other.strip()
        again = read_label(other, 0, ctx.style)
        if (
            again is not None
            and again.strong
            and (REST_OK.match(other, again.end) or _own_text_follows(other, again, ctx))
        ):
            return None  # the options echoed as a list, or a list of labels
    return read


def _own_text_follows(line: str, read: LabelRead, ctx: _Ctx) -> bool:
    """Whether the rest of the line is exactly the label's own option text ("C. Rosette formation")."""
    if not ctx.in_range(read.label):
        return False
    words = [t.value for t in tokenize(line[read.end :], ctx.span)]
    return equals_option(words, ctx.options[label_index(read.label, ctx.style)])


def first_line_rule(text: str, ctx: _Ctx) -> ParseResult | None:
    """Rule 3: the first line is only a label; the explanation after it may name other options."""
    read = first_line_label(text, ctx)
    if read is None or not ctx.in_range(read.label):
        return None
    other = _ends_with_other_label(text, read.label, ctx)
    if other is not None:
        return ParseResult(None, "leading_label", other)
    return _decide([_Commit((read.label,), method="leading_label")], "leading_label", "", ctx)


# --- leading_label: the response starts with a label ---------------------------------------------------


def leading_label(text: str, ctx: _Ctx, *, ending: bool = True) -> ParseResult | None:
    """Rule 4; ``ending=False`` skips the check that the reply does not end on another label."""
    body = text.lstrip()
    read = read_label(body, 0, ctx.style)
    if read is None or any(p.match(body, read.end) for p in (ASKS, DENIED_AFTER, WRONG_AFTER)):
        return None  # "B?" asks; "D, definitely not." and "Option B is wrong." deny
    if read.kind not in _leading_kinds(ctx) and not _number_dash(body, read, ctx):
        return None
    if _enumerates(body, ctx) or _option_starts_at_label(body, read, ctx):
        return None
    if len(read_label_list(body, read, ctx.style)) > 1 or _PLURAL_LEAD.match(body):
        return None  # "A, B and C are all incorrect", "Options B and C both …": a list, not an answer
    if not ctx.in_range(read.label):
        # "I. Observations" or "F) …" with four options: no answer here; option text may still tell.
        return option_text(text, ctx) or ParseResult(None, "leading_label", _out_of_range(read.label, ctx))
    withdrawn = _withdrawal(body, read.end)
    if withdrawn is not None:
        return ParseResult(
            None, "leading_label", f"label withdrawn after {withdrawn.group()!r} with no new one"
        )
    conflict = (
        contradiction(body, read, ctx) or (ending and _ends_with_other_label(body, read.label, ctx)) or None
    )
    if conflict is not None:
        return ParseResult(None, "leading_label", conflict)
    return ParseResult(
        label_index(read.label, ctx.style), "leading_label", f"response starts with label {read.label}"
    )


_PLURAL_LEAD = re.compile(r"[ \t]*(?i:options|choices|answers)\b")


def _ends_with_other_label(text: str, label: str, ctx: _Ctx) -> str | None:
    """Why an opening label is not the answer when the reply ends on another bare label.

    "C. On reflection, B.": the reply changes its mind without a marker the rules know, so
    neither label is taken.
    """
    m = TRAILING_LABEL.search(text, max(0, len(text) - 12))
    if m is None:
        return None
    raw = m["lab"]
    if raw.isdigit() != (ctx.style == "numbers") or DENIED_BEFORE.search(text, 0, m.start() + 1):
        return None  # "D, not B.": the closing label is denied, not chosen
    if NOUN_BEFORE.search(text, max(0, m.start() - 16), m.start() + 1):
        return None  # "… in lane 3.": a number that belongs to a noun, not another answer
    last = raw.upper() if ctx.style == "letters" else str(int(raw))
    if last == label:
        return None
    return f"starts with label {label} but ends with {last}"


def _leading_kinds(ctx: _Ctx) -> frozenset[str]:
    if ctx.style == "numbers":
        return frozenset({"bracketed", "closed"})
    return frozenset({"bracketed", "closed", "punct", "keyword"})


def _number_dash(body: str, read: LabelRead, ctx: _Ctx) -> bool:
    """Whether a number label opens the reply with a dash ("1 - pink cytoplasm …"), not "1." (a list)."""
    after = body[read.end :].lstrip(" \t")
    # "1 - 2 weeks" is a range, not an answer: a word must follow the dash
    return (
        ctx.style == "numbers"
        and read.kind == "punct"
        and after[:1] == "-"
        and after[1:].lstrip()[:1].isalpha()
    )


def _option_starts_at_label(body: str, read: LabelRead, ctx: _Ctx) -> bool:
    """Whether the "label" is the first word of an option's text ("C. elegans …")."""
    if read.kind != "punct":
        return False
    words = [t.value for t in tokenize(body[read.label_start :].split("\n", 1)[0])]
    return bool(named_options(words, ctx.options, at_start=True))


def _enumerates(body: str, ctx: _Ctx) -> bool:
    """Whether the response walks through several labels rather than starting with its answer."""
    seen: set[str] = set()
    for line in body.splitlines():
        bullet = BULLET.match(line)
        start = bullet.end() if bullet else 0
        read = read_label(line, start, ctx.style)
        if read is not None and read.kind in ("bracketed", "closed", "punct", "keyword"):
            seen.add(read.label)
    inline = INLINE_LETTERS if ctx.style == "letters" else INLINE_NUMBERS
    for m in inline.finditer(body):
        if CONTRASTED.search(body, max(0, m.start() - 16), m.start()):
            continue
        raw = next(g for g in m.groups() if g)
        seen.add(raw.upper() if ctx.style == "letters" else str(int(raw)))
    return len(seen) > 1 or _echoes_options(body, ctx)


# A label written as an option is listed: "B. Spindle cells" / "2) Spindle cells".
_LISTED = re.compile(r"(?<![\w])(?P<lab>[A-Z]|\d{1,2})[.)][ \t]+")
#: Listed labels looked at: bounded, so a loop of thousands stays linear.
_LISTED_LIMIT = 40


def _echoes_options(body: str, ctx: _Ctx) -> bool:
    """Whether the reply lists two options each with its own text on one line ("A. X B. Y …").

    A degenerate loop that echoes the options on one line starts with "A. X" like an answer
    would; two labels each followed by their own option text are the options echoed.
    """
    echoed: set[str] = set()
    for n, m in enumerate(_LISTED.finditer(body)):
        if n >= _LISTED_LIMIT or len(echoed) > 1:
            break
        label = m["lab"] if ctx.style == "letters" else str(int(m["lab"])) if m["lab"].isdigit() else ""
        if not label or not ctx.in_range(label):
            continue
        option = ctx.options[label_index(label, ctx.style)]
        words = [t.value for t in tokenize(body[m.end() : m.end() + 200], len(option))]
        if equals_option(words, option):
            echoed.add(label)
    return len(echoed) > 1


def skip_space(text: str, pos: int) -> int:
    """The first position at or after ``pos`` that is not whitespace."""
    while pos < len(text) and text[pos].isspace():
        pos += 1
    return pos

"""The option-text rule: a verdict written as one option's words (private to the parser).

The text of exactly one option occurs in the reply, on word boundaries, insensitive to case,
spacing and punctuation (a trailing plural tolerated), and is not ruled out: a ruling-out word
before it in its clause ("not", "no evidence of", "rather than", "unlike") or shortly after it
("is unlikely", "is not seen", "can be ruled out"), a question, a hypothesis or a general remark
sets a mention aside. Two options kept, words of indecision or a refusal (in any language of
:mod:`.languages`) commit to nothing; a more specific option named after a general one wins
("a carcinoma, specifically small cell carcinoma"). Never applied to a reply cut at the length
limit: there the one option not yet ruled out is no verdict.
"""

from __future__ import annotations

from collections.abc import Sequence

from scopebench.parsing._commits import Ctx, ParseResult
from scopebench.parsing._labels import label_for
from scopebench.parsing._text import (
    TextMatch,
    Token,
    clause_starts,
    find_mentions,
    more_specific,
    question_sentences,
    resolve,
    ruled_out,
    tokenize,
    verdict_gap,
)
from scopebench.parsing.languages import refuses
from scopebench.parsing.vocabulary import GLOSS_AFTER, LABEL_BEFORE, UNDECIDED

__all__ = ["option_text"]


def option_text(text: str, ctx: Ctx) -> ParseResult | None:
    """The option whose text alone the reply names, not ruled out; ``None`` when it names none."""
    if ctx.truncated:
        return None  # a cut reply's option text may be an option not yet ruled out
    tokens = tokenize(text)
    values = [t.value for t in tokens]
    mentions = resolve(find_mentions(values, ctx.options))
    if not mentions:
        return None
    starts = clause_starts(text, tokens)
    sentences = clause_starts(text, tokens, sentences=True)
    kept: list[int] = []
    dropped: list[int] = []
    asked = question_sentences(text, tokens, sentences)
    previous: TextMatch | None = None
    for m in sorted(mentions, key=lambda m: (m.start, m.option)):
        # "Features of X and Y overlap": Y, joined to a set-aside X by "and"/"or", is set aside too
        joined = (
            previous is not None
            and previous.option in dropped
            and m.start == previous.end + 1
            and values[previous.end] in ("and", "or", "nor")
        )
        previous = m
        into = (
            dropped
            if joined
            or sentences[m.start] in asked
            or ruled_out(
                values, starts, sentences, m.start, m.end, verdict_follows=verdict_gap(text, tokens, m.end)
            )
            else kept
        )
        if m.option not in into:
            into.append(m.option)
    mislabelled = _mislabelled(text, tokens, mentions, ctx)
    if mislabelled is not None:
        return ParseResult(None, "option_text", mislabelled)
    if not kept:
        names = ", ".join(label_for(i, ctx.style) for i in dropped)
        return ParseResult(None, "option_text", f"options named only to be ruled out: {names}")
    labels = [label_for(i, ctx.style) for i in kept]
    undecided = UNDECIDED.search(text)
    if undecided is not None:
        return ParseResult(None, "option_text", f"option text with indecision ({undecided.group()!r})")
    refusal = refuses(text)
    if refusal is not None:
        return ParseResult(None, "option_text", f"option text in a refusal ({refusal!r})")
    specific = more_specific(values, mentions, kept, ctx.options)
    if specific is not None:
        return ParseResult(
            specific, "option_text", f"option {label_for(specific, ctx.style)} named as the specific verdict"
        )
    if len(kept) > 1:
        return ParseResult(None, "option_text", f"several options named: {', '.join(labels)}")
    return ParseResult(kept[0], "option_text", f"text of option {labels[0]} found")


def _mislabelled(text: str, tokens: Sequence[Token], mentions: Sequence[TextMatch], ctx: Ctx) -> str | None:
    """Why option text is no answer when a mention carries another option's label ("fibrosis (C)").

    Also a label opening the mention's line ("3. The protein localizes to the plasma
    membrane" with that text option 4, "Option 4 - use a higher NA objective" with that option 1).
    """
    for m in mentions:
        before = LABEL_BEFORE.search(text, max(0, tokens[m.start].start - 24), tokens[m.start].start)
        raw = None if before is None else str(before["x"] or before["y"] or before["z"])
        if raw is not None and raw.isdigit() == (ctx.style == "numbers"):
            label = raw.upper() if ctx.style == "letters" else str(int(raw))
            if ctx.in_range(label) and label != label_for(m.option, ctx.style):
                return f"text of option {label_for(m.option, ctx.style)} is labelled {label}"
        gloss = GLOSS_AFTER.match(text, tokens[m.end - 1].end)
        if gloss is None:
            continue
        raw = gloss["x"] or gloss["y"]
        if raw.isdigit() != (ctx.style == "numbers"):
            continue
        label = raw.upper() if ctx.style == "letters" else str(int(raw))
        if label != label_for(m.option, ctx.style):
            return f"text of option {label_for(m.option, ctx.style)} is labelled {label}"
    return None

r"""Map a free-text model response to the option it commits to — or to none.

:func:`parse_choice` is deterministic and never guesses: a response that commits to no option, or
to several, is *unparsed* and the :class:`ParseResult` says why. (PathMMU's released parser picks a
random option in that case, SPUR's CoT runners read any standalone "a" near the end as option A,
and μ-Bench's code counts a reply as correct when the gold label appears anywhere; we do none of
these.)

Before any rule, what the engine knows about the reply is applied (:mod:`._reply`): the prompt and
chat role markers it starts by repeating are removed, a reply cut at the length limit loses its
unfinished last sentence and is read only by the rules marked ``explicit``, and a reply that
repeats one line is read as that line. The text is then cleaned: Unicode NFKC, typographic quotes
and dashes to ASCII, markdown/LaTeX noise removed. Labels are letters ``A, B, …`` or, with
``labels="numbers"`` (MicroVQA's owner protocol), 1-based numbers; labels outside the option count
are reported, not mapped.

The rules are the named units of :data:`RULES`, in precedence order; the first that decides wins
(also when it decides that no single option was chosen). Each says what it reads and why;
docs/parser.md lists them with examples and figures (``tests/parsing/test_rules.py`` checks that
the page and the list agree). Every language's phrases are data (:mod:`.languages`; English's
are compiled by :func:`.vocabulary.english`).

Guards that apply throughout: an English "a"/"A" or pronoun "I" inside a sentence is not a label
("A cell shows…", "I'd say B"); lower-case letters count only in explicit forms; a label directly
followed by the complete text of a *different* option contradicts itself (none).

Cost is linear in the response length: an answer phrase's answer is looked for only in the
:data:`WINDOW` characters after it, negation is read from one clause index built once per
response, and overlapping option mentions are compared only with their neighbours
(bench/bench_parser.py: 320k characters of any tested shape in a few seconds).

The labelled corpus in ``tests/parsing/corpus/`` (one JSONL file per answer pattern) is the
measure of these rules: no response there may be read as a wrong option, and under 5% of
committed answers may be missed (those that are carry ``known_miss``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from scopebench.parsing._commits import Commit as _Commit
from scopebench.parsing._commits import Ctx as _Ctx
from scopebench.parsing._commits import ParseResult, names_a_thing
from scopebench.parsing._commits import decide as _decide
from scopebench.parsing._labels import (
    LabelStyle,
    label_for,
    label_index,
    read_label,
    read_label_list,
)
from scopebench.parsing._option_text import option_text
from scopebench.parsing._reply import collapse_repeats, drop_cut_fragment, strip_echo
from scopebench.parsing._text import (
    ClauseIndex,
    clean,
    equals_option,
    named_options,
    negated_after,
    option_tokens,
    tokenize,
)
from scopebench.parsing._walk import HAS_MARK, MARKS, former_latter, walk_choice
from scopebench.parsing.languages import language_rule
from scopebench.parsing.leading import (
    accepts,
    bare_label,
    contradiction,
    first_line_label,
    first_line_rule,
    leading_label,
    option_starts_at,
    reason_follows,
    skip_space,
)
from scopebench.parsing.rules import Reading, Rule
from scopebench.parsing.vocabulary import (
    ALTERNATIVE_BEFORE,
    ASKED_LETTERS,
    ASKED_NUMBERS,
    BOXED,
    CHINESE,
    CHINESE_ITEM,
    CHINESE_REVERSE,
    CLAUSE_END,
    CORRECTION,
    DOUBTED,
    EXPLICIT,
    FILLER,
    HEDGED_LEAD,
    INTRO,
    JOINED,
    LABEL_WORD,
    LEAD_WORDS,
    LONE_LETTERS,
    LONE_MID_LETTERS,
    LONE_MID_NUMBERS,
    LONE_NUMBERS,
    OBJECT_LETTERS,
    OBJECT_NUMBERS,
    ORDINAL_OBJECT,
    ORDINAL_WORDS,
    SWITCH,
    TAG,
    TEXT_THEN_LABEL,
    THATS_MINE_LETTERS,
    THATS_MINE_NUMBERS,
    WINDOW,
    WRONG_AFTER,
    english,
)

__all__ = ["PARSER_VERSION", "RULES", "LabelStyle", "ParseResult", "parse_choice"]

#: Recorded with every run; bump whenever the parser's behaviour changes.
PARSER_VERSION = "choice-10"


# --- entry point ----------------------------------------------------------------------------


def parse_choice(
    response: str | None,
    choices: Sequence[str],
    *,
    labels: LabelStyle = "letters",
    finish_reason: str | None = None,
    prompt: str | None = None,
) -> ParseResult:
    """Map a free-text response to the option it commits to (the rules of :data:`RULES`).

    Args:
        response: The model's reply; ``None`` or blank is "empty response".
        choices: The option texts in order, without their labels.
        labels: ``"letters"`` (A, B, …) or ``"numbers"`` (1-based, MicroVQA's owner protocol).
        finish_reason: Why generation stopped, as the backend recorded it (``stop``, ``length``,
            ``content_filter``, ``error``); ``length`` means the reply was cut, so only an explicit
            verdict before the cut is read.
        prompt: The rendered prompt the reply answers; a reply that starts by repeating it is
            read from where the repetition ends.

    Returns:
        The chosen 0-based index with the rule that chose it, or ``index=None`` with the reason.

    Raises:
        ValueError: When ``labels`` is neither ``"letters"`` nor ``"numbers"``.
    """
    if labels not in ("letters", "numbers"):
        raise ValueError(f"labels must be 'letters' or 'numbers', not {labels!r}")
    if not choices:
        return ParseResult(None, "none", "no options to choose from")
    if response is None or not response.strip():
        return ParseResult(None, "none", "empty response")
    truncated = finish_reason == "length"
    raw = strip_echo(response, prompt)
    raw = collapse_repeats(drop_cut_fragment(raw) if truncated else raw)
    text = clean(raw)
    if not text.strip():
        return ParseResult(
            None, "none", "empty response" if raw is response else "the reply only repeats the prompt"
        )
    reading = Reading(text, raw, _Ctx(tuple(option_tokens(c) for c in choices), labels, truncated))
    for rule in RULES:
        if truncated and not rule.explicit:
            continue
        result = rule.apply(reading)
        if result is not None:
            return result
    if truncated:
        return ParseResult(
            None, "none", "cut at the length limit before an explicit answer (raise max_new_tokens)"
        )
    return ParseResult(None, "none", "no option committed to")


# --- answer_marker: answer tags and phrases ----------------------------------------------------------


def _answer_markers(text: str, ctx: _Ctx) -> ParseResult | None:
    tags: list[_Commit] = []
    for m in (*TAG.finditer(text), *BOXED.finditer(text)):
        body = m["body"][:WINDOW]
        # "<ANSWER>Answer: B</ANSWER>": an answer phrase nested in the tag; its label is the answer.
        nested = english().phrase.match(body, skip_space(body, 0))
        if nested is not None and nested["conn"] is not None:
            body = body[nested.end() :]
        c = _read_answer(body, ctx)
        if c is not None:
            tags.append(_Commit(c.labels, c.conflict, m.start(), "answer_tag"))
    phrases = _phrase_commits(text, ctx)
    lone = _lone_commits(text, ctx)
    if not tags and not phrases and not lone:
        return None
    first = first_line_label(text, ctx)
    lead = [] if first is None else [_Commit((first.label,), pos=0, method="leading_label")]
    if first is None and (lone or CORRECTION.search(text) or SWITCH.search(text)):
        # "C. Actually, B.": the opening label is an answer the later one may replace.
        opening = leading_label(text, ctx, ending=False)
        if opening is not None and opening.index is not None:
            lead = [_Commit((label_for(opening.index, ctx.style),), pos=0, method="leading_label")]
    phrases = [*phrases, *lone, *_asked_alone(text, ctx)]
    method, what = ("answer_tag", "answer tag") if tags else ("answer_phrase", "answer phrase")
    commits = sorted([*lead, *tags, *phrases], key=lambda c: c.pos)
    return _decide(commits, method, what, ctx, text)


def _phrase_commits(text: str, ctx: _Ctx) -> list[_Commit]:
    """Every answer phrase (plain, hedged, verdict, Chinese, reverse) and what it commits to."""
    found: list[_Commit] = []
    clauses = ClauseIndex(text)

    def add(
        start: int,
        end: int,
        *,
        loose: bool,
        strict_case: bool = False,
        single: bool = False,
        at_end: bool = False,
    ) -> None:
        if clauses.not_asserted(start):
            return
        if (
            at_end
            and not text.startswith("rather", start)  # "D, or rather B": a correction, not an alternative
            and ALTERNATIVE_BEFORE.search(text, max(0, start - 12), start)
        ):
            return  # "B, or perhaps D": a prefix after "or" names an alternative, not a verdict
        commit = _read_answer(text[end : end + WINDOW], ctx, loose=loose, strict_case=strict_case)
        # After a hedge or terse prefix, a list ("Thus A, B and C are excluded") is no answer.
        if commit is not None and not (single and len(commit.labels) > 1):
            # placed where its answer is read, at the phrase's end: a marker inside a
            # phrase ("The answer after reflection is C", "I was going to say the final answer
            # is B, but …") then stands before the answer, as it does in the reply.
            found.append(_Commit(commit.labels, commit.conflict, end))

    for m in english().phrase.finditer(text):
        add(m.start(), m.end(), loose=m["conn"] is not None or m["choose"] is not None)
    for m in english().verdict_text.finditer(text):
        add(m.start(), m.end(), loose=True)
    for m in english().hedge.finditer(text):
        add(m.start(), m.end(), loose=False, strict_case=True, single=True)
    for m in english().prefix.finditer(text):
        add(m.start(), m.end(), loose=False, strict_case=True, single=True, at_end=True)
    for m in CHINESE.finditer(text):
        add(m.start(), m.end(), loose=False)
    for m in (*CHINESE_REVERSE.finditer(text), *CHINESE_ITEM.finditer(text)):
        raw = str(m["c"] or m.groupdict().get("d"))
        if raw.isdigit() == (ctx.style == "numbers") and not clauses.not_asserted(m.start()):
            found.append(_Commit((raw.upper() if ctx.style == "letters" else str(int(raw)),), pos=m.start()))
    for m in english().ordinal_subject.finditer(text):
        label = _ordinal_label(m, ctx)
        if (
            label is not None
            and not clauses.not_asserted(m.start())
            and not ALTERNATIVE_BEFORE.search(text, max(0, m.start() - 12), m.start())
        ):
            found.append(_Commit((label,), pos=m.start()))
    reverse = english().reverse_letters if ctx.style == "letters" else english().reverse_numbers
    objects = OBJECT_LETTERS if ctx.style == "letters" else OBJECT_NUMBERS
    mine = THATS_MINE_LETTERS if ctx.style == "letters" else THATS_MINE_NUMBERS
    for m in (*reverse.finditer(text), *objects.finditer(text), *mine.finditer(text)):
        if clauses.not_asserted(m.start()) or ALTERNATIVE_BEFORE.search(
            text, max(0, m.start() - 12), m.start()
        ):
            continue  # "Either C or D would be defensible": D is one of two alternatives
        groups = m.groupdict()
        raw = str(next(v for k, v in groups.items() if v is not None and k in "abcdef"))
        label = raw.upper() if ctx.style == "letters" else str(int(raw))
        if names_a_thing(text, m.start(), raw, ctx):
            continue  # "... relative to Panel A** is the answer": "Panel A" is in an option's text
        gloss = groups.get("gl")
        if gloss is not None and not _own_gloss(gloss, label, ctx):
            continue  # "C (fibrosis) is more consistent" with fibrosis B: no reading either way
        found.append(_Commit((label,), pos=m.start()))
    return found


def _own_gloss(gloss: str, label: str, ctx: _Ctx) -> bool:
    """Whether a bracketed gloss after a label is that label's own option text ("2 (Nuclear)")."""
    if not ctx.in_range(label):
        return False
    words = [t.value for t in tokenize(gloss, ctx.span)]
    return equals_option(words, ctx.options[label_index(label, ctx.style)])


def _asked_alone(text: str, ctx: _Ctx) -> list[_Commit]:
    """Labels asked as a sentence of their own ("D?"), which name an option without choosing it.

    Alone they commit to nothing (the caller only sees them next to other commitments); next to
    an answer they count as named, so "D? Maybe B." is none while "A? No - D." is D (the "No"
    switches) and "Perhaps 4? Yes, 4." is 4 (the same label).
    """
    found: list[_Commit] = []
    for m in (ASKED_LETTERS if ctx.style == "letters" else ASKED_NUMBERS).finditer(text):
        raw = m["a"] or m["b"]
        label = raw.upper() if ctx.style == "letters" else str(int(raw))
        if ctx.in_range(label):
            found.append(_Commit((label,), pos=m.start("a") if m["a"] else m.start("b")))
    return found


def _lone_commits(text: str, ctx: _Ctx) -> list[_Commit]:
    """Labels standing alone at a sentence's end: :data:`LONE_LETTERS`, :data:`INTRO`.

    These weak forms also bring in an opening label (``leading_label``), so "A. Thinking again, D." names
    two options rather than silently D.
    """
    found: list[_Commit] = []
    clauses = ClauseIndex(text)
    lone, mid = (
        (LONE_LETTERS, LONE_MID_LETTERS) if ctx.style == "letters" else (LONE_NUMBERS, LONE_MID_NUMBERS)
    )
    for m in (*lone.finditer(text), *mid.finditer(text)):
        raw, at = (m["a"], m.start("a")) if m["a"] else (m["b"], m.start("b"))
        if not clauses.not_asserted(m.start()):
            # placed at the label, after its interjections ("Hmm, no. A."), which may be markers
            found.append(_Commit((raw.upper() if ctx.style == "letters" else str(int(raw)),), pos=at))
    for m in (*INTRO.finditer(text), *english().short.finditer(text), *HEDGED_LEAD.finditer(text)):
        if LABEL_WORD.search(m.group(1)) is None:
            c = _read_answer(text[m.end() : m.end() + WINDOW], ctx, loose=False, strict_case=True)
            if c is not None and len(c.labels) == 1:
                found.append(_Commit(c.labels, c.conflict, m.end()))
    return found


def _read_answer(body: str, ctx: _Ctx, *, loose: bool = True, strict_case: bool = False) -> _Commit | None:
    """Read what follows an answer phrase (or fills a tag): a label list or an option's text.

    Args:
        body: Text from just after the phrase (or the tag's content), bounded in length.
        ctx: The item.
        loose: False after a phrase without a connector ("Answer C") or a hedge, where only an
            explicit label counts, never option text or a letter followed by a word.
        strict_case: After a hedge or terse prefix ("it is …", "So …"): a lower-case letter counts
            only in brackets, and a label before a connective only before a reason ("because").
    """
    pos = skip_space(body, 0)
    filler = FILLER.match(body, pos)
    if filler is not None:
        pos = filler.end()
    read = read_label(body, pos, ctx.style)
    if strict_case and read is not None and read.lower and read.kind not in EXPLICIT:
        read = None
    if strict_case and read is not None and read.kind == "connective" and not reason_follows(body, read):
        read = None  # "I think B is wrong", "So B is excluded": a remark about B, not a choice
    if strict_case and read is not None and body[read.end :].lstrip(" \t").startswith(":"):
        read = None  # "Per option: A: no. B: …": a walk item, not an answer
    if read is not None and not option_starts_at(body, read, ctx) and accepts(read, ctx, loose=loose):
        items = read_label_list(body, read, ctx.style)
        if body[items[-1].end :].lstrip(" \t.)]'\"").startswith("?"):
            return None  # "Is the answer C?" asks, it does not answer
        if DOUBTED.match(body, items[-1].end):
            return None  # "Maybe D, maybe not.": doubted at once
        if WRONG_AFTER.match(body, items[-1].end):
            return None  # "My initial answer 1 is wrong.": called wrong at once
        if len(items) == 1:
            return _Commit((read.label,), contradiction(body, read, ctx))
        return _Commit(tuple(r.label for r in items))
    ordinal = ORDINAL_OBJECT.match(body, pos)
    if ordinal is not None:
        label = _ordinal_label(ordinal, ctx)
        return None if label is None else _Commit((label,))
    paired = _text_then_label(body, pos, ctx)
    if paired is not None:
        return paired
    if not loose:
        return None
    clause = body[pos:]
    cut = CLAUSE_END.search(clause)
    words = [t.value for t in tokenize(clause[: cut.start()] if cut else clause, 2 * ctx.span + 4)]
    while words and words[0] in LEAD_WORDS and not named_options(words, ctx.options, at_start=True):
        words = words[1:]
    named = named_options(words, ctx.options, at_start=True)
    if not named or negated_after(words, len(ctx.options[named[0]])):
        return None  # "… suggests necrosis is unlikely"
    named = [*named, *_alternative_text(words, named[0], ctx)]
    return _Commit(tuple(label_for(i, ctx.style) for i in dict.fromkeys(named)))


def _alternative_text(words: list[str], first: int, ctx: _Ctx) -> list[int]:
    """A second option's text joined to the first by "or"/"and" ("Golgi apparatus or mitochondria").

    Both are named, so the answer is none (reading the first would guess). So is a second option's
    text directly after the first ("necrosis/fibrosis").
    """
    rest = words[len(ctx.options[first]) :]
    # a second option's text right after the first, with no joining word, is named too:
    # "necrosis/fibrosis", "necrosis & fibrosis" (the slash and ampersand are no tokens)
    if rest and rest[0] in JOINED:
        rest = rest[1:]
    while rest and rest[0] in LEAD_WORDS and not named_options(rest, ctx.options, at_start=True):
        rest = rest[1:]
    return named_options(rest, ctx.options, at_start=True)


def _ordinal_label(m: re.Match[str], ctx: _Ctx) -> str | None:
    """The label an ordinal names ("the second option" is B or 2), if within the options."""
    place = ORDINAL_WORDS[m["ord"].casefold()]
    index = ctx.n - 1 if place < 0 else place
    return label_for(index, ctx.style) if index < ctx.n else None


def _text_then_label(body: str, pos: int, ctx: _Ctx) -> _Commit | None:
    """An option's text and then its own label ("pilocytic astrocytoma - option E").

    Commits only when the text is exactly one option's and the label is that option's; any
    other pair (text of D, label E) is left to the other rules, never read as either.
    """
    m = TEXT_THEN_LABEL.match(body, pos)
    if m is None:
        return None
    raw = m["lab"]
    if raw.isdigit() != (ctx.style == "numbers") or (raw.islower() and m["kw"] is None):
        return None
    label = raw.upper() if ctx.style == "letters" else str(int(raw))
    if not ctx.in_range(label):
        return None
    words = [t.value for t in tokenize(m["text"], ctx.span)]
    own = ctx.options[label_index(label, ctx.style)]
    # "the necrosis - option D"; but "A-band" starts with "a", which is its own text, not an article
    while words and words[0] in LEAD_WORDS and not equals_option(words, own):
        words = words[1:]
    # after the article is dropped, so "the fibrosis (option C)" with fibrosis A is
    # the same self-contradiction as "fibrosis (option C)"
    other = named_options(words, ctx.options, at_start=True)
    if equals_option(words, own):
        return _Commit((label,))
    if len(other) == 1 and equals_option(words, ctx.options[other[0]]):
        reason = f"text of option {label_for(other[0], ctx.style)} is labelled {label}"
        return _Commit((label,), reason)  # "fibrosis - option C" with fibrosis B: self-contradiction
    return None


def _walk_through(r: Reading) -> ParseResult | None:
    # Check marks are dropped by ``clean``; a walk-through reads them from its own copy.
    marked = clean(r.raw.translate(MARKS)) if HAS_MARK.search(r.raw) else r.text
    walked = walk_choice(marked, r.ctx.options, r.ctx.style)
    return None if walked is None else ParseResult(walked[0], "walk_through", walked[1])


def _former_latter(r: Reading) -> ParseResult | None:
    referred = former_latter(r.text, r.ctx.options, r.ctx.style)
    return None if referred is None else ParseResult(referred[0], "former_latter", referred[1])


# --- the rules, in precedence order ---------------------------------------------------------------

#: Every reading rule, first to last; the first that decides wins. docs/parser.md's rule table
#: lists the same names in the same order (tests/parsing/test_rules.py).
RULES: tuple[Rule, ...] = (
    Rule(
        "answer_marker",
        ("answer_tag", "answer_phrase"),
        "answer tags (<ANSWER>, \\boxed{}) and English and Chinese answer phrases, hedges, verdicts",
        "a model that states its answer outranks everything else it writes; self-corrections decide",
        True,
        (
            "plain",
            "terse_and_json",
            "spur_tag",
            "hedged_commitment",
            "hedged_lead",
            "self_correction",
            "change_of_mind",
            "informal_withdrawal",
            "first_impression",
            "commitment_after_concession",
            "commitment_verbs",
            "verdict_vocabulary",
            "object_verdict",
            "not_x_it_is_y",
            "denied_alternative",
            "english_a_i",
            "microvqa_answer",
            "answer_formats_7",
            "answer_formats_9",
            "chinese",
        ),
        lambda r: _answer_markers(r.text, r.ctx),
    ),
    Rule(
        "language_phrase",
        ("language_phrase",),
        "a label after or before an answer phrase or hedge of a language file; negations deny it",
        "answers in other languages are data: one file per language (parsing/languages/)",
        True,
        ("languages",),
        lambda r: language_rule(r.text, r.ctx),
    ),
    Rule(
        "bare_label",
        ("bare_label",),
        "a reply that is only a label (or only several, which is none)",
        "the shortest answer there is",
        True,
        ("plain", "decorated_answer"),
        lambda r: bare_label(r.text, r.ctx),
    ),
    Rule(
        "first_line_label",
        ("leading_label",),
        "a label alone on the first line, or with its reason or its own option text",
        "the explanation after an answer may name other options without changing it",
        True,
        ("leading_label_explained",),
        lambda r: first_line_rule(r.text, r.ctx),
    ),
    Rule(
        "leading_label",
        ("leading_label",),
        "a punctuated label opening the reply ('C) text'), unless the reply lists several",
        "models answer first and explain after; a list of labels is a walk, not an answer",
        True,
        ("leading_label_explained", "long_form", "others_rejected"),
        lambda r: leading_label(r.text, r.ctx),
    ),
    Rule(
        "walk_through",
        ("walk_through",),
        "every option walked once, exactly one marked as fitting and every other as not",
        "an option-by-option verdict is an answer only when it is complete and single",
        False,
        ("walkthrough_verdict",),
        _walk_through,
    ),
    Rule(
        "former_latter",
        ("former_latter",),
        "'the former' / 'the latter' between exactly two options named just before",
        "a reference resolves only when its two options are unambiguous",
        False,
        ("former_latter",),
        _former_latter,
    ),
    Rule(
        "option_text",
        ("option_text",),
        "the text of exactly one option, not ruled out, in a reply with no indecision or refusal",
        "a verdict written as the option's words; never read from a cut reply (elimination)",
        False,
        ("option_text_verdict", "named_label_in_text", "negation", "refusal", "ambiguous"),
        lambda r: option_text(r.text, r.ctx),
    ),
)

r"""Map a free-text model response to the option it commits to — or to none.

:func:`parse_choice` is deterministic and never guesses: a response that commits to no option, or
to several, is *unparsed* and the :class:`ParseResult` says why. (PathMMU's released parser picks a
random option in that case, SPUR's CoT runners read any standalone "a" near the end as option A,
and μ-Bench's code counts a reply as correct when the gold label appears anywhere; we do none of
these.)

Before any rule, the response is cleaned: Unicode NFKC, typographic quotes and dashes to ASCII,
and markdown/LaTeX noise removed (``**``, ``*``, backticks, ``$``, ``\text{…}``, heading ``#``,
quote ``>``). Labels are letters ``A, B, …`` or, with ``labels="numbers"`` (MicroVQA's owner
protocol), 1-based numbers ``1, 2, …``; labels outside the option count are reported, not mapped.

The rules, in order; the first that commits decides:

1. **Answer tags and answer phrases** (``method="answer_tag"`` / ``"answer_phrase"``). Every
   ``<ANSWER> … </ANSWER>`` (SPUR; an unclosed tag runs to the next ``<`` or the end) and
   ``\boxed{…}``, and every answer phrase, of these kinds:

   - plain: "The answer is", "Answer:", "Final answer:", "The correct option is", "I would
     choose", "I'm going with", "I'm changing my answer to C", ``{"answer": "C"}``; after a
     connector ("is", ":", "=") the text of an option may stand for its label ("The answer is a
     rosette formation");
   - reverse: "B is the correct answer", "C is the most likely answer", "B is the answer", "(B)
     is correct.", "A seems right to me", "B fits best", "D best matches", "C remains.", "C is
     my final answer";
   - hedged or terse (an explicit label only, never option text or a lower-case letter): "I would
     say D", "I'd say B", "I believe it's D", "It is probably B", "My choice: C", "My best guess
     would be B", "I'm leaning toward C", "I'd opt for B", "Should be B.", "not A but C", "Final:
     C", "Result: (B)", "Pick: C", "Therefore: A", "So C.", "Going with C", "Taking … into
     account, C.", "=> D"; since choice-5 also "which makes C the best option", "This leaves
     D", "suggests C", "The option that fits is 4", "I'd revise to C", "Not D - C", "C rather
     than B", "I'd tentatively go with B"; since choice-6 a verdict vocabulary ("D is the best
     fit", "Letter: D"), hedges ("Plausibly C.", "Hard to be sure, but 1."), ordinals, an option's
     text with its own label, more Chinese verbs and changes of mind (docs/parser.md lists them);
     since choice-7 "<final_answer>D</final_answer>", "<ans>A</ans>", "B is what the image
     shows", "Best estimate: C", "Answer (low confidence): 3", "Easy one - A.", "Instead of A,
     choose B", "The only remaining option is D", "Which brings me to C", "C (4) is more
     consistent"; since choice-8 "I'd still settle on C", "I'll stick with D", "I'd plump for
     B", "I'd come down on the side of B"; a label after a naming word ("Panel A", "grade 2")
     is a name, not a label, when an option's text holds the same pair;
   - weak forms (choice-3; they bring a rule-4 opening label in with them): a label that is a
     sentence of its own after another sentence ("C... no, D."), an introductory clause then a
     label ending the sentence ("After careful consideration, E."), a short sentence ending in a
     label after a verb of choosing ("I suppose D.", "I'd probably go with A.");
   - verdicts by option text: "The most likely diagnosis is X", "most consistent with X", "best
     classified as X", "Diagnosis: X", "Conclusion: X", "favors X", "points to X" — unless a
     ruling-out word follows ("… suggests X is unlikely");
   - Chinese: "答案是（D）", "正确答案：C", "故选B", "选C", "我选择C", "选项C正确", "不是A，而是C"
     (with "。" read as ".").

   A phrase inside a negated or conditional clause commits to nothing ("I don't think B is the
   correct answer", "If it is A, …", "The answer is not A"), nor one in a sentence opened by a
   hypothesis ("If the cells were larger, I would say C"; not "If I had to choose, …"). What
   follows a phrase must be a label — "C", "(c)", "C)", "Option C", "C because" — or an option's
   text as above. A label alone on the first line (rule 3) joins these commitments. All are read in
   order: if they agree (the same label repeated is fine) that option is chosen. If they name
   different options, an explicit **self-correction** decides: the commitments after the last
   correction marker ("Wait", "Actually", "on second thought", "I made a mistake", "let me
   reconsider", …) that has commitments on both sides replace the earlier ones, when they name one
   option ("The answer is D. Wait — … so the answer is C" → C); after a named first thought ("At
   first I thought B", "Initial pick: A") a "but", "however" or "final" is such a marker too.
   Without such a marker, or when the later ones disagree too, the result is none ("several options
   named: B, D"). A correction marker in a sentence after the last commitment, with no answer after
   it, withdraws it ("This is A. Actually no, I'm not sure." → none; a plain "Actually," is
   emphasis, only "actually no" counts); a marker after the last answer followed by a label no rule
   reads makes it none. A label followed by "?" asks and commits to nothing ("Is the answer C?",
   "B?"). "The answer is A or B" names two. A lone out-of-range ``X`` next to in-range answers is
   ignored, since it is the placeholder of an echoed instruction ('answer in the format "The answer
   is (X)"').
2. **Whole-response label** (``"bare_label"``): the response is only a label, in any usual form
   and any case — "C", "c", "(C)", "C.", "C。", "[C]", "'C'", "Option C" — or only several ("A
   and C", "Either B or D"), which is none.
3. **Label alone on the first line** (``"leading_label"``): the first line is only a label
   ("B", "**B**", "(B).", "Option B"), a label with its reason ("B because …") or a label with
   its own option text ("C. Rosette formation"); the explanation after it may name or rule out
   other options without changing the answer. Not when another line is also a lone label or a
   label with its own text (a list of labels, or the options echoed).
4. **Leading label** (``"leading_label"``): the response starts with a punctuated label — "C)
   text", "C. because …", "(c) text", "Option C: text" — unless it enumerates several labels at
   line starts (or several "(X)" / "Option X" mentions), which is a walk through the options and
   not an answer, or starts a list ("A, B and C are incorrect"). With numbers only bracketed
   forms count ("(3) text", "3) text"), since "1." is how lists start.
5. **Walk-through** (``"walk_through"``): every option walked once ("A: no. B: yes. C: no. D:
   no.", check marks), exactly one marked as fitting and all others as not (``_walk.py``).
6. **"The former"/"the latter"** (``"former_latter"``): resolved only between exactly two options
   named in order just before, when the reference's sentence chooses it; ruled out → none.
7. **Option text** (``"option_text"``): the text of exactly one option occurs in the response, on
   word boundaries, insensitive to case, spacing and punctuation, a trailing plural "s"/"es"
   tolerated, *and not ruled out*. A mention is ruled out when, in its clause, a ruling-out word
   precedes it ("not", "no evidence of", "without", "rather than", "more likely than", "rules
   out", "unlike", "I thought") or shortly follows it ("is unlikely", "is not seen", "can be
   ruled out", "is absent", "would look different", "is in the differential"), including after
   ":" / "?" / " - " ("Necrosis? No.", "Whorls: not seen"); or when an "if"/"whether" precedes
   it in its sentence. Clauses end at ``. , ; : ! ?``, line breaks and "but/however/whereas/
   while/although". Where one option's text lies inside another's match at the same place
   ("stroma" inside "cancer stroma", "lymphocyte" against "lymphocytes"), the longer or exact
   one wins; two distinct options named → none; only ruled-out options → none ("options named
   only to be ruled out: D"); words of indecision ("both", "either", "not sure", "can't tell")
   → none. "None of the above" is an ordinary option. A mention in a question ("Is this X?"),
   a general remark ("The features of X include …", "X is typically seen …") or with "could/might
   … be" or "cannot confirm" in the reply is no verdict (choice-5).
8. Otherwise none: ``method="none"``, reason "no option committed to".

"Could be X or Y" commits to nothing. docs/parser.md has every rule with examples and figures.

Guards that apply throughout:

- An English "a"/"A" or pronoun "I" inside a sentence is not a label: a letter followed by an
  ordinary word ("A cell shows…", "I think…", "the answer is a whorled pattern") or by an
  apostrophe and a letter ("I'd say B", "I'm") is not read as a label, and lower-case letters
  count only in explicit forms (bracketed, punctuated, at the end, or before a connective such
  as "because"). Elsewhere (after an answer phrase) an upper-case letter other than A or I
  followed by a word still counts ("The answer is C since…"), unless an option's own text starts
  at that letter ("The answer is B cells" with an option "B cells", "A band").
- A label directly followed by the complete text of a *different* option ("C) Whorled pattern"
  when C is "Rosette formation") contradicts itself → none.
- ``method`` names the rule that decided, also when it decided that no single option was chosen
  (e.g. ``"answer_phrase"`` with reason "several options named: A, C"); ``"none"`` means no rule
  found anything to go on.

Cost is linear in the response length: an answer phrase's answer is looked for only in the
:data:`_WINDOW` characters after it, negation is read from one clause index built once per
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
from scopebench.parsing._commits import out_of_range as _out_of_range
from scopebench.parsing._commits import withdrawal as _withdrawal
from scopebench.parsing._labels import (
    LabelRead,
    LabelStyle,
    label_for,
    label_index,
    read_label,
    read_label_list,
)
from scopebench.parsing._patterns import (
    _ALTERNATIVE_BEFORE,
    _ASKED_LETTERS,
    _ASKED_NUMBERS,
    _ASKS,
    _BARE_TAIL,
    _BOXED,
    _BULLET,
    _CHINESE,
    _CHINESE_ITEM,
    _CHINESE_REVERSE,
    _CLAUSE_END,
    _CONFIRMED,
    _CONTRASTED,
    _CORRECTION,
    _DENIED_AFTER,
    _DENIED_BEFORE,
    _DOUBTED,
    _EXPLICIT,
    _FILLER,
    _GLOSS_AFTER,
    _HEDGE,
    _HEDGED_LEAD,
    _INLINE_LETTERS,
    _INLINE_NUMBERS,
    _INTERJECTION,
    _INTRO,
    _JOINED,
    _LABEL_BEFORE,
    _LABEL_WORD,
    _LEAD_WORDS,
    _LONE_LETTERS,
    _LONE_MID_LETTERS,
    _LONE_MID_NUMBERS,
    _LONE_NUMBERS,
    _NOUN_BEFORE,
    _OBJECT_LETTERS,
    _OBJECT_NUMBERS,
    _ORDINAL_OBJECT,
    _ORDINAL_SUBJECT,
    _ORDINAL_WORDS,
    _PHRASE,
    _PREFIX,
    _REASON_WORDS,
    _REST_OK,
    _REVERSE_LETTERS,
    _REVERSE_NUMBERS,
    _SENTENCE_CUT,
    _SHORT,
    _SWITCH,
    _TAG,
    _TENTATIVE,
    _TEXT_THEN_LABEL,
    _THATS_MINE_LETTERS,
    _THATS_MINE_NUMBERS,
    _TRAILING_LABEL,
    _UNDECIDED,
    _VERDICT_TEXT,
    _WINDOW,
    _WRONG_AFTER,
)
from scopebench.parsing._text import (
    ClauseIndex,
    TextMatch,
    Token,
    clause_starts,
    clean,
    equals_option,
    find_mentions,
    more_specific,
    named_options,
    negated_after,
    option_tokens,
    question_sentences,
    resolve,
    ruled_out,
    tokenize,
    verdict_gap,
)
from scopebench.parsing._walk import HAS_MARK, MARKS, former_latter, walk_choice

__all__ = ["PARSER_VERSION", "LabelStyle", "ParseResult", "parse_choice"]

#: Recorded with every run; bump whenever the parser's behaviour changes.
PARSER_VERSION = "choice-9"


# --- entry point ----------------------------------------------------------------------------


def parse_choice(
    response: str | None, choices: Sequence[str], *, labels: LabelStyle = "letters"
) -> ParseResult:
    """Map a free-text response to the option it commits to (rules in the module docstring).

    Args:
        response: The model's reply; ``None`` or blank is "empty response".
        choices: The option texts in order, without their labels.
        labels: ``"letters"`` (A, B, …) or ``"numbers"`` (1-based, MicroVQA's owner protocol).

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
    text = clean(response)
    if not text.strip():
        return ParseResult(None, "none", "empty response")
    ctx = _Ctx(tuple(option_tokens(c) for c in choices), labels)
    for rule in (_answer_markers, _bare_label, _first_line_rule, _leading_label):
        result = rule(text, ctx)
        if result is not None:
            return result
    # Check marks are dropped by ``clean``; a walk-through reads them from its own copy.
    marked = clean(response.translate(MARKS)) if HAS_MARK.search(response) else text
    walked = walk_choice(marked, ctx.options, labels)
    if walked is not None:
        return ParseResult(walked[0], "walk_through", walked[1])
    referred = former_latter(text, ctx.options, labels)
    if referred is not None:
        return ParseResult(referred[0], "former_latter", referred[1])
    return _option_text(text, ctx) or ParseResult(None, "none", "no option committed to")


# --- rule 1: answer tags and phrases ----------------------------------------------------------


def _answer_markers(text: str, ctx: _Ctx) -> ParseResult | None:
    tags: list[_Commit] = []
    for m in (*_TAG.finditer(text), *_BOXED.finditer(text)):
        body = m["body"][:_WINDOW]
        # "<ANSWER>Answer: B</ANSWER>": an answer phrase nested in the tag; its label is the answer.
        nested = _PHRASE.match(body, _skip_space(body, 0))
        if nested is not None and nested["conn"] is not None:
            body = body[nested.end() :]
        c = _read_answer(body, ctx)
        if c is not None:
            tags.append(_Commit(c.labels, c.conflict, m.start(), "answer_tag"))
    phrases = _phrase_commits(text, ctx)
    lone = _lone_commits(text, ctx)
    if not tags and not phrases and not lone:
        return None
    first = _first_line_label(text, ctx)
    lead = [] if first is None else [_Commit((first.label,), pos=0, method="leading_label")]
    if first is None and (lone or _CORRECTION.search(text) or _SWITCH.search(text)):
        # "C. Actually, B.": the opening label is an answer the later one may replace.
        opening = _leading_label(text, ctx, ending=False)
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
            and _ALTERNATIVE_BEFORE.search(text, max(0, start - 12), start)
        ):
            return  # "B, or perhaps D": a prefix after "or" names an alternative, not a verdict
        commit = _read_answer(text[end : end + _WINDOW], ctx, loose=loose, strict_case=strict_case)
        # After a hedge or terse prefix, a list ("Thus A, B and C are excluded") is no answer.
        if commit is not None and not (single and len(commit.labels) > 1):
            # choice-9: placed where its answer is read, at the phrase's end: a marker inside a
            # phrase ("The answer after reflection is C", "I was going to say the final answer
            # is B, but …") then stands before the answer, as it does in the reply.
            found.append(_Commit(commit.labels, commit.conflict, end))

    for m in _PHRASE.finditer(text):
        add(m.start(), m.end(), loose=m["conn"] is not None or m["choose"] is not None)
    for m in _VERDICT_TEXT.finditer(text):
        add(m.start(), m.end(), loose=True)
    for m in _HEDGE.finditer(text):
        add(m.start(), m.end(), loose=False, strict_case=True, single=True)
    for m in _PREFIX.finditer(text):
        add(m.start(), m.end(), loose=False, strict_case=True, single=True, at_end=True)
    for m in _CHINESE.finditer(text):
        add(m.start(), m.end(), loose=False)
    for m in (*_CHINESE_REVERSE.finditer(text), *_CHINESE_ITEM.finditer(text)):
        raw = str(m["c"] or m.groupdict().get("d"))
        if raw.isdigit() == (ctx.style == "numbers") and not clauses.not_asserted(m.start()):
            found.append(_Commit((raw.upper() if ctx.style == "letters" else str(int(raw)),), pos=m.start()))
    for m in _ORDINAL_SUBJECT.finditer(text):
        label = _ordinal_label(m, ctx)
        if (
            label is not None
            and not clauses.not_asserted(m.start())
            and not _ALTERNATIVE_BEFORE.search(text, max(0, m.start() - 12), m.start())
        ):
            found.append(_Commit((label,), pos=m.start()))
    reverse = _REVERSE_LETTERS if ctx.style == "letters" else _REVERSE_NUMBERS
    objects = _OBJECT_LETTERS if ctx.style == "letters" else _OBJECT_NUMBERS
    mine = _THATS_MINE_LETTERS if ctx.style == "letters" else _THATS_MINE_NUMBERS
    for m in (*reverse.finditer(text), *objects.finditer(text), *mine.finditer(text)):
        if clauses.not_asserted(m.start()) or _ALTERNATIVE_BEFORE.search(
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
    for m in (_ASKED_LETTERS if ctx.style == "letters" else _ASKED_NUMBERS).finditer(text):
        raw = m["a"] or m["b"]
        label = raw.upper() if ctx.style == "letters" else str(int(raw))
        if ctx.in_range(label):
            found.append(_Commit((label,), pos=m.start("a") if m["a"] else m.start("b")))
    return found


def _lone_commits(text: str, ctx: _Ctx) -> list[_Commit]:
    """Labels standing alone at a sentence's end: :data:`_LONE_LETTERS`, :data:`_INTRO`.

    These weak forms also bring in an opening label (rule 4), so "A. Thinking again, D." names
    two options rather than silently D.
    """
    found: list[_Commit] = []
    clauses = ClauseIndex(text)
    lone, mid = (
        (_LONE_LETTERS, _LONE_MID_LETTERS) if ctx.style == "letters" else (_LONE_NUMBERS, _LONE_MID_NUMBERS)
    )
    for m in (*lone.finditer(text), *mid.finditer(text)):
        raw, at = (m["a"], m.start("a")) if m["a"] else (m["b"], m.start("b"))
        if not clauses.not_asserted(m.start()):
            # placed at the label, after its interjections ("Hmm, no. A."), which may be markers
            found.append(_Commit((raw.upper() if ctx.style == "letters" else str(int(raw)),), pos=at))
    for m in (*_INTRO.finditer(text), *_SHORT.finditer(text), *_HEDGED_LEAD.finditer(text)):
        if _LABEL_WORD.search(m.group(1)) is None:
            c = _read_answer(text[m.end() : m.end() + _WINDOW], ctx, loose=False, strict_case=True)
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
    pos = _skip_space(body, 0)
    filler = _FILLER.match(body, pos)
    if filler is not None:
        pos = filler.end()
    read = read_label(body, pos, ctx.style)
    if strict_case and read is not None and read.lower and read.kind not in _EXPLICIT:
        read = None
    if strict_case and read is not None and read.kind == "connective" and not _reason_follows(body, read):
        read = None  # "I think B is wrong", "So B is excluded": a remark about B, not a choice
    if strict_case and read is not None and body[read.end :].lstrip(" \t").startswith(":"):
        read = None  # "Per option: A: no. B: …": a walk item, not an answer
    if read is not None and not _option_starts_at(body, read, ctx) and _accepts(read, ctx, loose=loose):
        items = read_label_list(body, read, ctx.style)
        if body[items[-1].end :].lstrip(" \t.)]'\"").startswith("?"):
            return None  # "Is the answer C?" asks, it does not answer
        if _DOUBTED.match(body, items[-1].end):
            return None  # "Maybe D, maybe not.": doubted at once
        if _WRONG_AFTER.match(body, items[-1].end):
            return None  # "My initial answer 1 is wrong.": called wrong at once
        if len(items) == 1:
            return _Commit((read.label,), _contradiction(body, read, ctx))
        return _Commit(tuple(r.label for r in items))
    ordinal = _ORDINAL_OBJECT.match(body, pos)
    if ordinal is not None:
        label = _ordinal_label(ordinal, ctx)
        return None if label is None else _Commit((label,))
    paired = _text_then_label(body, pos, ctx)
    if paired is not None:
        return paired
    if not loose:
        return None
    clause = body[pos:]
    cut = _CLAUSE_END.search(clause)
    words = [t.value for t in tokenize(clause[: cut.start()] if cut else clause, 2 * ctx.span + 4)]
    while words and words[0] in _LEAD_WORDS and not named_options(words, ctx.options, at_start=True):
        words = words[1:]
    named = named_options(words, ctx.options, at_start=True)
    if not named or negated_after(words, len(ctx.options[named[0]])):
        return None  # "… suggests necrosis is unlikely"
    named = [*named, *_alternative_text(words, named[0], ctx)]
    return _Commit(tuple(label_for(i, ctx.style) for i in dict.fromkeys(named)))


def _alternative_text(words: list[str], first: int, ctx: _Ctx) -> list[int]:
    """A second option's text joined to the first by "or"/"and" ("Golgi apparatus or mitochondria").

    choice-5 read such an answer as the first option; both are named, so the answer is none. Since
    choice-9 also a second option's text directly after the first ("necrosis/fibrosis").
    """
    rest = words[len(ctx.options[first]) :]
    # choice-9: a second option's text right after the first, with no joining word, is named too:
    # "necrosis/fibrosis", "necrosis & fibrosis" (the slash and ampersand are no tokens)
    if rest and rest[0] in _JOINED:
        rest = rest[1:]
    while rest and rest[0] in _LEAD_WORDS and not named_options(rest, ctx.options, at_start=True):
        rest = rest[1:]
    return named_options(rest, ctx.options, at_start=True)


def _ordinal_label(m: re.Match[str], ctx: _Ctx) -> str | None:
    """The label an ordinal names ("the second option" is B or 2), if within the options."""
    place = _ORDINAL_WORDS[m["ord"].casefold()]
    index = ctx.n - 1 if place < 0 else place
    return label_for(index, ctx.style) if index < ctx.n else None


def _text_then_label(body: str, pos: int, ctx: _Ctx) -> _Commit | None:
    """An option's text and then its own label ("pilocytic astrocytoma - option E").

    Commits only when the text is exactly one option's and the label is that option's; any
    other pair (text of D, label E) is left to the other rules, never read as either.
    """
    m = _TEXT_THEN_LABEL.match(body, pos)
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
    while words and words[0] in _LEAD_WORDS and not equals_option(words, own):
        words = words[1:]
    # choice-9: after the article is dropped, so "the fibrosis (option C)" with fibrosis A is
    # the same self-contradiction as "fibrosis (option C)"
    other = named_options(words, ctx.options, at_start=True)
    if equals_option(words, own):
        return _Commit((label,))
    if len(other) == 1 and equals_option(words, ctx.options[other[0]]):
        reason = f"text of option {label_for(other[0], ctx.style)} is labelled {label}"
        return _Commit((label,), reason)  # "fibrosis - option C" with fibrosis B: self-contradiction
    return None


def _reason_follows(text: str, read: LabelRead) -> bool:
    """Whether the word after a label is a reason ("B because …"), not a remark ("B is wrong")."""
    word = text[read.end :].split(None, 1)
    return bool(word) and word[0].casefold() in _REASON_WORDS


def _accepts(read: LabelRead, ctx: _Ctx, *, loose: bool) -> bool:
    """Whether a label read after an answer phrase or in a tag commits to that label."""
    if read.strong or read.kind == "connective":
        return True
    # Followed by an ordinary word: "the answer is a whorled…" and "Answer: I think…" are English.
    return loose and read.kind == "word" and not read.lower and read.label not in ("A", "I")


def _option_starts_at(text: str, read: LabelRead, ctx: _Ctx) -> bool:
    """Whether a label followed by a word is really the start of an option's text ("B cells")."""
    if read.kind != "word":
        return False
    # choice-9: not cut at the clause's end, so an option text with brackets or commas of its own
    # ("B cells (CD20+)") is still found; the tokens are bounded by the longest option.
    words = [t.value for t in tokenize(text[read.label_start :], ctx.span)]
    return bool(named_options(words, ctx.options, at_start=True))


def _contradiction(text: str, read: LabelRead, ctx: _Ctx) -> str | None:
    """A reason when a label is directly followed by the full text of a different option."""
    if not ctx.in_range(read.label):
        return None
    rest = text[read.end :].lstrip(" \t.,:)]-")  # choice-9: also after a comma ("C, Fibrosis")
    if rest.startswith("("):
        # choice-9: a bracketed gloss is compared too ("C (fibrosis) is the most likely answer."
        # with fibrosis B contradicts itself)
        rest = rest[1:].split(")", 1)[0]
    cut = _CLAUSE_END.search(rest)
    # choice-9: the clause, and the sentence too, which keeps an option's own brackets and commas
    # ("1) Colocalization is moderate (Pearson's r ≈ 0.5)")
    end = _SENTENCE_CUT.search(rest)
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


# --- rule 2: the whole response is a label ------------------------------------------------------


def _bare_label(text: str, ctx: _Ctx) -> ParseResult | None:
    body = text.strip()
    bullet = _BULLET.match(body)
    pos = bullet.end() if bullet is not None else 0
    interjection = _INTERJECTION.match(body, pos)
    if interjection is not None:
        pos = interjection.end()
    filler = _FILLER.match(body, pos)
    if filler is not None:
        pos = filler.end()
    tentative = _TENTATIVE.match(body, pos)
    if tentative is not None:
        pos = tentative.end()
    read = read_label(body, pos, ctx.style)
    if read is None or not (read.strong or read.kind == "connective"):
        return None
    items = read_label_list(body, read, ctx.style)
    end = items[-1].end
    if _CONFIRMED.match(body, end) and len(items) == 1:
        return _decide([_Commit((read.label,))], "bare_label", "label asked and confirmed", ctx)
    if _ASKS.match(body, end) and (tentative is None or len(items) > 1):
        return None  # "B?" asks; "Perhaps A?" answers, tentatively
    if tentative is None and body.rstrip().endswith("?"):
        return None  # "D is it?" asks too
    tail = _BARE_TAIL.match(body, end)
    if not _REST_OK.match(body, tail.end() if tail is not None else end):
        return None
    return _decide([_Commit(tuple(r.label for r in items))], "bare_label", "whole response", ctx)


# --- rule 3: a label alone on the first line -----------------------------------------------------


def _first_line_label(text: str, ctx: _Ctx) -> LabelRead | None:
    """A label that is the whole first line, or opens it with its reason or its own text.

    "B", "**B**", "(B).", "Option B", "B because …" or "B. Spindle cells" — provided no other
    line is also a lone label or a label with its own text (then the lines are a list, not an
    answer).
    """
    body = text.lstrip()
    line, _, rest = body.partition("\n")
    read = read_label(line, 0, ctx.style)
    if read is None or _ASKS.match(line, read.end):
        return None
    if read.kind == "connective":
        if not _reason_follows(line, read):
            return None
    elif not (read.strong and (_REST_OK.match(line, read.end) or _own_text_follows(line, read, ctx))):
        return None
    if len(read_label_list(line, read, ctx.style)) > 1:
        return None
    for other in rest.splitlines():
        other = other.strip()
        again = read_label(other, 0, ctx.style)
        if (
            again is not None
            and again.strong
            and (_REST_OK.match(other, again.end) or _own_text_follows(other, again, ctx))
        ):
            return None  # the options echoed as a list, or a list of labels
    return read


def _own_text_follows(line: str, read: LabelRead, ctx: _Ctx) -> bool:
    """Whether the rest of the line is exactly the label's own option text ("C. Rosette formation")."""
    if not ctx.in_range(read.label):
        return False
    words = [t.value for t in tokenize(line[read.end :], ctx.span)]
    return equals_option(words, ctx.options[label_index(read.label, ctx.style)])


def _first_line_rule(text: str, ctx: _Ctx) -> ParseResult | None:
    """Rule 3: the first line is only a label; the explanation after it may name other options."""
    read = _first_line_label(text, ctx)
    if read is None or not ctx.in_range(read.label):
        return None
    other = _ends_with_other_label(text, read.label, ctx)
    if other is not None:
        return ParseResult(None, "leading_label", other)
    return _decide([_Commit((read.label,), method="leading_label")], "leading_label", "", ctx)


# --- rule 4: the response starts with a label ----------------------------------------------------


def _leading_label(text: str, ctx: _Ctx, *, ending: bool = True) -> ParseResult | None:
    """Rule 4; ``ending=False`` skips the check that the reply does not end on another label."""
    body = text.lstrip()
    read = read_label(body, 0, ctx.style)
    if read is None or any(p.match(body, read.end) for p in (_ASKS, _DENIED_AFTER, _WRONG_AFTER)):
        return None  # "B?" asks; "D, definitely not." and "Option B is wrong." deny
    if read.kind not in _leading_kinds(ctx) and not _number_dash(body, read, ctx):
        return None
    if _enumerates(body, ctx) or _option_starts_at_label(body, read, ctx):
        return None
    if len(read_label_list(body, read, ctx.style)) > 1 or _PLURAL_LEAD.match(body):
        return None  # "A, B and C are all incorrect", "Options B and C both …": a list, not an answer
    if not ctx.in_range(read.label):
        # "I. Observations" or "F) …" with four options: no answer here; option text may still tell.
        return _option_text(text, ctx) or ParseResult(None, "leading_label", _out_of_range(read.label, ctx))
    withdrawn = _withdrawal(body, read.end)
    if withdrawn is not None:
        return ParseResult(
            None, "leading_label", f"label withdrawn after {withdrawn.group()!r} with no new one"
        )
    conflict = (
        _contradiction(body, read, ctx) or (ending and _ends_with_other_label(body, read.label, ctx)) or None
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
    m = _TRAILING_LABEL.search(text, max(0, len(text) - 12))
    if m is None:
        return None
    raw = m["lab"]
    if raw.isdigit() != (ctx.style == "numbers") or _DENIED_BEFORE.search(text, 0, m.start() + 1):
        return None  # "D, not B.": the closing label is denied, not chosen
    if _NOUN_BEFORE.search(text, max(0, m.start() - 16), m.start() + 1):
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
        bullet = _BULLET.match(line)
        start = bullet.end() if bullet else 0
        read = read_label(line, start, ctx.style)
        if read is not None and read.kind in ("bracketed", "closed", "punct", "keyword"):
            seen.add(read.label)
    inline = _INLINE_LETTERS if ctx.style == "letters" else _INLINE_NUMBERS
    for m in inline.finditer(body):
        if _CONTRASTED.search(body, max(0, m.start() - 16), m.start()):
            continue
        raw = next(g for g in m.groups() if g)
        seen.add(raw.upper() if ctx.style == "letters" else str(int(raw)))
    return len(seen) > 1


# --- rule 5: option text -------------------------------------------------------------------------


def _option_text(text: str, ctx: _Ctx) -> ParseResult | None:
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
    undecided = _UNDECIDED.search(text)
    if undecided is not None:
        return ParseResult(None, "option_text", f"option text with indecision ({undecided.group()!r})")
    specific = more_specific(values, mentions, kept, ctx.options)
    if specific is not None:
        return ParseResult(
            specific, "option_text", f"option {label_for(specific, ctx.style)} named as the specific verdict"
        )
    if len(kept) > 1:
        return ParseResult(None, "option_text", f"several options named: {', '.join(labels)}")
    return ParseResult(kept[0], "option_text", f"text of option {labels[0]} found")


def _mislabelled(text: str, tokens: Sequence[Token], mentions: Sequence[TextMatch], ctx: _Ctx) -> str | None:
    """Why option text is no answer when a mention carries another option's label ("fibrosis (C)").

    Since choice-9 also a label opening the mention's line ("3. The protein localizes to the plasma
    membrane" with that text option 4, "Option 4 - use a higher NA objective" with that option 1).
    """
    for m in mentions:
        before = _LABEL_BEFORE.search(text, max(0, tokens[m.start].start - 24), tokens[m.start].start)
        raw = None if before is None else str(before["x"] or before["y"] or before["z"])
        if raw is not None and raw.isdigit() == (ctx.style == "numbers"):
            label = raw.upper() if ctx.style == "letters" else str(int(raw))
            if ctx.in_range(label) and label != label_for(m.option, ctx.style):
                return f"text of option {label_for(m.option, ctx.style)} is labelled {label}"
        gloss = _GLOSS_AFTER.match(text, tokens[m.end - 1].end)
        if gloss is None:
            continue
        raw = gloss["x"] or gloss["y"]
        if raw.isdigit() != (ctx.style == "numbers"):
            continue
        label = raw.upper() if ctx.style == "letters" else str(int(raw))
        if label != label_for(m.option, ctx.style):
            return f"text of option {label_for(m.option, ctx.style)} is labelled {label}"
    return None


def _skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos].isspace():
        pos += 1
    return pos

"""Text clean-up, tokens and option-text matching for the choice parser (private).

Everything here is deterministic and works on token sequences, so option texts match only on word
boundaries and are insensitive to case, spacing and punctuation.
"""

from __future__ import annotations

import bisect
import itertools
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from scopebench.parsing._language_files import folder_cached
from scopebench.parsing.vocabulary import english_words

# emoji and pictographs that chat models put after an answer ("The answer is B 😀",
# "Answer: C 🔬", "B 👍") end a label as a space does. Left as they are, so that they still end
# no label: marks that reject or warn ("B ❌", "B 👎" must never read as B; the walk-through
# reads ✗ ✘ ❌ ❎ as "no"), the empty ballot box (an unticked "☐ A" is no answer), dingbat digits
# and arrows (➁ may be an answer, ➡ marks one), and the geometric shapes and arrows of
# U+1F780–U+1F8FF (crosses and saltires among them).
_REJECTING = frozenset(
    "\u2610\u2612\u26a0\u26d4\u2715\u2716\u2717\u2718\u274c\u274e"
    "\U0001f44e\U0001f5d9\U0001f645\U0001f6ab\U0001f6d1"
)
_PICTOGRAPHS = (*range(0x2600, 0x2776), 0x2B50, 0x2B55, *range(0x1F300, 0x1F780), *range(0x1F900, 0x1FB00))
_DECORATION: dict[str, str | None] = {
    **{chr(cp): " " for cp in _PICTOGRAPHS if chr(cp) not in _REJECTING},
    # Marks of doubt read as a question mark ("B 🤔" is "B ?"), of emphasis as "!".
    **dict.fromkeys("\u2753\u2754\U0001f914\U0001f937", "?"),
    **dict.fromkeys("\u2755\u2757", "!"),
    # Variation selectors, zero-width joiners and the keycap only dress a character up
    # ("2\ufe0f\u20e3" is the keycap 2: a number label).
    **dict.fromkeys("\ufe0e\ufe0f\u200d\u20e3"),
}

# Typographic quotes and dashes become their ASCII forms so one set of patterns covers them.
_TRANSLATE = str.maketrans(
    {
        **_DECORATION,  # first, so the entries below win (check marks are dropped)
        # arrows as "->"/"=>" ("Answer ⇒ 5", "Final answer ➜ (A)").
        **dict.fromkeys("\u2794\u279c\u279d\u279e\u279f\u27a0\u27a1\u27a4\u27f6\u2b95", "->"),
        **dict.fromkeys("\u21d2\u27f9", "=>"),
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u2032": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u00ab": '"',
        "\u00bb": '"',
        "\u2010": "-",
        "\u2011": "-",
        "\u2012": "-",
        "\u2013": "-",
        "\u2014": "-",
        "\u2015": "-",
        "\u2212": "-",
        # CJK punctuation that NFKC leaves alone ("A。", "答案是【C】").
        "\u3002": ". ",  # a space after, as "A。理由" is "A. Reason"
        "\u3001": ",",
        "\u3010": "[",
        "\u3011": "]",
        # Sentence-final particles ("我觉得是1吧", "I think it is 1, I suppose") end no label.
        "\u5427": None,
        "\u300c": '"',
        "\u300d": '"',
        # Check marks ("D ✓") confirm, they never name an option.
        "\u2713": None,
        "\u2714": None,
        "\u2611": None,
        "\u2705": None,
    }
)

# Full-width punctuation runs into the next character ("答案是A，因为…"); NFKC would make it ASCII
# with no space after, where a label would not end. So it gets a space first.
_CJK_SPACING = str.maketrans({"\uff0c": ", ", "\uff1a": ": ", "\uff1b": "; ", "\uff01": "! ", "\uff1f": "? "})

# LaTeX wrappers around a short answer (`\text{C}`, `\textbf{C}`) keep their content.
_LATEX_WRAP = re.compile(r"\\(?:text|textbf|textit|mathrm|mathbf|mathit)\s*\{([^{}]*)\}")

# Markdown emphasis, code ticks, maths dollars, heading hashes and quote markers carry no meaning
# for the answer. Underscores go only at word edges so `cell_type` survives.
# struck-through text ("~~A~~ **C**") is withdrawn, so it goes with its tildes.
_MARKUP = re.compile(r"~~[^~\n]{1,80}~~|\*+|`+|\$+|(?<!\w)_+|_+(?!\w)|^[ \t]*(?:#+|>+)[ \t]*", re.M)

# A token is a run of letters/digits, or a symbol that distinguishes options ("CD4+" vs "CD4-",
# "5%"). A hyphen counts only when it ends a word, so "T-cell" and "T cell" read alike.
_TOKEN = re.compile(r"[^\W_]+|[+%±]|(?<=[^\W_])-(?![^\W_])")

# Plural tolerance applies only to words this long, so short tokens ("a", "as") never merge.
_PLURAL_MIN = 3


def clean(text: str) -> str:
    """Normalise Unicode and strip markup that never changes which option a response names."""
    # a setext heading's underline or a rule ("Answer\n------\nC") says nothing; removed
    # before dashes are folded, so a line of typographic dashes alone still folds to "-" (tested)
    text = _SAYS_NOTHING.sub("", text)
    text = unicodedata.normalize("NFKC", text.translate(_CJK_SPACING)).translate(_TRANSLATE)
    text = _LATEX_WRAP.sub(r"\1", text)
    return _MARKUP.sub("", text)


# What says nothing and is dropped first: a setext underline or a rule line, and the
# whitespace ending a reply, so a closing label is found however many blank lines follow it.
_SAYS_NOTHING = re.compile(r"^[ \t]*(?:-{3,}|={3,}|_{3,})[ \t]*$|\s+\Z", re.M)


@dataclass(frozen=True, slots=True)
class Token:
    """One token of a response: its case-folded value and character span."""

    value: str
    start: int
    end: int


def tokenize(text: str, limit: int | None = None) -> list[Token]:
    """Split already-cleaned text into case-folded tokens with their spans (the first ``limit``)."""
    found = _TOKEN.finditer(text)
    return [Token(m.group().casefold(), m.start(), m.end()) for m in itertools.islice(found, limit)]


def option_tokens(choice: str) -> tuple[str, ...]:
    """The token sequence an option text is matched by."""
    return tuple(t.value for t in tokenize(clean(choice)))


def _token_match(said: str, option: str) -> tuple[bool, bool]:
    """Whether a response token matches an option token, and whether exactly (not as a plural)."""
    if said == option:
        return True, True
    if len(option) >= _PLURAL_MIN and said in (option + "s", option + "es"):
        return True, False
    return False, False


@dataclass(frozen=True, slots=True)
class TextMatch:
    """One occurrence of an option's text in a token sequence.

    Attributes:
        option: 0-based option index.
        start: Index of the first matched token.
        end: Index after the last matched token.
        exact: False when a token matched only as a plural of the option's word.
        length: Characters of option text matched, to prefer the longer of two options.
    """

    option: int
    start: int
    end: int
    exact: bool
    length: int


def find_mentions(
    said: Sequence[str], options: Sequence[Sequence[str]], *, first_only: bool = False
) -> list[TextMatch]:
    """Every place an option's token sequence occurs in ``said`` (only at token 0: ``first_only``)."""
    found: list[TextMatch] = []
    for idx, opt in enumerate(options):
        if not opt:
            continue
        length = sum(len(t) for t in opt)
        last = len(said) - len(opt) + 1
        for start in range(min(last, 1) if first_only else last):
            exact = True
            for k, word in enumerate(opt):
                ok, is_exact = _token_match(said[start + k], word)
                if not ok:
                    break
                exact = exact and is_exact
            else:
                found.append(TextMatch(idx, start, start + len(opt), exact, length))
    return found


def _beats(a: TextMatch, b: TextMatch) -> bool:
    """Whether match ``a`` makes match ``b`` (of another option) a mere part of itself."""
    if a.option == b.option or not (a.start <= b.start and b.end <= a.end):
        return False
    if (a.start, a.end) != (b.start, b.end):
        return True  # "cancer stroma" covers "stroma"
    # Same span: "lymphocytes" said, options "lymphocyte" and "lymphocytes" — the exact one wins.
    return (a.exact, a.length) > (b.exact, b.length)


def resolve(matches: Sequence[TextMatch]) -> list[TextMatch]:
    """Drop matches covered by a longer or better match of another option at the same place.

    Only matches starting at most one option length earlier can cover a match, so each match is
    compared with a bounded number of others (linear in the response, not quadratic).
    """
    by_start: dict[int, list[TextMatch]] = {}
    for m in matches:
        by_start.setdefault(m.start, []).append(m)
    reach = max((m.end - m.start for m in matches), default=0)
    return [
        m
        for m in matches
        if not any(
            _beats(other, m)
            for start in range(max(0, m.start - reach), m.start + 1)
            for other in by_start.get(start, ())
        )
    ]


def named_options(
    said: Sequence[str], options: Sequence[Sequence[str]], *, at_start: bool = False
) -> list[int]:
    """Options whose text ``said`` names, in order of first mention.

    Args:
        said: Response tokens.
        options: Token sequences of the options.
        at_start: Require some surviving mention to begin at the first token (used after an
            answer phrase, where the answer must follow the phrase directly).

    Returns:
        Distinct option indices; empty when none is named (or none starts the text).
    """
    # A mention at token 0 can only be covered by another one starting there too.
    found = find_mentions(said, options, first_only=at_start)
    kept = sorted(resolve(found), key=lambda m: (m.start, m.option))
    if at_start and not any(m.start == 0 for m in kept):
        return []
    order: list[int] = []
    for m in kept:
        if m.option not in order:
            order.append(m.option)
    return order


# --- ruling out --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Cues:
    """The word sets of ``en.toml``'s ``[words]`` that rule a mention out or make it a hypothesis.

    Attributes:
        before: Earlier in the same clause, they make an option's mention a ruling-out ("not X",
            "no evidence of X", "rather than X", "X is more likely than Y" for Y, "rules out X").
        after: Shortly after a mention, in the same clause, they rule it out ("X is unlikely", "X
            is not seen", "X can be ruled out", "X isn't present").
        contractions: Tokens before "t" that form a negative contraction once the apostrophe is
            split off.
        not_asserted: Before an answer phrase, they keep it from committing: ``before`` and the
            conditionals ("If it is A, …").
        conditionals: They make what follows them a hypothesis, within the same sentence.
    """

    before: frozenset[str]
    after: frozenset[str]
    contractions: frozenset[str]
    not_asserted: frozenset[str]
    conditionals: frozenset[str]


@folder_cached
def _cues() -> _Cues:
    before = english_words("negation_before")
    return _Cues(
        before=before,
        after=english_words("negation_after"),
        contractions=english_words("negative_contractions"),
        not_asserted=before | {"if", "whether", "unless", "suppose", "assuming", "doubt"},
        conditionals=english_words("conditionals"),
    )


_DETERMINERS = frozenset({"the", "a", "my", "our", "this"})
# "The features of X include …": X is the topic of a description, not the verdict. The noun must
# open its sentence (after at most two words: "The typical features of X").
_ATTRIBUTES = frozenset(
    {
        "features", "feature", "hallmarks", "hallmark", "characteristics", "criteria", "causes",
        "definition", "differential", "signs", "findings", "appearance", "mimics",
    }
)  # fmt: skip
#: "and"/"then" before one of these verbs opens a new clause (see :func:`clause_starts`).
_CHOICE_JOINS = frozenset({"and", "then"})
_CHOICE_VERBS = frozenset(
    {"choose", "select", "pick", "favour", "favor", "prefer", "settle", "commit", "opt", "land", "go"}
)
#: After "if", words that make the clause a way of choosing, not a hypothesis ("If I had to
#: choose, I'd say C", "If forced to pick, C", "If we look closely, the answer is C").
_FORCED = frozenset({"forced", "pressed", "asked", "pushed", "required", "anything"})
_FORCED_I = frozenset({"had", "have", "must", "were"})
_CONCESSIVE = frozenset({"even", "regardless", "irrespective", "of"})
_FAVOUR = frozenset({"favour", "favor", "support"})
_LOOKING = frozenset(
    {"look", "examine", "consider", "compare", "inspect", "observe", "focus", "review", "zoom"}
)
#: Words right after a mention that make the sentence a general remark ("X is typically seen in …").
_GENERIC = frozenset({"typically", "usually", "often", "commonly", "frequently", "generally", "classically"})
#: Words opening a relative clause that still describes the mention before its comma.
_RELATIVES = frozenset({"which", "who"})
#: "rule out X" / "ruling out X": a verb and particle, two tokens.
_RULE_VERBS = frozenset({"rule", "rules", "ruled", "ruling"})
# Clause boundaries: punctuation in the gap between two tokens, or a contrasting conjunction.
# A spaced dash ("Not D - the answer is C") separates clauses too.
_CLAUSE_GAP = re.compile(r"[.;:!?,\n]|\s-\s")
_SENTENCE_GAP = re.compile(r"[.;!?\n]")
_CLAUSE_WORDS = frozenset({"but", "however", "whereas", "while", "although", "though", "yet", "instead"})
#: Tokens after a mention that are looked at for a ruling-out word.
_AFTER_SPAN = 5
#: Tokens before a mention, within its clause, looked at (bounded so parsing stays linear).
_BEFORE_SPAN = 12


def _is_negation(tokens: Sequence[str], i: int, cues: frozenset[str]) -> bool:
    word = tokens[i]
    if word in cues:
        return True
    if word == "differential" and cues is _cues().after:
        # "X is in the differential" keeps X open; "X rather than differential interference
        # contrast" names an option whose text starts with the word.
        return i > 0 and tokens[i - 1] in _DETERMINERS
    if word == "t" and i > 0 and tokens[i - 1] in _cues().contractions:
        return True
    return word == "out" and i > 0 and tokens[i - 1] in _RULE_VERBS


_SO_VERBS = frozenset({"is", "are", "was", "were", "can", "could", "does", "do", "should", "would", "must"})


def _so_is(values: Sequence[str], sentences: Sequence[int], start: int) -> bool:
    """Whether the mention at ``start`` follows "so is"/"as is" after a ruling-out in its sentence."""
    if start < 2 or values[start - 2] not in ("so", "as") or values[start - 1] not in _SO_VERBS:
        return False
    after = _cues().after
    return any(_is_negation(values, i, after) for i in range(sentences[start], start - 2))


def _described(values: Sequence[str], sentences: Sequence[int], start: int) -> bool:
    """Whether the mention is the topic of a description opening its sentence ("The features of X …")."""
    if start < 2 or values[start - 1] != "of" or values[start - 2] not in _ATTRIBUTES:
        return False
    return start - 2 - sentences[start] <= 2


#: "the other choices, such as X, …" / "the remaining options (X, Y) …": X is one of the options
#: set aside, not the answer.
_OTHERS = frozenset({"other", "remaining", "alternative", "rest"})
_OPTION_NOUNS = frozenset(
    {
        "choice", "choices", "option", "options", "answer", "answers", "possibilities", "diagnoses",
        "candidates",
    }
)  # fmt: skip


def _among_others(values: Sequence[str], sentences: Sequence[int], start: int) -> bool:
    """Whether the mention's sentence, before it, speaks of "the other/remaining options"."""
    first = max(sentences[start], start - _BEFORE_SPAN)
    return any(
        values[i] in _OTHERS and (values[i + 1] in _OPTION_NOUNS or values[i + 1] == "of")
        for i in range(first, start - 1)
    )


def _less_than(values: Sequence[str], i: int, start: int) -> bool:
    """Whether ``values[i]`` belongs to "less <word> than" just before the mention at ``start``.

    "X is less likely than Y": Y is the favoured option, so neither "less" nor "than" rules it
    out (X keeps "less" after it, which does).
    """
    if start < 3 or values[start - 1] != "than" or values[start - 3] != "less":
        return False
    return i in (start - 3, start - 1)


def _in_favour(tokens: Sequence[Token], i: int) -> bool:
    """Whether tokens ``i``, ``i + 1`` are "in favour"/"in support" (a new, affirming clause)."""
    return i + 1 < len(tokens) and tokens[i].value == "in" and tokens[i + 1].value in _FAVOUR


def clause_starts(text: str, tokens: Sequence[Token], *, sentences: bool = False) -> list[int]:
    """For each token, the index of the first token of its clause (or sentence).

    A clause ends at ``. ; : ! ? ,`` or a line break between two tokens, and before a contrasting
    word ("but", "however", "whereas", …) — so in "not A, but C" only A is in a negated clause.
    A sentence (``sentences=True``) ends only at ``. ! ?``, ``;`` or a line break.
    """
    gap = _SENTENCE_GAP if sentences else _CLAUSE_GAP
    words = frozenset() if sentences else _CLAUSE_WORDS
    starts: list[int] = []
    current = 0
    for i, tok in enumerate(tokens):
        if i > 0 and (gap.search(text, tokens[i - 1].end, tok.start) or tok.value in words):
            current = i
        elif (
            not sentences
            and tok.value in _CHOICE_JOINS
            and i + 1 < len(tokens)
            and tokens[i + 1].value in _CHOICE_VERBS
        ):
            # "rule out D and choose A", "argue against X and favour Y": a new choice, whose
            # clause the ruling-out before "and" does not reach.
            current = i
        elif not sentences and tok.value == "and" and _in_favour(tokens, i + 1):
            current = i  # "argues against X and in favour of Y"
        starts.append(current)
    return starts


def ruled_out(
    values: Sequence[str],
    starts: Sequence[int],
    sentences: Sequence[int],
    start: int,
    end: int,
    *,
    verdict_follows: bool = False,
) -> bool:
    """Whether the mention ``values[start:end]`` is named only to be ruled out (or supposed).

    Args:
        values: Token values of the whole response.
        starts: :func:`clause_starts` of those tokens.
        sentences: :func:`clause_starts` with ``sentences=True``.
        verdict_follows: The mention is followed by ":", "?" or " - " and then its verdict
            ("Whorled pattern: not seen.", "Necrosis? No."), so the next clause speaks of it.
        start: First token of the mention.
        end: Token index just after the mention.
    """
    if _so_is(values, sentences, start):
        return True  # "X is unlikely, and so is Y": Y shares X's ruling-out
    if _described(values, sentences, start):
        return True
    first = max(starts[start], start - _BEFORE_SPAN)
    if any(
        _is_negation(values, i, _cues().before) and not _less_than(values, i, start)
        for i in range(first, start)
    ):
        return True
    if _among_others(values, sentences, start):
        return True
    if any(
        values[i] in _cues().conditionals for i in range(max(sentences[start], start - _BEFORE_SPAN), start)
    ):
        return True  # "If it is A, we would expect X": X is a hypothesis, not an answer
    if any(values[i] in _GENERIC for i in range(end, min(len(values), end + 3))):
        return True  # "X is typically seen in older patients": a remark about X
    clause = starts[start]
    if verdict_follows and end < len(values):
        clause = starts[end]
    stop = min(len(values), end + _AFTER_SPAN)
    for i in range(end, stop):
        if starts[i] != clause:
            if starts[i] != i or values[i] not in _RELATIVES:
                break
            clause = i  # "X, which is not seen": the relative clause still speaks of X
        if i > end and values[i - 1] in ("and", "or") and values[i] == "not":
            break  # "consistent with X and not with Y": the "not" speaks of Y
        if _is_negation(values, i, _cues().after):
            return True
    return False


#: Words opening a sentence that asks ("Is this X?", "Could it be X?", "Which one …?").
_INTERROGATIVES = frozenset(
    {
        "is", "are", "was", "were", "could", "can", "might", "would", "should", "does", "do",
        "did", "what", "which", "why", "how",
    }
)  # fmt: skip


def question_sentences(text: str, tokens: Sequence[Token], sentences: Sequence[int]) -> set[int]:
    """Starts of the sentences that ask ("Is this fibrin?"): a mention there is no verdict.

    Args:
        text: The cleaned response.
        tokens: Its tokens.
        sentences: :func:`clause_starts` with ``sentences=True``.
    """
    asked: set[int] = set()
    for j, start in enumerate(sentences):
        last = j + 1 == len(tokens) or sentences[j + 1] != start
        if last and tokens[start].value in _INTERROGATIVES:
            gap = text[tokens[j].end : tokens[j + 1].start if j + 1 < len(tokens) else len(text)]
            if "?" in gap:
                asked.add(start)
    return asked


def negated_after(words: Sequence[str], end: int) -> bool:
    """Whether a ruling-out word follows shortly after ``words[:end]`` (one clause's tokens)."""
    after = _cues().after
    return any(_is_negation(words, i, after) for i in range(end, min(len(words), end + _AFTER_SPAN)))


_VERDICT_GAP = re.compile(r"[ \t]*(?:[:?]|[ \t]-)[ \t]*\Z")


def verdict_gap(text: str, tokens: Sequence[Token], end: int) -> bool:
    """Whether the gap after token ``end - 1`` introduces a verdict on it (":", "?", " - ")."""
    if end >= len(tokens):
        return False
    gap = text[tokens[end - 1].end : tokens[end].start]
    return _VERDICT_GAP.match(gap) is not None


class ClauseIndex:
    """Tokens and clauses of a whole response, built once, to ask "is this phrase negated?".

    Answer phrases are checked against the clause before them ("I don't think the answer is B",
    "If it is A, …"); indexing once keeps that linear in the response length.
    """

    def __init__(self, text: str) -> None:
        self._text = text
        self._tokens = tokenize(text)
        self._values = [t.value for t in self._tokens]
        self._starts = clause_starts(text, self._tokens)
        self._sentences = clause_starts(text, self._tokens, sentences=True)
        self._token_starts = [t.start for t in self._tokens]

    def not_asserted(self, pos: int) -> bool:
        """Whether the clause ending at ``pos`` negates or conditions what follows.

        Also when the sentence so far opens a hypothesis ("If the cells were larger, I would say
        C"), even across its comma; see :meth:`_conditional` for what is no hypothesis.
        """
        idx = bisect.bisect_left(self._token_starts, pos)
        if idx == 0:
            return False
        sentence = max(self._sentences[idx - 1], idx - _BEFORE_SPAN)
        if any(self._conditional(i) for i in range(sentence, idx)):
            return True  # "If the cells were larger, I would say C."
        if _CLAUSE_GAP.search(self._text, self._tokens[idx - 1].end, pos):
            return False
        first = max(self._starts[idx - 1], idx - _BEFORE_SPAN)
        not_asserted = _cues().not_asserted
        return any(_is_negation(self._values, i, not_asserted) for i in range(first, idx))

    def _conditional(self, i: int) -> bool:
        """Whether token ``i`` opens a hypothesis.

        Not "If I had to choose", "If forced to pick", "If we look closely", "Unless I'm
        mistaken", "Even if …" (a concession) or "Regardless of whether …".
        """
        values = self._values
        if values[i] not in _cues().conditionals or (i > 0 and values[i - 1] in _CONCESSIVE):
            return False
        after = values[i + 1 : i + 3]
        if values[i] == "unless" and after[:1] == ["i"]:
            return False
        if after[:1] and after[0] in _FORCED:
            return False
        if len(after) == 2 and after[0] == "i" and after[1] in _FORCED_I:
            return False
        return not (len(after) == 2 and after[0] in ("we", "you", "one") and after[1] in _LOOKING)


_SPECIFIERS = frozenset({"specifically", "namely", "particularly"})


def more_specific(
    values: Sequence[str],
    mentions: Sequence[TextMatch],
    kept: Sequence[int],
    options: Sequence[Sequence[str]],
) -> int | None:
    """The option named as the specific verdict after a general one it contains, if any.

    "This is a carcinoma, specifically small cell carcinoma." names "Carcinoma" and "Small cell
    carcinoma"; the second, introduced by "specifically"/"namely" and containing the first's
    words, is the verdict. Any other pair of options is left to the caller (several named).
    """
    if len(kept) != 2:
        return None
    general, specific = kept
    later = [m for m in mentions if m.option == specific]
    if not later or any(m.option == general and m.start > later[0].start for m in mentions):
        return None
    start = later[0].start
    if not any(values[i] in _SPECIFIERS for i in range(max(0, start - 2), start)):
        return None
    inner, outer = options[general], options[specific]
    if len(inner) >= len(outer) or list(outer[len(outer) - len(inner) :]) != list(inner):
        return None  # the general option must be the tail of the specific one ("… carcinoma")
    return specific


def equals_option(said: Sequence[str], option: Sequence[str]) -> bool:
    """Whether a token sequence is exactly an option's text (plurals tolerated)."""
    return len(said) == len(option) > 0 and all(
        _token_match(s, o)[0] for s, o in zip(said, option, strict=True)
    )

"""The parser's English vocabulary: the named regular expressions its rules read with.

Public on purpose: a rule in any module of the package imports the patterns it needs from here by
name (answer phrases, hedges, markers, labels), so no private name crosses modules. Each
pattern's comment says what it matches and why. All are bounded or anchored so parsing stays
linear in the reply's length; a helper pattern used only inside this module keeps a leading
underscore.

The English answer phrases, hedges, prefixes and verdicts are data: :func:`english` compiles them
from ``languages/en.toml``'s ``[phrases]`` (phrasings with slots, :func:`._language_files.expand`)
and ``[words]`` (the slot lists), adding here only what a phrase list cannot say: label shapes,
sentence starts, lookarounds, JSON keys and the punctuation after a phrase (docs/parser.md,
"Languages").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from scopebench.errors import LanguageFileError
from scopebench.parsing._language_files import alternation, expand, folder_cached, read_language

#: The keys of en.toml's [phrases], each read by one pattern of :class:`English`.
PHRASE_KEYS = (
    "answer",
    "choose",
    "hedge",
    "prefix_key",
    "prefix_lead",
    "prefix_clause",
    "verdict",
    "verdict_text",
)


@dataclass(frozen=True, slots=True)
class _EnglishFile:
    words: dict[str, tuple[str, ...]]
    phrases: dict[str, tuple[str, ...]]


@folder_cached
def _english_file() -> _EnglishFile:
    """``en.toml``'s ``[words]`` and ``[phrases]``, checked: every key known, every value a list."""
    data = read_language("en.toml")
    words, phrases = _lists(data, "words"), _lists(data, "phrases")
    unknown = set(phrases) - set(PHRASE_KEYS)
    if unknown:
        raise LanguageFileError(
            f"en.toml: unknown keys {sorted(unknown)} in [phrases]; known: {list(PHRASE_KEYS)} "
            "(a new kind of phrase needs a rule that reads it: scopebench/parsing/vocabulary.py)"
        )
    return _EnglishFile(words, phrases)


def _lists(data: dict[str, Any], table: str) -> dict[str, tuple[str, ...]]:
    """The lists of strings of ``data[table]``; anything else is refused, naming the key."""
    found: dict[str, tuple[str, ...]] = {}
    lists = data.get(table, {})
    if not isinstance(lists, dict):
        raise LanguageFileError(f"en.toml: [{table}] must be a table of lists, not {lists!r}")
    for key, entries in lists.items():
        if not isinstance(entries, list) or not all(isinstance(e, str) and e.strip() for e in entries):
            raise LanguageFileError(
                f"en.toml: [{table}] {key} must be a list of non-empty strings, not {entries!r}"
            )
        found[key] = tuple(entries)
    return found


def english_phrases(key: str) -> tuple[str, ...]:
    """The English words or phrases under ``key`` of ``languages/en.toml``'s ``[words]``, in order.

    Raises:
        KeyError: When en.toml has no such list (a renamed key would otherwise read as empty).
    """
    return _english_file().words[key]


@folder_cached
def _word_sets() -> dict[str, frozenset[str]]:
    return {key: frozenset(words) for key, words in _english_file().words.items()}


def english_words(key: str) -> frozenset[str]:
    """The words under ``key`` of ``languages/en.toml``'s ``[words]``, as a set (:func:`english_phrases`).

    The same set object until :func:`.languages_from` changes the folder, so a rule may fetch it
    once per reply.

    Raises:
        KeyError: When en.toml has no such list.
    """
    return _word_sets()[key]


def _phrasings(key: str) -> str:
    """The alternation of en.toml's ``[phrases]`` ``key``, slots expanded, in order (none: no match)."""
    english = _english_file()
    forms = [expand(p, english.words, where=f"en.toml [phrases] {key}") for p in english.phrases.get(key, ())]
    return "(?:" + "|".join(forms) + ")" if forms else "(?!)"


def _one_of(key: str) -> str:
    """Any entry of en.toml's ``[words]`` ``key``, in order (a space matches any whitespace)."""
    return alternation(english_phrases(key))


# also <final_answer> and <ans> tags; BBCode-style "[ANSWER] D [/ANSWER]"
TAG = re.compile(
    r"(?:<\s*(?:final_)?ans(?:wer)?\s*>|\[\s*(?:final_)?answer\s*\])(?P<body>.*?)"
    r"(?:<\s*/\s*(?:final_)?ans(?:wer)?\s*>|\[\s*/\s*(?:final_)?answer\s*\]|(?=<)|\Z)",
    re.I | re.S,
)
BOXED = re.compile(r"\\boxed\s*\{(?P<body>[^{}]*)\}")


def _phrase() -> re.Pattern[str]:
    """Answer phrases ("The answer is", "My final answer:", "I'd go with", "Changing from A to D").

    The group ``conn`` is the connector after the phrase ("is", ":"), ``choose`` a choice in the
    first person; with either, option text after the phrase is read too.
    """
    change = _one_of("change")
    return re.compile(
        rf"""
    (?<![\w<>/])                       # not inside a word or an <ANSWER> tag name
    (?:
        (?:{_one_of("answer_qualifier")}[\s_]+)*answers?  # also the JSON key "final_answer"
        (?:\s+{_one_of("answer_tail")})?
        (?:\s+{_one_of("answer_kind")})?
      | {_phrasings("answer")}
      | (?P<choose>{_phrasings("choose")}
        # "Changing from A to D"
        | {change}(?:\s+{_one_of("change_what")})?
          \s+from\s+(?:options?\s+)?[(\[]?[A-Za-z0-9]{{1,2}}[)\]]?\s+to
        # "I'll change A to B"
        | {change}\s+(?:options?\s+)?[(\[]?[A-Z0-9]{{1,2}}[)\]]?\s+to)
    )
    (?![\w>])
    ["']?[ \t]*                       # a JSON key: {{"answer": "C"}}
    (?P<conn>
        {_one_of("answer_verb")}\b
        [ \t]*[:\-]?
      | [:=]|->|=>|→|-(?!\w)
    )?
    """,
        re.I | re.X,
    )


# the label's option text in brackets between a label and its verdict ("C (4) is more
# consistent"); the caller checks that it is the label's own text.
_GLOSS = r"(?:[ \t]+\((?P<gl>[^()\n]{1,60})\))?"
# An option named by its place ("the second option", "the last choice"): as the subject
# of a verdict ("The second option is correct") or as what an answer phrase names ("I'd go with
# the third option"). Never "the final answer" (not a place) and never "one" (too vague).
ORDINAL_WORDS = {"first": 0, "second": 1, "third": 2, "fourth": 3, "fifth": 4, "sixth": 5, "last": -1}
_ORDINAL = (
    r"(?<![\w'])(?i:the\s+(?P<ord>first|second|third|fourth|fifth|sixth|last)\s+(?:listed\s+)?"
    r"(?:option|choice|alternative))"
)
ORDINAL_OBJECT = re.compile(_ORDINAL + r"(?![\w'])(?!\s+(?i:is|was|would|seems|looks|and|or)\b)")


def _verdict() -> str:
    """A verdict after a label ("B is the correct answer", "(B) is correct.", "C stands out").

    The phrasings are en.toml's ``verdict``; here are the space before them, what may close them
    ("to me", "for these findings") and the lookahead that keeps "A is correct in stating…" (a
    remark about one option) out. Labels stay case-sensitive, the verdict's words do not.
    """
    return (
        r"(?!\w)\s+(?i:" + _phrasings("verdict") + ")"
        r"(?:\s+(?i:to\s+me|here|overall|(?:with|for)\s+(?:the|these|this|those|all|our)(?:\s+[\w-]+){1,3}))?"
        r"(?=\s*(?:[.!,;:\n]|$|(?i:because|since|as|given)\b))"
    )


def _reverse(style: str) -> re.Pattern[str]:
    """A label, perhaps with its text in brackets, then a verdict (:func:`_verdict`)."""
    if style == "letters":  # an upper-case or bracketed letter
        label = (
            r"(?<![\w'])(?:(?i:options?|choices?)\s*)?"
            r"(?:\((?P<a>[A-Za-z])\)|\[(?P<b>[A-Za-z])\]|(?P<c>[A-Z]))"
        )
        return re.compile(label + _GLOSS + _verdict())
    label = (
        r"(?<![\w'])(?:(?:(?i:options?|choices?)\s*\#?\s*)(?P<c>\d{1,2})|\((?P<a>\d{1,2})\)|\[(?P<b>\d{1,2})\]"
        # a bare number only opening a sentence or after "I believe/think" ("2 seems right.")
        # or after an introductory comma ("Looking at the blot, 2 stands out.") or ", but", never in a
        # list ("1, 2")
        r"|(?:^|(?<=[.!?:;][ \t])|(?<=\bI\sbelieve\s)|(?<=\bI\sthink\s)|(?<=[A-Za-z],[ \t])"
        r"|(?<=,\sbut\s))(?P<d>\d{1,2}))"
    )
    return re.compile(label + _GLOSS + _verdict(), re.M)


# "It might be D; that's my pick.", "(3) - that is my final answer": a label, then a clause that
# makes it the answer.
_THATS_MINE = (
    r"(?<![\w'])(?:\((?P<a>{lab})\)|(?P<c>{bare}))[ \t]*[;:,\-][ \t]*"
    r"(?i:that's|that\s+is|this\s+is|which\s+is|that\s+seems(?:\s+like)?|which\s+seems(?:\s+like)?)\s+"
    r"(?i:my|the|our)\s+(?i:final\s+|best\s+)?"
    r"(?i:answer|choice|pick|guess|selection|bet|estimate|fit|match)(?![\w'])"
    # "Could well be B; I'll pick it."
    r"|(?<![\w'])(?:\((?P<e>{lab})\)|(?P<f>{bare}))[ \t]*[;,\-][ \t]*(?:(?i:so|and|hence|thus)[ \t]+)?"
    r"(?i:I'll|I\s+will|I'd|I\s+would)\s+"
    r"(?i:pick|choose|take|select|go\s+with)\s+(?i:it|that)(?:\s+one)?(?=[ \t]*[.!]|[ \t]*$)"
)
THATS_MINE_LETTERS = re.compile(_THATS_MINE.format(lab="[A-Za-z]", bare="[A-Z]"))
THATS_MINE_NUMBERS = re.compile(_THATS_MINE.format(lab=r"\d{1,2}", bare=r"\d{1,2}"))
# "which makes C the most appropriate choice", "leaves 2 as the only answer": a verb that names
# the label as its object and the verdict after it (upper-case or bracketed letters only).
_OBJECT = (
    r"(?<![\w'])(?i:makes?|making|made|leaves?|leaving|renders?|consider|regard)\s+"
    r"(?:(?i:options?|choices?)\s+)?(?:\((?P<a>{lab})\)|\[(?P<b>{lab})\]|(?P<c>{bare}))\s+"
    r"(?i:as\s+)?(?i:the|my)\s+(?i:(?:most|clearly|only)\s+)?"
    r"(?i:(?:best|better|correct|right|likely|likeliest|appropriate|reasonable|plausible|probable|strongest|obvious"
    r"|remaining|final|logical|sensible)\s+)?(?i:answer|option|choice|candidate|one|pick)(?![\w'])"
)
OBJECT_LETTERS = re.compile(_OBJECT.format(lab="[A-Za-z]", bare="[A-Z]"))
OBJECT_NUMBERS = re.compile(_OBJECT.format(lab=r"\d{1,2}", bare=r"\d{1,2}"))


def _hedge() -> re.Pattern[str]:
    """Hedged or first-person commitments ("I would say D", "I believe it's D", "My choice: C").

    Only an explicit label may follow, never option text or a bare lower-case letter. The
    phrasings are en.toml's ``hedge``; the forms below need a sentence start, a label or a
    preceding word, which a phrasing cannot say.
    """
    forms = r"""
      # "rule out D and choose A"
      | (?:(?<=\band\s)|(?<=\bthen\s))(?:choose|select|pick|go\s+with)
      # "Leaning towards **D**, although …"
      | (?:^|(?<=[.!?]\s))leaning\s+(?:towards?|for)
      # "… X and Y can be excluded, choose D." (after a comma or semicolon only, never
      # a prompt's "Choose A, B, C or D" at a sentence start)
      | (?:(?<=,\s)|(?<=;\s))(?:(?:so|thus|hence|therefore)\s+)?(?:choose|select|pick)
      | (?:^|(?<=[.!?]\s))
        (?:definitely|definitively|certainly|clearly|surely|absolutely|undoubtedly|unquestionably)
      # "I'll change my answer from A to D"
      | I(?:'d|\s+would|\s+will|'ll)?(?:\s+(?:like|want|have|need)\s+to)?
        \s+(?:revise|change|update|amend|switch)
        (?:\s+(?:my\s+answer|my\s+choice|it|that|this))?
        \s+from\s+(?:options?\s+)?[(\[]?[A-Za-z0-9]{1,2}[)\]]?\s+to
      # "The option that applies is D", "the choice that is correct here is 2"
      | the\s+(?:option|choice|one|answer|letter)\s+(?:that|which)\s+(?:best\s+|most\s+closely\s+)?
        (?:applies|fits|matches|works|holds|describes\s+(?:it|this|the\s+\w+)|is\s+(?:correct|right|true|supported)
          |I(?:'d|\s+would)?\s+(?:choose|pick|select|go\s+with|favou?r|prefer))(?:\s+(?:best|here|most))?\s+is
      # "Mine is B"
      | (?:^|(?<=[.!?]\s))mine\s+(?:is|would\s+be)
      # "Not D, but C", "not C; B"
      | \bnot\s+(?:options?\s+)?[(\[]?[A-Za-z0-9]{1,2}[)\]]?(?:\s+after\s+all)?
        (?:\s*[,;]?\s*but(?:\s+rather)?|[ \t]*[;,:]|[ \t]+-)
    """
    return re.compile(r"(?<![\w'])(?:" + _phrasings("hedge") + forms + r")(?![\w'])[ \t]*[:\-]?", re.I | re.X)


def _verdict_text() -> re.Pattern[str]:
    """Verdicts that name an option by its text ("The most likely diagnosis is X", "favours X").

    The phrasings are en.toml's ``verdict_text`` (and ``text_verdict_adjective``); here are the
    forms with up to three free words ("the most likely *underlying diagnosis* is"), a colon, a
    conclusion's punctuation or a clause's comma.
    """
    return re.compile(
        rf"""
    (?<![\w'])
    (?:
        (?:the\s+)?{_one_of("text_verdict_adjective")}
        \s+(?:[a-z]+\s+){{0,3}}?(?:is|would\s+be)
      | {_phrasings("verdict_text")}
      | (?:final\s+)?(?:diagnosis|conclusion|verdict)\s*:
      # a conclusion naming the option's text ("So this is anaphase.")
      | (?:so|therefore|thus|hence)[ \t]*,?[ \t]+(?:this|it|that)\s+(?:is|must\s+be|would\s+be)
      # an identification closing a clause ("… next to the nucleus, which is the Golgi
      # apparatus"); only the text right after counts, so "…, which is not seen" names nothing
      | (?<=,[ \t])which\s+(?:is|would\s+be|must\s+be|represents|corresponds\s+to)
    )
    (?![\w'])
    """,
        re.I | re.X,
    )


def _prefix() -> re.Pattern[str]:
    """Terse answer prefixes ("Final: C", "Response: B", "Therefore: A", "=> D"): an explicit label only.

    The words are en.toml's ``prefix_key`` (before ":" or "="), ``prefix_lead`` (a lead-in) and
    ``prefix_clause`` (a clause up to its comma); the forms here hold a label or punctuation.
    """
    return re.compile(
        r"(?<![\w'])(?:(?:"
        + _phrasings("prefix_key")
        + r"|answer[ \t]*\((?:low|moderate|medium|high)\s+confidence\))"
        r"\s*(?::|=(?!=)|->|=>)"  # also "Response = C"
        r"|(?:choice|option)[\"']?[ \t]*:(?=[ \t]*\S)"
        r"|(?:" + _phrasings("prefix_lead") + r"|actually(?:[ \t]*,?[ \t]*no(?![\w']))?|instead(?!\s+of\s)"
        # "Instead of A, choose B."
        r"|instead\s+of\s+[^,.;:\n]{1,60},[ \t]*(?:choose|pick|select|go\s+with))"
        r"(?![\w'])[ \t]*(?:[,:]|-(?=[ \t]))?"
        r"|if\s+(?:I\s+(?:had|have)\s+to|forced\s+to|I\s+must)\s+(?:choose|pick|answer|select)[ \t]*[,:]"
        r"|going\s+with|(?:"
        + _phrasings("prefix_clause")
        + r"|putting\s+(?:\w+\s+){0,4}together)[^.;:\n]{0,80}[,:])"
        r"|(?:selected|chosen|picked)(?:\s+(?:options?|answers?|choices?))?\s*[:=]|=>|->|→|\u27a1\ufe0f?",
        re.I,
    )


def _short() -> re.Pattern[str]:
    """A short sentence ending in a label right after a verb or particle of choosing.

    At most eight words, the word before the label being one of en.toml's ``short_verb`` ("I
    suppose D.", "I'd probably go with C.", "This appears to be D."; never a noun: "The signal is
    in panel C.", "It is vitamin D."), none of ``short_doubt`` in the sentence (negation,
    condition, alternative, mere possibility) and no other label.
    """
    return re.compile(
        r"(?:^|(?<=[.!?][ \t])|(?<=\n))[ \t]*"
        r"(?![^.!?\n]*(?<![\w'])(?i:" + _one_of("short_doubt") + r")(?![\w']))"
        r"(?![^.!?\n]*n't)"
        r"(?P<lead>(?:[\w']+[ \t]+){0,7}?)"
        r"(?i:" + _one_of("short_verb") + r")[ \t]+"
        r"(?=(?:(?i:option|choice|letter)[ \t]+)?\(?(?:[A-Z]|\d{1,2})\)?[ \t]*(?:[.!]|$))",
        re.M,
    )


@dataclass(frozen=True, slots=True)
class English:
    """The English answer patterns, compiled from ``languages/en.toml`` (:func:`english`).

    Attributes:
        phrase: Answer phrases; a label, or option text after a connector, is the answer.
        hedge: Hedged or first-person commitments; only an explicit label after them commits.
        prefix: Terse prefixes and lead-ins; only an explicit label after them commits.
        reverse_letters: A letter, then a verdict on it ("B is the correct answer").
        reverse_numbers: A number, then a verdict on it ("(2) seems right").
        ordinal_subject: An option named by its place, then a verdict ("The second option is correct").
        short: A short sentence ending in a label after a verb of choosing ("I suppose D.").
        verdict_text: Verdicts naming an option by its text ("most consistent with necrosis").
    """

    phrase: re.Pattern[str]
    hedge: re.Pattern[str]
    prefix: re.Pattern[str]
    reverse_letters: re.Pattern[str]
    reverse_numbers: re.Pattern[str]
    ordinal_subject: re.Pattern[str]
    short: re.Pattern[str]
    verdict_text: re.Pattern[str]


@folder_cached
def english() -> English:
    """The English answer patterns of the language files read now (built once per folder).

    Raises:
        LanguageFileError: When en.toml has an unknown ``[phrases]`` key or a slot naming no list.
    """
    ordinal_subject = re.compile(_ORDINAL + r"(?:\s*\([^()\n]{1,80}\))?" + _verdict())
    return English(
        _phrase(),
        _hedge(),
        _prefix(),
        _reverse("letters"),
        _reverse("numbers"),
        ordinal_subject,
        _short(),
        _verdict_text(),
    )


# A short introductory clause, then a label ending the sentence ("After careful consideration,
# E.", "If I had to pick one, 1."): the label is the answer. Not after a negated, conditional or
# contrasting clause ("If it were A, B.", "Unless …, C."), nor after a label ("It is B, C.").
INTRO = re.compile(
    r"(?:^|(?<=[.!?][ \t])|(?<=\n))[ \t]*"
    r"(?!(?i:if|unless|whether|when)\b(?!\s+(?i:I\s+(?:had|have)\s+to|forced\s+to)))"
    r"(?![^.;:!?\n,]*(?<!\w)(?i:not|no|never|unless|whether|were)(?!\w))"
    r"(?P<intro>[^.;:!?\n,]{3,80}),[ \t]*"
    r"(?=\(?(?:[A-Z]|\d{1,2})\)?[ \t]*(?:[.!]+[ \t]*)?(?:$|\n|(?<=[.!])[ \t]*\S))",
    re.M,
)
# A hedged lead-in, then a label ending the sentence ("With moderate confidence: C.", "Hard to be
# sure, but 1.", "Going out on a limb: 1.", "Not certain - B."): the label is the answer, hedged
# Such a lead-in speaks of confidence or guessing and opens with a preposition, a verb or
# a degree word, so a key such as "Confidence: 3" (a score, not an answer) is not one; no
# condition ("unless", "whether", "were") and no label in it.
HEDGED_LEAD = re.compile(
    r"(?:^|(?<=[.!?][ \t])|(?<=\n))[ \t]*"
    r"(?![^.;:!?\n]*(?<![\w'])(?i:unless|whether|were|or|either)(?![\w']))"
    r"(?P<intro>(?:(?i:with|without|at|in|on|under|going|taking|hard|difficult|tough|not|no|I|I'm|I'd|if|to|low"
    r"|moderate|high|some|reasonable|fair|limited|having|though|although|while|can't|cannot|admittedly"
    r"|could|might|may|moderately|fairly|reasonably|somewhat|quite|very|highly|only|mildly|slightly"
    r"|roughly|about|around|approximately|perhaps|maybe|\d{1,3}[ \t]*%)(?![\w'])"
    r"[^.;:!?\n]{0,60}?(?<![\w'])(?i:confiden\w*|sure|certain(?:ty)?|limb|guess\w*|hunch|instinct|gut|tentative\w*"
    r"|forced|pressed|odds|doubts?|reservations?|caveats?|uncertain\w*|unsure|unclear|say|tell|commit\w*|call|wrong"
    r"|mistaken)"
    r"|(?i:uncertain|unsure|unclear|tentatively))(?![\w'])"  # or a word of doubt alone: "Uncertain, but …"
    r"[^.;:!?\n]{0,30}?)"
    r"[ \t]*(?:[:,]|[ \t]-)[ \t]*(?:(?i:but|though|still|yet|then)[ \t]+)?"
    r"(?:(?i:leaning(?:[ \t]+(?:towards?|to))?|I'd[ \t]+say|I[ \t]+think|going[ \t]+with|probably|likely)"
    r"[ \t]+)?"
    r"(?=\(?(?:[A-Z]|\d{1,2})\)?[ \t]*(?:[.!]|$))",
    re.M,
)
# A tentative adverb before a label that is asked: "Perhaps A?", "Maybe 2?" is a hedged answer,
# where a bare "B?" asks.
# A label asked and then confirmed ("C? Probably.", "B? Yes."): an answer.
CONFIRMED = re.compile(
    r"[ \t]*\?[ \t]*(?i:probably|likely|most\s+likely|yes|I\s+think\s+so|I\s+believe\s+so"
    # "F? I'm reasonably sure."
    r"|I(?:'m|\s+am)\s+(?:reasonably|fairly|pretty|quite)\s+(?:sure|confident))[ \t]*[.!]*[ \t]*\Z"
)
TENTATIVE = re.compile(r"(?i:perhaps|maybe|possibly|probably|plausibly|likely|presumably)[ \t]*,?[ \t]+")
# A label-like token anywhere (for _changed_unread): never "A"/"I" before a word.
LABEL_LETTER = re.compile(r"(?<![\w'])(?:\([A-Za-z]\)|[B-HJ-Z]|A(?=[ \t]*(?:[.!)]|$)))(?![\w'])", re.M)
LABEL_NUMBER = re.compile(r"(?<![\w'.])\(?\d{1,2}\)?(?![\w']|[.,]\d)")
LABEL_WORD = re.compile(r"(?<![\w'])(?:[B-HJ-Z]|\d{1,2})(?![\w'%])")  # "70%" is no label
# Chinese answer phrases ("答案是（D）", "正确答案：C", "故选B"). Separate, since CJK characters are
# word characters and the English word-boundary guards would reject them.
# "选项C正确" (option C is correct): the label first.
# "选择A项" (choose item A).
# "选项B。" (option B.) as a whole line; never "选项A：不符合" (option A: does not fit), a walk item.
CHINESE_ITEM = re.compile(
    r"选(?:择)?(?:第)?(?P<c>[A-Za-z]|\d{1,2})项|^[ \t]*选项[ \t]*(?P<d>[A-Za-z]|\d{1,2})(?=[ \t]*\.?[ \t]*$)",
    re.M,
)
CHINESE_REVERSE = re.compile(
    r"(?:选项)?[(\[]?(?P<c>[A-Za-z]|\d{1,2})[)\]]?\s*(?:是|为)?(?:正确|对)(?:的)?(?!\w)"
)
CHINESE = re.compile(
    # "答案就是3" (the answer is just 3), "答案：选项1" (answer: option 1)
    r"(?:(?:正确|最终|最佳)?答案|(?:正确|最终|最佳)选项)(?:应该|应当|应|可能|就|即)?(?:是|为)?\s*[:=]?(?:\s*选项)?"
    r"|答\s*:"  # "答：A" (answer:)
    # "正确的是B" (the correct one is), "我认为是C" (I think it is), "我认为选B" (I think: choose B)
    r"|正确的是|我(?:认为|觉得)(?:应该)?(?:是|选)"
    # "应该是C" (it should be C), "可能是B" (it is probably B), "结论：C" (conclusion); never after 不
    r"|(?<![不])应(?:该|当)?(?:是|选(?:择)?)|(?<![不也])(?<!不太)(?<!不大)(?<!不很)(?:很|最|最有|更有?)?可能(?:的|的答案|的选项)?(?:是|为)|结论\s*[:：]?\s*(?:是|为)?"
    # "这张图最符合B" (fits best), "更接近2" (closer to), "对应的是C" (corresponds to), "估计是A"
    # (I estimate), "我猜是B" (I guess), "倾向于C" (lean to), "大概是D" (roughly); never after 不
    r"|(?<![不])(?:最|更)(?:符合|接近|匹配|吻合|像)(?:的是|的选项是)?|(?<![不])对应(?:的是|于)"
    r"|(?<![不])(?:估计|猜测?|大概|大约|多半)(?:是|为|选)|倾向于?(?:选择?)?|我(?:会|要)?(?:选|挑)(?:择)?"
    # "选A", "应该选C"; never "不选A" or "选项", nor "不应该选2", "不要选B", "不能选B"
    r"|(?<![不别没勿])(?<!不应该)(?<!不应当)(?<!不应)(?<!不该)(?<!不要)(?<!不能)(?<!不会)(?<!不可)"
    r"选(?:择)?(?:是)?(?!项)\s*[:：]?"
    r"|不是[^,;.\n]{1,8}[,;]\s*(?:而)?是"  # "不是D，是A": denied, then affirmed
)

# Self-correction markers: after one, the model's later answer replaces its earlier one.
CORRECTION = re.compile(
    r"(?<!\w)(?:wait|actually|on\s+second\s+thought|correction|scratch\s+that|I\s+made\s+(?:a|an)\s+"
    r"(?:mistake|error)|I\s+was\s+wrong|let\s+me\s+(?:re-?consider|re-?check|re-?evaluate|re-?examine|correct)"
    r"|re-?considering|等等|更正"
    # changes of mind of the same kind as "on second thought"
    r"|(?:up)?on\s+(?:further\s+|more\s+)?reflection|after\s+(?:further\s+|more\s+)?reflection"
    r"|having\s+re-?considered|thinking\s+(?:about\s+it\s+)?again|on\s+a\s+second\s+look"
    r"|hold\s+on|hang\s+on|make\s+that|update|updated\s+answer|revised\s+answer|revision|new\s+answer|edit"
    r"|let\s+me\s+fix\s+(?:that|this)|rethinking|re-?thinking\s+(?:it|this)"
    # informal withdrawals ("I'd say 5 - hmm, scratch that. 2 …", "B - never mind. C …")
    r"|never\s*mind|strike\s+that|let\s+me\s+rephrase|disregard\s+that|forget\s+that|ignore\s+that"
    # a bare denial as a sentence of its own ("E seems right. It isn't.")
    r"|(?:^|(?<=[.!?][ \t])|(?<=\n))(?:it|that)(?:\s+isn't|\s+is\s+not|'s\s+not)(?=[ \t]*[.!])"
    r")(?!\w)",
    re.I,
)
# Markers that switch between two answers but never withdraw one: "sorry" or "no," after the
# last answer is politeness or a remark ("Sorry for the confusion"), not a withdrawal.
SWITCH = re.compile(
    r"(?<!\w)(?:sorry|I\s+mean(?:t)?|(?:looking|look)\s+(?:closer|again)"
    # "no," / "no -", and "no." before a lone label ("B. Hmm, no. A.")
    r"|no(?=\s*(?:,|-\s|\.[ \t]+\(?(?:[A-Z]|\d{1,2})\)?[ \t]*(?:[.!]|$)))"
    r"|(?:^|(?<=[.!?][ \t]))no(?=[ \t]*[.!])"  # "E? No. It's A."
    r"|I(?:'d|\s+would)\s+revise|(?:up)?on\s+(?:further|closer)\s+(?:review|inspection|examination|look)"
    r"|after\s+(?:a\s+)?(?:closer|further|second|more\s+careful)\s+(?:inspection|review|examination|look)"
    # "Possibly C, but more likely B", "D, or rather B"
    r"|(?<=,\s)but\s+(?:more|most)\s+(?:likely|probably)|or\s+rather)(?!\w)"
    # an arrow after a label ("Answer: B -> D after reconsideration"), a one-word denial
    # of an asked label ("3? Wrong. 2.")
    r"|(?<=[A-Z0-9)\]])[ \t]?(?:->|=>|\u2192)"
    r"|(?:^|(?<=[.!?][ \t]))(?:wrong|incorrect|nope|not\s+quite)(?=[ \t]*[.!,])"
    # "Superficially E seems right. It isn't - C."
    r"|(?:^|(?<=[.!?][ \t])|(?<=\n))(?:it|that)(?:\s+isn't|\s+is\s+not|'s\s+not)(?=[ \t]*(?:[.!,;]|-\s))",
    re.I,
)
# a first impression that is the subject of "was going to" ("My instinct was going to
# say A, but B fits." gives A up as "I was going to say A" does).
_GUT = (
    r"my\s+(?:(?:very\s+)?first\s+|initial\s+|immediate\s+)?"
    r"(?:instinct|gut(?:\s+feeling)?|inclination|impulse|reflex|hunch|intuition|reaction|thought|guess)"
)
# an impression voiced in the present ("My gut says B, but I can't commit.") or a
# temptation ("One might be tempted to pick A, but …"): the answer after "but" replaces it, and
# with none after it the reply commits to nothing. Alone ("My gut tells me C.") it still commits.
_GUT_SAYS = (
    r"(?:my\s+)?(?:(?:first|initial|immediate)\s+)?(?:instinct|gut(?:\s+feeling)?|intuition|hunch)"
    r"\s+(?:says|tells\s+me|suggests|points\s+to)"
)
_TEMPTED = r"(?:one|you|we|I)\s+(?:might|may|could|would)\s+be\s+tempted\s+to|it(?:'s|\s+is)\s+tempting\s+to"
# A first thought named as such ("At first I thought B", "Initial pick: A"): a "but", "however"
# or "final" after it switches to the later answer, as a correction marker does.
FIRST_THOUGHT = re.compile(
    r"(?<!\w)(?:at\s+first|initially|originally|(?:my\s+)?(?:first|initial|original)\s+(?:thought|instinct|guess|impression|answer|pick|choice)"
    # "I was going to say A, however …", "I was tempted by B, but …"
    r"|(?:I|" + _GUT + r")\s+was\s+(?:going|about|planning|tempted|inclined|ready)(?=\s+(?:to|by)\s)"
    # "My gut says B, but … the answer is C", "One might be tempted to pick A, but …"
    r"|" + _GUT_SAYS + r"|" + _TEMPTED + r")"
    r"(?!\w)",
    re.I,
)
# An answer the reply was about to give ("I was going to say A, however …"): see _given_up.
ABOUT_TO = re.compile(
    r"(?<!\w)(?:(?:I|" + _GUT + r")\s+was\s+(?:going|about|planning|tempted|ready)\s+to"
    r"|" + _GUT_SAYS + r"|" + _TEMPTED + r")\s",
    re.I,
)
CONTRAST = re.compile(r"(?<!\w)(?:but|however|yet|final|(?:al)?though)(?!\w)", re.I)
# A label that is a whole sentence of its own, perhaps after an interjection ("D... no, A.",
# "Perhaps 4? Yes, 4.", "No, not C. D."), ending its line, after another sentence on that line:
# an answer. Never after a comma alone ("It is B, C." is a list), never a line of its own (a list
# of labels, or the first line, which rules 2-3 read).
_LONE_START = (
    r"(?:(?<=[^\s][.!?;][ \t])|(?<=\.\.\.))[ \t]*"
    r"(?:(?i:no|yes|so|ok|okay|hmm|then|thus|hence|actually|wait|rather|instead|hold\s+on|hang\s+on)"
    r"[ \t]*(?:[,.]|[ \t]-)?[ \t]+){0,3}"
)
# after " - " too, when an interjection of change follows ("D - no, sorry, C.")
_LONE_DASH = (
    r"(?<=[^\s][ \t]-[ \t])[ \t]*"
    r"(?:(?i:no|sorry|actually|wait|rather|instead|correction)[ \t]*(?:[,.]|[ \t]-)?[ \t]+){1,3}"
)
# after a comma too, when an interjection of change follows ("B, sorry, C.")
_LONE_COMMA = (
    r"(?<=[^\s],[ \t])[ \t]*"
    r"(?:(?i:no|sorry|actually|wait|rather|instead|correction)[ \t]*(?:[,.]|[ \t]-)?[ \t]+){1,3}"
)
LONE_LETTERS = re.compile(
    rf"(?:{_LONE_START}|{_LONE_DASH}|{_LONE_COMMA})"
    + r"(?:\((?P<a>[A-Za-z])\)|(?P<b>[A-HJ-Z]))[ \t]*[.!]*[ \t]*$",
    re.M,
)
LONE_NUMBERS = re.compile(
    rf"(?:{_LONE_START}|{_LONE_DASH}|{_LONE_COMMA})"
    + r"(?:\((?P<a>\d{1,2})\)|(?P<b>\d{1,2}))[ \t]*[.!]*[ \t]*$",
    re.M,
)
# A label that is a sentence of its own after an interjection of change ("A? No - D. The finding
# is decisive.", "B. Actually, C. …"), with more text after it on the line.
_LONE_MID_START = (
    r"(?<=[^\s][.!?;][ \t])[ \t]*(?i:no|actually|wait|rather|instead|correction)"
    r"(?:[ \t]*[,.:]|[ \t]*-)?[ \t]+"
)
LONE_MID_LETTERS = re.compile(
    _LONE_MID_START + r"(?:\((?P<a>[A-Za-z])\)|(?P<b>[A-HJ-Z]))[ \t]*[.!](?=[ \t]+[A-Z])"
)
LONE_MID_NUMBERS = re.compile(
    _LONE_MID_START + r"(?:\((?P<a>\d{1,2})\)|(?P<b>\d{1,2}))[ \t]*[.!](?=[ \t]+[A-Z])"
)
# An option's text followed by its label ("pilocytic astrocytoma - option E", "necrosis (D)"):
# after an answer phrase, the pair commits when both name the same option.
TEXT_THEN_LABEL = re.compile(
    r"(?P<text>[^\n;:!?()]{1,160}?)[ \t]*(?:[ \t]-[ \t]|,|\(|:)[ \t]*"
    r"(?:(?P<kw>(?i:option|choice))[ \t]+[(\[]?|[(\[])(?P<lab>[A-Za-z]|\d{1,2})[)\]]?"
    r"[ \t]*\)?[ \t]*(?=[.!;,)]|$)",
    re.M,
)
# A label right after an option's text ("fibrosis (option C)", "necrosis - C"): see _mislabelled.
GLOSS_AFTER = re.compile(
    r"[ \t]*(?:[ \t]-[ \t]*|,[ \t]*|:[ \t]*)?"
    r"(?:(?:\(?(?i:option|choice)[ \t]+[(\[]?(?P<x>[A-Za-z]|\d{1,2})(?![\w']))"
    r"|\((?P<y>[A-Z]|\d{1,2})\))"
)
# Nouns a trailing number or letter belongs to ("lane 3.", "panel B."): such a label does not
# change the reply's answer (see _ends_with_other_label).
NOUN_BEFORE = re.compile(
    r"(?<![\w'])(?i:lanes?|panels?|grades?|stages?|types?|figures?|fig|images?|rows?|columns?|wells?|steps?|days?"
    r"|weeks?|hours?|levels?|class|groups?|vitamin|hepatitis|complex|zones?|bands?|regions?|areas?|boxes|box"
    r"|fields?|slides?|samples?|cells?|patients?|cases?|tables?|phases?|points?|channels?|layers?|sections?"
    r"|parts?|sites?|spots?|peaks?|lines?|tubes?|doses?|arrows?|insets?|frames?|clones?|exons?|chromosomes?)"
    r"[ \t]+\(?\Z"
)
# Words of indecision: with them, option text alone (the weakest rule) commits to nothing.
UNDECIDED = re.compile(
    r"(?<!\w)(?:both|either|not\s+(?:entirely\s+)?sure|unsure|uncertain|can(?:'t|not)\s+(?:tell|decide|say)"
    r"|hard\s+to\s+(?:say|tell)|torn\s+between|can(?:'t|not)\s+(?:confirm|be\s+(?:sure|certain))"
    r"|not\s+(?:certain|confident)|(?:could|might|may)\s+(?:\w+\s+)?be"
    # "… isn't enough for a diagnosis; I'd defer to the full slide review", "I don't
    # think any of the listed options is correct" (never "none of the other options")
    r"|(?:is\s+not|isn't|not)\s+enough|defer\s+to|can(?:'t|not)\s+commit"
    r"|(?:none|do(?:es)?(?:n't|\s+not)\s+(?:think\s+)?(?:that\s+)?any)\s+of\s+the\s+(?:listed\s+|given\s+|provided\s+|above\s+)?"
    r"(?:options|choices|answers))(?!\w)",
    re.I,
)
SENTENCE_END = re.compile(r"[.!?\n]")
# Where a withdrawal may begin after the last answer: a sentence end, or a spaced dash
# ("I'd say 5 - hmm, scratch that. 2 …": the marker follows the answer in its own sentence).
WITHDRAW_BREAK = re.compile(r"[.!?\n]|[ \t]-[ \t]|</[^<>\n]{1,20}>")
NO_AFTER = re.compile(r",?\s*no\b", re.I)
#: How far after an answer phrase its answer is looked for: bounded, so parsing stays linear.
WINDOW = 240

# Hedges and quantifiers allowed between an answer phrase and its label.
FILLER = re.compile(
    r"(?:(?:most\s+likely|quite\s+likely|likely|most\s+probably|probably|presumably|leaning|tentatively|definitely|clearly|"
    r"therefore|thus|hence|indeed|then|"
    r"actually|either|both|simply|just|certainly|surely|still)\b[\s,]*)+",
    re.I,
)
# An interjection opening a whole-response label ("Hmm, 2 maybe.", "Well, C.").
INTERJECTION = re.compile(r"(?i:hmm+|ok(?:ay)?|well|so|right|alright|oops|ah|oh)[ \t]*[,.]?[ \t]+")
# Words skipped before an option's text after an answer phrase or a joiner: articles and
# hedge adverbs, so "fibrosis or possibly necrosis" names both options.
_ARTICLES = frozenset({"a", "an", "the"})
LEAD_WORDS = _ARTICLES | {"possibly", "perhaps", "maybe", "probably", "likely"}
# Words joining a second option's text to the first after an answer phrase ("X or Y"): both named.
JOINED = frozenset({"or", "and", "nor", "vs", "versus", "plus"})
# An answer after a phrase runs to the end of its clause.
CLAUSE_END = re.compile(r"\n|[.;!?](?=\s|$)|[,(]")
# a sentence's end (an option's own brackets and commas stay inside it).
SENTENCE_CUT = re.compile(r"\n|[.;!?](?=\s|$)")
# a label opening a line right before an option's text ("3. <text>", "Option 4 - <text>",
# "(B) <text>"): the text is then that label's, or the reply contradicts itself.
LABEL_BEFORE = re.compile(
    r"(?:^|(?<=\n))[ \t]*(?:[-*•+][ \t]+)?(?:"
    r"(?i:options?|choices?)[ \t]*\#?[ \t]*[(\[]?(?P<x>[A-Z]|\d{1,2})[)\]]?[ \t]*(?:[.,:;]|-(?=[ \t]))?"
    r"|[(\[](?P<y>[A-Z]|\d{1,2})[)\]][ \t]*(?:[.,:;]|-(?=[ \t]))?"
    # a bare label only with punctuation after it: "A rosette formation is visible" is English
    r"|(?P<z>[A-Z]|\d{1,2})[ \t]*(?:[.,:;)]|-(?=[ \t]))"
    r")[ \t]*\Z"
)
REST_OK = re.compile(r"[\s.!?:;)\]'\"]*\Z")
# A hedge after a whole-response label ("3, probably.", "B, I'd say."): still that label.
BARE_TAIL = re.compile(
    r"[ \t]*,?[ \t]*(?:probably|likely|most\s+likely|I(?:'d|\s+would)\s+say"
    r"|I\s+(?:think|believe|guess|suppose)|I(?:'d|\s+would)\s+guess|no\s+doubt"  # "B I'd guess."
    r"|(?:not|rather\s+than|instead\s+of)\s+(?:option\s+)?[(\[]?(?:[A-Za-z]|\d{1,2})[)\]]?"  # "3, not 4."
    r"|[:\-]?[ \t]*\(?(?:correct|right)\)?"  # "3 (correct)", "2: correct"
    # "3 it is.", "1, definitely.", "Option 2, for sure.", "2 (final answer)", "C - final."
    r"|it\s+is|maybe|perhaps|possibly|(?:quite\s+)?(?:definitely|certainly|surely|clearly)|for\s+(?:sure|certain)|without\s+(?:a\s+)?(?:doubt|question)"
    r"|[:;\-]?[ \t]*\(?final(?:\s+answer)?\)?"
    # "3 (most appropriate).", "D is it."
    r"|\((?:most\s+)?(?:appropriate|likely|correct|right|best|probable|answer)\)|is\s+it|(?:that's|that\s+is)\s+it"
    # "2, but I'm not certain.", "4: that's my answer."
    r"|but\s+I(?:'m|\s+am)\s+not\s+(?:entirely\s+|completely\s+|100%\s+)?(?:sure|certain|confident)"
    r"|[:;\-]?[ \t]*(?:that's|that\s+is|this\s+is)\s+(?:my|the|our)\s+(?:final\s+)?"
    r"(?:answer|choice|pick|guess|selection))"
    r"(?![\w'])",
    re.I,
)
# A label doubted at once ("Maybe D, maybe not.", "C, or perhaps not"): no commitment.
DOUBTED = re.compile(
    r"[ \t.)\]'\"]*,?[ \t]*(?:but[ \t]+)?(?i:maybe|perhaps|possibly|or|probably)[ \t]+not(?![\w'])"
)
# An alternative offered after the answer ("D is the best fit, or perhaps C.", "… D. Or maybe C."):
# a second option named, so no single answer.
OR_LATER = re.compile(
    r"(?<![\w'])(?i:or)[ \t]+(?:(?i:maybe|perhaps|possibly|even|else)[ \t]+)?(?:(?i:option|choice)[ \t]+)?"
    r"(?:\((?P<a>[A-Za-z]|\d{1,2})\)|(?P<b>[A-Z]|\d{1,2}))(?=[ \t]*(?:[.!?]|$))",
    re.M,
)
# A label denied right after it ("D, definitely not.", "B - no."): no answer.
DENIED_AFTER = re.compile(
    r"[ \t]*[,:\-]?[ \t]*(?:(?i:definitely|certainly|surely|probably|absolutely)[ \t]+)?"
    r"(?i:not|no)[ \t]*(?:[.!;]|$)",
    re.M,
)
# A label asked as a sentence of its own ("D? Maybe B.", "A? No - D."): see _asked_alone.
_ASKED_START = r"(?:^|(?<=[.!?;][ \t])|(?<=\n))[ \t]*"
ASKED_LETTERS = re.compile(_ASKED_START + r"(?:\((?P<a>[A-Za-z])\)|(?P<b>[A-HJ-Z]))[ \t]*\?", re.M)
ASKED_NUMBERS = re.compile(_ASKED_START + r"(?:\((?P<a>\d{1,2})\)|(?P<b>\d{1,2}))[ \t]*\?", re.M)
# A label called wrong right after it ("My initial answer 1 is wrong."): no answer.
WRONG_AFTER = re.compile(
    r"[ \t]+(?i:is|was)[ \t]+(?i:wrong|incorrect|mistaken|a\s+mistake|not\s+(?:right|correct))(?![\w'])"
)
# A label followed by "?" asks ("C? A? I'm unsure."), it does not answer.
ASKS = re.compile(r"[ \t.!)\]'\"]*\?")
# A bare label ending the reply after a separator (", B." / " 2."): see _ends_with_other_label.
TRAILING_LABEL = re.compile(r"[\s,:;]\(?(?P<lab>[A-Z]|\d{1,2})\)?[ \t]*[.!]*\s*\Z")
DENIED_BEFORE = re.compile(r"(?<![\w'])(?i:not|no|than)[ \t]*\(?\Z")
BULLET = re.compile(r"[ \t]*(?:[-*•+][ \t]+)?")
INLINE_LETTERS = re.compile(
    r"(?<!\S)\(([A-Z])\)|(?<!\S)([A-Z])\)"
    # a space or bracket after "option": "choices, such as …" is no option S
    r"|\b(?i:options?|choices?)(?:\s+\(?|\()([A-Za-z])\b|(?<![\w'])([A-Z]):(?=[ \t])"
)
INLINE_NUMBERS = re.compile(r"(?<!\S)\((\d{1,2})\)|(?<!\S)(\d{1,2})\)|\b(?i:option|choice)\s*\(?(\d{1,2})\b")
# A label right after "or"/"and"/"nor" is the last of several, not a verdict of its own.
ALTERNATIVE_BEFORE = re.compile(r"(?<![\w'])(?i:or|and|nor|and/or)[ \t]+[(\[]?\Z")
# Before an inline "option D" that is set against the answer, not walked ("A - because …, whereas
# option D would …"): such a mention does not make the reply a walk through the options.
CONTRASTED = re.compile(r"(?<![\w'])(?i:whereas|unlike|than|not|versus|vs\.?|over|instead\s+of)[ \t]+\Z")
# A label that is an echoed format placeholder ("The answer is (X)"), ignored next to real ones.
PLACEHOLDER = "X"
# Label forms whose lower-case letter still counts after a hedge or prefix ("I'd say (c)").
EXPLICIT = frozenset({"bracketed", "closed", "keyword"})

"""The parser's English vocabulary: the named regular expressions its rules read with.

Public on purpose: a rule in any module of the package imports the patterns it needs from here by
name (answer phrases, hedges, markers, labels), so no private name crosses modules. Each
pattern's comment says what it matches and why. All are bounded or anchored so parsing stays
linear in the reply's length; a helper pattern used only inside this module keeps a leading
underscore.
"""

from __future__ import annotations

import re
import tomllib
from functools import cache
from pathlib import Path


@cache
def _english() -> dict[str, tuple[str, ...]]:
    # Read by path, not through the languages package, which imports the rules built from it.
    data = tomllib.loads((Path(__file__).parent / "languages" / "en.toml").read_text(encoding="utf-8"))
    return {key: tuple(str(w) for w in words) for key, words in data.get("words", {}).items()}


def english_phrases(key: str) -> tuple[str, ...]:
    """The English words or phrases under ``key`` of ``languages/en.toml``'s ``[words]``, in order.

    Raises:
        KeyError: When en.toml has no such list (a renamed key would otherwise read as empty).
    """
    return _english()[key]


def english_words(key: str) -> frozenset[str]:
    """The words under ``key`` of ``languages/en.toml``'s ``[words]``, as a set (:func:`english_phrases`)."""
    return frozenset(english_phrases(key))


def alternation(phrases: tuple[str, ...]) -> str:
    """A non-capturing group matching any of ``phrases`` in order; a space matches any whitespace."""
    return "(?:" + "|".join(re.escape(p).replace(r"\ ", r"\s+") for p in phrases) + ")"


# also <final_answer> and <ans> tags; BBCode-style "[ANSWER] D [/ANSWER]"
TAG = re.compile(
    r"(?:<\s*(?:final_)?ans(?:wer)?\s*>|\[\s*(?:final_)?answer\s*\])(?P<body>.*?)"
    r"(?:<\s*/\s*(?:final_)?ans(?:wer)?\s*>|\[\s*/\s*(?:final_)?answer\s*\]|(?=<)|\Z)",
    re.I | re.S,
)
BOXED = re.compile(r"\\boxed\s*\{(?P<body>[^{}]*)\}")

_QUALIFIER = alternation(english_phrases("answer_qualifier"))
PHRASE = re.compile(
    rf"""
    (?<![\w<>/])                       # not inside a word or an <ANSWER> tag name
    (?:
        (?:{_QUALIFIER}[\s_]+)*answers?  # also the JSON key "final_answer"
        (?:\s+here|\s+to\s+(?:the|this)\s+question|\s+after\s+(?:review|reflection|reconsideration|consideration))?
        (?:\s+(?:choice|option|letter))?
      | (?:(?:the|my|our)\s+)?(?:final|correct|best|right|true|appropriate
        |only\s+(?:remaining|viable|surviving)  # "The only remaining option is D"
        |most\s+(?:likely|appropriate|reasonable|plausible|defensible|probable|accurate|fitting)
        |likeliest)  # "The likeliest option is A"
        \s+(?:(?:letter|option)/(?:number|letter|option)|options?|choices?|response|one|letter|label)(?:\s+here)?
      | (?P<choose>\bI(?:'d|'ll|\s+would|\s+will|'m\s+going\s+to|\s+am\s+going\s+to)?\s+
          (?:(?:probably|tentatively|likely|definitely|still|ultimately|personally|rather|now|therefore)\s+)?
          (?:choose|select|pick|go\s+with)
        | \bI(?:'m|\s+am)\s+(?:going\s+with|choosing|selecting|picking|opting\s+for)
        | (?:change|changing|switch|switching)\s+(?:(?:my\s+)?answer|it|that)\s+to
        # "Changing from A to D"
        | (?:change|changing|switch|switching)(?:\s+(?:(?:my\s+)?answer|it|that))?
          \s+from\s+(?:options?\s+)?[(\[]?[A-Za-z0-9]{{1,2}}[)\]]?\s+to
        # "I'll change A to B"
        | (?:change|changing|switch|switching)\s+(?:options?\s+)?[(\[]?[A-Z0-9]{{1,2}}[)\]]?\s+to)
    )
    (?![\w>])
    ["']?[ \t]*                       # a JSON key: {{"answer": "C"}}
    (?P<conn>
        (?:is|are|would\s+be|should\s+be|will\s+be|must\s+be|ha(?:s|ve)\s+to\s+be|seems\s+to\s+be|appears\s+to\s+be)\b
        [ \t]*[:\-]?
      | [:=]|->|=>|→|-(?!\w)
    )?
    """,
    re.I | re.X,
)
# "B is the correct answer" / "(B) is correct." — an upper-case or bracketed label first. The
# lookahead keeps "A is correct in stating…" (a remark about one option) out.
_VERDICT = (
    r"(?!\w)\s+(?:(?i:is|would\s+be|seems(?:\s+to\s+be)?|looks|appears(?:\s+to\s+be)?)\s+"
    r"(?i:(?:probably|likely|most\s+likely|clearly|definitely|certainly)\s+)?(?i:the\s+|my\s+|our\s+)?"
    r"(?i:(?:plausible|reasonable|possible)\s+and\s+)?(?:"  # "E seems plausible and most likely"
    # never plain "consistent" (one remark of a walk) or "plausible" (a possibility)
    r"(?i:most\s+(?:consistent|compatible|plausible|defensible|reasonable)"
    # "C (4) is more consistent." — never before "than" (the lookahead below)
    r"|more\s+(?:consistent|compatible|likely|plausible|fitting)"
    r"|(?:most\s+)?(?:correct|right|best|better|safest|appropriate|accurate|likely|probable|strongest|final)"
    # "D is the best fit", "C seems the likeliest", "B is the closest match", "A is my top pick"
    r"|likeliest|closest|top|leading|most\s+fitting|strongest)"
    r"(?:\s+(?i:answer|option|choice|one|candidate|pick|fit|match|bet|guess|call|estimate))?"
    r"|(?i:(?:tentative|preferred|favou?red|top)\s+)?(?i:answer|one|pick|choice|guess|bet|hunch|instinct|inclination"
    r"|call|vote|response|reply|selection))"
    r"|(?i:feels|sounds)\s+(?i:right|correct|best)|(?i:fits|matches)\s+(?i:the\s+)?(?i:best|better)|(?i:remains)"
    r"|(?i:best|most\s+closely)\s+(?i:fits|matches)|(?i:stands\s+out)(?:\s+(?i:as\s+(?:correct|the\s+answer|best)))?"
    r"|(?i:does)|(?i:gets\s+my\s+vote)|(?i:makes\s+(?:the\s+)?most\s+sense)"
    # "C is what I'd choose", "2 is what I would go with"
    r"|(?i:is\s+(?:what|the\s+one|the\s+option|the\s+letter)\s+I(?:'d|\s+would|'ll|\s+will)?\s+"
    r"(?:choose|pick|select|go\s+with|say|answer))"
    # "B is what the image shows."
    r"|(?i:is\s+what\s+the\s+(?:image|figure|micrograph|panel|slide|section|data|plot)\s+shows))"
    r"(?:\s+(?i:to\s+me|here|overall|(?:with|for)\s+(?:the|these|this|those|all|our)(?:\s+[\w-]+){1,3}))?"
    r"(?=\s*(?:[.!,;:\n]|$|(?i:because|since|as|given)\b))"
)
# the label's option text in brackets between a label and its verdict ("C (4) is more
# consistent"); the caller checks that it is the label's own text.
_GLOSS = r"(?:[ \t]+\((?P<gl>[^()\n]{1,60})\))?"
REVERSE_LETTERS = re.compile(
    r"(?<![\w'])(?:(?i:options?|choices?)\s*)?(?:\((?P<a>[A-Za-z])\)|\[(?P<b>[A-Za-z])\]|(?P<c>[A-Z]))"
    + _GLOSS
    + _VERDICT
)
REVERSE_NUMBERS = re.compile(
    r"(?<![\w'])(?:(?:(?i:options?|choices?)\s*\#?\s*)(?P<c>\d{1,2})|\((?P<a>\d{1,2})\)|\[(?P<b>\d{1,2})\]"
    # a bare number only opening a sentence or after "I believe/think" ("2 seems right.")
    # or after an introductory comma ("Looking at the blot, 2 stands out.") or ", but", never in a
    # list ("1, 2")
    r"|(?:^|(?<=[.!?:;][ \t])|(?<=\bI\sbelieve\s)|(?<=\bI\sthink\s)|(?<=[A-Za-z],[ \t])"
    r"|(?<=,\sbut\s))(?P<d>\d{1,2}))" + _GLOSS + _VERDICT,
    re.M,
)
# An option named by its place ("the second option", "the last choice"): as the subject
# of a verdict ("The second option is correct") or as what an answer phrase names ("I'd go with
# the third option"). Never "the final answer" (not a place) and never "one" (too vague).
ORDINAL_WORDS = {"first": 0, "second": 1, "third": 2, "fourth": 3, "fifth": 4, "sixth": 5, "last": -1}
_ORDINAL = (
    r"(?<![\w'])(?i:the\s+(?P<ord>first|second|third|fourth|fifth|sixth|last)\s+(?:listed\s+)?"
    r"(?:option|choice|alternative))"
)
ORDINAL_SUBJECT = re.compile(_ORDINAL + r"(?:\s*\([^()\n]{1,80}\))?" + _VERDICT)
ORDINAL_OBJECT = re.compile(_ORDINAL + r"(?![\w'])(?!\s+(?i:is|was|would|seems|looks|and|or)\b)")
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

# Hedged or first-person commitments ("I would say D", "I believe it's D", "It is probably B", "My
# choice: C"): only an explicit label may follow, never option text or a bare lower-case letter.
HEDGE = re.compile(
    r"""
    (?<![\w'])
    (?:
        I(?:'d|\s+would|\s+will|'ll)?\s+(?:(?:now|still|rather|then|also|personally)\s+)?(?:say|guess|answer)
      | I\s+(?:believe|think|guess|suspect|feel|reckon)(?:\s+that)?
      | I(?:'d|'m|\s+am|\s+would|'ll|\s+will)?\s+(?:go\s+for|lean(?:ing)?(?:\s+(?:towards?|for))?
          |inclined\s+to\s+(?:say|choose|pick|go\s+with)|going\s+to\s+(?:say|go\s+with))
      | I\s+conclude(?:\s+that)?(?:\s+(?:it|this)(?:'s|\s+is))?
      | I(?:'d|\s+would|'ll|\s+will)?\s+(?:opt\s+for|venture|hazard(?:\s+a\s+guess(?:\s+of)?)?|meant|mean)
      | I(?:'d|\s+would|'ll|\s+will)?\s+(?:(?:still|now|rather|then|personally|ultimately)\s+)?
        (?:settle\s+(?:on|for)|commit\s+to|land\s+on|prefer|favou?r|stick\s+with|stay\s+with|plump\s+for
          |come\s+down\s+on\s+the\s+side\s+of)
      | I(?:'m|\s+am)\s+(?:(?:still|now)\s+)?(?:settling\s+(?:on|for)|committing\s+to|landing\s+on
          |sticking\s+with|staying\s+with|plumping\s+for|coming\s+down\s+on\s+the\s+side\s+of)
      | I(?:'d|\s+would|'ll|\s+will)?\s+(?:identify|give|mark|pick|choose|select)\s+the\s+answer\s+as
      | the\s+(?:answer|option|choice|one)\s+I(?:'d|\s+would|'ll|\s+will)?\s+
        (?:give|choose|pick|go\s+with|favou?r|prefer|select)\s+is
      | I(?:'m|\s+am)\s+(?:not\s+(?:entirely\s+|completely\s+|100%\s+)?sure|unsure),?\s+but
      | (?:(?<=\band\s)|(?<=\bthen\s))(?:choose|select|pick|go\s+with)  # "rule out D and choose A"
      # "Leaning towards **D**, although …", "… makes me go with B"
      | (?:^|(?<=[.!?]\s))leaning\s+(?:towards?|for)
      | (?:makes?|made)\s+me\s+(?:go\s+with|choose|pick|favou?r|lean\s+towards?)
      # "… X and Y can be excluded, choose D." (after a comma or semicolon only, never
      # a prompt's "Choose A, B, C or D" at a sentence start)
      | (?:(?<=,\s)|(?<=;\s))(?:(?:so|thus|hence|therefore)\s+)?(?:choose|select|pick)
      | (?:^|(?<=[.!?]\s))
        (?:definitely|definitively|certainly|clearly|surely|absolutely|undoubtedly|unquestionably)
      | let(?:'s|\s+us)\s+go\s+with
      | (?:my\s+)?(?:instinct|gut|hunch|gut\s+feeling|intuition|feeling|sense)\s+(?:says|tells\s+me)
      | (?:my|our)\s+(?:gut\s+feeling|intuition|feeling|sense|belief|opinion|view)\s+(?:is|would\s+be)
      | I(?:'m|\s+am)\s+(?:(?:fairly|pretty|quite|very|reasonably|fully)\s+)?(?:sure|confident|certain)
        (?:\s+(?:that\s+)?(?:it's|it\s+is))?
      | (?:gonna|going\s+to)\s+(?:go\s+with|say)
      | (?:(?:it|this|that)\s+)?(?:looks|seems)\s+like
      | (?:should|must)\s+be
      | the\s+(?:option|choice|one|answer)\s+that\s+(?:best\s+)?(?:fits|matches)(?:\s+best)?\s+is
      | (?:suggests?|indicates?|supports?)(?:\s+that)?
      | I(?:'d|\s+would|'ll|\s+will)?(?:\s+(?:like|want|have|need)\s+to)?
        \s+(?:revise|change|update|amend|switch)
        (?:\s+(?:my\s+answer|my\s+choice|it|that|this))?
        (?:\s+from\s+(?:options?\s+)?[(\[]?[A-Za-z0-9]{1,2}[)\]]?)?\s+to
      | (?:(?:this|that|which|it)\s+leaves|leaving)(?:\s+(?:us|me)\s+with)?(?:\s+(?:only|just))?
        (?:\s+(?:options?|choices?))?
      | (?:leads?|led|points?)\s+(?:me|us)\s+to(?:wards?)?
      # "the image is best described by option B", "most closely matched by (3)"
      | (?:best|most\s+(?:accurately|closely|aptly))
        \s+(?:described|represented|explained|captured|characteri[sz]ed|matched|summari[sz]ed)\s+(?:by|as|with)
      | (?:my|our)\s+(?:choice|pick|selection|guess|vote|bet|response|hunch|instinct|impression
          |inclination|leaning|preference|verdict|call|conclusion|estimate|assessment|reading|take|reply
          |pick\s+here|answer\s+choice)
        (?:\s+(?:is|would\s+be|(?:goes|would\s+go)\s+to))?
      # "The reply is B", "The verdict is C", "The selection would be 2"
      | the\s+(?:reply|response|verdict|selection|pick|call|conclusion|label|letter)
        \s+(?:is|would\s+be|here\s+is)
      # "It corresponds to option C", "which maps to (3)", "this matches 2": a label only
      | (?:corresponds?|corresponding|maps?|mapping|matches|aligns?|equates?)(?:\s+(?:best|most\s+closely))?
        \s+(?:to|with)
      # "The option that applies is D", "the choice that is correct here is 2"
      | the\s+(?:option|choice|one|answer|letter)\s+(?:that|which)\s+(?:best\s+|most\s+closely\s+)?
        (?:applies|fits|matches|works|holds|describes\s+(?:it|this|the\s+\w+)|is\s+(?:correct|right|true|supported)
          |I(?:'d|\s+would)?\s+(?:choose|pick|select|go\s+with|favou?r|prefer))(?:\s+(?:best|here|most))?\s+is
      | (?:it|this|that)(?:'s|\s+is|\s+(?:would|must|should|has\s+to)\s+be)
      | (?:(?:my|our)\s+)?(?:best|final)\s+(?:choice|pick|guess)(?:\s+(?:is|would\s+be))?
      # "The choice is D", "Somewhat confident in A", "Mine is B"
      | (?:^|(?<=[.!?]\s))mine\s+(?:is|would\s+be)
      | the\s+(?:choice|option|pick|selection)\s+(?:is|would\s+be)
      | (?:(?:fairly|pretty|quite|very|reasonably|fully|somewhat|moderately|highly|most)\s+)?
        (?:confident|certain)\s+(?:in|of|about)(?:\s+(?:option|answer|choice))?
      | (?:my|our)\s+money\s+(?:is|would\s+be)\s+on
      | I(?:'d|\s+would)?\s+put\s+my\s+money\s+on
      | I(?:'d|\s+would|'ll|\s+will)\s+put
      | I(?:'d|\s+would|'ll|\s+will)?\s+bet(?:\s+on)?
      | \bnot\s+(?:options?\s+)?[(\[]?[A-Za-z0-9]{1,2}[)\]]?(?:\s+after\s+all)?
        (?:\s*[,;]?\s*but(?:\s+rather)?|[ \t]*[;,:]|[ \t]+-)
    )
    (?![\w'])[ \t]*[:\-]?
    """,
    re.I | re.X,
)
# Verdicts that name an option by its text ("The most likely diagnosis is squamous cell carcinoma",
# "most consistent with necrosis", "Diagnosis: necrosis").
VERDICT_TEXT = re.compile(
    r"""
    (?<![\w'])
    (?:
        (?:the\s+)?(?:most\s+(?:likely|probable|plausible|appropriate|consistent|accurate)|best|final|likely
          |probable|correct)
        \s+(?:[a-z]+\s+){0,3}?(?:is|would\s+be)
      | (?:most|best)\s+consistent\s+with
      | (?:favou?rs?|points?\s+(?:to|towards?)|supports?\s+a\s+diagnosis\s+of)
      | (?:best|most\s+accurately)\s+(?:described|classified|characterized|identified)\s+as
      | (?:best|most\s+likely)\s+(?:explained|represented|accounted\s+for)\s+by
      | (?:aligns?|corresponds?|agrees?)\s+(?:most\s+closely|best)\s+with
      | (?:which|this|that)\s+(?:corresponds|matches)(?:\s+to)?
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
# Terse answer prefixes ("Final: C", "Response: B", "Therefore: A", "=> D"): an explicit label only.
PREFIX = re.compile(
    r"(?<![\w'])(?:(?:final|response|output|prediction|correct|pick|selection|correction|ans|result|best\s+(?:match|fit)"
    r"|letter|label|verdict|call|guess|bet|reply|solution|key|update|revision|edit|(?:updated|revised|new)\s+answer"
    r"|answering|rethinking|best\s+estimate|answer[ \t]*\((?:low|moderate|medium|high)\s+confidence\)"
    r"|(?:pick|choose|select)\s+one)\s*(?::|=(?!=)|->|=>)"  # also "Response = C"
    r"|(?:choice|option)[\"']?[ \t]*:(?=[ \t]*\S)"
    r"|(?:therefore|thus|hence|so|correction|actually(?:[ \t]*,?[ \t]*no(?![\w']))?|instead(?!\s+of\s)|rather"
    r"|on\s+second\s+thought"
    r"|tentatively|(?:up)?on\s+(?:closer|further)\s+(?:inspection|review|examination|look)"
    r"|after\s+(?:a\s+)?(?:closer|further|second|more\s+careful)\s+(?:inspection|review|examination|look)"
    r"|provisionally|presumably|perhaps|(?:most\s+|quite\s+)?(?:likely|probably)|scratch\s+that|(?:no\s+)?wait"
    # hedge adverbs before a lone label ("Plausibly C.", "Maybe 2.") and a change of mind
    r"|"
    + alternation(english_phrases("hedge_adverb"))
    + r"|(?:up)?on\s+(?:further\s+|more\s+)?reflection|after\s+(?:further\s+|more\s+)?reflection"
    r"|having\s+re-?considered|thinking\s+(?:about\s+it\s+)?(?:again|more)|on\s+a\s+second\s+look"
    r"|make\s+(?:that|it)|revising(?:\s+(?:to|my\s+answer(?:\s+to)?))?|looking\s+(?:again|closer)|let\s+me\s+correct\s+(?:myself|that)|hold\s+on|hang\s+on"
    r"|let\s+me\s+fix\s+(?:that|this)|re-?considering"
    # "Easy one - A.", "Instead of A, choose B."
    r"|(?:an?\s+)?(?:easy|simple|straightforward)\s+one|(?:which|this|that)\s+brings\s+me\s+to"
    r"|instead\s+of\s+[^,.;:\n]{1,60},[ \t]*(?:choose|pick|select|go\s+with))"
    r"(?![\w'])[ \t]*(?:[,:]|-(?=[ \t]))?"
    r"|if\s+(?:I\s+(?:had|have)\s+to|forced\s+to|I\s+must)\s+(?:choose|pick|answer|select)[ \t]*[,:]"
    r"|going\s+with|(?:based\s+on|given|considering|taking|in\s+conclusion|in\s+summary|overall|on\s+balance"
    r"|(?:all|everything)(?:\s+things)?\s+considered|putting\s+(?:\w+\s+){0,4}together"
    r"|to\s+summari[sz]e|in\s+short|ultimately)[^.;:\n]{0,80}[,:])"
    r"|(?:selected|chosen|picked)(?:\s+(?:options?|answers?|choices?))?\s*[:=]|=>|->|→|\u27a1\ufe0f?",
    re.I,
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
# A short sentence (at most eight words) ending in a label, where the word before the label is a
# verb or particle of choosing, not a noun ("I suppose D.", "I'd probably go with C.", "This
# appears to be D."; never "The signal is in panel C." or "It is vitamin D."). No negation,
# condition, alternative or mere possibility ("could", "might") in it, and no other label.
SHORT = re.compile(
    r"(?:^|(?<=[.!?][ \t])|(?<=\n))[ \t]*"
    r"(?![^.!?\n]*(?<![\w'])(?i:not|no|never|if|unless|whether|without|cannot|either|neither|or|nor|could|might"
    r"|may|also)(?![\w']))"
    r"(?![^.!?\n]*n't)"
    r"(?P<lead>(?:[\w']+[ \t]+){0,7}?)"
    r"(?i:say|guess|guessing|suppose|be|(?:go|going|goes)\s+with|(?:go|going|opt|opting|vote|voting)\s+for"
    r"|toward|towards|lean\s+to|choose|choosing|pick|picking|select|selecting|wager|thinking|take"
    r"|probably|presumably|likely|think|believe|reckon"
    # "I'd go C.", "I'm answering A.", "Selecting option 4."
    r"|go|answering|answer|answer\s+with|saying|opting|mark|circle|tick|vote)[ \t]+"
    r"(?=(?:(?i:option|choice|letter)[ \t]+)?\(?(?:[A-Z]|\d{1,2})\)?[ \t]*(?:[.!]|$))",
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
# Words after a label on the first line that make it an answer with its reason ("B because …").
EXPLICIT = frozenset({"bracketed", "closed", "keyword"})
REASON_WORDS = english_words("reason")

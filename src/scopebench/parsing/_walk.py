"""Two shapes of answer that name every candidate before choosing one (used by ``choice.py``).

- An option-by-option **walk-through** that marks each option ("A: no. B: no. C: yes. D: no.",
  "- C. Rosette formation ✓"): it commits only when *every* option is walked, exactly one is
  marked as fitting and every other one as not.
- "**the former**" / "**the latter**": resolved only when exactly two options were named, in
  order, in the sentence of the reference or the one before it, the reference's sentence speaks
  for it ("fits better", "I favor the former") and nothing there rules it out; otherwise nothing.

Both only ever narrow: where anything is unclear they return ``None`` and the later rules (or
"no option committed to") apply.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from scopebench.parsing._labels import LabelStyle, label_for, label_index
from scopebench.parsing._text import find_mentions, resolve, tokenize
from scopebench.parsing.vocabulary import english_words

# Check and cross marks carry the verdict of a walk-through line; ``clean`` drops check marks
# elsewhere, so the walk is read from a copy where they are words.
MARKS = str.maketrans(
    {
        "\u2713": " yes ",
        "\u2714": " yes ",
        "\u2611": " yes ",
        "\u2705": " yes ",
        "\u2717": " no ",
        "\u2718": " no ",
        "\u274c": " no ",
        "\u274e": " no ",
    }
)
HAS_MARK = re.compile("[\u2713\u2714\u2611\u2705\u2717\u2718\u274c\u274e]")

# Where one option's part of a walk starts: at a line start (after a bullet) or after a sentence
# end, a label written as "(C)", "C)", "C." or "C:" (optionally "Option C:"), then a space; or
# a label with its option text in brackets before the verdict ("- A (Cardiac muscle): no").
_START = r"(?:^|(?<=[.;:!?-]\s))[ \t]*(?:[-*\u2022+][ \t]+)?(?:(?i:option|choice)[ \t]+)?"
_GLOSSED = r"(?=[ \t]+\([^()\n]{1,80}\)[ \t]*[:-])"
_SEG_LETTERS = re.compile(
    _START + r"(?:\((?P<a>[A-Za-z])\)|(?P<b>[A-Z])[.):]|(?P<e>[A-Z])" + _GLOSSED + r")(?=[ \t])", re.M
)
_SEG_NUMBERS = re.compile(
    _START + r"(?:\((?P<a>\d{1,2})\)|(?P<b>\d{1,2})[.):]|(?P<e>\d{1,2})" + _GLOSSED + r")(?=[ \t])", re.M
)
#: Longest walk-through looked at: bounded, so the rule stays linear.
_WALK_LIMIT = 20_000


def walk_choice(text: str, options: Sequence[tuple[str, ...]], style: LabelStyle) -> tuple[int, str] | None:
    """The option a walk-through marks as the only fit, with the reason; ``None`` otherwise.

    Args:
        text: The cleaned response (check marks turned into "yes"/"no", see :data:`MARKS`).
        options: Each option's tokens.
        style: ``"letters"`` or ``"numbers"``.
    """
    text = text[:_WALK_LIMIT]
    pattern = _SEG_LETTERS if style == "letters" else _SEG_NUMBERS
    starts = list(pattern.finditer(text))
    if len(starts) != len(options):
        return None
    verdicts: dict[int, str] = {}
    for n, m in enumerate(starts):
        raw = m["a"] or m["b"] or m["e"]
        label = raw.upper() if style == "letters" else str(int(raw))
        idx = label_index(label, style)
        if not 0 <= idx < len(options) or idx in verdicts:
            return None  # a label twice, or one out of range: no walk through these options
        end = starts[n + 1].start() if n + 1 < len(starts) else text.find("\n", m.end())
        words = [t.value for t in tokenize(text[m.end() : end if end >= 0 else len(text)])]
        verdict = _verdict(words, idx, options)
        if verdict is None:
            return None
        verdicts[idx] = verdict
    fitting = [i for i, v in verdicts.items() if v == "yes"]
    if len(fitting) != 1 or any(v != "yes" and v != "no" for v in verdicts.values()):
        return None
    label = label_for(fitting[0], style)
    return fitting[0], f"walk-through marks only option {label} as fitting"


def _verdict(words: list[str], idx: int, options: Sequence[tuple[str, ...]]) -> str | None:
    """The verdict ("yes", "no" or None when unclear) on one option's part of a walk-through."""
    own = options[idx]
    if tuple(words[: len(own)]) == own:
        words = words[len(own) :]  # the option's own text may hold "no"/"true" ("No change")
    elif any(o and tuple(words[: len(o)]) == o for o in options):
        return None  # a label followed by another option's text contradicts itself
    negative, positive = english_words("walk_no"), english_words("walk_yes")
    if any(w in negative for w in words):
        return "no"
    if any(w in positive for w in words):
        return "yes"
    return None


_REF = re.compile(r"\bthe\s+(former|latter)\b", re.I)
_SENTENCE_END = re.compile(r"[.!?;\n]")
_LABEL_PAIR = {
    "letters": re.compile(
        r"(?<![\w'])(?:(?i:options?|choices?)\s+)?\(?(?P<x>[A-Z])\)?\s*(?:,|(?i:and|or|vs\.?|versus))\s*"
        r"(?:(?i:options?|choices?)\s+)?\(?(?P<y>[A-Z])\)?(?![\w'])"
    ),
    "numbers": re.compile(
        # "between 2 and 1", "options 2 and 1", "The two contenders are 2 and 1"
        r"(?:(?<![\w'])(?:(?i:options?|choices?|between|are|were)\s+)|^|(?<=[.!?;][ \t]))"
        r"\(?(?P<x>\d{1,2})\)?\s*(?:,|(?i:and|or|vs\.?|versus))\s*"
        r"(?:(?i:options?|choices?)\s+)?\(?(?P<y>\d{1,2})\)?(?![\w'])"
    ),
}
_FOR_IT = re.compile(
    r"\b(?:fits?|better|best|favou?rs?|favou?red|prefers?|preferred|chose|choose|choosing|pick|select|"
    r"go(?:ing)?\s+with|lean(?:s|ing)?|correct|right|more\s+(?:likely|consistent|plausible|probable)|"
    r"most\s+likely|supported|consistent|match(?:es)?|answer|think|believe|say)\b",
    re.I,
)
_AGAINST = frozenset(
    {
        "not",
        "no",
        "unlikely",
        "less",
        "excluded",
        "incorrect",
        "wrong",
        "ruled",
        "against",
        "isn",
        "doesn",
        "neither",
    }
)
_ALONE = re.compile(r"[ \t]*(?:[,.!;]|$|(?:because|since|as|given)\b)", re.I | re.M)
#: How far back a "former/latter" looks for the two options it refers to.
_REF_SPAN = 600


def former_latter(
    text: str, options: Sequence[tuple[str, ...]], style: LabelStyle
) -> tuple[int | None, str] | None:
    """The option "the former"/"the latter" refers to, when that is unambiguous and chosen.

    Args:
        text: The cleaned response.
        options: Each option's tokens.
        style: ``"letters"`` or ``"numbers"``.

    Returns:
        ``None`` when no reference resolves to one of two named options (later rules decide);
        else the chosen index, or ``None`` with the reason when the reference does not choose
        its option ("The former is unlikely"), which no later rule may then overrule.
    """
    refs = list(_REF.finditer(text))
    if not refs or len({r.group(1).lower() for r in refs}) > 1:
        return None  # no reference, or both ("the former …, the latter …"): a description
    ref = refs[0]
    # Sentence ends before the reference, ignoring empty sentences ("possible.\n"): the window is
    # the reference's sentence up to it and the two sentences before (a two-line walk-through).
    ends: list[int] = []
    for m in _SENTENCE_END.finditer(text, max(0, ref.start() - _REF_SPAN), ref.start()):
        if ends and not text[ends[-1] : m.start()].strip():
            ends[-1] = m.end()
        else:
            ends.append(m.end())
    window_start = ends[-3] if len(ends) >= 3 else max(0, ref.start() - _REF_SPAN)
    window = text[window_start : ref.start()]
    named = _named_in_order(window, options, style)
    if len(named) != 2:
        return None
    # Every option named anywhere must be one of the pair, so nothing else is in play.
    everywhere = {m.option for m in resolve(find_mentions([t.value for t in tokenize(text)], options))}
    if not everywhere <= set(named):
        return None
    sentence_start = ends[-1] if ends else window_start
    after = _SENTENCE_END.search(text, ref.end())
    sentence = text[sentence_start : after.start() if after else len(text)]
    word = ref.group(1).lower()
    chosen = named[0] if word == "former" else named[1]
    label = label_for(chosen, style)
    # "X or Y? The former, given …" / "C or D: the former.": the reference opening its sentence
    # (or following a colon) is itself the answer.
    before = text[sentence_start : ref.start()].strip()
    alone = (not before or before.endswith(":")) and _ALONE.match(text, ref.end()) is not None
    if (_FOR_IT.search(sentence) is None and not alone) or any(
        t.value in _AGAINST for t in tokenize(sentence)
    ):
        return None, f"'the {word}' refers to option {label} but does not choose it"
    return chosen, f"'the {word}' refers to option {label}, the {word} of two named"


def _named_in_order(window: str, options: Sequence[tuple[str, ...]], style: LabelStyle) -> list[int]:
    """Distinct options named in ``window`` by text or as a label pair ("B and D"), in order."""
    tokens = tokenize(window)
    found: list[tuple[int, int]] = [
        (tokens[m.start].start, m.option) for m in resolve(find_mentions([t.value for t in tokens], options))
    ]
    for m in _LABEL_PAIR[style].finditer(window):
        for key in ("x", "y"):
            raw = m[key]
            idx = label_index(raw if style == "letters" else str(int(raw)), style)
            if not 0 <= idx < len(options):
                return []
            found.append((m.start(key), idx))
    order: list[int] = []
    for _, idx in sorted(found):
        if idx not in order:
            order.append(idx)
    return order

"""Text clean-up, tokens and option-text matching for the choice parser (private).

Everything here is deterministic and works on token sequences, so option texts match only on word
boundaries and are insensitive to case, spacing and punctuation.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

# Typographic quotes and dashes become their ASCII forms so one set of patterns covers them.
_TRANSLATE = str.maketrans(
    {
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
    }
)

# LaTeX wrappers around a short answer (`\text{C}`, `\textbf{C}`) keep their content.
_LATEX_WRAP = re.compile(r"\\(?:text|textbf|textit|mathrm|mathbf|mathit)\s*\{([^{}]*)\}")

# Markdown emphasis, code ticks, maths dollars, heading hashes and quote markers carry no meaning
# for the answer. Underscores go only at word edges so `cell_type` survives.
_MARKUP = re.compile(r"\*+|`+|\$+|(?<!\w)_+|_+(?!\w)|^[ \t]*(?:#+|>+)[ \t]*", re.M)

# A token is a run of letters/digits, or a symbol that distinguishes options ("CD4+" vs "CD4-",
# "5%"). A hyphen counts only when it ends a word, so "T-cell" and "T cell" read alike.
_TOKEN = re.compile(r"[^\W_]+|[+%±]|(?<=[^\W_])-(?![^\W_])")

# Plural tolerance applies only to words this long, so short tokens ("a", "as") never merge.
_PLURAL_MIN = 3


def clean(text: str) -> str:
    """Normalise Unicode and strip markup that never changes which option a response names."""
    text = unicodedata.normalize("NFKC", text).translate(_TRANSLATE)
    text = _LATEX_WRAP.sub(r"\1", text)
    return _MARKUP.sub("", text)


@dataclass(frozen=True, slots=True)
class Token:
    """One token of a response: its case-folded value and character span."""

    value: str
    start: int
    end: int


def tokenize(text: str) -> list[Token]:
    """Split already-cleaned text into case-folded tokens with their spans."""
    return [Token(m.group().casefold(), m.start(), m.end()) for m in _TOKEN.finditer(text)]


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


def find_mentions(said: Sequence[str], options: Sequence[Sequence[str]]) -> list[TextMatch]:
    """Every place an option's token sequence occurs in ``said``."""
    found: list[TextMatch] = []
    for idx, opt in enumerate(options):
        if not opt:
            continue
        length = sum(len(t) for t in opt)
        for start in range(len(said) - len(opt) + 1):
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
    """Drop matches covered by a longer or better match of another option at the same place."""
    return [m for m in matches if not any(_beats(other, m) for other in matches)]


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
    kept = sorted(resolve(find_mentions(said, options)), key=lambda m: (m.start, m.option))
    if at_start and not any(m.start == 0 for m in kept):
        return []
    order: list[int] = []
    for m in kept:
        if m.option not in order:
            order.append(m.option)
    return order


def equals_option(said: Sequence[str], option: Sequence[str]) -> bool:
    """Whether a token sequence is exactly an option's text (plurals tolerated)."""
    return len(said) == len(option) > 0 and all(
        _token_match(s, o)[0] for s, o in zip(said, option, strict=True)
    )

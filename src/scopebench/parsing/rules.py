"""What a reading rule is: a named unit with its precedence, what it reads and why.

The parser's rules are the :class:`Rule` values of :data:`scopebench.parsing.choice.RULES`, in
precedence order (the first that decides wins). Adding a rule is writing its function, adding one
:class:`Rule` to that list at its place, and adding its corpus file under
``tests/parsing/corpus/`` named in :attr:`Rule.corpus`; ``tests/parsing/test_rules.py`` checks
that docs/parser.md's rule table lists the same rules in the same order and that every corpus
file a rule names exists.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from scopebench.parsing._commits import Ctx, ParseResult

__all__ = ["Reading", "Rule"]


@dataclass(frozen=True, slots=True)
class Reading:
    """One reply as every rule sees it.

    Attributes:
        text: The reply after echo removal and cleaning (what most rules read).
        raw: The reply after echo removal, before cleaning (check marks live here).
        ctx: The options, label style and whether the reply was cut at the length limit.
    """

    text: str
    raw: str
    ctx: Ctx


@dataclass(frozen=True, slots=True)
class Rule:
    """One reading rule.

    Attributes:
        name: The rule's name (unique; docs/parser.md's table lists it).
        methods: The ``parse_method`` values the rule records when it decides.
        reads: What it reads, in a line ("a label right after an answer phrase").
        why: Why it holds, in a line.
        explicit: Whether it reads only explicit verdicts: only such rules read a reply cut at the
            length limit (a cut walk-through leaves options not yet ruled out, which option text
            would read as chosen).
        corpus: The corpus files (``tests/parsing/corpus/<name>.jsonl``) that hold its rows.
        apply: The rule: a result when it decides (an index, or ``None`` with the reason), or
            ``None`` to leave the reply to the next rule.
    """

    name: str
    methods: tuple[str, ...]
    reads: str
    why: str
    explicit: bool
    corpus: tuple[str, ...]
    apply: Callable[[Reading], ParseResult | None]

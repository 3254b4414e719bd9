"""The rules are named units in one list, and docs/parser.md's rule table is that list."""

from __future__ import annotations

import re
from pathlib import Path

from scopebench.parsing.choice import RULES

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "parser.md"
CORPUS = Path(__file__).parent / "corpus"


def _doc_rules() -> list[tuple[str, bool]]:
    """(name, explicit) of each row of the rule table under "## Rules, in order"."""
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## Rules, in order", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| (\d+) \| `([a-z_]+)` \| (yes|no) \|", section, re.M)
    assert [int(n) for n, _, _ in rows] == list(range(1, len(rows) + 1)), "rule numbers out of order"
    return [(name, cut == "yes") for _, name, cut in rows]


def test_docs_list_the_rules_in_order() -> None:
    # Catches: a rule added, removed, reordered or made (in)applicable to cut replies in the
    # code without the page saying so (or the reverse).
    assert _doc_rules() == [(r.name, r.explicit) for r in RULES]


def test_rules_are_complete_units() -> None:
    # Catches: a rule without a name, a reason, or corpus rows beside it; two rules of one name.
    assert len({r.name for r in RULES}) == len(RULES)
    for rule in RULES:
        assert rule.reads and rule.why and rule.methods, rule.name
        for name in rule.corpus:
            assert (CORPUS / f"{name}.jsonl").is_file(), f"{rule.name}: no corpus file {name}.jsonl"


def test_option_text_is_last_and_never_reads_a_cut_reply() -> None:
    # Catches: elimination moved before an explicit rule, or allowed on cut replies.
    assert RULES[-1].name == "option_text" and not RULES[-1].explicit
    assert [r.explicit for r in RULES] == sorted((r.explicit for r in RULES), reverse=True)

"""The rules are named units in one list, docs/parser.md's rule table is that list, and its
"Adding a rule" example works as written."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from scopebench.parsing import choice, parse_choice
from scopebench.parsing.choice import RULES
from scopebench.parsing.rules import Rule

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "parser.md"
CORPUS = Path(__file__).parent / "corpus"
FOUR = ("Whorled pattern", "Spindle cells", "Rosette formation", "Necrosis")


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


def test_every_corpus_file_belongs_to_a_rule() -> None:
    # Catches: a corpus file added without a rule that claims it (rows nobody reads beside a
    # rule), or a rule that names a file that is gone.
    files = {p.stem for p in CORPUS.glob("*.jsonl")}
    claimed = {name for rule in RULES for name in rule.corpus}
    assert files - claimed == set(), "corpus files no rule names"
    assert claimed - files == set(), "rules name missing corpus files"
    assert all(rule.corpus for rule in RULES)


def test_no_private_name_crosses_modules() -> None:
    # Catches: a rule importing another module's private pattern or helper, which makes adding
    # a rule mean reading every module (shared patterns live in parsing/vocabulary.py by name).
    crossing = []
    for path in sorted((ROOT / "src" / "scopebench" / "parsing").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                crossing += [f"{path.name}: {a.name}" for a in node.names if a.name.startswith("_")]
    assert crossing == []


def _doc_block(heading: str, lang: str) -> str:
    section = DOC.read_text(encoding="utf-8").split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return section.split(f"```{lang}\n", 1)[1].split("```", 1)[0]


def test_adding_a_rule_as_documented(monkeypatch: pytest.MonkeyPatch) -> None:
    # Catches: docs/parser.md's "Adding a rule" example going stale (an import that moved, a
    # Rule field renamed) or RULES not being the one list parse_choice reads.
    scope: dict[str, object] = {}
    exec(compile(_doc_block("Adding a rule", "python"), "docs/parser.md", "exec"), scope)
    rule = scope["PICK_RULE"]
    assert isinstance(rule, Rule)
    reply = "My pick of the bunch is C, given the rosettes."
    assert parse_choice(reply, FOUR).index is None  # no shipped rule reads it
    at = [r.name for r in choice.RULES].index("bare_label")
    monkeypatch.setattr(choice, "RULES", (*choice.RULES[:at], rule, *choice.RULES[at:]))
    got = parse_choice(reply, FOUR)
    assert (got.index, got.method) == (2, "pick_phrase")
    assert parse_choice("My pick of the bunch is E.", FOUR).index is None  # out of range
    assert parse_choice("The answer is B.", FOUR).index == 1  # earlier rules still decide first

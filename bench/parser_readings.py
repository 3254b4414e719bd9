"""Dump the parser's reading of every reply it is measured on, to compare two versions of the parser.

A change meant to move code or data without changing behaviour (a vocabulary moved into a language
file, a rule split in two) must leave every reading as it was. This script writes one JSON line per
reading, ``{"id", "index", "method", "reason"}``, so two dumps taken before and after the change
compare with ``diff``. The replies read are:

* every row of ``tests/parsing/corpus/*.jsonl`` and ``tests/parsing/exams/*.jsonl`` (the inputs of
  tests/parsing/test_corpus.py and bench/bench_parser_exam.py), with its own label style, finish
  reason and prompt, and again with the other label style;
* every string literal of ``tests/parsing/test_*.py`` (the replies the unit tests try), against four
  fixed options in both label styles;
* every shape of bench/bench_parser.py, repeated to 2,000 characters.

Usage::

    python bench/parser_readings.py > before.jsonl
    git archive HEAD tests/parsing | tar -x -C /tmp/before   # the inputs as they were
    # … the change …
    python bench/parser_readings.py --tests /tmp/before/tests/parsing > after.jsonl
    diff before.jsonl after.jsonl && wc -l after.jsonl

``--tests`` reads the corpus, exams and test literals from another copy of ``tests/parsing``, so
a change that also edits the tests is compared on the same replies.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from scopebench.parsing import parse_choice

ROOT = Path(__file__).resolve().parent.parent
FOUR = ("Whorled pattern", "Spindle cells", "Rosette formation", "Necrosis")
OTHER = {"letters": "numbers", "numbers": "letters"}


def _rows(tests: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every labelled row of the corpus and the exams, named by file and line."""
    for folder in ("corpus", "exams"):
        for path in sorted((tests / folder).glob("*.jsonl")):
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
                if line.strip():
                    yield f"{folder}/{path.stem}:{n + 1}", json.loads(line)


def _literals(tests: Path) -> Iterator[tuple[str, str]]:
    """Every string literal of the parsing tests (duplicates once), named by file and line."""
    seen: set[str] = set()
    for path in sorted(tests.glob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value not in seen:
                seen.add(node.value)
                yield f"{path.stem}:{node.lineno}", node.value


def _shapes() -> Iterator[tuple[str, str]]:
    """bench/bench_parser.py's adversarial shapes, each repeated to 2,000 characters."""
    sys.path.insert(0, str(ROOT / "bench"))
    from bench_parser import SHAPES  # a sibling script, importable only from bench/

    for name, unit in SHAPES.items():
        yield f"shape/{name}", (unit * (2000 // len(unit) + 1))[:2000]


def readings(tests: Path) -> Iterator[dict[str, Any]]:
    """One reading per reply and label style, in a fixed order."""
    for rid, row in _rows(tests):
        for style in (row["labels"], OTHER[row["labels"]]):
            got = parse_choice(
                row["response"],
                row["options"],
                labels=style,
                finish_reason=row.get("finish_reason"),
                prompt=row.get("prompt"),
            )
            yield {"id": f"{rid}/{style}", "index": got.index, "method": got.method, "reason": got.reason}
    for rid, text in (*_literals(tests), *_shapes()):
        for style in ("letters", "numbers"):
            got = parse_choice(text, FOUR, labels=style)
            yield {"id": f"{rid}/{style}", "index": got.index, "method": got.method, "reason": got.reason}


def main() -> None:
    """Print every reading as a JSON line."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tests", type=Path, default=ROOT / "tests" / "parsing", help="a copy of tests/parsing")
    for reading in readings(ap.parse_args().tests):
        print(json.dumps(reading, ensure_ascii=False))


if __name__ == "__main__":
    main()

"""Score :func:`scopebench.parsing.parse_choice` on a labelled exam of replies.

An exam is a JSONL file of replies the parser was not written against; each row has
``response``, ``options``, ``labels``, ``expected`` (0-based index, or null when the reply commits
to nothing) and optionally ``finish_reason`` (why generation stopped) and ``prompt`` (the rendered
prompt the reply answers). Both are handed to the parser when it takes them, as the engine does.

Prints, per family and in total: replies, committed, read as the wrong option, no-commitment
replies read as an option, and committed answers missed. The goal for a fresh exam is at most 2
wrong readings (both kinds) per 600 replies and at most 5% of committed answers missed.

Usage: ``python bench/bench_parser_exam.py [tests/parsing/exams/shapes.jsonl] [--show wrong|missed]``
"""

from __future__ import annotations

import argparse
import inspect
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from scopebench.parsing import PARSER_VERSION, parse_choice

DEFAULT = Path(__file__).resolve().parent.parent / "tests" / "parsing" / "exams" / "shapes.jsonl"


def read(row: dict[str, Any]) -> int | None:
    """The parser's reading of one exam row, with the reply's facts where the parser takes them."""
    params = inspect.signature(parse_choice).parameters
    kwargs: dict[str, Any] = {"labels": row["labels"]}
    if "finish_reason" in params:
        kwargs["finish_reason"] = row.get("finish_reason")
    if "prompt" in params:
        kwargs["prompt"] = row.get("prompt")
    return parse_choice(row["response"], row["options"], **kwargs).index


def main() -> None:
    """Print the exam's score table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("exam", nargs="?", type=Path, default=DEFAULT)
    ap.add_argument("--show", choices=("wrong", "missed"), action="append", default=[])
    args = ap.parse_args()
    rows = [json.loads(line) for line in args.exam.read_text(encoding="utf-8").splitlines() if line.strip()]
    # family -> [replies, committed, wrong, null read as an option, missed]
    table: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0])
    for row in rows:
        got, want = read(row), row["expected"]
        fam = row["family"].split("_")[0] if row["family"].startswith("lang_") else row["family"]
        cells = table[fam]
        cells[0] += 1
        cells[1] += want is not None
        cells[2] += want is not None and got is not None and got != want
        cells[3] += want is None and got is not None
        cells[4] += want is not None and got is None
        bad = (got != want and got is not None) and "wrong" in args.show
        if bad or (want is not None and got is None and "missed" in args.show):
            print(f"# {row['id']}: expected {want}, read {got}: {row['response'][:160]!r}")
    print(f"parser {PARSER_VERSION}, exam {args.exam.name}")
    print("| family | replies | committed | wrong | null read as an option | missed |")
    print("|---|---:|---:|---:|---:|---:|")
    total = [0] * 5
    for fam, cells in sorted(table.items()):
        print(f"| {fam} | " + " | ".join(str(c) for c in cells) + " |")
        total = [a + b for a, b in zip(total, cells, strict=True)]
    print("| **all** | " + " | ".join(str(c) for c in total) + " |")
    per600 = (total[2] + total[3]) * 600 / max(total[0], 1)
    print(f"wrong readings per 600 replies: {per600:.1f}; missed: {100 * total[4] / max(total[1], 1):.1f}%")


if __name__ == "__main__":
    main()

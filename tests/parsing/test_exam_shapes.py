"""The frozen exam ``tests/parsing/exams/shapes.jsonl`` stays within the goal.

At most 2 wrong readings (a committed answer read as another option, or a no-commitment reply read
as an option) per 600 replies and at most 5% of committed answers missed, with the reply's facts
(``finish_reason``, ``prompt``) handed over as the engine hands them. The exam is frozen: change
the parser, never a row, to pass.
"""

from __future__ import annotations

import json
from pathlib import Path

from scopebench.parsing import parse_choice

EXAM = Path(__file__).parent / "exams" / "shapes.jsonl"


def test_shapes_exam_within_the_goal() -> None:
    # Catches: a regression in cut-reply, echo, language or loop reading (each family is in it).
    rows = [json.loads(line) for line in EXAM.read_text(encoding="utf-8").splitlines()]
    wrong = missed = committed = 0
    for r in rows:
        got = parse_choice(
            r["response"],
            r["options"],
            labels=r["labels"],
            finish_reason=r["finish_reason"],
            prompt=r.get("prompt"),
        ).index
        if r["expected"] is None:
            wrong += got is not None
            continue
        committed += 1
        missed += got is None
        wrong += got is not None and got != r["expected"]
    assert len(rows) == 917 and committed == 577  # frozen
    assert wrong * 600 <= 2 * len(rows)
    assert missed <= 0.05 * committed

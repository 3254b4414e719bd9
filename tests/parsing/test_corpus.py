"""The labelled response corpus (tests/parsing/corpus/*.jsonl), one test per response.

Each row: ``pattern`` (the file's name: which shape of answer it is), ``response``, ``options``,
``labels`` ("letters"/"numbers"), ``expected`` (0-based index, or null when the response commits
to nothing), ``why``, and optionally ``known_miss`` (a committed answer the parser is known not to
read: it must then be unparsed, never another option). A failing id names the pattern that
regressed, e.g. ``test_corpus[negation-7]``.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from scopebench.parsing import parse_choice

CORPUS = Path(__file__).parent / "corpus"


def _rows() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for path in sorted(CORPUS.glob("*.jsonl")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
            row = json.loads(line)
            assert row["pattern"] == path.stem, f"{path.name}:{n + 1} is filed under the wrong pattern"
            row["id"] = f"{path.stem}-{n}"
            rows.append(row)
    return rows


ROWS = _rows()


@pytest.mark.parametrize("row", ROWS, ids=[r["id"] for r in ROWS])
def test_corpus(row: dict[str, Any]) -> None:
    got = parse_choice(row["response"], row["options"], labels=row["labels"])
    if row.get("known_miss"):
        assert got.index is None, f"known miss read as option {got.index}: {got.reason}"
    else:
        assert got.index == row["expected"], f"{row['why']} | {got.method}: {got.reason}"


def test_corpus_shape_and_rates() -> None:
    # The floor: ≥300 responses, both label styles, every pattern represented; no
    # response read as a wrong option and under 5% of committed answers missed.
    assert len(ROWS) >= 300
    assert {r["labels"] for r in ROWS} == {"letters", "numbers"}
    per = Counter(r["pattern"] for r in ROWS)
    assert set(per) >= {
        "negation",
        "leading_label_explained",
        "hedged_commitment",
        "option_text_verdict",
        "chinese",
        "not_x_it_is_y",
        "self_correction",
        "walkthrough_verdict",
        "former_latter",
        "english_a_i",
        "spur_tag",
        "microvqa_answer",
        "refusal",
        "ambiguous",
        "verdict_vocabulary",
        "hedged_lead",
        "change_of_mind",
        "others_rejected",
        "informal_withdrawal",
        "answer_formats_7",
        "named_label_in_text",
        "commitment_after_concession",
        "decorated_answer",
        "first_impression",
        "answer_formats_9",
    }
    wrong = missed = committed = 0
    for r in ROWS:
        got = parse_choice(r["response"], r["options"], labels=r["labels"]).index
        if r["expected"] is None:
            wrong += got is not None
            continue
        committed += 1
        missed += got is None
        wrong += got is not None and got != r["expected"]
    print("\n".join(f"{p:26s} {n:4d}" for p, n in sorted(per.items())))
    print(f"wrong {wrong}/{len(ROWS)}, missed {missed}/{committed}")
    assert wrong == 0
    assert missed / committed < 0.05

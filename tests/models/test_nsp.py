"""BERT next-sentence-prediction matching on a tiny random BERT built from its config (real code path)."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest

from helpers import FIXTURES
from scopebench.engine import RunConfig, run_benchmark
from scopebench.errors import ModelError
from scopebench.items import Item
from scopebench.models import ModelOptions, load_model, split_spec
from scopebench.store import load_run

pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from scopebench.testing.tiny import build_tiny_bert

    return build_tiny_bert(tmp_path_factory.mktemp("nsp") / "bert", seed=0)


@functools.cache
def _reference(folder: Path) -> tuple[Any, Any]:
    from transformers import AutoTokenizer, BertForNextSentencePrediction

    return AutoTokenizer.from_pretrained(folder), BertForNextSentencePrediction.from_pretrained(folder).eval()


def _manual_isnext(folder: Path, first: str, second: str) -> float:
    """The reference: one pair at a time, no padding, straight through transformers."""
    import torch

    tok, model = _reference(folder)
    enc = tok(first, second, return_tensors="pt", truncation="longest_first", max_length=64)
    with torch.no_grad():
        return float(model(**enc).logits.softmax(-1)[0, 0])


def _items() -> list[Item]:
    return [
        Item(id="q/0", benchmark="x", split="test", task="t", question="Which stain colours nuclei blue?",
             choices=("hematoxylin", "eosin", "dab", "none of the above"), answer_index=0),
        Item(id="q/1", benchmark="x", split="test", task="t", question="What is shown in the image?",
             choices=("a lymphocyte", "a neutrophil"), answer_index=1, context="A blood smear, Giemsa stain."),
        Item(id="q/2", benchmark="x", split="test", task="t", question="no options", choices=()),
    ]  # fmt: skip


def test_scores_equal_a_manual_forward_pass(tiny_bert: Path) -> None:
    # The manual pass runs on the CPU in float32; pin the backend there too (a GPU differs by rounding).
    backend = load_model(f"nsp:{tiny_bert}", ModelOptions(device="cpu"))
    assert backend.mode == "nsp-matching" and backend.needs_images is False
    out = backend.predict(_items())
    assert [r.status for r in out] == ["ok", "ok", "error"]
    assert out[2].error == "item has no options"
    for it, resp in zip(_items()[:2], out[:2], strict=True):
        first = f"{it.context}\n{it.question}" if it.context else it.question
        manual = [_manual_isnext(tiny_bert, first, c) for c in it.choices]
        assert resp.extra["isnext"] == pytest.approx(manual, abs=1e-6)
        assert resp.scores == pytest.approx([p / sum(manual) for p in manual], abs=1e-6)
        assert sum(resp.scores or []) == pytest.approx(1.0)
    # The untrained model still separates options clearly enough to test argmax handling.
    raw = out[0].extra["isnext"]
    assert max(raw) - min(raw) > 1e-3


def test_batching_does_not_change_scores(tiny_bert: Path) -> None:
    items = _items()[:2]
    one = load_model(f"nsp:{tiny_bert}", ModelOptions(extra={"pair_batch_size": 1}))
    many = load_model(f"nsp:{tiny_bert}", ModelOptions())
    a = [r for it in items for r in one.predict([it])]
    b = many.predict(items)
    for ra, rb in zip(a, b, strict=True):
        assert ra.extra["isnext"] == pytest.approx(rb.extra["isnext"], abs=1e-6)


def test_weights_load_lazily_and_identity_hashes_them(tiny_bert: Path) -> None:
    backend: Any = load_model(f"nsp:{tiny_bert}", ModelOptions())
    assert backend.model is None  # config only until the first prediction
    ident = backend.identity()
    assert ident["model_class"] == "BertForNextSentencePrediction"
    assert ident["weights_sha256"] and len(ident["weights_sha256"]) == 16
    backend.predict(_items()[:1])
    assert backend.model is not None
    assert split_spec(f"nsp:{tiny_bert}") == ("nsp", str(tiny_bert))


def test_checkpoint_without_nsp_head_is_refused(tmp_path: Path) -> None:
    from scopebench.testing.tiny import build_tiny_bert

    folder = build_tiny_bert(tmp_path / "bare", with_nsp_head=False)
    backend = load_model(f"nsp:{folder}", ModelOptions())
    with pytest.raises(ModelError, match="no trained next-sentence-prediction head"):
        backend.predict(_items()[:1])


def test_non_bert_model_is_refused(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gpt2"}), encoding="utf-8")
    with pytest.raises(ModelError, match="needs a BERT checkpoint"):
        load_model(f"nsp:{tmp_path}", ModelOptions())


def test_end_to_end_run_records_match_manual_scores(tiny_bert: Path, tmp_path: Path) -> None:
    from scopebench.benchmarks import get_benchmark

    data = str(FIXTURES / "pathmmu")
    config = RunConfig(benchmark="pathmmu", data=data, model=f"nsp:{tiny_bert}", split="test_tiny",
                       limit=5, no_image=True, batch_size=2, device="cpu")  # fmt: skip
    res = run_benchmark(config, tmp_path / "run")
    assert res.n_items == 5 and res.n_new == 5
    run = load_run(tmp_path / "run")
    items = {it.id: it for it in get_benchmark("pathmmu").load(data, split="test_tiny").items}
    n_correct = 0
    for rec in run.records:
        it = items[rec.item_id]
        manual = [_manual_isnext(tiny_bert, it.question, c) for c in it.choices]
        assert rec.status == "ok"
        assert rec.extra["isnext"] == pytest.approx(manual, abs=1e-6)
        assert rec.scores == pytest.approx([p / sum(manual) for p in manual], abs=1e-6)
        assert rec.choice == max(range(len(manual)), key=lambda i: manual[i])
        n_correct += rec.choice == it.answer_index
    assert res.metrics["overall"]["correct"] == n_correct
    assert run.config["model_identity"]["mode"] == "nsp-matching"
    assert run.config["no_image"] is True
    again = run_benchmark(config, tmp_path / "run")  # resumes: nothing left to do
    assert again.n_new == 0 and again.metrics["overall"]["correct"] == n_correct

"""Contrastive fine-tuning: the record, exact resume, clip:DIR and the merge sweep on its output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("accelerate")

from scopebench.config import RunConfig  # noqa: E402
from scopebench.errors import ConfigMismatchError, DataFormatError, DataNotFoundError, UsageError  # noqa: E402
from scopebench.experiments.finetune import (  # noqa: E402
    DataSource,
    EvalSpec,
    LoopConfig,
    TrainingInterrupted,
    finetune_contrastive,
    fingerprint,
    read_pairs_file,
)
from scopebench.experiments.finetune.data import Skipped, caption_pairs, load_split  # noqa: E402
from scopebench.protocols import caption_texts  # noqa: E402


def _loop(**kw: object) -> LoopConfig:
    base: dict[str, object] = dict(steps=4, batch_size=8, lr=1e-3, seed=0, checkpoint_every=2, device="cpu")
    return LoopConfig(**{**base, **kw})  # type: ignore[arg-type]


def _weights(folder: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(folder / "model.safetensors"))


def test_pairs_are_the_captions_the_clip_backend_scores(small_demo: Path) -> None:
    items = load_split(DataSource("demo", "train", str(small_demo)))
    skipped = Skipped()
    pairs = caption_pairs(items, skipped)
    assert len(pairs) == len(items) == 60 and not skipped.as_dict()
    first = items[0]
    assert pairs[0].caption == caption_texts(first)[first.answer_index]
    assert pairs[0].caption.endswith(first.choices[first.answer_index])
    assert pairs[0].group == first.task


def test_finetune_records_evaluates_and_feeds_the_merge_sweep(
    small_demo: Path, tiny_clip: Path, tmp_path: Path
) -> None:
    from scopebench.experiments.merge import sweep_alphas

    source = DataSource("demo", "train", str(small_demo))
    held_out = EvalSpec(DataSource("demo", "test", str(small_demo)), limit=12)
    res = finetune_contrastive(str(tiny_clip), tmp_path / "ft", _loop(), source=source, evaluation=held_out)
    rec = json.loads((tmp_path / "ft" / "finetune.json").read_text())
    assert rec["status"] == "done" and rec["kind"] == "contrastive" and rec["seed"] == 0
    assert rec["hyperparameters"]["lr"] == 1e-3 and rec["hyperparameters"]["batch_size"] == 8
    pairs = caption_pairs(load_split(source), Skipped())
    assert rec["data"]["fingerprint_sha256"] == fingerprint([(p.id, p.image.key, p.caption) for p in pairs])
    assert rec["data"]["n_examples"] == 60 and rec["training"]["steps"] == 4
    assert len((tmp_path / "ft" / "train_log.jsonl").read_text().splitlines()) == 4
    before, after = rec["evaluation"]["before"], rec["evaluation"]["after"]
    assert before["n"] == after["n"] == 12 and after["model"] == f"clip:{res.model_dir}"
    assert before["ci_low"] <= before["accuracy"] <= before["ci_high"]
    # The tuned weights differ from the base's.
    assert any(
        not torch.equal(a, b)
        for a, b in zip(_weights(tiny_clip).values(), _weights(res.model_dir).values(), strict=True)
    )
    # merge --sweep takes the output folder as TUNED: α=1 is the base, α=0 the fine-tune, and their
    # accuracies are the recipe's own before/after evaluations.
    rows = sweep_alphas(
        tiny_clip,
        res.model_dir,
        [0.0, 1.0],
        tmp_path / "sweep",
        RunConfig.from_options("demo", str(small_demo), "clip:base", split="test", limit=12, device="cpu"),
    )
    by_alpha = {r.alpha: r for r in rows}
    assert by_alpha[1.0].correct == before["correct"] and by_alpha[0.0].correct == after["correct"]
    assert (tmp_path / "ft" / "report.md").read_text().count("| all |") == 1


def test_an_interrupted_finetune_resumes_to_the_same_weights(
    small_demo: Path, tiny_clip: Path, tmp_path: Path
) -> None:
    source = DataSource("demo", "train", str(small_demo))
    straight = finetune_contrastive(str(tiny_clip), tmp_path / "a", _loop(steps=5), source=source)

    def crash(step: int, loss: float) -> None:
        if step == 3:
            raise TrainingInterrupted

    with pytest.raises(TrainingInterrupted):
        finetune_contrastive(str(tiny_clip), tmp_path / "b", _loop(steps=5), source=source, on_step=crash)
    assert json.loads((tmp_path / "b" / "finetune.json").read_text())["status"] == "running"
    resumed = finetune_contrastive(str(tiny_clip), tmp_path / "b", _loop(steps=5), source=source)
    assert resumed.record["training"]["resumed_from"] == 2
    a, b = _weights(straight.model_dir), _weights(resumed.model_dir)
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    # Another seed in the same folder is another fine-tune: refused, not mixed.
    with pytest.raises(ConfigMismatchError, match="seed"):
        finetune_contrastive(str(tiny_clip), tmp_path / "b", _loop(steps=5, seed=1), source=source)


def test_pairs_file(tmp_path: Path, small_demo: Path) -> None:
    img = next((small_demo / "images").glob("train-*.png"))
    (tmp_path / "pairs.jsonl").write_text(
        json.dumps({"image": str(img), "caption": "a round cell"})
        + "\n"
        + json.dumps({"image": str(img), "caption": "a cell", "group": "g", "id": "x"})
        + "\n"
    )
    pairs = read_pairs_file(tmp_path / "pairs.jsonl")
    assert [(p.id, p.caption, p.group) for p in pairs] == [("1", "a round cell", ""), ("x", "a cell", "g")]
    (tmp_path / "bad.jsonl").write_text('{"image": "x.png"}\n')
    with pytest.raises(DataFormatError, match="caption"):
        read_pairs_file(tmp_path / "bad.jsonl")
    (tmp_path / "missing.jsonl").write_text('{"image": "nope.png", "caption": "c"}\n')
    with pytest.raises(DataNotFoundError, match=r"nope\.png"):
        read_pairs_file(tmp_path / "missing.jsonl")


def test_needs_training_data(tiny_clip: Path, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="--pairs"):
        finetune_contrastive(str(tiny_clip), tmp_path / "x", _loop())

"""LoRA fine-tuning of a generative VLM: the eval prompt, the masked targets, resume, the format learned."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")
pytest.importorskip("accelerate")

from scopebench.engine import RunConfig, run_benchmark  # noqa: E402
from scopebench.errors import MissingDependencyError, ModelSpecError  # noqa: E402
from scopebench.experiments.finetune import DataSource, EvalSpec, LoopConfig, TrainingInterrupted  # noqa: E402
from scopebench.experiments.finetune import generative as sft  # noqa: E402
from scopebench.experiments.finetune.data import Skipped, load_split  # noqa: E402
from scopebench.experiments.finetune.run import finetune_generative  # noqa: E402
from scopebench.items import Item  # noqa: E402
from scopebench.models.hf_generative import HFGenerativeBackend  # noqa: E402


def _loop(**kw: Any) -> LoopConfig:
    return LoopConfig(
        **{**dict(steps=3, batch_size=2, lr=1e-3, seed=0, checkpoint_every=2, device="cpu"), **kw}
    )


def test_training_prompt_is_what_the_backend_sends_at_evaluation(
    small_demo: Path, tiny_vlm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[str] = []
    encode = HFGenerativeBackend._encode

    def spy(self: HFGenerativeBackend, texts: list[str], images: Any, prefix: str = "") -> Any:
        sent.extend(texts)
        return encode(self, texts, images, prefix)

    monkeypatch.setattr(HFGenerativeBackend, "_encode", spy)
    config = RunConfig(
        benchmark="demo",
        data=str(small_demo),
        model=f"hf:{tiny_vlm}",
        split="test",
        limit=6,
        device="cpu",
        model_args={"max_new_tokens": 2},
    )
    run_benchmark(config, tmp_path / "run")
    backend = sft.load_backend(str(tiny_vlm), "default", "cpu")
    items = load_split(DataSource("demo", "test", str(small_demo)))[:6]
    examples = sft.sft_examples(backend, items, "answer", Skipped())
    assert len(sent) == 6 and sorted(e.prompt for e in examples) == sorted(sent)
    # The prompt holds the question and options; the target is the correct label alone.
    first = items[0]
    assert first.question in examples[0].prompt and "<|image_pad|>" in examples[0].prompt
    assert examples[0].target == "ABC"[first.answer_index]


def test_only_the_target_tokens_are_learned(small_demo: Path, tiny_vlm: Path) -> None:
    backend = sft.load_backend(str(tiny_vlm), "default", "cpu")
    item = load_split(DataSource("demo", "train", str(small_demo)))[0]
    (example,) = sft.sft_examples(backend, [item], "answer", Skipped())
    inputs = sft.encode_example(backend, example)
    prompt = backend._encode([example.prompt], [[r.load() for r in example.images]])
    n = prompt["input_ids"].shape[1]
    assert torch.equal(inputs["input_ids"][:, :n], prompt["input_ids"])
    tok = backend.processor.tokenizer
    learned = inputs["labels"][0][inputs["labels"][0] != -100].tolist()
    assert learned == [
        *tok(example.target, add_special_tokens=False)["input_ids"],
        tok.convert_tokens_to_ids("<|im_end|>"),
    ]
    assert inputs["labels"].shape == inputs["input_ids"].shape == inputs["attention_mask"].shape
    assert (inputs["labels"][0][:n] == -100).all()


def test_explanation_target_and_items_left_out(tiny_vlm: Path) -> None:
    backend = sft.load_backend(str(tiny_vlm), "default", "cpu")
    base = dict(benchmark="x", split="train", task="t", question="Which?", choices=("a", "b"))
    items = [
        Item(id="1", answer_index=1, metadata={"explanation": "The cells are round. "}, **base),  # type: ignore[arg-type]
        Item(id="2", answer_index=0, **base),  # type: ignore[arg-type]
        Item(id="3", **base),  # type: ignore[arg-type]
    ]
    skipped = Skipped()
    examples = sft.sft_examples(backend, items, "explanation+answer", skipped)
    assert [e.target for e in examples] == ["The cells are round.\nAnswer: B"]
    assert skipped.as_dict() == {"no answer key": 1, "no explanation": 1}
    assert [e.target for e in sft.sft_examples(backend, items[:2], "answer", Skipped())] == ["B", "A"]


def test_qlora_without_bitsandbytes_says_what_to_install(tiny_vlm: Path) -> None:
    import importlib.util

    backend = sft.load_backend(str(tiny_vlm), "default", "cpu")
    expected = MissingDependencyError if importlib.util.find_spec("bitsandbytes") is None else ModelSpecError
    with pytest.raises(expected):
        sft.apply_lora(backend, sft.LoraSettings(qlora=True), seed=0)


def _adapter(folder: Path) -> dict[str, Any]:
    from safetensors.torch import load_file

    return load_file(str(folder / "adapter" / "adapter_model.safetensors"))


def test_an_interrupted_lora_finetune_resumes_to_the_same_adapter(
    small_demo: Path, tiny_vlm: Path, tmp_path: Path
) -> None:
    source = DataSource("demo", "train", str(small_demo))
    straight = finetune_generative(str(tiny_vlm), tmp_path / "a", _loop(steps=4, batch_size=1), source)

    def crash(step: int, loss: float) -> None:
        if step == 3:
            raise TrainingInterrupted

    with pytest.raises(TrainingInterrupted):
        finetune_generative(
            str(tiny_vlm), tmp_path / "b", _loop(steps=4, batch_size=1), source, on_step=crash
        )
    resumed = finetune_generative(str(tiny_vlm), tmp_path / "b", _loop(steps=4, batch_size=1), source)
    assert resumed.record["training"]["resumed_from"] == 2
    a, b = _adapter(tmp_path / "a"), _adapter(tmp_path / "b")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert any("lora_B" in k and k for k in a) and any(a[k].abs().sum() > 0 for k in a if "lora_B" in k)
    rec = json.loads((tmp_path / "b" / "finetune.json").read_text())
    assert rec["hyperparameters"]["r"] == 8 and rec["hyperparameters"]["target"] == "answer"
    assert straight.spec == f"hf:{tmp_path / 'a' / 'model'}"


@pytest.mark.slow
def test_the_tiny_vlm_learns_the_answer_format(small_demo: Path, tiny_vlm: Path, tmp_path: Path) -> None:
    held_out = EvalSpec(
        DataSource("demo", "test", str(small_demo)), limit=12, model_args=(("max_new_tokens", 8),)
    )
    res = finetune_generative(
        str(tiny_vlm),
        tmp_path / "ft",
        _loop(steps=30, batch_size=8, checkpoint_every=0),
        DataSource("demo", "train", str(small_demo)),
        evaluation=held_out,
    )
    before, after = res.record["evaluation"]["before"], res.record["evaluation"]["after"]
    assert before["parse_rate"] < 0.2  # random weights write no option label
    assert after["parse_rate"] == 1.0  # every reply is now read as an option
    assert after["model"] == f"hf:{tmp_path / 'ft' / 'model'}"

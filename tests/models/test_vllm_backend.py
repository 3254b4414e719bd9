"""``vllm:``: request building (pure Python, tested everywhere), the missing-extra error, and a real
engine run where vLLM imports (it is not installed on the CPU-only development machine)."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from PIL import Image

from helpers import make_items
from scopebench.errors import MissingDependencyError, ModelSpecError
from scopebench.items import Box, ImageRef, Item
from scopebench.models import ChatMessage, ModelOptions, load_model
from scopebench.models.vllm_backend import build_messages, chat_messages
from scopebench.protocols import render_detection_prompt, render_prompt

HAS_VLLM = importlib.util.find_spec("vllm") is not None


def _item(tmp: Path, benchmark: str = "unit", n_images: int = 2, kind: str = "mcq") -> Item:
    refs = []
    for k in range(n_images):
        p = tmp / f"im{k}.png"
        Image.new("RGB", (6, 4), (50 * k, 10, 20)).save(p)
        refs.append(ImageRef(key=p.name, path=p))
    return Item(
        id=f"{benchmark}/x",
        benchmark=benchmark,
        split="test",
        task="t",
        question="Which stain is shown?",
        choices=("H&E", "DAPI", "GFP"),
        answer_index=1,
        images=tuple(refs),
        kind=kind,  # type: ignore[arg-type]
        targets=(Box(0, 0, 3, 3, "nucleus"),) if kind == "detection" else (),
    )


@pytest.mark.skipif(HAS_VLLM, reason="vLLM is installed here, so the missing-extra error cannot occur")
def test_missing_vllm_names_the_extra() -> None:
    with pytest.raises(MissingDependencyError, match=r"pip install 'scopebench\[vllm\]'") as err:
        load_model("vllm:Qwen/Qwen2-VL-2B-Instruct")
    assert "vllm: models" in str(err.value)


def test_bad_model_args_and_mode_are_refused_before_importing_vllm() -> None:
    with pytest.raises(ModelSpecError, match="unknown --model-arg max_token "):
        load_model("vllm:m", ModelOptions(extra={"max_token": 5}))
    with pytest.raises(ModelSpecError, match="max_model_len='long' must be a int"):
        load_model("vllm:m", ModelOptions(extra={"max_model_len": "long"}))
    with pytest.raises(ModelSpecError, match="generate"):
        load_model("vllm:m", ModelOptions(mode="choice-logprob"))


def test_build_messages_images_first_as_pil(tmp_path: Path) -> None:
    item = _item(tmp_path)
    shared: dict[str, Image.Image] = {}
    req = build_messages(item, "default", images=shared)
    assert req.protocol == "default" and req.n_images == 2 and req.labels == "letters"
    [msg] = req.messages
    assert msg["role"] == "user"
    parts = msg["content"]
    assert [p["type"] for p in parts] == ["image_pil", "image_pil", "text"]
    assert parts[2]["text"] == render_prompt(item).text
    assert isinstance(parts[0]["image_pil"], Image.Image)
    assert parts[1]["image_pil"].getpixel((0, 0)) == (50, 10, 20) and parts[1]["image_pil"].size == (6, 4)
    # Images are decoded once per batch: a second item showing the same files reuses the objects.
    again = build_messages(item, "default", images=shared)
    assert again.messages[0]["content"][0]["image_pil"] is parts[0]["image_pil"]
    assert sorted(shared) == ["im0.png", "im1.png"]


def test_build_messages_no_image_system_detection_and_numbers(tmp_path: Path) -> None:
    item = _item(tmp_path)
    req = build_messages(item, no_image=True)
    assert req.messages == [{"role": "user", "content": render_prompt(item, no_image=True).text}]
    assert req.n_images == 0
    # SPUR's owner protocol has a system message, sent first.
    spur = build_messages(_item(tmp_path, "spur", n_images=1), "owner")
    assert spur.protocol == "spur-owner"
    assert [m["role"] for m in spur.messages] == ["system", "user"]
    assert spur.messages[0]["content"].startswith(" You are a helpful assistant")
    # MicroVQA's owner protocol numbers the options.
    assert build_messages(_item(tmp_path, "microvqa", n_images=1), "owner").labels == "numbers"
    det = build_messages(_item(tmp_path, n_images=2, kind="detection"))
    assert det.protocol == "detection-json" and det.n_images == 1
    det_parts = det.messages[0]["content"]
    assert [p["type"] for p in det_parts] == ["image_pil", "text"]
    assert det_parts[1]["text"] == render_detection_prompt(_item(tmp_path, kind="detection"), "json")


def test_chat_messages_multi_turn(tmp_path: Path) -> None:
    ref = _item(tmp_path, n_images=1).images
    conv = [
        ChatMessage("system", "be brief"),
        ChatMessage("user", "first", ref),
        ChatMessage("assistant", "sub-questions"),
        ChatMessage("user", "now answer"),
    ]
    msgs = chat_messages(conv)
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user"]
    assert msgs[0]["content"] == "be brief" and msgs[2]["content"] == "sub-questions"
    assert [p["type"] for p in msgs[1]["content"]] == ["image_pil", "text"]
    assert msgs[1]["content"][1]["text"] == "first"


def test_unreadable_image_raises_image_load_error(tmp_path: Path) -> None:
    from scopebench.errors import ImageLoadError

    bad = tmp_path / "bad.png"
    bad.write_bytes(b"nope")
    with pytest.raises(ImageLoadError, match="cannot decode image"):
        chat_messages([ChatMessage("user", "q", (ImageRef(key="bad", path=bad),))])


@pytest.mark.skipif(
    not HAS_VLLM, reason="vLLM is not installed (optional extra scopebench[vllm]; needs a GPU build)"
)
def test_real_vllm_engine_on_a_tiny_text_model(tmp_path: Path) -> None:  # pragma: no cover - GPU machines
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from scopebench.testing.tiny import build_tokenizer

    tok = build_tokenizer()
    tok.chat_template = (
        "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}assistant:{% endif %}"
    )
    cfg = LlamaConfig(
        vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=512,
        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
    )  # fmt: skip
    torch.manual_seed(0)
    LlamaForCausalLM(cfg).save_pretrained(tmp_path / "tiny")
    tok.save_pretrained(tmp_path / "tiny")
    backend = load_model(
        f"vllm:{tmp_path / 'tiny'}",
        ModelOptions(
            no_image=True, extra={"max_tokens": 4, "max_model_len": 512, "gpu_memory_utilization": 0.2}
        ),
    )
    items = make_items(3)
    responses = backend.predict(items)
    assert [r.item_id for r in responses] == [it.id for it in items]
    assert all(r.status == "ok" and isinstance(r.text, str) for r in responses)
    assert all(r.extra["usage"]["completion_tokens"] <= 4 for r in responses)
    # Greedy decoding is deterministic: the same batch gives the same texts.
    assert [r.text for r in backend.predict(items)] == [r.text for r in responses]
    assert all(r.finish_reason in ("stop", "length") for r in responses)
    backend.close()
    # --answer-format constrained: guided choice makes every reply exactly one option label.
    constrained = load_model(
        f"vllm:{tmp_path / 'tiny'}",
        ModelOptions(
            no_image=True,
            answer_format="constrained",
            extra={"max_tokens": 4, "max_model_len": 512, "gpu_memory_utilization": 0.2},
        ),
    )
    assert {r.text for r in constrained.predict(items)} <= {"A", "B", "C", "D"}
    assert constrained.identity()["answer_format"] == "constrained"
    constrained.close()


def _stand_in_vllm(monkeypatch: pytest.MonkeyPatch, *, structured_outputs: bool) -> list[Any]:
    """A stand-in for the ``vllm`` package with the names its documentation gives: ``LLM.chat``,
    ``SamplingParams(structured_outputs=StructuredOutputsParams(choice=…))`` (vLLM ≥ 0.11) or, before,
    ``SamplingParams(guided_decoding=GuidedDecodingParams(choice=…))``. It answers a constrained
    request with its last allowed string and records every ``SamplingParams`` it is sent."""
    sent: list[Any] = []

    class SamplingParams:
        def __init__(self, **kwargs: Any) -> None:
            self.kwargs = kwargs

    @dataclass
    class ChoiceParams:
        choice: list[str] | None = None

    class LLM:
        def __init__(self, model: str, **kwargs: Any) -> None:
            self.model = model

        def chat(self, conversations: list[Any], sampling_params: list[Any], use_tqdm: bool) -> list[Any]:
            sent.extend(sampling_params)
            outputs = []
            for params in sampling_params:
                guide = params.kwargs.get("structured_outputs") or params.kwargs.get("guided_decoding")
                text = guide.choice[-1] if guide is not None else "I would say B"
                first = SimpleNamespace(text=text, finish_reason="stop", token_ids=[7])
                outputs.append(SimpleNamespace(outputs=[first], prompt_token_ids=[1, 2, 3]))
            return outputs

    package = types.ModuleType("vllm")
    package.__spec__ = importlib.machinery.ModuleSpec("vllm", None)
    sampling = types.ModuleType("vllm.sampling_params")
    package.LLM, package.SamplingParams, sampling.SamplingParams = LLM, SamplingParams, SamplingParams  # type: ignore[attr-defined]
    name = "StructuredOutputsParams" if structured_outputs else "GuidedDecodingParams"
    setattr(sampling, name, ChoiceParams)
    package.sampling_params = sampling  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "vllm", package)
    monkeypatch.setitem(sys.modules, "vllm.sampling_params", sampling)
    return sent


@pytest.mark.parametrize("structured_outputs", [True, False], ids=["vllm>=0.11", "vllm<0.11"])
def test_constrained_asks_vllm_for_a_choice_of_the_labels(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, structured_outputs: bool
) -> None:
    """The request vLLM gets: one choice among the item's option labels for a multiple-choice item
    under --answer-format constrained, none for a detection item or a free-form run. Catches the
    labels not reaching vLLM, the wrong parameter name for the installed vLLM, and a free-form run
    constrained by mistake (vLLM itself is not installable on a CPU-only machine: it pins its torch)."""
    sent = _stand_in_vllm(monkeypatch, structured_outputs=structured_outputs)
    key = "structured_outputs" if structured_outputs else "guided_decoding"
    mcq, detection = _item(tmp_path), _item(tmp_path, kind="detection")
    constrained = load_model("vllm:some/model", ModelOptions(answer_format="constrained"))
    replies = constrained.predict([mcq, detection])
    assert [p.kwargs.get(key) for p in sent] == [type(sent[0].kwargs[key])(choice=["A", "B", "C"]), None]
    assert replies[0].text == "C" and replies[0].finish_reason == "stop"
    assert constrained.identity()["answer_format"] == "constrained"
    sent.clear()
    free = load_model("vllm:some/model", ModelOptions())
    assert free.predict([mcq])[0].text == "I would say B"
    assert [sorted(p.kwargs) for p in sent] == [["max_tokens", "seed", "temperature"]]
    assert "answer_format" not in free.identity()

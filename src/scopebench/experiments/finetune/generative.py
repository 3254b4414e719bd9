"""LoRA (and QLoRA) supervised fine-tuning of a generative VLM (the ``hf:`` backend's models).

One example per answered MCQ item: the *prompt* is exactly what the ``hf:`` backend sends at
evaluation — :func:`~scopebench.protocols.render_prompt` under the chosen protocol, laid out by the
backend's own chat-template code (:func:`eval_prompt` calls the backend, it copies nothing), and
tokenised by the backend's own encoder with the item's images — and the *target* the model learns
after it is, by ``--target``:

* ``answer`` — the correct option's label (``B``, or MicroVQA's ``2`` under its owner protocol),
  then the end-of-turn token (PathMMU's "w/ A");
* ``explanation+answer`` — the item's ``explanation`` field (PathMMU has one), a newline and
  ``Answer: B``, then the end-of-turn token (PathMMU's "w/ A&E"). Items without an explanation are
  left out, and counted.

The loss is the language-modelling loss on the target tokens only (prompt tokens are masked with
-100). LoRA adapters (peft) go on every linear layer by default (``all-linear``) or on the named
modules. QLoRA loads the base in 4-bit NF4 through bitsandbytes (CUDA only). The adapter is saved
in ``OUT/adapter`` and merged into a full copy of the base in ``OUT/model``, which loads as
``hf:OUT/model``.
"""

from __future__ import annotations

import importlib.util
import logging
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from scopebench.errors import MissingDependencyError, ModelSpecError, UsageError
from scopebench.experiments.finetune.data import Skipped
from scopebench.items import ImageRef, Item
from scopebench.models.base import ModelOptions
from scopebench.models.hf_generative import HFGenerativeBackend, _Job, _Turn
from scopebench.protocols import render_prompt

__all__ = [
    "TARGETS",
    "LoraSettings",
    "SFTExample",
    "apply_lora",
    "eval_prompt",
    "make_sft_loss_fn",
    "save_merged",
    "sft_examples",
]

log = logging.getLogger(__name__)

Target = Literal["answer", "explanation+answer"]
TARGETS: tuple[Target, ...] = ("answer", "explanation+answer")


@dataclass(frozen=True)
class LoraSettings:
    """LoRA hyper-parameters (recorded in finetune.json).

    Attributes:
        r: Rank of the adapters.
        alpha: LoRA scaling numerator (the update is scaled by ``alpha / r``).
        dropout: Dropout on the adapters' input.
        target_modules: ``all-linear`` or comma-separated module names (``q_proj,v_proj``).
        qlora: Load the base in 4-bit (bitsandbytes, CUDA) and train adapters on top.
    """

    r: int = 8
    alpha: int = 16
    dropout: float = 0.0
    target_modules: str = "all-linear"
    qlora: bool = False


@dataclass(frozen=True)
class SFTExample:
    """One training example: the eval-time prompt (model format), its images and the target text."""

    id: str
    prompt: str
    images: tuple[ImageRef, ...]
    target: str


def eval_prompt(
    backend: HFGenerativeBackend, item: Item
) -> tuple[str, tuple[ImageRef, ...], tuple[str, ...]]:
    """The prompt ``backend`` sends for ``item`` in generate mode: text, images, option labels.

    The same calls the backend's ``predict`` makes: ``render_prompt`` under the backend's protocol
    and ``no_image`` option, a system turn when the protocol has one, then the backend's chat
    template layout (``_render``). tests/experiments/finetune checks the result against the text the
    backend actually encodes during an evaluation.
    """
    backend._ensure_loaded()
    prompt = render_prompt(item, backend.options.protocol, no_image=backend.options.no_image)
    turns = [_Turn("system", prompt.system)] if prompt.system else []
    turns.append(_Turn("user", prompt.text, prompt.images))
    text = backend._render(_Job(0, turns, option_labels=prompt.option_labels, protocol=prompt.protocol))
    return text, tuple(prompt.images), tuple(prompt.option_labels)


def target_text(item: Item, label: str, target: Target) -> str | None:
    """The text the model learns for ``item`` (``None`` when the item lacks an explanation)."""
    if target == "answer":
        return label
    explanation = str(item.metadata.get("explanation") or "").strip()
    if not explanation:
        return None
    return f"{explanation}\nAnswer: {label}"


def sft_examples(
    backend: HFGenerativeBackend, items: Sequence[Item], target: Target, skipped: Skipped
) -> list[SFTExample]:
    """Training examples of ``items`` (see the module docstring); left-out items are counted."""
    if target not in TARGETS:
        raise UsageError(f"--target is one of {', '.join(TARGETS)}, not {target!r}")
    out = []
    for it in items:
        if it.kind != "mcq" or it.answer_index is None:
            skipped.add("no answer key")
            continue
        text, images, labels = eval_prompt(backend, it)
        goal = target_text(it, labels[it.answer_index], target)
        if goal is None:
            skipped.add("no explanation")
            continue
        out.append(SFTExample(it.id, text, images, goal))
    return out


def load_backend(base: str, protocol: str, device: str, dtype: str = "auto") -> HFGenerativeBackend:
    """The ``hf:`` backend of the base model (its processor, prompt layout and encoder)."""
    spec = base if base.startswith("hf:") else f"hf:{base}"
    options = ModelOptions(device=device, protocol=protocol, mode="generate", extra={"dtype": dtype})
    return HFGenerativeBackend(spec, options)


def apply_lora(backend: HFGenerativeBackend, lora: LoraSettings, seed: int) -> Any:
    """Wrap the backend's model in LoRA adapters (seeded initialisation); returns the peft model.

    Raises:
        MissingDependencyError: Without peft, or with ``qlora`` but no bitsandbytes.
        ModelSpecError: With ``qlora`` on a machine without CUDA.
    """
    import torch

    try:
        from peft import LoraConfig, get_peft_model
    except ImportError as exc:
        raise MissingDependencyError("peft", "finetune", "LoRA fine-tuning") from exc
    if lora.qlora:
        _load_4bit(backend)
    else:
        backend._ensure_loaded()
    modules: str | list[str] = (
        "all-linear"
        if lora.target_modules == "all-linear"
        else [m.strip() for m in lora.target_modules.split(",")]
    )
    config = LoraConfig(
        r=lora.r, lora_alpha=lora.alpha, lora_dropout=lora.dropout, target_modules=modules, bias="none"
    )
    torch.manual_seed(seed)
    try:
        model = get_peft_model(backend.model, config)
    except ValueError as exc:
        raise ModelSpecError(f"cannot put LoRA adapters on {lora.target_modules!r}: {exc}") from exc
    return model


def _load_4bit(backend: HFGenerativeBackend) -> None:
    """Load the base in 4-bit NF4 (QLoRA) into the backend instead of its usual dtype."""
    import torch

    if importlib.util.find_spec("bitsandbytes") is None:
        raise MissingDependencyError("bitsandbytes", "finetune", "QLoRA (--qlora)")
    if not torch.cuda.is_available():
        raise ModelSpecError(
            "QLoRA (--qlora) needs a CUDA GPU (bitsandbytes 4-bit); drop --qlora on this machine"
        )
    from peft import prepare_model_for_kbit_training
    from transformers import AutoModelForImageTextToText, BitsAndBytesConfig

    quant = BitsAndBytesConfig(
        load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=torch.bfloat16
    )
    backend._ensure_loaded()  # the processor and padding settings, as for evaluation
    model = AutoModelForImageTextToText.from_pretrained(backend.model_id, quantization_config=quant)
    backend.model = prepare_model_for_kbit_training(model)


def encode_example(backend: HFGenerativeBackend, example: SFTExample) -> dict[str, Any]:
    """Model inputs of one example: the backend's encoding of the prompt, then the target tokens.

    Labels are -100 over the prompt, so only the target is learned. Per-token side inputs the
    processor returns (``token_type_ids``: 1 on PaliGemma's answer; ``mm_token_type_ids``: 0 on
    text) are extended over the target.
    """
    import torch

    pixels = [r.load() for r in example.images]
    enc = backend._encode([example.prompt], [pixels] if pixels else None)
    tok = backend.processor.tokenizer
    ids = tok(example.target, add_special_tokens=False)["input_ids"]
    eos = backend.model.generation_config.eos_token_id
    eos_id = eos[0] if isinstance(eos, list) else eos
    if eos_id is None:
        eos_id = tok.eos_token_id
    target = torch.tensor([[*ids, eos_id]], dtype=enc["input_ids"].dtype, device=enc["input_ids"].device)
    n_prompt = enc["input_ids"].shape[1]
    inputs = dict(enc)
    for key, value in enc.items():
        if hasattr(value, "shape") and value.dim() == 2 and value.shape[1] == n_prompt and key != "input_ids":
            fill = 1 if key in ("attention_mask", "token_type_ids") else 0
            inputs[key] = torch.cat([value, torch.full_like(target, fill)], dim=1)
    inputs["input_ids"] = torch.cat([enc["input_ids"], target], dim=1)
    inputs["labels"] = torch.cat([torch.full_like(enc["input_ids"], -100), target], dim=1)
    return inputs


def make_sft_loss_fn(backend: HFGenerativeBackend, examples: Sequence[SFTExample]) -> Any:
    """``loss_fn(model, indices)``: the mean over the batch of each example's target-token loss."""

    def loss_fn(model: Any, idx: list[int]) -> Any:
        total = None
        for i in idx:
            loss = model(**encode_example(backend, examples[i])).loss
            total = loss if total is None else total + loss
        assert total is not None  # train_loop never hands an empty batch
        return total / len(idx)

    return loss_fn


_WEIGHTS = (".safetensors", ".bin", ".pt", ".pth")


def save_merged(adapter: Path, backend: HFGenerativeBackend, model_dir: Path) -> Path:
    """Merge a saved adapter into a fresh copy of the base and save it to ``model_dir``.

    The base is loaded again in its saved dtype (so a QLoRA adapter merges into full-precision
    weights, not 4-bit ones), the adapter applied and merged. The folder takes the base folder's
    processor, tokenizer and chat-template files as they are (it loads exactly as the base does),
    then the merged config and weights. Loads as ``hf:model_dir``.
    """
    from peft import PeftModel
    from transformers import AutoModelForImageTextToText

    shutil.rmtree(model_dir, ignore_errors=True)
    model_dir.mkdir(parents=True)
    base = Path(backend.model_id)
    if base.is_dir():
        for f in base.iterdir():
            if f.is_file() and not f.name.endswith(_WEIGHTS) and not f.name.endswith(".index.json"):
                shutil.copy2(f, model_dir / f.name)
    else:
        backend.processor.save_pretrained(model_dir)
    fresh = AutoModelForImageTextToText.from_pretrained(
        backend.model_id, dtype="auto", revision=backend.revision
    )
    merged = PeftModel.from_pretrained(fresh, adapter).merge_and_unload()
    merged.save_pretrained(model_dir)
    return model_dir

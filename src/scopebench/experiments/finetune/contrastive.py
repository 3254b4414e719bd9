"""Contrastive fine-tuning of a CLIP-family model (transformers ``CLIPModel``, the ``clip:`` format).

The loss is CLIP's symmetric contrastive loss: for a batch of ``n`` image and caption embeddings
(L2-normalised), ``logits = exp(min(logit_scale, ln 100)) · I Tᵀ`` and the loss is the mean of the
cross-entropy of each image over the captions and of each caption over the images. When a batch holds the same
caption twice (benchmark captions repeat: "A cell with irregular contours."), the one-hot target
would call a true pair a negative; the target of a row is then spread uniformly over every column
with the same caption. With distinct captions this is exactly the standard loss (tested against a
hand-computed value).

The result is a ``save_pretrained`` folder (``OUT/model``) that loads as ``clip:OUT/model`` and is
the ``TUNED`` argument of ``scopebench merge --sweep BASE OUT/model``.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from scopebench.errors import MissingDependencyError, ModelError
from scopebench.experiments.finetune.data import CaptionPair

__all__ = ["clip_loss", "load_clip", "make_clip_loss_fn", "save_clip"]

log = logging.getLogger(__name__)


def clip_loss(image_emb: Any, text_emb: Any, logit_scale: Any, captions: Sequence[str]) -> Any:
    """The symmetric contrastive loss of a batch (see the module docstring).

    Args:
        image_emb: ``(n, d)`` image embeddings (normalised here).
        text_emb: ``(n, d)`` caption embeddings (normalised here).
        logit_scale: The model's log temperature (a scalar tensor; clamped at ``ln 100``, then ``exp``).
        captions: The ``n`` caption texts (equal texts are positives of each other).

    Returns:
        A scalar tensor.
    """
    import torch

    img = image_emb / image_emb.norm(dim=-1, keepdim=True).clamp_min(1e-12)
    txt = text_emb / text_emb.norm(dim=-1, keepdim=True).clamp_min(1e-12)
    # CLIP clamps its temperature at 100 (OpenAI and OpenCLIP training code).
    logits = logit_scale.clamp(max=math.log(100)).exp() * img @ txt.T
    same = torch.tensor(
        [[a == b for b in captions] for a in captions], dtype=logits.dtype, device=logits.device
    )
    target = same / same.sum(dim=1, keepdim=True)
    loss_i = torch.sum(-target * torch.log_softmax(logits, dim=1), dim=1).mean()
    loss_t = torch.sum(-target * torch.log_softmax(logits.T, dim=1), dim=1).mean()
    return (loss_i + loss_t) / 2


def load_clip(base: str) -> tuple[Any, Any]:
    """Load a transformers contrastive model and its processor from a folder or hub id.

    Raises:
        ModelError: When ``base`` is not a contrastive image–text model.
    """
    try:
        from transformers import AutoModel, AutoProcessor
    except ImportError as exc:
        raise MissingDependencyError("transformers", "finetune", "contrastive fine-tuning") from exc
    try:
        model = AutoModel.from_pretrained(base)
        processor = AutoProcessor.from_pretrained(base)
    except (OSError, ValueError) as exc:
        raise ModelError(f"cannot load {base!r} as a contrastive model: {exc}") from exc
    if not hasattr(model, "get_image_features") or not hasattr(model, "logit_scale"):
        raise ModelError(f"{base!r} is not a CLIP-family model (no image features or logit scale)")
    if getattr(model, "logit_bias", None) is not None:
        raise ModelError(
            f"{base!r} is a sigmoid-loss model (SigLIP); contrastive fine-tuning here trains CLIP's "
            "softmax loss only: use a CLIP-family model"
        )
    return model, processor


def _features(out: Any) -> Any:
    # transformers v5 returns a model output whose pooler_output is the projection; v4 the tensor.
    return out.pooler_output if hasattr(out, "pooler_output") else out


def make_clip_loss_fn(
    pairs: Sequence[CaptionPair], processor: Any, max_length: int, cache_images: int = 4096
) -> Any:
    """``loss_fn(model, indices)`` for :func:`~scopebench.experiments.finetune.loop.train_loop`.

    Images are decoded and preprocessed when a batch first needs them; the pixel tensors of up to
    ``cache_images`` images are kept for later epochs (preprocessing is deterministic, so a cached
    tensor equals a fresh one). Captions are tokenised as the ``clip:`` backend tokenises them
    (padding to the longest, truncated to the context length).
    """
    import torch

    cache: dict[str, Any] = {}

    def pixel(pair: CaptionPair) -> Any:
        got = cache.get(pair.image.key)
        if got is None:
            got = processor(images=[pair.image.load()], return_tensors="pt")["pixel_values"][0]
            if len(cache) < cache_images:
                cache[pair.image.key] = got
        return got

    def loss_fn(model: Any, idx: list[int]) -> Any:
        batch = [pairs[i] for i in idx]
        device = next(model.parameters()).device
        pixels = torch.stack([pixel(p) for p in batch])
        text = processor(
            text=[p.caption for p in batch],
            padding=True,
            truncation=True,
            max_length=max_length,
            return_tensors="pt",
        )
        img = _features(model.get_image_features(pixel_values=pixels.to(device)))
        txt = _features(
            model.get_text_features(
                input_ids=text["input_ids"].to(device), attention_mask=text["attention_mask"].to(device)
            )
        )
        return clip_loss(img, txt, model.logit_scale, [p.caption for p in batch])

    return loss_fn


def save_clip(model: Any, processor: Any, out: Path) -> Path:
    """Save the fine-tuned model and its processor (a folder ``clip:`` loads)."""
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    processor.save_pretrained(out)
    return out

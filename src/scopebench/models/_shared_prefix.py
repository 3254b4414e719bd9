"""Shared-prefix scoring: questions about the same image reuse one forward pass over the image.

μ-Bench asks 5–6 questions per image. Under a chat template those prompts share a long prefix —
the template header and every image token (hundreds for a real Qwen2-VL image) — and differ only
in the question text. For ``choice-logprob`` the prefix is run once, with the pixels, and its
key/value cache is repeated for each question; only the question tokens are run per item, in one
right-padded batch (so every real token keeps its position; the padding sits after it, where a
causal model cannot see it). The next-token log-probabilities equal those of full, separate
forward passes up to float rounding (the tests check it).

Used for decoder-only layouts only: PaliGemma attends bidirectionally over its whole prompt (the
image tokens see the question), so its prefix cannot be computed without the question.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

__all__ = ["SHAREABLE_FAMILIES", "shared_prefix_logprobs"]

#: Families whose prompt prefix can be computed once and reused (causal attention throughout).
SHAREABLE_FAMILIES = frozenset({"qwen2-vl", "qwen2.5-vl", "llava", "idefics3"})


def _common_prefix(rows: Sequence[list[int]]) -> int:
    n = min(len(r) for r in rows)
    for k in range(n):
        tok = rows[0][k]
        if any(r[k] != tok for r in rows[1:]):
            return k
    return n


def shared_prefix_logprobs(
    model: Any,
    processor: Any,
    texts: Sequence[str],
    images: list[Any],
    *,
    family: str,
    device: str,
    dtype: Any,
    add_special_tokens: bool,
) -> tuple[Any, int] | None:
    """Next-token log-probabilities of ``texts``, which all show the same ``images``.

    Args:
        model: The loaded image-text-to-text model.
        processor: Its processor (tokenizer padding side is ignored: suffixes are padded right).
        texts: Rendered prompts (chat template applied, answer prefix appended).
        images: The images every prompt shows, in order.
        family: The model's family (see :data:`SHAREABLE_FAMILIES`).
        device: Torch device of the model.
        dtype: Floating dtype of the model.
        add_special_tokens: Whether the tokenizer adds its special tokens (as in the batch path).

    Returns:
        ``(log_probs of shape (len(texts), vocab), prefix length in tokens)``, or ``None`` when the
        prompts share no prefix that holds every image token (the caller then runs them in full).
    """
    import torch

    tok = processor.tokenizer
    # Placeholders are not expanded here; the expansion happens inside the shared prefix, so the
    # tails (the per-question tokens) are the same with or without it — checked below.
    rows = [tok.encode(t, add_special_tokens=add_special_tokens) for t in texts]
    common = _common_prefix(rows)
    common = min(common, min(len(r) for r in rows) - 1)  # every prompt keeps ≥1 token of its own
    image_token = tok.convert_tokens_to_ids(getattr(processor, "image_token", "<image>"))
    last_image = max((k for k, t in enumerate(rows[0]) if t == image_token), default=-1)
    if common <= 0 or last_image < 0 or last_image >= common:
        return None  # no image, or an image placeholder lies in the varying part
    full = processor(
        text=[texts[0]], images=[images], return_tensors="pt", add_special_tokens=add_special_tokens
    )
    full.pop("labels", None)
    ids0 = full["input_ids"][0].tolist()
    tail0 = rows[0][common:]
    if ids0[len(ids0) - len(tail0) :] != tail0:
        return None
    n_prefix = len(ids0) - len(tail0)
    prefix = {}
    for key, value in full.items():
        if not hasattr(value, "to"):
            continue
        if key in ("input_ids", "attention_mask", "mm_token_type_ids", "token_type_ids"):
            value = value[:, :n_prefix]
        value = value.to(device)
        prefix[key] = value.to(dtype) if value.is_floating_point() else value
    tails = [r[common:] for r in rows]
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    rows_logits = _suffix_logits(model, prefix, tails, n_prefix, pad, family=family, device=device)
    return torch.log_softmax(rows_logits.float(), dim=-1).cpu(), n_prefix


def _suffix_logits(
    model: Any,
    prefix: dict[str, Any],
    tails: list[list[int]],
    n_prefix: int,
    pad: int,
    *,
    family: str,
    device: str,
) -> Any:
    """One pass over the shared prefix, its cache repeated, then every tail: each row's last logits."""
    import torch

    width = max(len(t) for t in tails)
    suffix = torch.tensor([t + [pad] * (width - len(t)) for t in tails], device=device)
    suffix_mask = torch.tensor([[1] * len(t) + [0] * (width - len(t)) for t in tails], device=device)
    k = len(tails)
    with torch.inference_mode():
        out = model(**prefix, use_cache=True, logits_to_keep=1)
        # transformers 5.24 renamed past_key_values to cache (argument and output; the old argument
        # warns and goes in 5.40); earlier releases know only past_key_values.
        cache_arg = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
        cache = out.get("cache") if out.get("cache") is not None else out.get("past_key_values")
        cache.batch_repeat_interleave(k)
        positions = torch.arange(n_prefix, n_prefix + width, device=device).expand(k, width)
        if family in ("qwen2-vl", "qwen2.5-vl"):
            # M-RoPE: text after the image continues from the image's largest position, which the
            # prefix pass stored as rope_deltas (position = index + delta for text tokens).
            delta = model.model.rope_deltas.to(device)
            positions = (positions + delta.view(-1, 1)).unsqueeze(0).expand(3, k, width)
        mask = torch.cat([torch.ones(k, n_prefix, dtype=suffix_mask.dtype, device=device), suffix_mask], 1)
        # Logits only at the positions some row ends on: with a real vocabulary (150k entries) the
        # output layer would otherwise cost more than the whole suffix pass.
        ends = sorted({len(t) - 1 for t in tails})
        logits = model(
            input_ids=suffix,
            attention_mask=mask,
            position_ids=positions,
            use_cache=True,
            **{cache_arg: cache},
            logits_to_keep=torch.tensor(ends, device=device),
        ).logits
    column = torch.tensor([ends.index(len(t) - 1) for t in tails], device=device)
    return logits[torch.arange(k, device=device), column]

"""``nsp:MODEL`` — question–option matching with BERT next-sentence prediction (text only).

PathMMU's question–option matching analysis (Fig. 5 right) asks whether an option can be picked by
how well it *continues* the question, without the image: each option is scored by
``BertForNextSentencePrediction`` as the second sentence of the pair ``[CLS] question [SEP] option
[SEP]``, and the option with the highest probability of *IsNext* (label 0 of BERT's NSP head) wins.

* ``Response.scores`` are the IsNext probabilities normalised to sum to 1 over the item's options
  (their argmax is the raw argmax); the raw probabilities are kept in ``extra["isnext"]``.
* The question side is the item's context (if any) followed by its question; a pair longer than
  the model's limit is cut token by token from the longer of the two sides (transformers'
  ``longest_first``), which in practice is the question: the option is kept whole.
* The config is read when the backend is built; the weights load on the first :meth:`predict`, so
  resuming a finished run does not pay for them.
* A checkpoint without a trained NSP head (e.g. a masked-LM-only export) would be completed by
  transformers with random weights and give random scores: that is refused with a
  :class:`~scopebench.errors.ModelError`.

Examples: ``nsp:bert-large-uncased``, ``nsp:microsoft/BiomedNLP-BiomedBERT-large-uncased-abstract``,
or ``nsp:/path/to/saved/folder`` (``save_pretrained`` layout with its tokenizer).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from scopebench.errors import MissingDependencyError, ModelError, reason
from scopebench.items import Item
from scopebench.models.base import Backend, ModelOptions, Response
from scopebench.models.contrastive import resolve_device, weights_digest
from scopebench.models.cpu_memory import keep_freed_memory, release_freed_memory
from scopebench.models.registry import ModelSpec, parse_spec
from scopebench.protocols import Request

__all__ = ["ISNEXT_LABEL", "NSPBackend", "question_text"]

log = logging.getLogger(__name__)

#: Index of "IsNext" in the logits of BERT's next-sentence-prediction head (1 is "NotNext").
ISNEXT_LABEL = 0


def question_text(item: Item) -> str:
    """The first sentence of each pair: the item's context (if any), then its question."""
    return f"{item.context}\n{item.question}" if item.context else item.question


class NSPBackend(Backend):
    """Score each option as the continuation of the question with a BERT NSP head."""

    model_args = frozenset({"pair_batch_size"})

    mode = "nsp-matching"
    needs_images = False
    default_batch_size = 32

    takes_model_spec = True

    def __init__(self, spec: str | ModelSpec, options: ModelOptions) -> None:
        super().__init__(spec, options)
        self.model_id = parse_spec(spec).target
        try:
            import torch
            from transformers import AutoConfig
        except ImportError as exc:
            raise MissingDependencyError("transformers", "hf", "nsp: models") from exc

        self._torch = torch
        self.device = resolve_device(options.device)
        self.dtype = torch.float32 if self.device == "cpu" else torch.float16
        try:
            self.config = AutoConfig.from_pretrained(self.model_id)
        except (OSError, ValueError) as exc:
            raise ModelError(
                f"cannot load NSP model {self.model_id!r}: {reason(exc)}. Give a local folder "
                "(save_pretrained layout with its tokenizer) or a hub id reachable from this machine."
            ) from exc
        if getattr(self.config, "model_type", None) != "bert":
            raise ModelError(
                f"{self.model_id!r} is a {getattr(self.config, 'model_type', '?')!r} model; nsp: needs a "
                "BERT checkpoint with a next-sentence-prediction head (e.g. bert-large-uncased)"
            )
        # Pairs per forward pass (every option of every item in a batch is one pair).
        self.pair_batch = int(options.extra.get("pair_batch_size", 2 * (options.batch_size or 32)))
        self.max_length = int(getattr(self.config, "max_position_embeddings", 512) or 512)
        self.model: Any = None
        self.tokenizer: Any = None

    def _ensure_loaded(self) -> None:
        if self.model is not None:
            return
        from transformers import AutoTokenizer, BertForNextSentencePrediction

        keep_freed_memory(self.device)
        try:
            loaded: Any = BertForNextSentencePrediction.from_pretrained(
                self.model_id, dtype=self.dtype, output_loading_info=True
            )
            model, info = loaded
            self.tokenizer = AutoTokenizer.from_pretrained(self.model_id)
        except OSError as exc:
            raise ModelError(f"cannot load NSP model {self.model_id!r}: {exc}") from exc
        missing = [k for k in info.get("missing_keys", ()) if "seq_relationship" in k]
        if missing:
            raise ModelError(
                f"{self.model_id!r} has no trained next-sentence-prediction head ({', '.join(missing)} "
                "missing from the checkpoint); its scores would be random. Use a checkpoint saved "
                "with BertForPreTraining or BertForNextSentencePrediction (e.g. bert-large-uncased)."
            )
        self.model = model.to(self.device).eval()
        tok_max = int(getattr(self.tokenizer, "model_max_length", self.max_length) or self.max_length)
        self.max_length = min(self.max_length, tok_max)

    def _isnext(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """P(IsNext) of each ``(question, option)`` pair, in chunks of :attr:`pair_batch`."""
        torch = self._torch
        out: list[float] = []
        for start in range(0, len(pairs), self.pair_batch):
            chunk = pairs[start : start + self.pair_batch]
            enc = self.tokenizer(
                [q for q, _ in chunk],
                [o for _, o in chunk],
                padding=True,
                truncation="longest_first",
                max_length=self.max_length,
                return_tensors="pt",
            )
            enc = {k: v.to(self.device) for k, v in enc.items()}
            with torch.inference_mode():
                logits = self.model(**enc).logits.float()
            out += logits.softmax(-1)[:, ISNEXT_LABEL].cpu().tolist()
        return out

    def answer(self, requests: Sequence[Request]) -> list[Response]:
        """Score every option of every item (all pairs of the batch go through the model together)."""
        items = [r.item for r in requests]
        self._ensure_loaded()
        pairs: list[tuple[str, str]] = []
        spans: dict[str, tuple[int, int]] = {}
        for it in items:
            if it.choices:
                q = question_text(it)
                spans[it.id] = (len(pairs), len(pairs) + len(it.choices))
                pairs += [(q, c) for c in it.choices]
        probs = self._isnext(pairs)
        out = []
        for it in items:
            if it.id not in spans:
                out.append(Response(it.id, status="error", error="item has no options"))
                continue
            lo, hi = spans[it.id]
            raw = probs[lo:hi]
            total = sum(raw)
            # Every IsNext probability can underflow to 0 in float16; then no option is preferred.
            scores = [p / total for p in raw] if total > 0 else [1.0 / len(raw)] * len(raw)
            out.append(Response(it.id, scores=scores, extra={"isnext": [round(p, 8) for p in raw]}))
        return out

    def identity(self) -> dict[str, Any]:
        """Spec, model class, revision or weight hash, dtype and device."""
        local = Path(self.model_id).is_dir()
        return {
            "spec": self.spec,
            "mode": self.mode,
            "model_class": "BertForNextSentencePrediction",
            "revision": None if local else getattr(self.config, "_commit_hash", None),
            "weights_sha256": weights_digest(Path(self.model_id)) if local else None,
            "dtype": str(self.dtype).removeprefix("torch."),
            "device": self.device,
        }

    def close(self) -> None:
        """Drop the model (on a CPU, giving the heap's free memory back)."""
        self.model = None
        release_freed_memory()

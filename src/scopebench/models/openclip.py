"""``openclip:MODEL`` — open_clip models (optional extra ``scopebench[openclip]``).

Covers OpenCLIP, BiomedCLIP (``openclip:hf-hub:microsoft/BiomedCLIP-PubMedBERT_256-vit_base_patch16_224``,
256-token context), QuiltNet (``openclip:hf-hub:wisdomik/QuiltNet-B-32``) and CONCH-style local
checkpoints (``openclip:ARCH@/path/to/weights.pt``). Scoring and caching are shared with
:class:`~scopebench.models.contrastive.ContrastiveBackend`.

open_clip needs torchvision, which must not be installed next to the CPU build of torch on our
machines; the import is therefore lazy and a missing install names the extra.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from scopebench.errors import MissingDependencyError, ModelError
from scopebench.models.base import ModelOptions
from scopebench.models.contrastive import ContrastiveBackend, resolve_device, weights_digest
from scopebench.models.registry import split_spec

__all__ = ["OpenClipBackend", "parse_openclip_spec"]


def parse_openclip_spec(arg: str) -> tuple[str, str | None]:
    """``ARCH@/path/weights.pt`` → (ARCH, path); ``hf-hub:…`` or ``ARCH`` → (name, None)."""
    if "@" in arg and not arg.startswith("hf-hub:"):
        arch, _, path = arg.partition("@")
        return arch, path
    return arg, None


class OpenClipBackend(ContrastiveBackend):
    """Contrastive zero-shot through open_clip."""

    def __init__(self, spec: str, options: ModelOptions) -> None:
        super().__init__(spec, options)
        _, arg = split_spec(spec)
        try:
            import open_clip
            import torch
        except ImportError as exc:
            raise MissingDependencyError("open_clip_torch", "openclip", "openclip: models") from exc
        self._torch = torch
        self.device = resolve_device(options.device)
        self.name, self.weights = parse_openclip_spec(arg)
        try:
            if self.weights is not None:
                model, _, preprocess = open_clip.create_model_and_transforms(
                    self.name, pretrained=self.weights
                )
            else:
                model, _, preprocess = open_clip.create_model_and_transforms(self.name)
            self.tokenizer = open_clip.get_tokenizer(self.name)
        except (RuntimeError, OSError, ValueError) as exc:
            raise ModelError(f"cannot load open_clip model {arg!r}: {exc}") from exc
        self.model = model.to(self.device).eval()
        self.preprocess = preprocess
        with torch.no_grad():
            self.logit_scale = float(self.model.logit_scale.exp().item())
            bias = getattr(self.model, "logit_bias", None)
            self.logit_bias = float(bias.item()) if bias is not None else 0.0

    def _normalise(self, feats: Any) -> np.ndarray:
        feats = feats.float()
        arr: np.ndarray = (feats / feats.norm(dim=-1, keepdim=True).clamp_min(1e-12)).cpu().numpy()
        return arr

    def encode_images(self, images: Sequence[Any]) -> np.ndarray:
        """Embed images with open_clip's own preprocessing."""
        batch = self._torch.stack([self.preprocess(im) for im in images]).to(self.device)
        with self._torch.inference_mode():
            return self._normalise(self.model.encode_image(batch))

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts with the model's tokenizer (its own context length, e.g. 256 for BiomedCLIP)."""
        tokens = self.tokenizer(list(texts)).to(self.device)
        with self._torch.inference_mode():
            return self._normalise(self.model.encode_text(tokens))

    def identity(self) -> dict[str, Any]:
        """Spec, architecture, weights hash for local checkpoints, device."""
        digest = None
        if self.weights and Path(self.weights).is_file():
            digest = weights_digest(Path(self.weights).parent)
        return {"spec": self.spec, "mode": self.mode, "model": self.name, "weights_sha256": digest,
                "device": self.device, "logit_scale": round(self.logit_scale, 6)}  # fmt: skip

"""``openclip:MODEL`` — open_clip models (optional extra ``scopebench[openclip]``).

Covers OpenCLIP, BiomedCLIP (``openclip:hf-hub:microsoft/BiomedCLIP-PubMedBERT_256-vit_base_patch16_224``,
256-token context), QuiltNet (``openclip:hf-hub:wisdomik/QuiltNet-B-32``) and CONCH-style local
checkpoints (``openclip:ARCH@/path/to/weights.pt``), and local model folders in the Hub layout
(``open_clip_config.json`` + ``open_clip_model.safetensors`` or ``open_clip_pytorch_model.bin``:
``openclip:/path/to/folder``, or the folder alone as ``--model``). Scoring and caching are shared with
:class:`~scopebench.models.contrastive.ContrastiveBackend`.

open_clip needs torchvision, which must not be installed next to the CPU build of torch on our
machines; the import is therefore lazy and a missing install names the extra.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from scopebench.errors import MissingDependencyError, ModelError
from scopebench.models.base import ModelOptions
from scopebench.models.contrastive import ContrastiveBackend, resolve_device, weights_digest
from scopebench.models.cpu_memory import keep_freed_memory, release_freed_memory
from scopebench.models.registry import ModelSpec, parse_spec

__all__ = ["OpenClipBackend", "parse_openclip_spec", "register_local_folder"]

_WEIGHT_FILES = ("open_clip_model.safetensors", "open_clip_pytorch_model.bin")


def parse_openclip_spec(arg: str) -> tuple[str, str | None]:
    """``ARCH@/path/weights.pt`` → (ARCH, path); ``hf-hub:…`` or ``ARCH`` → (name, None)."""
    if "@" in arg and not arg.startswith("hf-hub:"):
        arch, _, path = arg.partition("@")
        return arch, path
    return arg, None


def register_local_folder(folder: Path, open_clip: Any) -> tuple[str, str, dict[str, Any]]:
    """Make a Hub-layout open_clip folder loadable offline.

    open_clip resolves architectures by name from its config registry (and ``hf-hub:`` names by
    downloading), so the folder's ``model_cfg`` is registered under a name derived from the folder's
    path. A text tower that names a Hugging Face tokenizer uses the folder's own tokenizer files
    when they are there, so nothing is fetched.

    Returns:
        The registered architecture name, the weights file, and the image-preprocessing keyword
        arguments of ``open_clip.create_model_and_transforms`` from the folder's ``preprocess_cfg``.

    Raises:
        ModelError: When the config is unreadable or no weights file is found.
    """
    try:
        cfg = json.loads((folder / "open_clip_config.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ModelError(f"cannot read {folder / 'open_clip_config.json'}: {exc}") from exc
    model_cfg = dict(cfg.get("model_cfg", cfg))
    if not all(k in model_cfg for k in ("embed_dim", "vision_cfg", "text_cfg")):
        raise ModelError(
            f"{folder / 'open_clip_config.json'} has no model_cfg with embed_dim, vision_cfg and text_cfg"
        )
    text_cfg = dict(model_cfg["text_cfg"])
    if text_cfg.get("hf_tokenizer_name") and any(
        (folder / f).is_file() for f in ("tokenizer.json", "vocab.txt", "tokenizer_config.json")
    ):
        text_cfg["hf_tokenizer_name"] = str(folder)
    model_cfg["text_cfg"] = text_cfg
    weights = next((folder / f for f in _WEIGHT_FILES if (folder / f).is_file()), None)
    if weights is None:
        raise ModelError(f"{folder} holds no weights file ({' or '.join(_WEIGHT_FILES)})")
    name = "scopebench-local-" + hashlib.sha256(str(folder.resolve()).encode()).hexdigest()[:12]
    cfg_file = Path(tempfile.mkdtemp(prefix="scopebench-openclip-")) / f"{name}.json"
    cfg_file.write_text(json.dumps(model_cfg), encoding="utf-8")
    open_clip.add_model_config(cfg_file)
    pp = cfg.get("preprocess_cfg") or {}
    kwargs = {
        arg: pp[key]
        for arg, key in (
            ("image_mean", "mean"),
            ("image_std", "std"),
            ("image_interpolation", "interpolation"),
            ("image_resize_mode", "resize_mode"),
        )
        if pp.get(key) is not None
    }
    return name, str(weights), kwargs


class OpenClipBackend(ContrastiveBackend):
    """Contrastive zero-shot through open_clip."""

    def __init__(self, spec: str | ModelSpec, options: ModelOptions) -> None:
        super().__init__(spec, options)
        arg = parse_spec(spec).target
        try:
            import open_clip
            import torch
        except ImportError as exc:
            raise MissingDependencyError("open_clip_torch", "openclip", "openclip: models") from exc
        self._torch = torch
        self.device = resolve_device(options.device)
        keep_freed_memory(self.device)
        folder = Path(arg).expanduser()
        kwargs: dict[str, Any] = {}
        if folder.is_dir() and (folder / "open_clip_config.json").is_file():
            self.name, weights, kwargs = register_local_folder(folder, open_clip)
            self.weights: str | None = weights
        else:
            self.name, self.weights = parse_openclip_spec(arg)
        try:
            if self.weights is not None:
                model, _, preprocess = open_clip.create_model_and_transforms(
                    self.name, pretrained=self.weights, **kwargs
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
            digest = weights_digest(Path(self.weights))
        return {"spec": self.spec, "mode": self.mode, "model": self.name, "weights_sha256": digest,
                "device": self.device, "logit_scale": round(self.logit_scale, 6)}  # fmt: skip

    def close(self) -> None:
        """Drop the caches (on a CPU, giving the heap's free memory back)."""
        super().close()
        release_freed_memory()

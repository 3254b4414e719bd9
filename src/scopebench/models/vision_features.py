"""Frozen vision-encoder features for the linear probe: ``dinov2:`` and generic ``vision:`` specs.

μ-Bench §C.7 trains a logistic regression on "DINOv2 S14 features (384 dims)". 384 is the width of
ViT-S/14, so those are one token per image — the CLS token after DINOv2's final layer norm, which is
what the DINOv2 hub model returns (``x_norm_clstoken``) and what ``transformers``' ``Dinov2Model``
gives as ``pooler_output``. That is this module's default; mean pooling is an option.

Specs (the ``--features`` of ``scopebench linear-probe``)::

    dinov2:<folder or hub id>[?pool=cls|mean]    a Dinov2Model / Dinov2WithRegistersModel
    vision:<folder or hub id>[?pool=pooler|cls|mean]    any transformers vision encoder (AutoModel)

* ``dinov2`` ``cls`` (default): ``pooler_output`` = the layer-normed CLS token (e.g. 384 dims for
  ``facebook/dinov2-small``, the paper's S14); ``mean``: the mean of the layer-normed patch tokens
  (CLS and register tokens left out), DINOv2's ``x_norm_patchtokens`` averaged.
* ``vision`` ``pooler`` (default): the model's own ``pooler_output``; ``cls``: token 0 of
  ``last_hidden_state``; ``mean``: the mean over all of its tokens (over the spatial axes for a
  convolutional ``(n, c, h, w)`` output).

Images are prepared by the model's own image processor (``AutoImageProcessor``; for DINOv2 resize to
256, centre crop 224, ImageNet mean/std). Features are not normalised: the probe standardises them.
Nothing is downloaded unless a hub id is given.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from scopebench.errors import MissingDependencyError, ModelSpecError
from scopebench.models.contrastive import resolve_device, weights_digest
from scopebench.models.cpu_memory import keep_freed_memory, release_freed_memory

__all__ = ["POOLINGS", "VISION_SCHEMES", "VisionEncoder", "VisionSpec", "parse_vision_spec"]

log = logging.getLogger(__name__)

#: Feature schemes of this module.
VISION_SCHEMES = ("dinov2", "vision")
#: Pooling choices per scheme; the first is the default.
POOLINGS: dict[str, tuple[str, ...]] = {"dinov2": ("cls", "mean"), "vision": ("pooler", "cls", "mean")}
_DINOV2_TYPES = ("dinov2", "dinov2_with_registers")


@dataclass(frozen=True, slots=True)
class VisionSpec:
    """A parsed ``dinov2:``/``vision:`` spec.

    Attributes:
        scheme: ``dinov2`` or ``vision``.
        target: Folder (``~`` expanded) or hub id.
        pooling: How one vector is taken per image (see the module docstring).
    """

    scheme: str
    target: str
    pooling: str


def parse_vision_spec(features: str) -> VisionSpec | None:
    """Parse ``features`` if it names a vision encoder; ``None`` when it is another kind of spec.

    Raises:
        ModelSpecError: For a ``dinov2:``/``vision:`` spec without a model or with an unknown pooling.
    """
    scheme, sep, rest = features.partition(":")
    if not sep or scheme not in VISION_SCHEMES:
        return None
    target, _, query = rest.partition("?")
    target = target.strip()
    if not target:
        raise ModelSpecError(f"--features {features!r}: name the model, e.g. {scheme}:facebook/dinov2-small")
    choices = POOLINGS[scheme]
    pooling = choices[0]
    if query:
        key, _, value = query.partition("=")
        if key != "pool" or value not in choices:
            raise ModelSpecError(
                f"--features {features!r}: the only option of {scheme} features is "
                f"?pool=<{'|'.join(choices)}>"
            )
        pooling = value
    if target.startswith("~"):
        target = str(Path(target).expanduser())
    return VisionSpec(scheme, target, pooling)


class VisionEncoder:
    """A frozen ``transformers`` vision encoder that turns images into one vector each.

    It has the interface the linear probe uses of a contrastive backend: :meth:`encode_images`,
    :attr:`encode_batch`, :meth:`identity` and :meth:`close`.
    """

    def __init__(self, spec: VisionSpec, *, device: str = "auto", batch_size: int | None = None) -> None:
        """Load the model and its image processor.

        Raises:
            MissingDependencyError: When torch or transformers is not installed.
            ModelSpecError: When the model cannot be loaded, or ``dinov2:`` names another model type.
        """
        try:
            import torch
            from transformers import AutoImageProcessor, AutoModel
        except ImportError as exc:
            raise MissingDependencyError("transformers", "hf", f"{spec.scheme}: features") from exc
        self.spec = spec
        self.encode_batch = max(1, batch_size or 32)
        self.device = resolve_device(device)
        self._torch = torch
        keep_freed_memory(self.device)
        try:
            self.processor = AutoImageProcessor.from_pretrained(spec.target)
            self.model = AutoModel.from_pretrained(spec.target)
        except (OSError, ValueError) as exc:
            raise ModelSpecError(
                f"--features {spec.scheme}:{spec.target}: cannot load a vision model and image processor "
                f"there ({exc}); give a folder saved with save_pretrained or a hub id"
            ) from exc
        model_type = str(getattr(self.model.config, "model_type", ""))
        if spec.scheme == "dinov2" and model_type not in _DINOV2_TYPES:
            raise ModelSpecError(
                f"--features dinov2:{spec.target} is a {model_type!r} model, not DINOv2; use "
                f"vision:{spec.target} for another vision encoder"
            )
        self.model.eval().to(self.device)
        self.n_registers = int(getattr(self.model.config, "num_register_tokens", 0) or 0)

    def _pool(self, out: Any) -> Any:
        hidden = out.last_hidden_state
        pooling = self.spec.pooling
        if self.spec.scheme == "dinov2":
            # Dinov2Model: last_hidden_state is layer-normed; token 0 is CLS, then the registers.
            if pooling == "cls":
                return hidden[:, 0]
            return hidden[:, 1 + self.n_registers :].mean(dim=1)
        if pooling == "pooler":
            pooled = getattr(out, "pooler_output", None)
            if pooled is None:
                raise ModelSpecError(
                    f"--features vision:{self.spec.target}: the model has no pooler_output; add ?pool=cls "
                    "or ?pool=mean"
                )
            return pooled.flatten(1)
        if hidden.dim() == 4:  # convolutional (n, c, h, w)
            if pooling == "cls":
                raise ModelSpecError(
                    f"--features vision:{self.spec.target}: a convolutional model has no CLS"
                )
            return hidden.mean(dim=(2, 3))
        return hidden[:, 0] if pooling == "cls" else hidden.mean(dim=1)

    def encode_images(self, images: Sequence[Any]) -> np.ndarray:
        """One float64 feature row per image (PIL images, converted to RGB)."""
        torch = self._torch
        rows: list[np.ndarray] = []
        for start in range(0, len(images), self.encode_batch):
            chunk = [im.convert("RGB") for im in images[start : start + self.encode_batch]]
            pixels = self.processor(images=chunk, return_tensors="pt")["pixel_values"].to(self.device)
            with torch.inference_mode():
                feats = self._pool(self.model(pixel_values=pixels))
            rows.append(feats.float().cpu().numpy().astype(np.float64))
        dim = int(getattr(self.model.config, "hidden_size", 0) or 0)
        return np.concatenate(rows) if rows else np.zeros((0, dim))

    def identity(self) -> dict[str, Any]:
        """Spec, pooling, model class and type, revision or weight hash, device."""
        local = Path(self.spec.target).is_dir()
        cfg = self.model.config
        return {
            "spec": f"{self.spec.scheme}:{self.spec.target}",
            "pooling": self.spec.pooling,
            "model_class": type(self.model).__name__,
            "model_type": getattr(cfg, "model_type", None),
            "hidden_size": getattr(cfg, "hidden_size", None),
            "revision": None if local else getattr(cfg, "_commit_hash", None),
            "weights_sha256": weights_digest(Path(self.spec.target)) if local else None,
            "device": self.device,
        }

    def close(self) -> None:
        """Drop the model (on a CPU, giving the heap's free memory back)."""
        self.model = None
        release_freed_memory()

"""Loading the processor of a local transformers image-text-to-text model, with or without torchvision.

transformers refuses to build Qwen2-VL / SmolVLM processors without torchvision, only because their
video processor needs it; :func:`load_processor` then rebuilds the processor for images only.
"""

from __future__ import annotations

import importlib.util
import json
import logging
from pathlib import Path
from typing import Any

from scopebench.errors import ModelError

__all__ = ["build_images_only_processor", "load_processor"]

log = logging.getLogger(__name__)


def _images_only(cls: Any) -> Any:
    """A subclass of processor ``cls`` that accepts a stand-in for its video processor.

    transformers refuses to build Qwen2-VL / SmolVLM processors without torchvision, only because
    their video processor needs it; evaluating images never touches it.
    """

    def check_argument_for_proper_class(self: Any, argument_name: str, argument: Any) -> Any:
        if argument_name == "video_processor":
            return type(argument)
        return cls.check_argument_for_proper_class(self, argument_name, argument)

    sub = type(cls.__name__, (cls,), {"check_argument_for_proper_class": check_argument_for_proper_class})
    sub.__qualname__ = cls.__qualname__
    return sub


def _no_video_processor(**settings: Any) -> Any:
    """A stand-in video processor that carries the image settings and refuses videos."""
    from transformers.video_processing_utils import VideoProcessorMixin

    class ImagesOnlyVideoProcessor(VideoProcessorMixin):
        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            raise ModelError("videos are not supported here: torchvision is not installed")

    proc = ImagesOnlyVideoProcessor()
    for k, v in settings.items():
        setattr(proc, k, v)
    return proc


def build_images_only_processor(cls: Any, image_processor: Any, tokenizer: Any, **kwargs: Any) -> Any:
    """Build processor ``cls`` for images only (no torchvision needed); used by the tiny builders too."""
    video = _no_video_processor(
        merge_size=getattr(image_processor, "merge_size", 2),
        patch_size=getattr(image_processor, "patch_size", 14),
        temporal_patch_size=getattr(image_processor, "temporal_patch_size", 2),
        # Read (never used for images) by SmolVLM's apply_chat_template.
        num_frames=None,
        fps=None,
    )
    return _images_only(cls)(
        image_processor=image_processor, tokenizer=tokenizer, video_processor=video, **kwargs
    )


def load_processor(model_id: str) -> Any:
    """``AutoProcessor.from_pretrained``, or an images-only rebuild where torchvision is missing.

    Raises:
        ModelError: When no processor can be loaded from ``model_id``.
    """
    import transformers
    from transformers import AutoImageProcessor, AutoProcessor, AutoTokenizer

    try:
        return AutoProcessor.from_pretrained(model_id)
    except (ValueError, ImportError, AttributeError) as exc:
        if importlib.util.find_spec("torchvision") is not None:
            raise ModelError(f"cannot load the processor of {model_id!r}: {exc}") from exc
        first_error = exc
    cfg_file = Path(model_id) / "processor_config.json"
    cfg = json.loads(cfg_file.read_text(encoding="utf-8")) if cfg_file.is_file() else {}
    name = cfg.get("processor_class")
    if name is None:
        from transformers.models.auto.processing_auto import (  # type: ignore[attr-defined]
            PROCESSOR_MAPPING_NAMES,
        )

        model_type = transformers.AutoConfig.from_pretrained(model_id).model_type
        name = PROCESSOR_MAPPING_NAMES.get(model_type)
    cls = getattr(transformers, str(name), None)
    if cls is None or "video_processor" not in cls.get_attributes():
        raise ModelError(f"cannot load the processor of {model_id!r}: {first_error}") from first_error
    import inspect

    params = set(inspect.signature(cls.__init__).parameters) - {
        "image_processor",
        "tokenizer",
        "video_processor",
    }
    kwargs = {k: v for k, v in cfg.items() if k in params}
    template = Path(model_id) / "chat_template.jinja"
    if template.is_file() and "chat_template" in params:
        kwargs["chat_template"] = template.read_text(encoding="utf-8")
    log.info("torchvision is not installed: %s is loaded for images only", name)
    return build_images_only_processor(
        cls, AutoImageProcessor.from_pretrained(model_id), AutoTokenizer.from_pretrained(model_id), **kwargs
    )

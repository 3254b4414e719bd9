"""Model backends: one module per family, resolved from spec strings with lazy imports."""

from scopebench.models.base import Backend, ChatMessage, FinishReason, ModelOptions, Response, ResponseStatus
from scopebench.models.registry import (
    ModelSpec,
    available_schemes,
    load_model,
    parse_spec,
    register_scheme,
    split_spec,
)

__all__ = [
    "Backend",
    "ChatMessage",
    "FinishReason",
    "ModelOptions",
    "ModelSpec",
    "Response",
    "ResponseStatus",
    "available_schemes",
    "load_model",
    "parse_spec",
    "register_scheme",
    "split_spec",
]

"""Prompt templates and caption building, per benchmark and model family."""

from scopebench.protocols.prompts import (
    PROTOCOL_VERSION,
    PROTOCOLS,
    DetectionStyle,
    Prompt,
    caption_texts,
    detection_class,
    render_detection_prompt,
    render_prompt,
    resolve_protocol,
)

__all__ = [
    "PROTOCOLS",
    "PROTOCOL_VERSION",
    "DetectionStyle",
    "Prompt",
    "caption_texts",
    "detection_class",
    "render_detection_prompt",
    "render_prompt",
    "resolve_protocol",
]

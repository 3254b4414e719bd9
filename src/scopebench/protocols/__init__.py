"""The Request stage: the shared ``default`` protocol, owner-protocol resolution, :func:`render`."""

from scopebench.protocols.prompts import (
    PROTOCOL_VERSION,
    PROTOCOLS,
    DetectionStyle,
    Prompt,
    Request,
    caption_texts,
    detection_class,
    render,
    render_detection_prompt,
    render_prompt,
    resolve_protocol,
)

__all__ = [
    "PROTOCOLS",
    "PROTOCOL_VERSION",
    "DetectionStyle",
    "Prompt",
    "Request",
    "caption_texts",
    "detection_class",
    "render",
    "render_detection_prompt",
    "render_prompt",
    "resolve_protocol",
]

"""Prompt templates and caption building, per benchmark and model family."""

from scopebench.protocols.prompts import (
    PROTOCOL_VERSION,
    PROTOCOLS,
    Prompt,
    caption_texts,
    render_prompt,
    resolve_protocol,
)

__all__ = ["PROTOCOLS", "PROTOCOL_VERSION", "Prompt", "caption_texts", "render_prompt", "resolve_protocol"]

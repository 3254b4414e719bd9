"""The request format that constrains an API reply to one option label (``--answer-format constrained``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["label_schema"]


def label_schema(labels: Sequence[str]) -> dict[str, Any]:
    """The ``response_format`` that constrains a reply to ``{"answer": <one of labels>}``.

    OpenAI's structured outputs (``strict``: the server enforces the schema) and the servers that
    follow them (vLLM, SGLang, llama.cpp) decode only replies the schema admits; the parser reads
    ``{"answer": "C"}`` like any JSON answer.
    """
    return {
        "type": "json_schema",
        "json_schema": {
            "name": "answer",
            "strict": True,
            "schema": {
                "type": "object",
                "properties": {"answer": {"type": "string", "enum": list(labels)}},
                "required": ["answer"],
                "additionalProperties": False,
            },
        },
    }

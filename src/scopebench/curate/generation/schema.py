"""What a generation reply must be: the pydantic schemas of ``build generate`` and their checks.

:func:`validate_reply` turns a model's raw text into validated content or a :class:`Invalid` with a
short ``kind`` (used for counts and the retry message) and a message naming the fault. The checks
are the benchmark's invariants: the reply is one JSON object (a fenced ```json block is accepted);
there are exactly ``n`` questions; each has ``options`` options, all distinct (case and surrounding
space ignored); its answer — the correct option's text, its letter or its 0-based index — names
exactly one of them; ``mcq_nota`` questions have exactly one "None of the above".
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

__all__ = ["MCQ", "SCHEMA_VERSION", "Invalid", "Kind", "normalise", "validate_reply"]

#: Bumped whenever a schema or check changes, so cached replies are validated and asked again.
SCHEMA_VERSION = "generate-v1"
Kind = Literal["description", "mcq", "mcq_nota"]
_NOTA = "none of the above"
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)


def normalise(text: str) -> str:
    """Option text compared case- and space-insensitively, trailing full stop ignored."""
    return " ".join(text.split()).strip().rstrip(".").casefold()


@dataclass(frozen=True)
class Invalid:
    """Why a reply was refused.

    ``kind`` is one of ``invalid_json``, ``schema``, ``wrong_count``, ``duplicate_options``,
    ``answer_not_in_options``, ``no_nota`` (and ``call_failed`` for a call that got no reply).
    """

    kind: str
    message: str


class _Description(BaseModel):
    model_config = ConfigDict(extra="ignore")
    description: str = Field(min_length=1)


class MCQ(BaseModel):
    """One generated multiple-choice question (``answer`` resolved to ``answer_idx``).

    Attributes:
        question: The question text.
        options: The options, in the order the model wrote them.
        answer: What the model gave as the answer (text, letter or index).
        explanation: Why the answer is correct (PathMMU keeps one per item).
    """

    model_config = ConfigDict(extra="ignore")
    question: str = Field(min_length=1)
    options: list[str] = Field(min_length=2)
    answer: str | int
    explanation: str = ""

    @field_validator("options")
    @classmethod
    def _no_blank(cls, value: list[str]) -> list[str]:
        if any(not o.strip() for o in value):
            raise ValueError("an option is blank")
        return [o.strip() for o in value]


class _MCQSet(BaseModel):
    model_config = ConfigDict(extra="ignore")
    questions: list[MCQ]


def _parse_json(text: str) -> dict[str, Any] | Invalid:
    fenced = _FENCE.search(text)
    body = (fenced.group(1) if fenced else text).strip()
    try:
        obj = json.loads(body)
    except json.JSONDecodeError as exc:
        return Invalid("invalid_json", f"not valid JSON ({exc.msg} at character {exc.pos})")
    if not isinstance(obj, dict):
        return Invalid("invalid_json", f"expected a JSON object, got {type(obj).__name__}")
    return obj


def _answer_index(q: MCQ) -> int | Invalid:
    """The 0-based index the answer names, or why it names none (or several)."""
    n = len(q.options)
    a = q.answer
    if isinstance(a, int):
        if 0 <= a < n:
            return a
        return Invalid("answer_not_in_options", f"answer index {a} is not among the {n} options (0-based)")
    matches = [i for i, o in enumerate(q.options) if normalise(o) == normalise(a)]
    if len(matches) == 1:
        return matches[0]
    letter = a.strip().strip("()").rstrip(".").upper()
    if not matches and len(letter) == 1 and "A" <= letter < chr(ord("A") + n):
        return ord(letter) - ord("A")
    return Invalid("answer_not_in_options", f"answer {a!r} is not one of the options {q.options}")


def _check_mcq(q: MCQ, k: int, options: int, kind: Kind) -> int | Invalid:
    where = f"question {k + 1}"
    if len(q.options) != options:
        return Invalid("wrong_count", f"{where} has {len(q.options)} options, {options} were asked for")
    seen = [normalise(o) for o in q.options]
    dupes = sorted({o for o in seen if seen.count(o) > 1})
    if dupes:
        return Invalid(
            "duplicate_options", f"{where} repeats the option(s) {dupes}; options must be distinct"
        )
    if kind == "mcq_nota" and seen.count(_NOTA) != 1:
        return Invalid("no_nota", f'{where} must have exactly one "None of the above" option')
    idx = _answer_index(q)
    return Invalid(idx.kind, f"{where}: {idx.message}") if isinstance(idx, Invalid) else idx


def validate_reply(
    text: str | None, kind: Kind, *, n: int = 1, options: int = 4
) -> str | list[tuple[MCQ, int]] | Invalid:
    """Validate one reply.

    Args:
        text: The model's raw reply.
        kind: The task's output schema.
        n: Questions expected (``mcq``, ``mcq_nota``).
        options: Options expected per question.

    Returns:
        The description (``description``), a list of ``(question, answer_idx)`` (``mcq``,
        ``mcq_nota``), or :class:`Invalid`.
    """
    if text is None or not text.strip():
        return Invalid("invalid_json", "the reply is empty")
    obj = _parse_json(text)
    if isinstance(obj, Invalid):
        return obj
    try:
        if kind == "description":
            return _Description.model_validate(obj).description.strip()
        got = _MCQSet.model_validate(obj).questions
    except ValidationError as exc:
        errs = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'reply'}: {e['msg']}" for e in exc.errors()[:3])
        return Invalid("schema", errs)
    if len(got) != n:
        return Invalid("wrong_count", f"{len(got)} questions, {n} were asked for")
    out: list[tuple[MCQ, int]] = []
    for k, q in enumerate(got):
        idx = _check_mcq(q, k, options, kind)
        if isinstance(idx, Invalid):
            return idx
        out.append((q, idx))
    return out

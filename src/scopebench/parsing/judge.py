"""The answer-extraction judge's prompt, and the strict reading of its reply.

When the rule-based parser (:func:`~scopebench.parsing.parse_choice`) cannot tell which option a
free-text response commits to, a run may ask a second, text-only model — the *judge* — the same
question VLMEvalKit's extraction step asks: which option does this response choose? Unlike
VLMEvalKit, the judge is never asked to solve the question (it is told not to) and it may answer
``none`` when the response commits to no option or to several; it is never asked to guess.

Its reply is read strictly: after stripping surrounding white space and one trailing period, it
must be a bare option label of the run's label style (``B``, or ``2`` when options are numbered; a
lower-case letter is read as its capital) or the word ``none`` (any case). Anything else — a
sentence, ``(B)``, ``B or C``, a label that is not an option — is the judge's failure: the record
keeps the parser's verdict (``unparsed``) and the judge's reply is kept for inspection.

Records a judge answered keep the parser's outcome in ``extra["judge"]`` (``parser_error``), so
:func:`judge_free` recovers the judge-free record exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from scopebench.items import Record
from scopebench.parsing._labels import label_for
from scopebench.parsing.choice import LabelStyle

__all__ = [
    "JUDGE_PROMPT_VERSION",
    "JudgeVerdict",
    "answered_by_judge",
    "build_judge_prompt",
    "judge_free",
    "read_judge_reply",
]

#: Bumped whenever the judge prompt or the reading of its reply changes; part of run provenance,
#: so verdicts of another prompt version are never mixed into a run.
JUDGE_PROMPT_VERSION = 1

_INSTRUCTION = (
    "You read a model's answer to a multiple-choice question and report which option the answer "
    "commits to. Do not solve the question yourself, and do not judge whether the answer is right: "
    "report only what the answer says."
)


def _label_word(labels: LabelStyle) -> str:
    return "number" if labels == "numbers" else "letter"


def build_judge_prompt(question: str, choices: Sequence[str], response: str, labels: LabelStyle) -> str:
    """The text-only prompt asking the judge which option ``response`` commits to.

    Args:
        question: The item's question.
        choices: The option texts, in order.
        response: The model's full response.
        labels: How the run labelled the options (``letters`` A, B, … or ``numbers`` 1, 2, …).

    Returns:
        The prompt (one user turn).
    """
    names = [label_for(i, labels) for i in range(len(choices))]
    options = "\n".join(f"{n}. {c}" for n, c in zip(names, choices, strict=True))
    word = _label_word(labels)
    return (
        f"{_INSTRUCTION}\n\n"
        f"Question:\n{question}\n\n"
        f"Options:\n{options}\n\n"
        f'Model\'s answer:\n"""\n{response}\n"""\n\n'
        f"If the answer commits to exactly one option, reply with that option's {word} only "
        f"({', '.join(names)}). If it commits to no option, or to more than one, reply with the "
        "single word none. Reply with nothing else."
    )


@dataclass(frozen=True, slots=True)
class JudgeVerdict:
    """What a judge's reply says.

    Attributes:
        index: The 0-based option the judge read, or ``None``.
        verdict: The canonical label (``"B"``, ``"2"``), ``"none"``, or ``None`` when the reply
            could not be read.
        error: Why the reply could not be read (``None`` when it could).
    """

    index: int | None
    verdict: str | None
    error: str | None = None


def read_judge_reply(reply: str | None, n_choices: int, labels: LabelStyle) -> JudgeVerdict:
    """Read a judge's reply strictly: a bare label of an option, or ``none``.

    Args:
        reply: The judge's raw reply.
        n_choices: Number of options of the item.
        labels: The label style the prompt used.

    Returns:
        The verdict; ``verdict is None`` (with ``error``) for anything but a bare label or ``none``.
    """
    text = (reply or "").strip()
    if text.endswith("."):
        text = text[:-1].rstrip()
    if text.lower() == "none":
        return JudgeVerdict(None, "none")
    names = [label_for(i, labels) for i in range(n_choices)]
    key = text.upper() if labels == "letters" else text
    if key in names:
        return JudgeVerdict(names.index(key), key)
    if not text:
        return JudgeVerdict(None, None, "the judge's reply is empty")
    return JudgeVerdict(
        None,
        None,
        f"the judge's reply is not one of {', '.join(names)} or none: {_snippet(text)!r}",
    )


def _snippet(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def answered_by_judge(record: Record) -> bool:
    """Whether the record's choice is the judge's (``extra["answer_method"] == "judge"``)."""
    return record.extra.get("answer_method") == "judge"


def judge_free(record: Record) -> Record:
    """The record as the parser alone left it: a judge's answer goes back to ``unparsed``.

    Records the judge did not answer are returned unchanged (the same object).
    """
    if not answered_by_judge(record):
        return record
    judge: dict[str, Any] = dict(record.extra.get("judge") or {})
    extra = {**record.extra, "answer_method": "parser"}
    return replace(
        record,
        status="unparsed",
        choice=None,
        correct=None,
        error=judge.get("parser_error") or "no option chosen",
        extra=extra,
    )

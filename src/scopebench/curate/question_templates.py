"""Question text and caption sentences of ``build questions``: data files and their loader.

The shipped templates are ``curate/data/templates.yaml`` (μ-Bench's coarse perception templates,
its paper's Table 16). A taxonomy file's ``templates:`` section is merged over them, task by task,
or replaces them with ``replace: [templates]`` (see :func:`~scopebench.curate.taxonomy.load_taxonomy`)::

    templates:
      questions: {stain: "Which dye or label is shown?"}
      captions: {stain: "A micrograph stained with {stain}."}
      sources:                      # one source's own templates (μ-Bench's fine-grained ones are per dataset)
        acevedo_et_al_2020:
          questions: {classification: "A Giemsa-stained light micrograph ... identify the correct cell type:"}
          captions: {classification: "A brightfield microscopy image ... displaying {article} {class}."}

In a caption ``{class}`` or the task's own name (``{modality}``, as μ-Bench writes it) stands for
the option, and ``{article}`` for "a" or "an" before it. Question texts take no placeholder.
"""

from __future__ import annotations

import string
from dataclasses import dataclass, field
from typing import Any

from scopebench.curate.schema import QUESTION_TASKS
from scopebench.errors import DataFormatError

__all__ = ["KINDS", "QuestionTemplates"]

#: The two kinds of template.
KINDS: tuple[str, ...] = ("questions", "captions")
#: Used when neither the source nor the defaults name a template for a task.
_FALLBACK = {"questions": "What is the {task} of this image?", "captions": "A micrograph of {class}."}


def _placeholders(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}


def _canonical(kind: str, task: str, text: Any, where: str) -> str:
    """``text`` checked, with the task's own placeholder written as ``{class}``."""
    if not isinstance(text, str) or not text.strip():
        raise DataFormatError(f"{where}: a template is a non-empty string")
    try:
        names = _placeholders(text)
    except ValueError as exc:  # an unmatched brace
        raise DataFormatError(f"{where}: {exc}; write literal braces as {{{{ and }}}}") from exc
    allowed = {"class", task, "article"} if kind == "captions" else set()
    wrong = sorted(names - allowed)
    if wrong:
        what = "takes {class} (or {" + task + "}) and {article}" if allowed else "takes no placeholder"
        raise DataFormatError(f"{where}: unknown placeholder(s) {wrong}; a {kind[:-1]} template {what}")
    return text.replace("{" + task + "}", "{class}")


@dataclass
class QuestionTemplates:
    """Question and caption templates per task, with per-source overrides.

    Attributes:
        default: ``{"questions": {task: text}, "captions": {task: text}}``.
        sources: Source name → templates of the same shape, preferred for that source's images.
    """

    default: dict[str, dict[str, str]] = field(default_factory=lambda: {k: {} for k in KINDS})
    sources: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)

    def question(self, task: str, source: str | None = None) -> str:
        """The question text of ``task`` for an image of ``source``."""
        return self._get("questions", task, source)

    def caption(self, task: str, source: str | None = None) -> str:
        """The caption template of ``task`` (``{class}`` marks the option) for ``source``."""
        return self._get("captions", task, source)

    def _get(self, kind: str, task: str, source: str | None) -> str:
        own = self.sources.get(source or "", {}).get(kind, {})
        if task in own:
            return own[task]
        return self.default[kind].get(task, _FALLBACK[kind].replace("{task}", task))

    @staticmethod
    def render(caption: str, option: str) -> str:
        """``caption`` with ``option`` in place of ``{class}`` and its article in place of ``{article}``."""
        article = "an" if option[:1].casefold() in set("aeiou") else "a"
        return caption.replace("{article}", article).replace("{class}", option)

    def merge(self, raw: Any, source: str) -> None:
        """Merge one parsed ``templates`` mapping over these (task by task).

        Raises:
            DataFormatError: When it is not a mapping of kinds to task templates, names an unknown
                task, or a template has an unknown placeholder.
        """
        where = f"{source}: templates"
        body = _mapping(raw, where)
        unknown = sorted(set(body) - {*KINDS, "sources"})
        if unknown:
            raise DataFormatError(f"{where}: unknown key(s) {unknown}; use questions, captions and sources")
        _merge_kinds(self.default, body, where)
        for name, own in _mapping(body.get("sources"), f"{where}.sources").items():
            table = self.sources.setdefault(str(name), {k: {} for k in KINDS})
            _merge_kinds(table, _mapping(own, f"{where}.sources.{name}"), f"{where}.sources.{name}")

    def as_dict(self) -> dict[str, Any]:
        """Plain data (JSON-able), for fingerprints."""
        return {"default": self.default, "sources": self.sources}


def _merge_kinds(table: dict[str, dict[str, str]], body: dict[Any, Any], where: str) -> None:
    for kind in KINDS:
        for task, text in _mapping(body.get(kind), f"{where}.{kind}").items():
            if task not in QUESTION_TASKS:
                raise DataFormatError(
                    f"{where}.{kind}: unknown task {task!r}; tasks are {', '.join(QUESTION_TASKS)}"
                )
            table[kind][str(task)] = _canonical(kind, str(task), text, f"{where}.{kind}.{task}")


def _mapping(value: Any, where: str) -> dict[Any, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise DataFormatError(f"{where} must be a mapping (see docs/build.md)")
    return value

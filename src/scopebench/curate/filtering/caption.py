"""The caption gate (SPUR): no question may be answerable from its figure's caption.

SPUR keeps out questions that the figure's caption gives away. Each of ``n`` text-only models
answers every question ``R`` times, without the image, with the caption (and the context, when the
texts table has one) before the question; try ``t`` uses seed ``seed + t``. A model answers a
question right when it is correct in at least ``r`` of its ``R`` tries, and the question is dropped
(reason ``caption_answers``) when at least ``k`` of the ``n`` models do — the shortcut gate's rule
(:mod:`scopebench.curate.filtering.shortcut`), on a prompt that holds the caption.

The same models answer without the caption too (a cache hit when the shortcut gate asked the same
question), so the card shows the blind accuracy **with and without the caption**, entering the gate
and over the questions kept: the gap is what the caption gives away.

Captions come from the texts table ``build generate`` reads (``texts.csv``: ``image_id``, or
``source`` + ``image``; ``caption``; optional ``context``). A question whose image has no caption is
kept and counted (``without_caption``); a table row naming no image of the build is a problem row
naming the file and the row. Replay files answer by ``<question id>#caption``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from scopebench.curate.filtering.shortcut import Answerer, BlindResult, GateItem, blind_test
from scopebench.curate.manifest import read_table
from scopebench.curate.report import BuildProblem
from scopebench.errors import DataFormatError

__all__ = [
    "CAPTION_SUFFIX",
    "CaptionGateConfig",
    "CaptionSection",
    "caption_prompt",
    "read_captions",
    "run_caption_gate",
]

CAPTION_SUFFIX = "#caption"


class CaptionSection(BaseModel):
    """The ``filter.caption`` section of ``build.yaml`` / ``filter.yaml``."""

    model_config = ConfigDict(extra="forbid")
    models: list[str]
    texts: str
    tries: int = 1
    min_models: int = 1
    min_tries: int = 1

    def resolved(self, root: Path) -> CaptionSection:
        """A copy whose ``texts`` and ``replay:FILE`` paths are relative to ``root``."""

        def fix(p: str) -> str:
            path = Path(p).expanduser()
            return str(path if path.is_absolute() else root / path)

        models = [f"replay:{fix(m[7:])}" if m.startswith("replay:") else m for m in self.models]
        return self.model_copy(update={"models": models, "texts": fix(self.texts)})

    def to_config(self) -> CaptionGateConfig:
        """The library configuration (its checks run here)."""
        return CaptionGateConfig(
            **{**self.model_dump(), "models": tuple(self.models), "texts": Path(self.texts)}
        )


@dataclass(frozen=True)
class CaptionGateConfig:
    """The caption gate's models, texts table and k-of-n rule (module docstring).

    Attributes:
        models: Text-only model specs (``n``), each listed once.
        texts: The texts table with the captions.
        tries: Tries per model (``R``).
        min_models: ``k``: models that must answer a question right from the caption to drop it.
        min_tries: ``r``: correct tries out of ``R`` for a model to answer a question right.
    """

    models: tuple[str, ...]
    texts: Path
    tries: int = 1
    min_models: int = 1
    min_tries: int = 1

    def __post_init__(self) -> None:
        n = len(self.models)
        if n == 0 or len(set(self.models)) != n:
            raise DataFormatError("filter.caption.models must list at least one text-only model, each once")
        if self.tries < 1 or not 1 <= self.min_tries <= self.tries:
            raise DataFormatError("filter.caption: tries ≥ 1 and 1 ≤ min_tries ≤ tries are required")
        if not 1 <= self.min_models <= n:
            raise DataFormatError(f"filter.caption.min_models must be between 1 and the {n} model(s)")
        if not self.texts.is_file():
            raise DataFormatError(
                f"filter.caption.texts: no file {self.texts} (the texts table with captions)"
            )


def read_captions(
    path: Path, rows: Sequence[dict[str, Any]], problems: list[BuildProblem]
) -> dict[str, dict[str, str]]:
    """image_id → ``{"caption", "context"}`` from the texts table; bad rows become ``problems``."""
    by_path = {(r.get("dataset"), r.get("source_path")): r["image_id"] for r in rows}
    ids = {r["image_id"] for r in rows}
    out: dict[str, dict[str, str]] = {}
    for i, rec in enumerate(read_table(path)):
        image_id = rec.get("image_id") or by_path.get((rec.get("source"), rec.get("image")))
        caption = str(rec.get("caption") or "").strip()
        if image_id not in ids:
            msg = "names no image of this build (give image_id, or source + image as in the metadata table)"
            problems.append(BuildProblem("filter", path.name, str(i), "image", "unknown_image", msg))
        elif str(image_id) in out:
            msg = "a second row for the same image; the first is used, merge them"
            problems.append(BuildProblem("filter", path.name, str(i), "image", "duplicate_input", msg))
        elif caption:
            context = str(rec.get("context") or "").strip()
            out[str(image_id)] = {"caption": caption, "context": context}
    return out


def caption_prompt(question: str, caption: str, context: str = "") -> str:
    """The question as the caption gate asks it: caption, context, then the question."""
    parts = [f"Figure caption: {caption}"]
    if context:
        parts.append(f"Context: {context}")
    parts.append(f"Question: {question}")
    return "\n".join(parts)


@dataclass
class CaptionOutcome:
    """What the caption gate did: drops (id → ``caption_answers``), one record per question, stats."""

    dropped: dict[str, str] = field(default_factory=dict)
    records: list[dict[str, Any]] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)


def _accuracy(result: BlindResult, ids: Sequence[str], per_item: int) -> float | None:
    if not ids:
        return None
    return sum(sum(result.correct_tries(i).values()) for i in ids) / (len(ids) * per_item)


def run_caption_gate(
    items: Sequence[GateItem],
    captions: dict[str, dict[str, str]],
    config: CaptionGateConfig,
    seed: int,
    answerer: Answerer,
) -> CaptionOutcome:
    """Ask every captioned question with and without its caption; drop those the caption answers."""
    cfg = config
    seeds = [seed + t for t in range(cfg.tries)]
    have = [it for it in items if it.image_id in captions]
    shown = [replace(it, question=caption_prompt(it.question, **captions[it.image_id])) for it in have]
    k, r = cfg.min_models, cfg.min_tries
    without = blind_test(answerer, have, cfg.models, seeds, min_models=k, min_tries=r)
    with_caption = blind_test(
        answerer, shown, cfg.models, seeds, min_models=k, min_tries=r, key_suffix=CAPTION_SUFFIX
    )
    out = CaptionOutcome()
    for it in items:
        if it.image_id not in captions:
            out.records.append({"gate": "caption", "id": it.id, "decision": "kept", "reason": None,
                                "caption": None})  # fmt: skip
            continue
        flagged = with_caption.flagged[it.id]
        if flagged:
            out.dropped[it.id] = "caption_answers"
        out.records.append({
            "gate": "caption", "id": it.id, "decision": "dropped" if flagged else "kept",
            "reason": "caption_answers" if flagged else None, "caption": captions[it.image_id]["caption"],
            "correct_tries": with_caption.correct_tries(it.id), "answers": with_caption.record(it.id),
            "correct_tries_without_caption": without.correct_tries(it.id),
        })  # fmt: skip
    every = [it.id for it in have]
    kept = [i for i in every if i not in out.dropped]
    per_item = len(cfg.models) * cfg.tries
    out.stats = {
        "models": list(cfg.models),
        "tries": cfg.tries,
        "seeds": seeds,
        "rule": f"dropped when at least {cfg.min_models} of {len(cfg.models)} models are correct in at "
        f"least {cfg.min_tries} of {cfg.tries} tries from the caption and the question, without the image",
        "questions_entering": len(items),
        "with_caption": len(every),
        "without_caption": len(items) - len(every),
        "dropped": len(out.dropped),
        "accuracy_with_caption": {"entering": _accuracy(with_caption, every, per_item),
                                  "kept": _accuracy(with_caption, kept, per_item)},
        "accuracy_without_caption": {"entering": _accuracy(without, every, per_item),
                                     "kept": _accuracy(without, kept, per_item)},
    }  # fmt: skip
    return out

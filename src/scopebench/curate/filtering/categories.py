"""SPUR's panel categories: one category per image, counted in the card and carried to the items.

SPUR classifies its panels (cell, tissue, microorganism and subcellular staining images; charts,
blots) and breaks its accuracies down by them. The ``categories`` step of ``build filter`` gives
every image one category of a fixed list, from

* a **model** (``model:``), any scopebench backend: a contrastive one (``clip:``, ``openclip:``,
  ``siglip:``…) scores the image against one caption per category (zero-shot, μ-Bench's protocol);
  a generative one answers the multiple-choice question :data:`CATEGORY_QUESTION` whose options are
  the category names; or
* a **table** (``table:``) when a lab has the categories: ``image_id`` (or ``source`` + ``image`` as
  in the metadata table) and ``category``, one of the list (case ignored).

An image the model cannot place (an error, an unparsed reply) or the table does not name, and a
table value outside the list, is ``unknown`` and a problem row naming the file and the row; it is
never dropped. ``gates/categories.jsonl`` keeps each image's category, where it came from and the
model's scores; the counts go in the card, and ``build export`` writes each item's
``panel_category``, which ``scopebench report`` breaks accuracies down by.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from scopebench.curate.manifest import read_table
from scopebench.curate.report import BuildProblem
from scopebench.engine.parse import parse
from scopebench.items import ImageRef, Item
from scopebench.models import ModelOptions, load_model

__all__ = [
    "CATEGORY_QUESTION",
    "SPUR_CATEGORIES",
    "UNKNOWN",
    "CategorySection",
    "categorise",
]

#: SPUR's panel categories and the caption a contrastive model matches each against.
SPUR_CATEGORIES: dict[str, str] = {
    "cell": "a micrograph of stained cells",
    "tissue": "a micrograph of a stained tissue section",
    "microorganism": "a micrograph of stained microorganisms such as bacteria, fungi or parasites",
    "subcellular": "a fluorescence micrograph of subcellular structures or organelles",
    "chart": "a chart or plot of measured values",
    "blot": "a western blot or gel electrophoresis image",
}
CATEGORY_QUESTION = "Which kind of scientific figure panel is this image?"
UNKNOWN = "unknown"


class CategorySection(BaseModel):
    """The ``filter.categories`` section: ``model`` or ``table``, and the categories with captions."""

    model_config = ConfigDict(extra="forbid")
    model: str | None = None
    table: str | None = None
    categories: dict[str, str] = Field(default_factory=lambda: dict(SPUR_CATEGORIES))

    @model_validator(mode="after")
    def _one_source(self) -> CategorySection:
        if (self.model is None) == (self.table is None):
            raise ValueError("give exactly one of model (a backend spec) or table (a file of categories)")
        if len(self.categories) < 2 or UNKNOWN in self.categories:
            raise ValueError(f"categories needs at least two names, none of them {UNKNOWN!r}")
        return self

    def resolved(self, root: Path) -> CategorySection:
        """A copy whose ``table`` and ``replay:FILE`` paths are relative to ``root``."""

        def fix(p: str) -> str:
            path = Path(p).expanduser()
            return str(path if path.is_absolute() else root / path)

        model = (
            f"replay:{fix(self.model[7:])}" if self.model and self.model.startswith("replay:") else self.model
        )
        return self.model_copy(update={"model": model, "table": fix(self.table) if self.table else None})


def _problem(source: str, row: str, kind: str, message: str) -> BuildProblem:
    return BuildProblem("filter", source, row, "category", kind, message, severity="warning")


def _from_table(
    path: Path, rows: Sequence[dict[str, Any]], names: Sequence[str], problems: list[BuildProblem]
) -> dict[str, dict[str, Any]]:
    by_path = {(r.get("dataset"), r.get("source_path")): r["image_id"] for r in rows}
    ids = {r["image_id"] for r in rows}
    lower = {n.lower(): n for n in names}
    out: dict[str, dict[str, Any]] = {}
    for i, rec in enumerate(read_table(path)):
        image_id = rec.get("image_id") or by_path.get((rec.get("source"), rec.get("image")))
        value = str(rec.get("category") or "").strip()
        if image_id not in ids:
            problems.append(_problem(path.name, str(i), "unknown_image", "names no image of this build"))
        elif value.lower() not in lower:
            msg = f"category {value!r} is not one of {list(names)}; the image is {UNKNOWN!r}"
            problems.append(_problem(path.name, str(i), "unknown_category", msg))
        else:
            out[str(image_id)] = {"category": lower[value.lower()], "source": "table"}
    return out


def _from_model(
    spec: str, rows: Sequence[dict[str, Any]], cats: dict[str, str], seed: int, problems: list[BuildProblem]
) -> dict[str, dict[str, Any]]:
    names = tuple(cats)
    captions = tuple(cats[n] for n in names)
    items = [
        Item(id=r["image_id"], benchmark="build", split="test", task="panel_category",
             question=CATEGORY_QUESTION, choices=names, answer_index=0, captions=captions,
             images=(ImageRef(key=r["image_id"], data=(r.get("image") or {}).get("bytes")),))
        for r in rows
    ]  # fmt: skip
    backend = load_model(spec, ModelOptions(seed=seed))
    try:
        requests = [backend.render(it) for it in items]
        responses = backend.answer(requests)
    finally:
        backend.close()
    out: dict[str, dict[str, Any]] = {}
    for it, req, resp in zip(items, requests, responses, strict=True):
        # The engine's parse stage reads the reply exactly as a run reads it (choice, scores, text).
        index = parse(req, resp, model=spec).choice
        if index is None:
            why = f"{resp.status}: {resp.error or resp.text!r}"
            msg = f"{spec} gave no category ({why}); the image is {UNKNOWN!r}"
            problems.append(_problem(spec, it.id, "uncategorised", msg))
            continue
        scores = dict(zip(names, resp.scores, strict=True)) if resp.scores is not None else None
        out[it.id] = {"category": names[index], "source": spec, "scores": scores}
    return out


def categorise(
    rows: Sequence[dict[str, Any]], section: CategorySection, seed: int, problems: list[BuildProblem]
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """One category per image (module docstring): the per-image records and the statistics.

    Args:
        rows: The dataset rows (``image_id`` and ``image`` bytes).
        section: Model or table, and the categories.
        seed: Seed of the model's options (recorded).
        problems: Where images without a category and bad table rows are reported.

    Returns:
        One record per row (``gates/categories.jsonl``) and ``{"method", "categories", "counts",
        "per_image"}``.
    """
    names = list(section.categories)
    if section.table is not None:
        found = _from_table(Path(section.table), rows, names, problems)
        method = f"table {Path(section.table).name}"
    else:
        assert section.model is not None  # the section's validator guarantees one of the two
        found = _from_model(section.model, rows, section.categories, seed, problems)
        method = section.model
    records = []
    for r in rows:
        got = found.get(r["image_id"])
        if got is None and section.table is not None:
            problems.append(_problem(Path(section.table).name, r["image_id"], "uncategorised",
                                     f"no row names this image; it is {UNKNOWN!r}"))  # fmt: skip
        records.append({"gate": "categories", "image_id": r["image_id"], **(got or {"category": UNKNOWN})})
    counts = Counter(rec["category"] for rec in records)
    stats = {
        "method": method,
        "seed": seed,
        "categories": dict(section.categories),
        "counts": {n: counts[n] for n in [*names, UNKNOWN] if counts[n]},
        "per_image": {rec["image_id"]: rec["category"] for rec in records},
    }
    return records, stats

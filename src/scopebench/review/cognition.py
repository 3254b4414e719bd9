"""μ-Bench's cognition loop around the review app: submissions in, build inputs out, answers balanced.

μ-Bench's experts submitted an image with an open question and answer through a web app; GPT-4
turned each into a six-option question with "None of the above"; experts checked the items and the
accepted ones were balanced over A–F. Here:

* :func:`check_metadata` validates what the submission form asks about the image — modality,
  domain and stain from the build's taxonomy (:mod:`scopebench.curate.taxonomy`, matched and
  explained the way ``build ingest`` does) and a licence normalised to SPDX as ingest does;
* :func:`write_build_inputs` writes what ``scopebench build run`` reads unchanged: a manifest, its
  metadata table, the ``texts.csv`` the ``open_to_mcq`` task reads, and a ``build.yaml``;
* :func:`balance_rows` places the accepted items' answers over the letters
  (:mod:`scopebench.curate.balance`, with a recorded seed) when ``review export --balance`` runs.
"""

from __future__ import annotations

import csv
import functools
import json
import re
import shutil
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from scopebench.curate.balance import assign_positions, layout, position_stats, relabel, reorder, rng_for
from scopebench.curate.manifest import normalise_licence
from scopebench.curate.taxonomy import Taxonomy, load_taxonomy
from scopebench.review.db import ImageRow, Project, Submission
from scopebench.review.errors import Invalid
from scopebench.review.store import ImageStore

__all__ = [
    "EXTENSIONS",
    "balance_rows",
    "check_metadata",
    "source_name",
    "suggestions",
    "write_build_inputs",
]

#: The file extension of each stored MIME type (exported images keep their format's extension).
EXTENSIONS = {
    "image/png": ".png",
    "image/jpeg": ".jpg",
    "image/tiff": ".tif",
    "image/gif": ".gif",
    "image/webp": ".webp",
    "image/bmp": ".bmp",
}
_FIX = "Pick one of the form's suggestions, or ask an admin to add the value to the build's taxonomy"


@functools.cache
def _taxonomy() -> Taxonomy:
    return load_taxonomy()


def suggestions() -> dict[str, list[str]]:
    """The taxonomy's modalities, domains and stains, for the form's suggestion lists."""
    tax = _taxonomy()
    return {a: tax.names(a) for a in ("modality", "domain", "stain")}


def check_metadata(modality: str, domain: str, stain: str, licence: str) -> dict[str, str | None]:
    """The image's metadata in the taxonomy's spelling and its licence as an SPDX expression.

    Modality, domain and licence are required, the stain optional.

    Raises:
        Invalid: For a missing value, a value the taxonomy does not know (the message says where
            else the word is known or which values are near, as ``build ingest`` does) or a
            licence that is no SPDX id or expression.
    """
    tax = _taxonomy()
    out: dict[str, str | None] = {}
    for attribute, value, required in (
        ("modality", modality, True),
        ("domain", domain, True),
        ("stain", stain, False),
    ):
        value = value.strip()[:200]
        if not value:
            if required:
                raise Invalid(f"a submission needs the image's {attribute}; pick one of the suggestions")
            out[attribute] = None
            continue
        concept = tax.get(attribute, value)
        if concept is None:
            raise Invalid(tax.unknown_message(attribute, value, _FIX))
        out[attribute] = concept.name
    text = licence.strip()[:200]
    if not text:
        raise Invalid("a submission needs the image's licence (an SPDX id such as CC-BY-4.0)")
    spdx = normalise_licence(text)
    if spdx is None:
        raise Invalid(
            f"licence {text!r} is not an SPDX licence id or expression; write its SPDX id "
            "(https://spdx.org/licenses/, e.g. CC-BY-4.0) or LicenseRef-<name> for one not on SPDX's list"
        )
    out["license"] = spdx
    return out


def source_name(project: Project) -> str:
    """The build source of a project's submissions (letters, digits, ``_ - .`` as the manifest needs)."""
    return "submissions_" + re.sub(r"[^A-Za-z0-9_.-]+", "_", project.name).strip("_")


def image_name(sub: Submission, mime: str) -> str:
    """The exported image file of a submission: one file per submission, with its format's extension.

    One file each (not one per image hash) so that two questions on one image are two rows of the
    build, which keeps one text row per image; ingest groups the copies as near-duplicates.
    """
    return f"submission-{sub.id}{EXTENSIONS.get(mime, '')}"


def write_build_inputs(
    db: Session, store: ImageStore, project: Project, out_dir: Path, *, model: str, seed: int = 0
) -> dict[str, Path]:
    """Write ``manifest.yaml``, ``metadata.csv``, ``texts.csv``, ``build.yaml`` and ``images/``.

    ``scopebench build run out_dir/build.yaml`` then ingests the submissions (one row each; a
    submission without modality, domain or licence is ingest's problem row, never dropped here),
    and its generate step turns each open question into a six-option item (``open_to_mcq``) with
    ``model``. The build writes no metadata questions: the items are the experts' questions.

    Returns:
        The files written, by name.
    """
    import yaml

    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "images").mkdir(exist_ok=True)
    source = source_name(project)
    mime_of = dict(
        db.execute(select(ImageRow.sha256, ImageRow.mime).where(ImageRow.project_id == project.id)).all()
    )
    subs = db.scalars(
        select(Submission).where(Submission.project_id == project.id).order_by(Submission.id)
    ).all()
    meta, texts = [], []
    for sub in subs:
        name = image_name(sub, mime_of.get(sub.image_sha, ""))
        target = out_dir / "images" / name
        if not target.exists():
            shutil.copyfile(store.path(sub.image_sha), target)
        meta.append(
            {
                "image": name,
                "modality": sub.modality or "",
                "domain": sub.domain or "",
                "stain": sub.stain or "",
                "license": sub.license or "",
            }
        )
        texts.append(
            {
                "source": source,
                "image": name,
                "question": sub.question,
                "answer": sub.expert_answer,
                "context": sub.context,
            }
        )
    paths = {"metadata": out_dir / "metadata.csv", "texts": out_dir / "texts.csv"}
    _csv(paths["metadata"], ["image", "modality", "domain", "stain", "license"], meta)
    _csv(paths["texts"], ["source", "image", "question", "answer", "context"], texts)
    manifest = {
        "name": f"{project.name}-cognition",
        "description": f"Expert-submitted open questions of review project {project.name!r}.",
        "sources": [
            {
                "name": source,
                "images": "images",
                "metadata": "metadata.csv",
                "citation": f"Expert submissions to the review project {project.name!r}",
            }
        ],
    }
    build = {
        "manifest": "manifest.yaml",
        "out": "build",
        "seed": seed,
        "questions": {"tasks": []},
        "generate": {"model": model, "inputs": "texts.csv", "tasks": ["open_to_mcq"]},
        "split": {"fractions": {"test": 1.0}, "tiny": 0},
    }
    paths["manifest"] = out_dir / "manifest.yaml"
    paths["build"] = out_dir / "build.yaml"
    paths["manifest"].write_text(yaml.safe_dump(manifest, sort_keys=False), encoding="utf-8")
    paths["build"].write_text(yaml.safe_dump(build, sort_keys=False), encoding="utf-8")
    return paths


def _csv(path: Path, fields: list[str], rows: list[dict[str, str]]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)


def balance_rows(rows: list[dict[str, Any]], seed: int) -> dict[str, Any]:
    """Place the answers of accepted local-format rows so each task's letters are balanced, in place.

    Per task, :func:`scopebench.curate.balance.assign_positions` gives every movable item a slot
    ("None of the above" stays last; an item whose options name positions keeps its order), then
    :func:`~scopebench.curate.balance.reorder` moves the answer there with the item's own seeded
    generator. Each moved row records ``option_order`` (new slot → old index) and
    ``balance_seed``; an item that keeps its order records ``kept_order_because``.

    Returns:
        ``{"seed": seed, "answer_positions": {task: position_stats}}``.
    """
    by_task: dict[str, list[int]] = defaultdict(list)
    for i, row in enumerate(rows):
        by_task[str(row.get("task") or "")].append(i)
    stats: dict[str, Any] = {}
    for task, idxs in sorted(by_task.items()):
        lays = [layout(rows[i]["choices"], int(rows[i]["answer"])) for i in idxs]
        targets = assign_positions(lays, rng_for(seed, "review-balance", task), Counter())
        for i, lay, target in zip(idxs, lays, targets, strict=True):
            row = rows[i]
            if not lay.slots:
                row["kept_order_because"] = lay.fixed_by
                continue
            choices, answer, order = reorder(row["choices"], lay, target, rng_for(seed, str(row["id"])))
            row["choices"], row["answer"] = choices, answer
            row["option_order"], row["balance_seed"] = order, seed
            for key in ("question", "explanation"):
                if isinstance(row.get(key), str):
                    row[key] = relabel(row[key], order)
        stats[task] = position_stats(
            [int(rows[i]["answer"]) for i in idxs], [len(rows[i]["choices"]) for i in idxs]
        )
    return {"seed": seed, "answer_positions": json.loads(json.dumps(stats))}

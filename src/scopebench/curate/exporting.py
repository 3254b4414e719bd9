"""``build export``: the ``local`` format (docs/local-format.md) and a Hugging Face dataset.

``OUT/local/data.jsonl`` holds one multiple-choice item per question (all splits, a ``split``
column), ``OUT/local/test_tiny.jsonl`` the ``test_tiny`` items, ``OUT/local/images/<image_id>.png``
the images; ``scopebench run --bench local --data OUT/local`` evaluates it as it is. ``OUT/hf`` is
the split dataset (μ-Bench schema, ``save_to_disk`` + Parquet shards + card), ready for
``push_to_hub`` or ``scopebench run --bench ubench --data OUT/hf``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from scopebench.curate.filtering.step import STATS_FILE, card_sections
from scopebench.curate.output import (
    MARKER,
    _sha256,
    prepare_out,
    read_inputs,
    read_rows,
    write_card,
    write_summary,
)
from scopebench.curate.report import StepResult

__all__ = ["export", "local_items"]

STEP = "export"
_META = ("image_id", "dup_group", "label_name", "modality", "submodality", "domain", "subdomain", "stain",
         "ncbitaxon_id", "license", "source_path", "pixel_md5")  # fmt: skip


def local_items(row: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``local``-format items of one dataset row.

    One per question, in task order, then one per generated multiple-choice item (``build
    generate``) with its explanation and provenance.
    """
    items = []
    captions = row.get("captions") or {}
    for task, q in (row.get("questions") or {}).items():
        if not q:
            continue
        item = {
            "id": f"{row['image_id']}-{task}",
            "question": q["question"],
            "choices": list(q["options"]),
            "answer": int(q["answer_idx"]),
            "image": f"images/{row['image_id']}.png",
            "task": task,
            "subset": row["dataset"],
            "split": row["split"],
            "question_id": q["id"],
        }
        cap = captions.get(f"{task}_0")
        if cap and len(cap["options"]) == len(q["options"]):
            item["captions"] = list(cap["options"])
        item.update({k: row.get(k) for k in _META if row.get(k) is not None})
        items.append(item)
    for g in row.get("generated") or []:
        if g.get("kind") != "mcq":
            continue  # descriptions are inputs of other items, not questions
        item = {
            "id": g["id"],
            "question": g["question"],
            "choices": list(g["options"]),
            "answer": int(g["answer_idx"]),
            "image": f"images/{row['image_id']}.png",
            "task": g["task"],
            "subset": row["dataset"],
            "split": row["split"],
            "question_id": g["id"],
            # PathMMU keeps an explanation per item; the provenance says who wrote it and how.
            "explanation": g.get("explanation") or "",
            "generated_by": g.get("model"),
            "generation_seed": g.get("seed"),
            "generation_attempt": g.get("attempt"),
        }
        item.update({k: row.get(k) for k in _META if row.get(k) is not None})
        items.append(item)
    return items


def export(data: str | Path, out: str | Path, *, progress: bool = False) -> StepResult:
    """Export a split (or questions) output to ``out/local`` and ``out/hf``.

    Returns:
        Images in (``items_in``) and images written; images without questions are counted as
        dropped (``no_questions``) and kept in the HF dataset.
    """
    from tqdm import tqdm

    data, out = Path(data), Path(out)
    splits, _ = read_rows(data)
    prepare_out(out)
    local = out / "local"
    (local / "images").mkdir(parents=True)
    result = StepResult(STEP, out=str(out))
    main: list[dict[str, Any]] = []
    tiny: list[dict[str, Any]] = []
    todo = [(name, r) for name, rows in splits.items() for r in rows]
    cats = _panel_categories(data)
    for name, r in tqdm(todo, desc="export", unit="img", disable=not progress):
        items = [
            {**i, "panel_category": cats[r["image_id"]]} if r["image_id"] in cats else i
            for i in local_items(r)
        ]
        if name == "test_tiny":
            tiny += [{**i, "split": "test"} for i in items]
            continue
        result.items_in += 1
        if not items:
            result.dropped["no_questions"] += 1
            continue
        (local / "images" / f"{r['image_id']}.png").write_bytes(r["image"]["bytes"])
        main += items
    result.kept = result.items_in - sum(result.dropped.values())
    for path, items in ((local / "data.jsonl"), main), ((local / "test_tiny.jsonl"), tiny):
        if items or path.name == "data.jsonl":
            path.write_text(
                "".join(json.dumps(i, ensure_ascii=False) + "\n" for i in items), encoding="utf-8"
            )
    shutil.copytree(data, out / "hf", ignore=shutil.ignore_patterns(MARKER, "problems.jsonl"))
    result.stats = {"local_items": len(main), "test_tiny_items": len(tiny)}
    write_summary(out, result)
    rows = [r for name, rs in splits.items() if name != "test_tiny" for r in rs]
    write_card(
        out / "hf",
        title=f"{data.name} export",
        description="",
        rows=rows,
        sources=json.loads((data / "sources.json").read_text(encoding="utf-8"))
        if (data / "sources.json").is_file()
        else [],
        result=result,
        inputs={"previous build.json": str(data / "build.json")},
        extra=_card_extra(data, local),
    )
    return result


def _panel_categories(data: Path) -> dict[str, str]:
    """image_id → panel category, when ``build filter`` categorised the panels (else empty)."""
    path = data / STATS_FILE
    stats = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    return dict((stats.get("categories") or {}).get("per_image") or {})


def _card_extra(data: Path, local: Path) -> list[str]:
    """The exported card's statistics and checksums beyond the HF folder's own files.

    The filter step's statistics (blind accuracies, RefineBot codes, quotas) when the build ran it;
    the SHA-256 of the ingest inputs (manifest, metadata tables) as recorded at ingest; and the
    SHA-256 of every file of the ``local`` export.
    """
    lines: list[str] = []
    if (data / STATS_FILE).is_file():
        lines += card_sections(json.loads((data / STATS_FILE).read_text(encoding="utf-8")))
    lines += ["## Checksums of the build inputs and the local export (SHA-256)", ""]
    lines += ["| file | sha256 |", "|---|---|"]
    for role, rec in read_inputs(data).items():
        lines.append(f"| ingest input {role}: {rec['file']} | {rec['sha256']} |")
    for path in sorted(p for p in local.rglob("*") if p.is_file()):
        lines.append(f"| local/{path.relative_to(local).as_posix()} | {_sha256(path)} |")
    return [*lines, ""]

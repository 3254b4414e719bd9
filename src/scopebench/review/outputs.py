"""What comes out of a review project.

The accepted dataset, the decision log, the events, and the experts' first answers as ordinary run
directories (``human:<group>``).
"""

from __future__ import annotations

import json
import platform
import shutil
import time
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from scopebench.benchmarks.local import ITEM_COLUMNS
from scopebench.engine.provenance import package_versions  # the same provenance fields as a run
from scopebench.items import Item, Record
from scopebench.parsing import PARSER_VERSION
from scopebench.review.cognition import balance_rows
from scopebench.review.db import Arbitration, Event, ImageRow, ItemRow, ItemVersion, Member, Project, User
from scopebench.review.errors import Conflict
from scopebench.review.stats import agreement, gate, review_rows
from scopebench.review.store import ImageStore
from scopebench.store.rundir import CONFIG_FILE, RECORDS_JSONL, STORE_FILE
from scopebench.store.runstore import RunStore

__all__ = ["export_project", "write_baseline"]

_EXT = {
    "image/png": ".png",
    "image/jpeg": ".jpg",
    "image/tiff": ".tif",
    "image/gif": ".gif",
    "image/webp": ".webp",
    "image/bmp": ".bmp",
}

# Columns the local format reads itself; item metadata with these names would be misread.
_RESERVED = ITEM_COLUMNS | {"class_name", "review"}


def _people(db: Session) -> dict[int, str]:
    return dict(db.execute(select(User.id, User.pseudonym)).all())


def _provenance(db: Session, project: Project) -> dict[int, dict[str, Any]]:
    """Per item id: reviews (pseudonymous), arbitration and edits."""
    who = _people(db)
    groups = dict(
        db.execute(select(Member.user_id, Member.group).where(Member.project_id == project.id)).all()
    )
    out: dict[int, dict[str, Any]] = {}
    for it, a, ans, r, u in review_rows(db, project):
        rev: dict[str, Any] = {"reviewer": u.pseudonym, "group": groups.get(u.id), "status": a.status}
        if ans is not None:
            rev |= {
                "answer": ans.choice,
                "correct_vs_loaded_key": ans.choice == it.original.get("answer_index"),
                "confidence": ans.confidence,
                "seconds": round(ans.seconds, 3),
                "answered_version": ans.item_version,
                "answered_at": ans.submitted_at.isoformat(),
            }
        if r is not None:
            rev |= {
                "scores": r.scores,
                "verdicts": r.verdicts,
                "decision": r.decision,
                "reasons": r.reasons,
                "comment": r.comment,
            }
        out.setdefault(it.id, {"reviews": []})["reviews"].append(rev)
    for arb in db.scalars(
        select(Arbitration)
        .join(ItemRow, ItemRow.id == Arbitration.item_id)
        .where(ItemRow.project_id == project.id)
    ).all():
        out.setdefault(arb.item_id, {"reviews": []})["arbitration"] = {
            "by": who.get(arb.senior_id),
            "decision": arb.decision,
            "reason": arb.reason,
            "routed_reasons": arb.routed_reasons,
            "at": arb.created_at.isoformat(),
        }
    for v in db.scalars(
        select(ItemVersion)
        .join(ItemRow, ItemRow.id == ItemVersion.item_id)
        .where(ItemRow.project_id == project.id, ItemVersion.version > 1)
        .order_by(ItemVersion.version)
    ).all():
        out.setdefault(v.item_id, {"reviews": []}).setdefault("edits", []).append(
            {
                "version": v.version,
                "by": who.get(v.editor_id) if v.editor_id else None,
                "reason": v.reason,
                "at": v.created_at.isoformat(),
                "data": v.data,
            }
        )
    return out


def _local_id(key: str) -> str:
    return key.removeprefix("local/")


def _item_row(it: ItemRow, images: list[str], prov: dict[str, Any]) -> dict[str, Any]:
    row: dict[str, Any] = {k: v for k, v in it.meta.items() if k not in _RESERVED}
    row |= {
        "id": _local_id(it.key),
        "question": it.question,
        "choices": list(it.choices),
        "answer": it.answer_index,
        "task": it.task,
        "split": it.split,
    }
    if it.subset is not None:
        row["subset"] = it.subset
    if it.context:
        row["context"] = it.context
    if images:
        row["images"] = images
    row["review"] = {
        "status": it.status,
        "source_id": it.key,
        "version": it.version,
        "routed_reasons": list(it.routed_reasons),
        "arbitration": prov.get("arbitration"),
        "edits": prov.get("edits", []),
        "reviews": prov.get("reviews", []),
    }
    return row


def export_project(
    db: Session,
    store: ImageStore,
    project: Project,
    out_dir: Path,
    *,
    force: bool = False,
    resamples: int = 1000,
    hf: bool = True,
    balance_seed: int | None = None,
) -> dict[str, Any]:
    """Write the accepted items and the review's record into ``out_dir``.

    With ``balance_seed``, the accepted items' answers are placed so each task's letters are
    balanced (:func:`scopebench.review.cognition.balance_rows`; μ-Bench's last step, A–F for its
    six-option cognition items); ``summary.json`` records the seed and the letter counts.

    Files: ``data.jsonl`` (local format, images under ``images/``; each row's ``review`` column
    holds its provenance), ``hf/`` (a Hugging Face dataset, ``datasets.load_from_disk``),
    ``decisions.jsonl`` (rejected items with reasons), ``pending.jsonl`` (items not decided yet),
    ``events.jsonl`` (every review event), ``agreement.json`` and ``summary.json``.

    Raises:
        Conflict: When the release gate fails (α below the project's threshold) and not ``force``.
    """
    agree = agreement(db, project, resamples=resamples)
    ok, failing = gate(project, agree)
    if not ok and not force:
        raise Conflict(
            f"release gate: Krippendorff's α is below the project's threshold {project.alpha_threshold} "
            f"({'; '.join(failing)}); review more, or pass --force to export anyway (recorded)"
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "images").mkdir(exist_ok=True)
    mime_of = dict(
        db.execute(select(ImageRow.sha256, ImageRow.mime).where(ImageRow.project_id == project.id)).all()
    )
    prov = _provenance(db, project)
    items = db.scalars(
        select(ItemRow).where(ItemRow.project_id == project.id).order_by(ItemRow.position)
    ).all()
    accepted: list[dict[str, Any]] = []
    rejected: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []
    for it in items:
        names = []
        if it.status == "accepted":
            for sha in it.image_shas:
                name = f"images/{sha}{_EXT.get(mime_of.get(sha, ''), '')}"
                if not (out_dir / name).exists():
                    shutil.copyfile(store.path(sha), out_dir / name)
                names.append(name)
        row = _item_row(it, names, prov.get(it.id, {}))
        {"accepted": accepted, "rejected": rejected}.get(it.status, pending).append(row)
    balance = None
    if balance_seed is not None:
        balance = balance_rows(accepted, balance_seed)
    _jsonl(out_dir / "data.jsonl", accepted)
    _jsonl(
        out_dir / "decisions.jsonl",
        [
            {
                "id": r["id"],
                "question": r["question"],
                "choices": r["choices"],
                "answer": r["answer"],
                "decision": "rejected",
                "reasons": _reasons(r["review"]),
                "review": r["review"],
            }
            for r in rejected
        ],
    )
    _jsonl(
        out_dir / "pending.jsonl",
        [{"id": r["id"], "status": r["review"]["status"], "review": r["review"]} for r in pending],
    )
    _jsonl(out_dir / "events.jsonl", _events(db, project))
    (out_dir / "agreement.json").write_text(json.dumps(agree, indent=2), encoding="utf-8")
    summary = {
        "project": project.name,
        "benchmark": project.benchmark,
        "data": project.data,
        "data_fingerprint": project.data_fingerprint,
        "rubric": project.rubric,
        "n_reviewers": project.n_reviewers,
        "seed": project.seed,
        "resamples": resamples,
        "accepted": len(accepted),
        "rejected": len(rejected),
        "pending": len(pending),
        "gate": {
            "threshold": project.alpha_threshold,
            "passes": ok,
            "failing": failing,
            "forced": bool(force and not ok),
        },
        "balance": balance,
        "exported_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    if hf:
        _write_hf(out_dir, accepted)
    return summary


def _reasons(review: dict[str, Any]) -> list[str]:
    arb = review.get("arbitration")
    if arb:
        return [f"senior {arb['by']}: {arb['reason']}", *arb.get("routed_reasons", [])]
    return ["all reviewers: " + ", ".join(review.get("routed_reasons") or ["dropped"])]


def _events(db: Session, project: Project) -> list[dict[str, Any]]:
    who = _people(db)
    keys = dict(db.execute(select(ItemRow.id, ItemRow.key).where(ItemRow.project_id == project.id)).all())
    rows = db.scalars(select(Event).where(Event.project_id == project.id).order_by(Event.id)).all()
    return [
        {
            "at": e.created_at.isoformat(),
            "who": who.get(e.user_id) if e.user_id else None,
            "event": e.kind,
            "item": keys.get(e.item_id) if e.item_id else None,
            "details": e.payload,
        }
        for e in rows
    ]


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


def _write_hf(out_dir: Path, rows: list[dict[str, Any]]) -> None:
    import datasets

    table = {
        "id": [r["id"] for r in rows],
        "question": [r["question"] for r in rows],
        "choices": [r["choices"] for r in rows],
        "answer": [r["answer"] for r in rows],
        "task": [r["task"] for r in rows],
        "split": [r["split"] for r in rows],
        "context": [r.get("context") for r in rows],
        "images": [[str(out_dir / p) for p in r.get("images", [])] for r in rows],
        "review": [json.dumps(r["review"], ensure_ascii=False) for r in rows],
    }
    features = datasets.Features(
        {
            "id": datasets.Value("string"),
            "question": datasets.Value("string"),
            "choices": datasets.Sequence(datasets.Value("string")),
            "answer": datasets.Value("int64"),
            "task": datasets.Value("string"),
            "split": datasets.Value("string"),
            "context": datasets.Value("string"),
            "images": datasets.Sequence(datasets.Image()),
            "review": datasets.Value("string"),
        }
    )
    datasets.Dataset.from_dict(table, features=features).save_to_disk(str(out_dir / "hf"))


def write_baseline(db: Session, project: Project, out_dir: Path, *, seed: int = 0) -> dict[str, Path]:
    """Write the experts' first answers as one run directory per reviewer group (``human:<group>``).

    Each item is scored against the key it was loaded with (what model runs on the same data are
    scored against), so ``compare`` pairs the experts with models item by item. When a group gave
    several answers to one item, the earliest is its record (the others are in ``extra``). Items
    the group has not answered are ``missing_response`` records (``--policy exclude`` leaves them
    out). ``extra`` holds the reviewer pseudonym, confidence, seconds, the item's review status and
    whether the answer matches the final key, which separates "the expert was wrong" from "the
    item is wrong".
    """
    groups = dict(
        db.execute(select(Member.user_id, Member.group).where(Member.project_id == project.id)).all()
    )
    items = db.scalars(
        select(ItemRow).where(ItemRow.project_id == project.id).order_by(ItemRow.position)
    ).all()
    answers: dict[str, dict[int, list[tuple[Any, ...]]]] = {}
    for it, _a, ans, r, u in review_rows(db, project):
        if ans is not None:
            answers.setdefault(groups.get(u.id, "ungrouped"), {}).setdefault(it.id, []).append((ans, r, u))
    if not answers:
        raise Conflict(
            f"no reviewer of project {project.name!r} has answered yet; there is no baseline to write"
        )
    out: dict[str, Path] = {}
    for group, by_item in sorted(answers.items()):
        run_dir = out_dir / group
        run_dir.mkdir(parents=True, exist_ok=True)
        for name in (STORE_FILE, STORE_FILE + "-wal", STORE_FILE + "-shm"):
            (run_dir / name).unlink(missing_ok=True)  # a baseline is rewritten whole
        records = [_record(it, by_item.get(it.id, []), f"human:{group}") for it in items]
        reviewers = sorted({u.pseudonym for lst in by_item.values() for _, _, u in lst})
        config: dict[str, Any] = {
            "benchmark": project.benchmark,
            "data": project.data,
            "data_fingerprint": project.data_fingerprint,
            "split": project.split,
            "limit": None,
            "exclude_fingerprint": None,
            "transform": None,
            "strategy": None,
            "seed": seed,
            "model": f"human:{group}",
            "model_identity": {
                "spec": f"human:{group}",
                "mode": "human",
                "reviewers": reviewers,
                "review_project": project.name,
            },
            "protocol": "human",
            "mode": "human",
            "no_image": False,
            "batch_size": None,
            "parser_version": PARSER_VERSION,
            "scopebench_version": package_versions().get("scopebench", "unknown"),
            "packages": dict(package_versions()),
            "device": "human",
            "platform": platform.platform(),
            "python": platform.python_version(),
            "n_items": len(items),
            "unusable_records": [],
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        (run_dir / CONFIG_FILE).write_text(json.dumps(config, indent=2, sort_keys=True), encoding="utf-8")
        with RunStore(run_dir / STORE_FILE) as store:
            store.add_items(_as_item(project, it) for it in items)
            store.add(records)
            store.export_jsonl(run_dir / RECORDS_JSONL)
        out[group] = run_dir
    return out


def _record(it: ItemRow, given: list[tuple[Any, ...]], model: str) -> Record:
    key = it.original.get("answer_index")
    rec = Record(
        item_id=it.key,
        model=model,
        status="missing_response",
        task=it.task,
        subset=it.subset,
        split=it.split,
        answer_index=key,
    )
    if not given:
        rec.error = "no reviewer of this group has answered this item yet"
        rec.extra = {"item_status": it.status}
        return rec
    given = sorted(given, key=lambda t: t[0].submitted_at)
    ans, rating, user = given[0]
    rec.status, rec.choice, rec.correct = "ok", ans.choice, ans.choice == key
    rec.extra = {
        "reviewer": user.pseudonym,
        "confidence": ans.confidence,
        "seconds": round(ans.seconds, 3),
        "answered_version": ans.item_version,
        "item_status": it.status,
        "item_routed_reasons": list(it.routed_reasons),
        "rating_decision": None if rating is None else rating.decision,
        "correct_vs_final_key": ans.choice == it.answer_index,
        "other_answers": [{"reviewer": u.pseudonym, "choice": a.choice} for a, _, u in given[1:]],
    }
    return rec


def _as_item(project: Project, it: ItemRow) -> Item:
    o = it.original
    return Item(
        id=it.key,
        benchmark=project.benchmark,
        split=it.split,
        task=it.task,
        subset=it.subset,
        question=o.get("question", it.question),
        choices=tuple(o.get("choices", it.choices)),
        answer_index=o.get("answer_index"),
        context=o.get("context"),
        metadata=dict(o.get("metadata", {})),
    )

"""Projects: loading a benchmark for review, members and balanced assignment."""

from __future__ import annotations

import io
import logging
import random
from collections import Counter
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from scopebench.benchmarks import get_benchmark
from scopebench.errors import ImageLoadError, ScopebenchError
from scopebench.items import ImageRef, Item
from scopebench.review.accounts import log_event
from scopebench.review.db import Assignment, ImageRow, ItemRow, ItemVersion, Member, Project, User
from scopebench.review.errors import Conflict, Invalid, NotFound
from scopebench.review.rubrics import Rubric
from scopebench.review.sampling import sample_items
from scopebench.review.store import ImageStore

__all__ = ["add_member", "assign", "create_project", "item_text", "reviewing_roles"]

log = logging.getLogger(__name__)


def item_text(row: ItemRow) -> dict[str, Any]:
    """The editable text of an item (what an :class:`ItemVersion` keeps)."""
    return {
        "question": row.question,
        "choices": list(row.choices),
        "answer_index": row.answer_index,
        "context": row.context,
    }


def _image_bytes(ref: ImageRef) -> bytes:
    if ref.data is not None:
        return ref.data
    if ref.path is not None:
        return ref.path.read_bytes()
    got = ref.load() if ref.loader is None else ref.loader()
    if isinstance(got, bytes):
        return got
    buf = io.BytesIO()
    got.save(buf, format="PNG")
    return buf.getvalue()


def _store_images(
    db: Session, store: ImageStore, project: Project, item: Item
) -> tuple[list[str], list[str]]:
    shas, problems = [], []
    for ref in item.images:
        try:
            info = store.put(_image_bytes(ref), f"image {ref.describe()} of {item.id}")
        except (OSError, ImageLoadError, ScopebenchError) as exc:
            problems.append(f"image {ref.describe()}: {exc}")
            continue
        shas.append(info.sha256)
        exists = db.scalar(
            select(ImageRow).where(ImageRow.project_id == project.id, ImageRow.sha256 == info.sha256)
        )
        if exists is None:
            db.add(
                ImageRow(
                    project_id=project.id,
                    sha256=info.sha256,
                    mime=info.mime,
                    width=info.width,
                    height=info.height,
                    nbytes=info.nbytes,
                )
            )
            db.flush()
    return shas, problems


def create_project(
    db: Session,
    store: ImageStore,
    *,
    name: str,
    benchmark: str,
    data: str,
    rubric: Rubric,
    split: str | None = None,
    limit: int | None = None,
    n_reviewers: int = 2,
    seed: int = 0,
    alpha_threshold: float | None = None,
    seniors_review: bool = False,
) -> tuple[Project, list[str]]:
    """Load a benchmark with its registered loader and copy its items and images into a project.

    Returns:
        The project and the problems found (loader problems, detection items left out, images
        that could not be copied); each is also in the project's event log.

    Raises:
        Conflict: When a project of that name exists.
        Invalid: For bad settings or a benchmark without multiple-choice items.
    """
    _check_settings(db, name, n_reviewers, alpha_threshold)
    loaded = get_benchmark(benchmark).load(data, split=split)
    items = list(loaded.items)
    problems = [f"loader: {p}" for p in loaded.problems]
    skipped = [it.id for it in items if it.kind != "mcq"]
    if skipped:
        problems.append(f"{len(skipped)} detection item(s) are not reviewed here (no options): {skipped[:5]}")
    mcq = [it for it in items if it.kind == "mcq"]
    if not mcq:
        raise Invalid(f"{benchmark} at {data} has no multiple-choice items to review")
    sample = None
    if limit is not None:  # a stratified sample, never the head of a file sorted by task or image
        mcq, sample = sample_items(mcq, limit, seed)
    project = Project(
        name=name,
        benchmark=benchmark,
        data=data,
        split=split,
        seed=seed,
        data_fingerprint=loaded.fingerprint,
        rubric=rubric.to_dict(),
        n_reviewers=n_reviewers,
        alpha_threshold=alpha_threshold,
        seniors_review=seniors_review,
    )
    db.add(project)
    db.flush()
    for pos, item in enumerate(mcq):
        problems.extend(_add_item(db, store, project, pos, item))
    log_event(
        db,
        project.id,
        "project_created",
        {
            "benchmark": benchmark,
            "data": data,
            "split": split,
            "limit": limit,
            "sample": sample,
            "items": len(mcq),
            "data_fingerprint": loaded.fingerprint,
            "rubric": rubric.name,
            "n_reviewers": n_reviewers,
            "seed": seed,
            "alpha_threshold": alpha_threshold,
            "seniors_review": seniors_review,
            "problems": problems,
        },
    )
    return project, problems


def _check_settings(db: Session, name: str, n_reviewers: int, alpha_threshold: float | None) -> None:
    """Refuse a taken project name or settings out of range, before anything is loaded."""
    if db.scalar(select(Project).where(Project.name == name)) is not None:
        raise Conflict(f"a project named {name!r} exists already; choose another --name")
    if n_reviewers < 1:
        raise Invalid(f"--reviewers must be at least 1 (got {n_reviewers})")
    if alpha_threshold is not None and not -1.0 <= alpha_threshold <= 1.0:
        raise Invalid(f"--alpha-threshold must be between -1 and 1 (got {alpha_threshold})")


def _add_item(db: Session, store: ImageStore, project: Project, pos: int, item: Item) -> list[str]:
    """Copy ``item`` and its images into ``project`` as its first version; returns the image problems."""
    shas, image_problems = _store_images(db, store, project, item)
    row = ItemRow(
        project_id=project.id,
        key=item.id,
        position=pos,
        version=1,
        question=item.question,
        choices=list(item.choices),
        answer_index=item.answer_index,
        context=item.context,
        task=item.task,
        subset=item.subset,
        split=item.split,
        meta=_json_safe(item.metadata),
        image_shas=shas,
        original=_json_safe(item.to_summary()),
        status="open",
        routed_reasons=[],
    )
    db.add(row)
    db.flush()
    db.add(ItemVersion(item_id=row.id, version=1, data=item_text(row), reason="loaded at init"))
    return image_problems


def _json_safe(value: Any) -> Any:
    import json

    return json.loads(json.dumps(value, default=str))


def add_member(
    db: Session, project: Project, user: User, group: str = "experts", *, actor: User | None = None
) -> Member:
    """Make ``user`` a member of ``project`` in reviewer ``group`` (updates the group if a member)."""
    if not group.replace("-", "").replace("_", "").isalnum():
        raise Invalid(f"a group name is letters, digits, - and _ (got {group!r}); it names a run folder")
    member = db.scalar(select(Member).where(Member.project_id == project.id, Member.user_id == user.id))
    if member is None:
        member = Member(project_id=project.id, user_id=user.id, group=group)
        db.add(member)
    else:
        member.group = group
    log_event(
        db,
        project.id,
        "member_added",
        {"user": user.pseudonym, "role": user.role, "group": group},
        user=actor,
    )
    return member


def reviewing_roles(project: Project) -> tuple[str, ...]:
    """The roles that take first-line reviews in ``project``."""
    return ("reviewer", "senior") if project.seniors_review else ("reviewer",)


def assign(db: Session, project: Project, *, actor: User | None = None) -> int:
    """Fill every item's open reviewer slots (up to ``n_reviewers``), balanced across reviewers.

    Reviewers are the project's members with role ``reviewer`` (and ``senior`` where the project
    was created with ``seniors_review``: otherwise seniors arbitrate, and a senior who reviewed an
    item could not arbitrate it). Each slot goes to
    an eligible reviewer (not already on the item) from a group not yet on the item when there is
    one (so each group's baseline covers the items), then with the fewest assignments; ties are
    broken by a shuffle seeded with the project's seed. With groups of equal size (or one group)
    loads differ by at most one.

    Returns:
        The number of new assignments.

    Raises:
        Invalid: When the project has fewer reviewers than ``n_reviewers``.
    """
    roles = reviewing_roles(project)
    rows = db.execute(
        select(Member, User)
        .join(User, User.id == Member.user_id)
        .where(Member.project_id == project.id, User.role.in_(roles), User.active.is_(True))
    ).all()
    if len(rows) < project.n_reviewers:
        seniors = "" if project.seniors_review else " (seniors arbitrate and are not counted)"
        raise Invalid(
            f"project {project.name!r} needs {project.n_reviewers} reviewers per item but has "
            f"{len(rows)} members with the role {' or '.join(roles)}{seniors}; add reviewers first "
            "(scopebench review user NAME --role reviewer, then scopebench review member)"
        )
    group_of = {u.id: m.group for m, u in rows}
    order = sorted(group_of)
    random.Random(project.seed).shuffle(order)
    rank = {uid: k for k, uid in enumerate(order)}
    load: Counter[int] = Counter({uid: 0 for uid in order})
    counts = db.execute(
        select(Assignment.user_id, func.count())
        .join(ItemRow, ItemRow.id == Assignment.item_id)
        .where(ItemRow.project_id == project.id)
        .group_by(Assignment.user_id)
    ).all()
    for uid, n in counts:
        if uid in load:
            load[uid] = n
    items = db.scalars(
        select(ItemRow).where(ItemRow.project_id == project.id).order_by(ItemRow.position)
    ).all()
    have: dict[int, set[int]] = {}
    for item_id, uid in db.execute(
        select(Assignment.item_id, Assignment.user_id)
        .join(ItemRow, ItemRow.id == Assignment.item_id)
        .where(ItemRow.project_id == project.id)
    ).all():
        have.setdefault(item_id, set()).add(uid)
    new = 0
    for item in items:
        on = have.setdefault(item.id, set())
        while len(on) < project.n_reviewers:
            groups_on = {group_of.get(u) for u in on}
            pick = min(
                (u for u in order if u not in on), key=lambda u: (group_of[u] in groups_on, load[u], rank[u])
            )
            db.add(Assignment(item_id=item.id, user_id=pick, status="assigned"))
            on.add(pick)
            load[pick] += 1
            new += 1
    log_event(
        db,
        project.id,
        "assigned",
        {"new_assignments": new, "seed": project.seed, "load": {str(k): v for k, v in load.items()}},
        user=actor,
    )
    return new


def get_item(db: Session, project: Project, item_id: int) -> ItemRow:
    """An item of ``project``.

    Raises:
        NotFound: When the project has no such item.
    """
    item = db.get(ItemRow, item_id)
    if item is None or item.project_id != project.id:
        raise NotFound(f"no item {item_id} in project {project.id}")
    return item

"""What the pages need to move a reviewer through hours of work: progress, neighbours, image sources.

Read-only helpers of the page routes: the reviewer's progress (done / assigned), the previous and
next item of their queue, the next item still to do after a submit, and how the item viewer loads
each image (one file, or DZI tiles for large or browser-unreadable ones, see :mod:`.tiles`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from scopebench.review.db import Assignment, ImageRow, ItemRow, User
from scopebench.review.tiles import needs_tiles

__all__ = ["image_sources", "neighbours", "next_todo", "progress"]


def progress(db: Session, user: User, project_id: int | None) -> dict[str, int]:
    """The user's assignments in a project (all their projects when ``None``) by stage.

    ``done`` counts rated items (answer and rating stored: nothing left to do), ``answered`` those
    with an answer (rated or not), ``assigned`` every assignment.
    """
    q = (
        select(Assignment.status, func.count())
        .join(ItemRow, ItemRow.id == Assignment.item_id)
        .where(Assignment.user_id == user.id)
        .group_by(Assignment.status)
    )
    if project_id is not None:
        q = q.where(ItemRow.project_id == project_id)
    counts: dict[str, int] = {str(s): int(n) for s, n in db.execute(q).all()}
    rated = counts.get("rated", 0)
    return {
        "done": rated,
        "answered": rated + counts.get("answered", 0),
        "assigned": sum(counts.values()),
    }


def neighbours(queue: Sequence[dict[str, Any]], assignment_id: int) -> dict[str, int | None]:
    """The previous and next assignment in queue order (``None`` at either end) and the position."""
    ids = [int(q["assignment_id"]) for q in queue]
    i = ids.index(assignment_id)
    return {
        "prev": ids[i - 1] if i > 0 else None,
        "next": ids[i + 1] if i + 1 < len(ids) else None,
        "position": i + 1,
        "total": len(ids),
    }


def next_todo(queue: Sequence[dict[str, Any]], after: int | None = None) -> int | None:
    """The first unfinished assignment after ``after`` in queue order, wrapping round; ``None``: all done.

    Unfinished means not yet answered or answered but not rated: after a rating the reviewer goes on
    to the next item they still owe something, skipping those done (e.g. on another device).
    """
    ids = [int(q["assignment_id"]) for q in queue]
    start = ids.index(after) + 1 if after in ids else 0
    for q in [*queue[start:], *queue[:start]]:
        if q["status"] != "rated" and q["assignment_id"] != after:
            return int(q["assignment_id"])
    return None


def image_sources(db: Session, project_id: int, shas: Sequence[str]) -> list[dict[str, Any]]:
    """How the viewer loads each image of an item, in the item's order.

    Each entry has ``kind`` (``image``: the file as it is; ``dzi``: a tile pyramid), ``source`` (the
    URL OpenSeadragon opens), ``full`` (the original file), ``mime``, ``width`` and ``height``.
    """
    rows = {
        r.sha256: r
        for r in db.scalars(
            select(ImageRow).where(ImageRow.project_id == project_id, ImageRow.sha256.in_(list(shas)))
        ).all()
    }
    out = []
    for sha in shas:
        full = f"/api/projects/{project_id}/images/{sha}"
        row = rows.get(sha)
        tiled = row is not None and needs_tiles(row.mime, row.width, row.height)
        out.append(
            {
                "sha": sha,
                "kind": "dzi" if tiled else "image",
                "source": f"/projects/{project_id}/tiles/{sha}.dzi" if tiled else full,
                "full": full,
                "mime": row.mime if row else None,
                "width": row.width if row else None,
                "height": row.height if row else None,
            }
        )
    return out

"""The review protocol: answer first (blind, timed, with confidence), then judge, then arbitrate.

Every function takes the acting user and refuses what their role or membership does not allow;
the web pages and the JSON API both call these, so both enforce the same rules.
"""

from __future__ import annotations

import random
import string
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from scopebench.review.accounts import (
    check_senior,
    log_event,
    not_found,
    require_not_reviewer_of,
    require_nothing_pending,
    require_project,
)
from scopebench.review.db import (
    Answer,
    Arbitration,
    Assignment,
    ItemRow,
    ItemVersion,
    Project,
    Rating,
    User,
    utcnow,
)
from scopebench.review.errors import Conflict, Invalid
from scopebench.review.projects import item_text
from scopebench.review.rubrics import Rubric

__all__ = [
    "answer",
    "arbitrate",
    "arbitration_queue",
    "arbitration_view",
    "edit_item",
    "item_versions",
    "my_queue",
    "open_assignment",
    "rate",
]


def _assignment(db: Session, user: User, assignment_id: int) -> tuple[Assignment, ItemRow, Project]:
    """The user's own assignment (anyone else's is 'not found', never 'forbidden')."""
    a = db.get(Assignment, assignment_id)
    if a is None or a.user_id != user.id:
        raise not_found(f"assignment {assignment_id}")
    item = db.get(ItemRow, a.item_id)
    assert item is not None  # foreign key
    project = require_project(db, user, item.project_id)
    return a, item, project


def blind_view(item: ItemRow) -> dict[str, Any]:
    """What a reviewer sees before answering: no key, no other reviewer's anything."""
    return {
        "item_id": item.id,
        "key": item.key,
        "version": item.version,
        "question": item.question,
        "choices": list(item.choices),
        "context": item.context,
        "task": item.task,
        "images": list(item.image_shas),
        # Images the benchmark names but init could not copy (a missing file): the page warns,
        # so nobody answers an image question believing it has no image.
        "missing_images": max(0, len(item.original.get("images") or []) - len(item.image_shas)),
    }


def my_queue(db: Session, user: User, project: Project) -> list[dict[str, Any]]:
    """The user's assignments in ``project`` with their status, in item order."""
    rows = db.execute(
        select(Assignment, ItemRow)
        .join(ItemRow, ItemRow.id == Assignment.item_id)
        .where(ItemRow.project_id == project.id, Assignment.user_id == user.id)
        .order_by(ItemRow.position)
    ).all()
    return [
        {
            "assignment_id": a.id,
            "item_id": it.id,
            "key": it.key,
            "status": a.status,
            "question": it.question[:120],
        }
        for a, it in rows
    ]


def open_assignment(db: Session, user: User, assignment_id: int) -> dict[str, Any]:
    """The question for ``assignment_id``; the first opening starts the clock.

    Before the answer is stored the view has no key. After it, the view adds the key, the
    reviewer's own answer and (once rated) their rating — never another reviewer's.
    """
    a, item, project = _assignment(db, user, assignment_id)
    view = blind_view(item) | {
        "assignment_id": a.id,
        "status": a.status,
        "project_id": project.id,
        "rubric": project.rubric,
    }
    if a.status == "assigned":
        if a.shown_at is None:
            a.shown_at = utcnow()
            log_event(db, project.id, "question_opened", {"assignment": a.id}, user=user, item_id=item.id)
        return view
    ans = db.scalar(select(Answer).where(Answer.assignment_id == a.id))
    assert ans is not None
    view |= {"answer_index": item.answer_index, "my_answer": _answer_dict(ans)}
    rating = db.scalar(select(Rating).where(Rating.assignment_id == a.id))
    if rating is not None:
        view["my_rating"] = _rating_dict(rating)
    return view


def _answer_dict(ans: Answer) -> dict[str, Any]:
    return {
        "choice": ans.choice,
        "confidence": ans.confidence,
        "seconds": round(ans.seconds, 3),
        "item_version": ans.item_version,
        "source": ans.source,
        "submitted_at": ans.submitted_at.isoformat(),
    }


def _rating_dict(r: Rating) -> dict[str, Any]:
    return {
        "scores": r.scores,
        "verdicts": r.verdicts,
        "comment": r.comment,
        "decision": r.decision,
        "reasons": r.reasons,
    }


def answer(
    db: Session,
    user: User,
    assignment_id: int,
    choice: Any,
    confidence: Any,
    *,
    source: str = "web",
    seconds: float | None = None,
) -> dict[str, Any]:
    """Store the reviewer's first answer (before the key is shown); returns the view with the key.

    The time taken runs from the first opening of the question to this call (``seconds`` is only
    given by imports that measured it elsewhere, e.g. Label Studio's ``lead_time``).

    Raises:
        Conflict: When the question was never opened, or it was answered already.
        Invalid: For an option or confidence out of range.
    """
    a, item, project = _assignment(db, user, assignment_id)
    if a.status != "assigned":
        raise Conflict("this item is answered already; the first answer is final")
    if seconds is None and a.shown_at is None:
        raise Conflict("open the question first (GET it), so the time taken is measured from there")
    choice_i = _int_in(choice, 0, len(item.choices) - 1, "choice (0-based option index)")
    conf = _int_in(confidence, 1, 5, "confidence")
    taken = seconds if seconds is not None else (utcnow() - a.shown_at).total_seconds()  # type: ignore[operator]
    db.add(
        Answer(
            assignment_id=a.id,
            choice=choice_i,
            confidence=conf,
            seconds=max(0.0, float(taken)),
            item_version=item.version,
            source=source,
        )
    )
    a.status = "answered"
    try:
        db.flush()
    except IntegrityError as exc:  # a second request for the same slot lost the race
        raise Conflict("this item is answered already; the first answer is final") from exc
    log_event(
        db,
        project.id,
        "answered",
        {
            "assignment": a.id,
            "choice": choice_i,
            "confidence": conf,
            "seconds": round(float(taken), 3),
            "item_version": item.version,
            "source": source,
        },
        user=user,
        item_id=item.id,
    )
    return open_assignment(db, user, assignment_id)


def _int_in(value: Any, lo: int, hi: int, what: str) -> int:
    try:
        out = int(value)
    except (TypeError, ValueError):
        raise Invalid(f"{what} must be an integer from {lo} to {hi} (got {value!r})") from None
    if (isinstance(value, float) and value != out) or not lo <= out <= hi:
        raise Invalid(f"{what} must be an integer from {lo} to {hi} (got {value!r})")
    return out


def rate(
    db: Session,
    user: User,
    assignment_id: int,
    scores: dict[str, Any],
    verdicts: dict[str, Any],
    comment: str = "",
    *,
    source: str = "web",
) -> dict[str, Any]:
    """Store the reviewer's rating on the rubric; complete the item when every reviewer has rated.

    Raises:
        Conflict: Before the answer, or a second time.
        Invalid: For values the rubric does not allow.
    """
    a, item, project = _assignment(db, user, assignment_id)
    if a.status == "assigned":
        raise Conflict("answer the question first; the rubric comes after the answer")
    if a.status == "rated":
        raise Conflict("this item is rated already")
    rubric = Rubric.from_dict(project.rubric)
    s, v = rubric.rate(scores, verdicts)
    decision, reasons = rubric.decide(s, v)
    db.add(
        Rating(
            assignment_id=a.id,
            scores=s,
            verdicts=v,
            comment=comment[:5000],
            decision=decision,
            reasons=reasons,
            source=source,
        )
    )
    a.status = "rated"
    try:
        db.flush()
    except IntegrityError as exc:
        raise Conflict("this item is rated already") from exc
    log_event(
        db,
        project.id,
        "rated",
        {
            "assignment": a.id,
            "scores": s,
            "verdicts": v,
            "decision": decision,
            "reasons": reasons,
            "comment": comment[:5000],
            "source": source,
        },
        user=user,
        item_id=item.id,
    )
    _maybe_complete(db, project, item)
    return open_assignment(db, user, assignment_id)


def reviews_of(db: Session, item: ItemRow) -> list[tuple[Assignment, Answer | None, Rating | None, User]]:
    """Every reviewer slot of ``item`` with its answer and rating, in assignment order."""
    rows = db.execute(
        select(Assignment, Answer, Rating, User)
        .join(User, User.id == Assignment.user_id)
        .outerjoin(Answer, Answer.assignment_id == Assignment.id)
        .outerjoin(Rating, Rating.assignment_id == Assignment.id)
        .where(Assignment.item_id == item.id)
        .order_by(Assignment.id)
    ).all()
    return [(a, ans, r, u) for a, ans, r, u in rows]


def _maybe_complete(db: Session, project: Project, item: ItemRow) -> None:
    """Decide the item once ``n_reviewers`` ratings are in: unanimous keep/drop, else a senior."""
    # Lock the item (PostgreSQL; SQLite serialises writers already) so two last ratings arriving
    # together cannot both see the item as incomplete. FOR NO KEY UPDATE (key_share), not FOR
    # UPDATE: this transaction's "rated" event already holds a KEY SHARE lock on the item through
    # its foreign key, as does a concurrent rater's, and FOR UPDATE waiting on each other's KEY
    # SHARE deadlocked. populate_existing reloads the status another rater may have just committed,
    # so an item is decided once, never again by a later rating.
    item = db.scalars(
        select(ItemRow)
        .where(ItemRow.id == item.id)
        .with_for_update(key_share=True)
        .execution_options(populate_existing=True)
    ).one()
    ratings = [r for _, _, r, _ in reviews_of(db, item) if r is not None]
    if item.status != "open" or len(ratings) < project.n_reviewers:
        return
    decisions = [r.decision for r in ratings]
    reasons = sorted({reason for r in ratings for reason in r.reasons})
    if "uncertain" in decisions:
        item.status = "arbitration"
        item.routed_reasons = [
            "a reviewer is uncertain: "
            + ", ".join(x for r in ratings for x in r.reasons if x.endswith("=uncertain"))
        ]
    elif len(set(decisions)) > 1:
        counts = ", ".join(f"{d} ×{decisions.count(d)}" for d in sorted(set(decisions)))
        item.status = "arbitration"
        item.routed_reasons = [f"reviewers disagree ({counts})"] + [f"flagged: {x}" for x in reasons]
    else:
        item.status = "accepted" if decisions[0] == "keep" else "rejected"
        item.routed_reasons = reasons
    log_event(
        db,
        project.id,
        "item_" + item.status if item.status != "arbitration" else "routed_to_senior",
        {"decisions": decisions, "reasons": list(item.routed_reasons)},
        item_id=item.id,
    )


def arbitration_queue(db: Session, user: User, project: Project) -> list[dict[str, Any]]:
    """Items waiting for a senior in ``project``, except those the senior reviewed themselves.

    Raises:
        Forbidden: For a reviewer, or while the user has unanswered items in the project.
    """
    check_senior(user)
    require_nothing_pending(db, user, project, "arbitration")
    items = db.scalars(
        select(ItemRow)
        .where(ItemRow.project_id == project.id, ItemRow.status == "arbitration")
        .order_by(ItemRow.position)
    ).all()
    mine = set(db.scalars(select(Assignment.item_id).where(Assignment.user_id == user.id)).all())
    return [
        {"item_id": it.id, "key": it.key, "question": it.question[:120], "reasons": it.routed_reasons}
        for it in items
        if it.id not in mine
    ]


def _senior_item(db: Session, user: User, item_id: int, what: str) -> tuple[ItemRow, Project]:
    """An item a senior (or admin) may act on (``what``: the action, for the messages).

    Visible to them, nothing of theirs unanswered in its project, and not reviewed by them.
    """
    check_senior(user)
    item = db.get(ItemRow, item_id)
    if item is None:
        raise not_found(f"item {item_id}")
    project = require_project(db, user, item.project_id)
    require_nothing_pending(db, user, project, what)
    require_not_reviewer_of(db, user, item.id, what)
    return item, project


def _arbiter_item(db: Session, user: User, item_id: int) -> tuple[ItemRow, Project]:
    return _senior_item(db, user, item_id, "arbitration")


def arbitration_view(db: Session, user: User, item_id: int) -> dict[str, Any]:
    """The item, its key and every review, labelled Reviewer A, B… (not who gave them).

    The order of the reviews is shuffled with a seed of the project and item, so the label does
    not reveal who answered first either.
    """
    item, project = _arbiter_item(db, user, item_id)
    reviews: list[dict[str, Any]] = []
    for _a, ans, r, _u in reviews_of(db, item):
        reviews.append(
            {
                "answer": None if ans is None else ans.choice,
                "confidence": None if ans is None else ans.confidence,
                "seconds": None if ans is None else round(ans.seconds, 1),
                "rating": None if r is None else _rating_dict(r),
            }
        )
    random.Random(f"{project.seed}:{item.id}").shuffle(reviews)
    for k, rev in enumerate(reviews):
        rev["label"] = f"Reviewer {string.ascii_uppercase[k]}"
    return blind_view(item) | {
        "answer_index": item.answer_index,
        "status": item.status,
        "reasons": list(item.routed_reasons),
        "reviews": reviews,
        "rubric": project.rubric,
        "project_id": project.id,
    }


def arbitrate(
    db: Session, user: User, item_id: int, decision: str, reason: str, edit: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A senior accepts or rejects an item in arbitration (optionally correcting it first).

    Raises:
        Invalid: For another decision, or a rejection without a reason.
        Conflict: When the item is not waiting for arbitration.
    """
    item, project = _arbiter_item(db, user, item_id)
    if decision not in ("accept", "reject"):
        raise Invalid(f"decision must be accept or reject (got {decision!r})")
    if not reason.strip():
        raise Invalid("give the reason for the decision (it goes into the exported decision log)")
    if item.status != "arbitration":
        raise Conflict(f"item {item.id} is {item.status}, not waiting for arbitration")
    if edit:
        edit_item(db, user, item.id, edit, reason=f"arbitration: {reason}")
    db.add(
        Arbitration(
            item_id=item.id,
            senior_id=user.id,
            decision=decision,
            reason=reason,
            routed_reasons=list(item.routed_reasons),
        )
    )
    item.status = "accepted" if decision == "accept" else "rejected"
    log_event(
        db,
        project.id,
        "arbitrated",
        {"decision": decision, "reason": reason, "routed_reasons": list(item.routed_reasons)},
        user=user,
        item_id=item.id,
    )
    return {"item_id": item.id, "status": item.status}


def edit_item(
    db: Session, user: User, item_id: int, changes: dict[str, Any], *, reason: str
) -> dict[str, Any]:
    """Create a new version of an item's text (question, choices, answer, context): who, when, why.

    Raises:
        Forbidden: For a reviewer, a reviewer of this item, or while the user has unanswered items
            in the project.
        Invalid: For unknown fields, no change, or an answer index outside the choices.
    """
    item, project = _senior_item(db, user, item_id, "editing")
    old = item_text(item)
    unknown = set(changes) - set(old)
    if unknown:
        raise Invalid(f"only {sorted(old)} can be edited (got {sorted(unknown)})")
    if not reason.strip():
        raise Invalid("say why the item is edited (the reason is versioned with it)")
    new = old | changes
    if not isinstance(new["question"], str) or not new["question"].strip():
        raise Invalid("the question cannot be empty")
    choices = new["choices"]
    if (
        not isinstance(choices, list)
        or len(choices) < 2
        or not all(isinstance(c, str) and c for c in choices)
    ):
        raise Invalid("choices are a list of at least two non-empty texts")
    new["answer_index"] = _int_in(new["answer_index"], 0, len(choices) - 1, "answer_index")
    if new == old:
        raise Invalid("nothing changed")
    item.question, item.choices, item.answer_index = new["question"], list(choices), new["answer_index"]
    item.context = new["context"]
    item.version += 1
    db.add(ItemVersion(item_id=item.id, version=item.version, data=new, editor_id=user.id, reason=reason))
    diff = {k: {"from": old[k], "to": new[k]} for k in old if old[k] != new[k]}
    log_event(
        db,
        project.id,
        "item_edited",
        {"version": item.version, "changes": diff, "reason": reason},
        user=user,
        item_id=item.id,
    )
    return {"item_id": item.id, "version": item.version, "changes": diff}


def item_versions(db: Session, user: User, item_id: int) -> list[dict[str, Any]]:
    """Every version of an item (who, when, why, and the key).

    For seniors and admins with nothing unanswered in the item's project.

    Raises:
        Forbidden: For a reviewer, or while the user has unanswered items in the project.
        NotFound: For an item the user cannot see.
    """
    check_senior(user)
    item = db.get(ItemRow, item_id)
    if item is None:
        raise not_found(f"item {item_id}")
    project = require_project(db, user, item.project_id)
    require_nothing_pending(db, user, project, "the version history")
    who = dict(db.execute(select(User.id, User.pseudonym)).all())
    rows = db.scalars(select(ItemVersion).where(ItemVersion.item_id == item_id).order_by(ItemVersion.version))
    return [
        {
            "version": v.version,
            "data": v.data,
            "by": who.get(v.editor_id) if v.editor_id else None,
            "reason": v.reason,
            "at": v.created_at.isoformat(),
        }
        for v in rows
    ]

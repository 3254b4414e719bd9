"""The dashboard: progress per reviewer, agreement, flags per criterion, the baseline so far."""

from __future__ import annotations

from collections import Counter
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from scopebench.review.accounts import check_senior, require_nothing_pending
from scopebench.review.agreement import project_agreement
from scopebench.review.db import Answer, Assignment, ItemRow, Member, Project, Rating, User
from scopebench.review.errors import Forbidden
from scopebench.review.rubrics import Rubric

__all__ = ["agreement", "dashboard", "gate", "review_rows"]


def review_rows(
    db: Session, project: Project
) -> list[tuple[ItemRow, Assignment, Answer | None, Rating | None, User]]:
    """Every (item, assignment, answer, rating, reviewer) of the project, in item order."""
    q = (
        select(ItemRow, Assignment, Answer, Rating, User)
        .join(Assignment, Assignment.item_id == ItemRow.id)
        .join(User, User.id == Assignment.user_id)
        .outerjoin(Answer, Answer.assignment_id == Assignment.id)
        .outerjoin(Rating, Rating.assignment_id == Assignment.id)
        .where(ItemRow.project_id == project.id)
        .order_by(ItemRow.position, Assignment.id)
    )
    return [(it, a, ans, r, u) for it, a, ans, r, u in db.execute(q).all()]


BUILTIN_VARIABLES = ("answer", "decision")


def alpha_key(rubric_key: str) -> str:
    """The agreement variable of a rubric item: its key, or ``rubric:<key>`` for a built-in name.

    ``answer`` and ``decision`` name the first answers and the decisions (HLE's verdict ``answer``
    once overwrote the reviewers' chosen options, so κ and α of the answers were the verdicts').
    """
    return f"rubric:{rubric_key}" if rubric_key in BUILTIN_VARIABLES else rubric_key


def agreement(db: Session, project: Project, *, resamples: int = 1000) -> dict[str, Any]:
    """κ per reviewer pair and α per variable (answer, decision, each rubric item), seeded by the project."""
    rubric = Rubric.from_dict(project.rubric)
    variables = {"answer": "nominal", "decision": "nominal"}
    for c in rubric.criteria:
        variables[alpha_key(c.key)] = "ordinal" if c.type == "scale" else "nominal"
    for v in rubric.verdicts:
        variables[alpha_key(v)] = "nominal"
    flat = []
    for it, _a, ans, r, u in review_rows(db, project):
        if ans is None:
            continue
        d: dict[str, Any] = {"item": it.id, "rater": u.pseudonym, "answer": ans.choice}
        if r is not None:
            d["decision"] = r.decision
            d |= {alpha_key(k): x for k, x in (dict(r.scores) | dict(r.verdicts)).items()}
        flat.append(d)
    return project_agreement(flat, variables, seed=project.seed, resamples=resamples)


def gate(project: Project, agree: dict[str, Any]) -> tuple[bool, list[str]]:
    """Whether the release gate passes: every rubric item's α at least the project's threshold.

    An α that is undefined because every rating was the same passes (there is no disagreement); one
    that is undefined for lack of items with two ratings fails.
    """
    if project.alpha_threshold is None:
        return True, []
    rubric = Rubric.from_dict(project.rubric)
    failing = []
    for key in rubric.keys():  # noqa: SIM118 - Rubric.keys() is a list, not a dict view
        # Named as the dashboard and agreement.json name it (HLE's verdict `answer` is rubric:answer).
        name = alpha_key(key)
        a = agree["alpha"].get(name, {})
        if a.get("value") is None:
            if a.get("n_items", 0) < 2:
                failing.append(f"{name}: α undefined (fewer than 2 items rated twice)")
        elif a["value"] < project.alpha_threshold:
            failing.append(f"{name}: α = {a['value']:.3f} < {project.alpha_threshold}")
    return not failing, failing


def _accuracy(correct: list[bool]) -> dict[str, Any]:
    return {
        "n": len(correct),
        "correct": sum(correct),
        "accuracy": sum(correct) / len(correct) if correct else None,
    }


def dashboard(db: Session, user: User, project: Project, *, resamples: int = 1000) -> dict[str, Any]:
    """Everything the dashboard page shows (seniors and admins only: it summarises others' work).

    Raises:
        Forbidden: For a reviewer, or while the user has unanswered items in the project.
    """
    try:
        check_senior(user)
    except Forbidden:
        raise Forbidden(
            "the dashboard summarises every reviewer's work; it is for seniors and admins"
        ) from None
    require_nothing_pending(db, user, project, "the dashboard")
    rows = review_rows(db, project)
    groups = dict(
        db.execute(select(Member.user_id, Member.group).where(Member.project_id == project.id)).all()
    )
    progress: dict[str, dict[str, Any]] = {}
    # Per group and item, the earliest answer: the record `review baseline` writes for it.
    baseline: dict[str, dict[int, tuple[Any, bool]]] = {}
    rubric = Rubric.from_dict(project.rubric)
    # Every criterion shows (0 included); verdicts show per non-valid value (invalid, uncertain).
    flags: Counter[str] = Counter({c.key: 0 for c in rubric.criteria})
    for it, a, ans, r, u in rows:
        p = progress.setdefault(
            u.pseudonym,
            {
                "reviewer": u.pseudonym,
                "username": u.username,
                "group": groups.get(u.id, "ungrouped"),
                "assigned": 0,
                "answered": 0,
                "rated": 0,
            },
        )
        p["assigned"] += 1
        p["answered"] += a.status in ("answered", "rated")
        p["rated"] += a.status == "rated"
        if ans is not None:
            first = baseline.setdefault(groups.get(u.id, "ungrouped"), {})
            if it.id not in first or ans.submitted_at < first[it.id][0]:
                first[it.id] = (ans.submitted_at, ans.choice == it.original.get("answer_index"))
        if r is not None:
            for c in rubric.criteria:
                flags[c.key] += c.flags(r.scores[c.key])
            for v in rubric.verdicts:
                if r.verdicts[v] != "valid":
                    flags[f"{v}={r.verdicts[v]}"] += 1
    status = Counter(db.scalars(select(ItemRow.status).where(ItemRow.project_id == project.id)).all())
    agree = agreement(db, project, resamples=resamples)
    ok, failing = gate(project, agree)
    return {
        "project": {
            "id": project.id,
            "name": project.name,
            "benchmark": project.benchmark,
            "n_reviewers": project.n_reviewers,
            "alpha_threshold": project.alpha_threshold,
        },
        "items": dict(status),
        "progress": sorted(progress.values(), key=lambda p: p["reviewer"]),
        "flags": dict(flags),
        "agreement": agree,
        "gate": {"passes": ok, "failing": failing},
        "baseline": {g: _accuracy([ok for _, ok in v.values()]) for g, v in sorted(baseline.items())},
    }

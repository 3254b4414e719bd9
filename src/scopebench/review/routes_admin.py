"""Admin pages: accounts, project members and assignment.

The web form of ``review user``, ``review member`` and ``review assign`` (and of their JSON API
calls).

Server-rendered like the other pages: every form carries the session's CSRF token (checked by
:func:`~scopebench.review.app.auth`), every page and action is for admins only, and Jinja2
autoescaping shows user-typed names as text.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import HTMLResponse, Response
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from scopebench.review import projects as proj
from scopebench.review.accounts import ROLES, create_user, require_project, require_role
from scopebench.review.app import DB, Auth, auth
from scopebench.review.db import Assignment, ItemRow, Member, Project, User
from scopebench.review.errors import NotFound
from scopebench.review.routes_pages import go, render

router = APIRouter(prefix="/admin")


def _projects(db: Session) -> list[dict[str, Any]]:
    """Each project with its members (name, role, group) and its assignment count."""
    out = []
    for p in db.scalars(select(Project).order_by(Project.id)).all():
        members = db.execute(
            select(User.username, User.role, Member.group)
            .join(Member, Member.user_id == User.id)
            .where(Member.project_id == p.id)
            .order_by(Member.group, User.username)
        ).all()
        n_assigned = db.scalar(
            select(func.count(Assignment.id)).join(ItemRow).where(ItemRow.project_id == p.id)
        )
        n_items = db.scalar(select(func.count(ItemRow.id)).where(ItemRow.project_id == p.id))
        out.append(
            {
                "project": p,
                "members": members,
                "assignments": n_assigned,
                "slots": (n_items or 0) * p.n_reviewers,
            }
        )
    return out


@router.get("")
def admin_page(request: Request, a: Auth = Depends(auth), db: Session = DB) -> HTMLResponse:
    """Accounts and projects, with the forms to create users, add members and assign (admin)."""
    require_role(a.user, "admin")
    users = db.scalars(select(User).order_by(User.id)).all()
    return render(request, "admin.html", a, db=db, users=users, roles=ROLES, projects=_projects(db))


@router.post("/users")
def admin_create_user(
    username: str = Form(""),
    password: str = Form(""),
    role: str = Form(""),
    a: Auth = Depends(auth),
    db: Session = DB,
) -> Response:
    """Create an account (the checks and messages of ``review user``)."""
    require_role(a.user, "admin")
    create_user(db, username, password, role)
    return go("/admin#users")


@router.post("/projects/{project_id}/members")
def admin_add_member(
    project_id: int,
    username: str = Form(""),
    group: str = Form(""),
    a: Auth = Depends(auth),
    db: Session = DB,
) -> Response:
    """Add a user to the project in a reviewer group (or move them to another group)."""
    require_role(a.user, "admin")
    project = require_project(db, a.user, project_id)
    user = db.scalar(select(User).where(User.username == username.strip()))
    if user is None:
        raise NotFound(f"no user {username!r}; create the account first")
    proj.add_member(db, project, user, group.strip() or "experts", actor=a.user)
    return go(f"/admin#project-{project_id}")


@router.post("/projects/{project_id}/assign")
def admin_assign(project_id: int, a: Auth = Depends(auth), db: Session = DB) -> Response:
    """Fill the project's open reviewer slots, balanced across its reviewers."""
    require_role(a.user, "admin")
    proj.assign(db, require_project(db, a.user, project_id), actor=a.user)
    return go(f"/admin#project-{project_id}")

"""Accounts, sessions and project access: the authorisation rules every route goes through.

Passwords are hashed with argon2id (argon2-cffi). A session is a random token in an HttpOnly
cookie; the database keeps only its SHA-256, its CSRF token and its expiry. Roles: ``admin``
(everything), ``senior`` (review, arbitrate, edit items, dashboard of their projects),
``reviewer`` (review the items assigned to them).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import secrets
from functools import cache
from typing import Any

from argon2 import Parameters, PasswordHasher, profiles
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from scopebench.review.db import (
    READ_ONLY,
    Assignment,
    Event,
    ItemRow,
    LoginSession,
    Member,
    Project,
    User,
    utcnow,
)
from scopebench.review.errors import Conflict, Forbidden, Invalid, NotFound, Unauthenticated
from scopebench.review.passwords import check_password

__all__ = [
    "DEFAULT_PASSWORD_PROFILE",
    "PASSWORD_PROFILE_ENV",
    "ROLES",
    "authenticate",
    "create_user",
    "end_session",
    "log_event",
    "member_of",
    "password_hasher",
    "require_not_reviewer_of",
    "require_nothing_pending",
    "require_project",
    "require_role",
    "session_user",
    "start_session",
]

ROLES = ("admin", "senior", "reviewer")
#: The environment variable naming the argon2 parameter profile new password hashes use.
PASSWORD_PROFILE_ENV = "SCOPEBENCH_ARGON2_PROFILE"
#: The profile used when the variable is unset: argon2-cffi's default (RFC 9106's low-memory
#: choice: time cost 3, 64 MiB, parallelism 4).
DEFAULT_PASSWORD_PROFILE = "RFC_9106_LOW_MEMORY"


@cache
def password_hasher() -> PasswordHasher:
    """The argon2id hasher of new passwords, with the profile named by ``SCOPEBENCH_ARGON2_PROFILE``.

    A profile is one of argon2-cffi's (``RFC_9106_LOW_MEMORY``, the default; ``RFC_9106_HIGH_MEMORY``;
    ``PRE_21_2``; ``CHEAPEST``, which is for test suites only: it protects nothing). A hash keeps its
    own parameters, so every stored password still verifies after the profile changes.

    Raises:
        Invalid: When the variable names no profile; the message lists them.
    """
    name = os.environ.get(PASSWORD_PROFILE_ENV) or DEFAULT_PASSWORD_PROFILE
    params = getattr(profiles, name, None) if name.isupper() else None
    if not isinstance(params, Parameters):
        known = ", ".join(n for n in dir(profiles) if n.isupper())
        raise Invalid(f"{PASSWORD_PROFILE_ENV}={name!r} is not an argon2 profile; use one of {known}")
    return PasswordHasher.from_parameters(params)


@cache
def _dummy_hash() -> str:
    # Verified against when the username is unknown, so a login takes as long either way.
    return password_hasher().hash("scopebench-no-such-user")


def log_event(
    db: Session,
    project_id: int,
    kind: str,
    payload: dict[str, Any],
    *,
    user: User | None = None,
    item_id: int | None = None,
) -> None:
    """Append one event to the audit log (committed with the caller's transaction)."""
    db.add(
        Event(
            project_id=project_id,
            item_id=item_id,
            user_id=user.id if user else None,
            kind=kind,
            payload=payload,
        )
    )


def create_user(db: Session, username: str, password: str, role: str) -> User:
    """Create an account.

    Raises:
        Invalid: For an unknown role, an empty name, or a password :func:`.check_password` refuses.
        Conflict: When the username is taken.
    """
    username = username.strip()
    if role not in ROLES:
        raise Invalid(f"role must be one of {', '.join(ROLES)} (got {role!r})")
    if not username or len(username) > 80:
        raise Invalid("a username is 1 to 80 characters")
    check_password(password, username)
    if db.scalar(select(User).where(User.username == username)) is not None:
        raise Conflict(f"user {username!r} exists already")
    user = User(
        username=username,
        password_hash=password_hasher().hash(password),
        role=role,
        pseudonym=f"pending-{secrets.token_hex(8)}",
    )
    db.add(user)
    db.flush()
    # Exports name people by this stable pseudonym only.
    user.pseudonym = f"expert-{user.id:03d}"
    return user


def authenticate(db: Session, username: str, password: str) -> User:
    """The active user with these credentials.

    Raises:
        Unauthenticated: For a wrong username or password (one message for both).
    """
    # The hash is read in a read-only transaction and checked after it ends: argon2 takes tens of
    # milliseconds of CPU (seconds on a loaded machine), and a write transaction held meanwhile
    # queues every other writer on SQLite's lock — forty reviewers logging in at once ran past the
    # busy timeout ("database is locked").
    if not db.in_transaction():
        db.connection(execution_options={READ_ONLY: True})
    row = db.execute(select(User.id, User.password_hash).where(User.username == username)).first()
    db.commit()
    try:
        password_hasher().verify(row.password_hash if row else _dummy_hash(), password)
    except (VerificationError, InvalidHashError):
        row = None
    user = db.get(User, row.id) if row else None
    if user is None or not user.active:
        raise Unauthenticated("wrong username or password")
    return user


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def start_session(db: Session, user: User, ttl: dt.timedelta) -> tuple[str, LoginSession]:
    """Open a session; returns the cookie token (shown once, stored only as a hash) and the row."""
    token = secrets.token_urlsafe(32)
    now = utcnow()
    row = LoginSession(
        id=_digest(token),
        user_id=user.id,
        csrf_token=secrets.token_urlsafe(32),
        created_at=now,
        expires_at=now + ttl,
    )
    db.add(row)
    # Expired sessions are removed as new ones start, so the table stays small.
    db.execute(delete(LoginSession).where(LoginSession.expires_at < now))
    return token, row


def session_user(db: Session, token: str | None) -> tuple[User, LoginSession]:
    """The user and session of a cookie token.

    Raises:
        Unauthenticated: When the token is missing, unknown or expired.
    """
    if not token:
        raise Unauthenticated("log in first (POST /api/login or the /login page)")
    row = db.get(LoginSession, _digest(token))
    if row is None or row.expires_at < utcnow():
        raise Unauthenticated("your session has expired or is unknown; log in again")
    user = db.get(User, row.user_id)
    if user is None or not user.active:
        raise Unauthenticated("this account is disabled; ask an admin")
    return user, row


def end_session(db: Session, token: str | None) -> None:
    """Log out (delete the session)."""
    if token:
        db.execute(delete(LoginSession).where(LoginSession.id == _digest(token)))


def require_role(user: User, *roles: str) -> None:
    """Refuse unless the user has one of ``roles``.

    Raises:
        Forbidden: Otherwise.
    """
    if user.role not in roles:
        raise Forbidden(f"this needs the role {' or '.join(roles)}; you are {user.role}")


def member_of(db: Session, user: User, project_id: int) -> Member | None:
    """The user's membership of the project, if any."""
    return db.scalar(select(Member).where(Member.project_id == project_id, Member.user_id == user.id))


def require_project(db: Session, user: User, project_id: int) -> Project:
    """The project, if the user is an admin or a member.

    Raises:
        NotFound: Otherwise (the same answer as for a project that does not exist).
    """
    project = db.get(Project, project_id)
    if project is None or (user.role != "admin" and member_of(db, user, project_id) is None):
        raise NotFound(f"no project {project_id} that you are a member of")
    return project


def require_nothing_pending(db: Session, user: User, project: Project, what: str) -> None:
    """Refuse ``what`` while the user has an unanswered assignment in ``project``.

    The key, the version history, edits, the dashboard and arbitration of a project's items would
    show keys or other reviewers' answers before the user gives their own.

    Raises:
        Forbidden: While an assignment of theirs in the project is unanswered.
    """
    open_count = db.scalar(
        select(func.count(Assignment.id))
        .join(ItemRow, ItemRow.id == Assignment.item_id)
        .where(
            ItemRow.project_id == project.id, Assignment.user_id == user.id, Assignment.status == "assigned"
        )
    )
    if open_count:
        raise Forbidden(
            f"{what} of project {project.name!r} opens once you have answered your own "
            f"{open_count} open item(s) in it; answer them first"
        )


def require_not_reviewer_of(db: Session, user: User, item_id: int, what: str) -> None:
    """Refuse ``what`` (an edit, an arbitration) of an item the user reviewed themselves.

    Raises:
        Forbidden: When the user holds an assignment on the item.
    """
    if db.scalar(select(Assignment.id).where(Assignment.item_id == item_id, Assignment.user_id == user.id)):
        raise Forbidden(f"you reviewed this item yourself; another senior does {what}")


def check_senior(user: User) -> None:
    """Refuse unless the user is a senior or an admin.

    Raises:
        Forbidden: Otherwise.
    """
    if user.role not in ("senior", "admin"):
        raise Forbidden("this needs a senior reviewer or an admin")


def not_found(what: str) -> NotFound:
    """The one answer for anything missing or invisible to this user."""
    return NotFound(f"no {what} that you can see")

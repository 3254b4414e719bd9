"""Database: SQLAlchemy models, engine creation and Alembic upgrades.

SQLite (a file path) is the embedded default; a ``postgresql+psycopg://`` URL serves a lab's
shared deployment. The schema is owned by the Alembic migrations shipped in
``scopebench/review/migrations``; :func:`open_database` upgrades to head before use.

Times are naive UTC everywhere (one convention for both databases).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    String,
    Text,
    UniqueConstraint,
    create_engine,
    event,
    false,
)
from sqlalchemy.engine import Engine
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, sessionmaker

from scopebench.review.errors import Invalid

__all__ = [
    "READ_ONLY",
    "Answer",
    "Arbitration",
    "Assignment",
    "Base",
    "Event",
    "ImageRow",
    "ItemRow",
    "ItemVersion",
    "LoginSession",
    "Member",
    "Project",
    "Rating",
    "Submission",
    "User",
    "database_url",
    "open_database",
    "utcnow",
]


def utcnow() -> dt.datetime:
    """The current time, naive UTC (what every column stores)."""
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


class Base(DeclarativeBase):
    """Declarative base of every review table."""


class User(Base):
    """An account; ``role`` is admin, senior or reviewer; ``pseudonym`` is what exports show."""

    __tablename__ = "users"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    username: Mapped[str] = mapped_column(String(80), unique=True)
    password_hash: Mapped[str] = mapped_column(String(255))
    role: Mapped[str] = mapped_column(String(16))
    pseudonym: Mapped[str] = mapped_column(String(32), unique=True)
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class LoginSession(Base):
    """A server-side session; the cookie holds a random token whose SHA-256 is ``id``."""

    __tablename__ = "sessions"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    csrf_token: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    expires_at: Mapped[dt.datetime] = mapped_column(DateTime)


class Project(Base):
    """A review project: one benchmark (or build output) loaded for review."""

    __tablename__ = "projects"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(120), unique=True)
    benchmark: Mapped[str] = mapped_column(String(64))
    data: Mapped[str] = mapped_column(Text)
    split: Mapped[str | None] = mapped_column(String(64), nullable=True)
    data_fingerprint: Mapped[str] = mapped_column(String(128))
    rubric: Mapped[dict[str, Any]] = mapped_column(JSON)
    n_reviewers: Mapped[int] = mapped_column(Integer, default=2)
    seed: Mapped[int] = mapped_column(Integer, default=0)
    alpha_threshold: Mapped[float | None] = mapped_column(Float, nullable=True)
    # Seniors arbitrate; they take first-line reviews too only where a project says so.
    seniors_review: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class Member(Base):
    """A user's membership of a project; ``group`` names their baseline run (``human:<group>``)."""

    __tablename__ = "members"
    __table_args__ = (UniqueConstraint("project_id", "user_id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    group: Mapped[str] = mapped_column(String(64), default="experts")


class ImageRow(Base):
    """An image of a project, stored once by content hash in the project store."""

    __tablename__ = "images"
    __table_args__ = (UniqueConstraint("project_id", "sha256"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    sha256: Mapped[str] = mapped_column(String(64))
    mime: Mapped[str] = mapped_column(String(32))
    width: Mapped[int] = mapped_column(Integer)
    height: Mapped[int] = mapped_column(Integer)
    nbytes: Mapped[int] = mapped_column(Integer)


class ItemRow(Base):
    """A benchmark item under review (its current version; history in :class:`ItemVersion`)."""

    __tablename__ = "items"
    __table_args__ = (UniqueConstraint("project_id", "key"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    key: Mapped[str] = mapped_column(String(255))
    position: Mapped[int] = mapped_column(Integer)
    version: Mapped[int] = mapped_column(Integer, default=1)
    question: Mapped[str] = mapped_column(Text)
    choices: Mapped[list[str]] = mapped_column(JSON)
    answer_index: Mapped[int | None] = mapped_column(Integer, nullable=True)
    context: Mapped[str | None] = mapped_column(Text, nullable=True)
    task: Mapped[str] = mapped_column(String(128))
    subset: Mapped[str | None] = mapped_column(String(128), nullable=True)
    split: Mapped[str] = mapped_column(String(64))
    meta: Mapped[dict[str, Any]] = mapped_column(JSON)
    image_shas: Mapped[list[str]] = mapped_column(JSON)
    original: Mapped[dict[str, Any]] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(16), default="open", index=True)
    routed_reasons: Mapped[list[str]] = mapped_column(JSON, default=list)


class ItemVersion(Base):
    """One version of an item's text (1 = as loaded); who changed it, when and why."""

    __tablename__ = "item_versions"
    __table_args__ = (UniqueConstraint("item_id", "version"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    item_id: Mapped[int] = mapped_column(ForeignKey("items.id", ondelete="CASCADE"), index=True)
    version: Mapped[int] = mapped_column(Integer)
    data: Mapped[dict[str, Any]] = mapped_column(JSON)
    editor_id: Mapped[int | None] = mapped_column(ForeignKey("users.id"), nullable=True)
    reason: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class Assignment(Base):
    """One reviewer's slot on one item: assigned → answered → rated."""

    __tablename__ = "assignments"
    __table_args__ = (UniqueConstraint("item_id", "user_id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    item_id: Mapped[int] = mapped_column(ForeignKey("items.id", ondelete="CASCADE"), index=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    status: Mapped[str] = mapped_column(String(16), default="assigned")
    shown_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class Answer(Base):
    """A reviewer's first answer, given without the key (stored before the key is shown)."""

    __tablename__ = "answers"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    assignment_id: Mapped[int] = mapped_column(ForeignKey("assignments.id", ondelete="CASCADE"), unique=True)
    choice: Mapped[int | None] = mapped_column(Integer, nullable=True)
    confidence: Mapped[int] = mapped_column(Integer)
    seconds: Mapped[float] = mapped_column(Float)
    item_version: Mapped[int] = mapped_column(Integer)
    source: Mapped[str] = mapped_column(String(32), default="web")
    submitted_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class Rating(Base):
    """A reviewer's judgement of the item on the rubric, after seeing the key."""

    __tablename__ = "ratings"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    assignment_id: Mapped[int] = mapped_column(ForeignKey("assignments.id", ondelete="CASCADE"), unique=True)
    scores: Mapped[dict[str, Any]] = mapped_column(JSON)
    verdicts: Mapped[dict[str, str]] = mapped_column(JSON)
    comment: Mapped[str] = mapped_column(Text, default="")
    decision: Mapped[str] = mapped_column(String(16))
    reasons: Mapped[list[str]] = mapped_column(JSON)
    source: Mapped[str] = mapped_column(String(32), default="web")
    submitted_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class Arbitration(Base):
    """A senior's decision on an item routed to arbitration."""

    __tablename__ = "arbitrations"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    item_id: Mapped[int] = mapped_column(ForeignKey("items.id", ondelete="CASCADE"), index=True)
    senior_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    decision: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str] = mapped_column(Text)
    routed_reasons: Mapped[list[str]] = mapped_column(JSON)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class Event(Base):
    """One review event (who, when, what, why): the audit log exported with the dataset."""

    __tablename__ = "events"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    item_id: Mapped[int | None] = mapped_column(ForeignKey("items.id", ondelete="CASCADE"), nullable=True)
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id"), nullable=True)
    kind: Mapped[str] = mapped_column(String(32))
    payload: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class Submission(Base):
    """An expert's uploaded image with context, an open question and their answer (μ-Bench cognition)."""

    __tablename__ = "submissions"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    image_sha: Mapped[str] = mapped_column(String(64))
    context: Mapped[str] = mapped_column(Text, default="")
    question: Mapped[str] = mapped_column(Text)
    expert_answer: Mapped[str] = mapped_column(Text)
    # The image's metadata in the taxonomy's spelling and its licence as SPDX (migration 0003;
    # empty for submissions made before it).
    modality: Mapped[str | None] = mapped_column(String(128), nullable=True)
    domain: Mapped[str | None] = mapped_column(String(128), nullable=True)
    stain: Mapped[str | None] = mapped_column(String(128), nullable=True)
    license: Mapped[str | None] = mapped_column(String(255), nullable=True)
    model_spec: Mapped[str | None] = mapped_column(String(255), nullable=True)
    model_answer: Mapped[str | None] = mapped_column(Text, nullable=True)
    model_error: Mapped[str | None] = mapped_column(Text, nullable=True)
    feedback: Mapped[str | None] = mapped_column(Text, nullable=True)
    feedback_correct: Mapped[str | None] = mapped_column(String(16), nullable=True)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


def database_url(db: str) -> str:
    """A SQLAlchemy URL from ``--db``: a URL as given, anything else as a SQLite file path."""
    if "://" in db:
        return db
    return f"sqlite:///{Path(db).resolve()}"


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    # Autocommit at the driver level; SQLAlchemy's "begin" event below emits BEGIN IMMEDIATE so
    # concurrent writers queue on busy_timeout instead of failing with "database is locked" when
    # a read transaction tries to upgrade to a write.
    dbapi_conn.isolation_level = None
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


# Execution option of a session whose transaction only reads (SQLite then skips the write lock).
READ_ONLY = "scopebench_read_only"


def make_engine(url: str) -> Engine:
    """An engine for ``url`` (SQLite gets WAL, a busy timeout and serialised write transactions)."""
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})
        event.listen(engine, "connect", _sqlite_pragmas)

        @event.listens_for(engine, "begin")
        def _begin(conn: Any) -> None:
            # A transaction that only reads (the session check before every request) starts
            # deferred: under WAL it reads beside the writer instead of queueing for the lock.
            read_only = conn.get_execution_options().get(READ_ONLY, False)
            conn.exec_driver_sql("BEGIN" if read_only else "BEGIN IMMEDIATE")

        return engine
    return create_engine(url, pool_pre_ping=True)


def upgrade(engine: Engine) -> None:
    """Upgrade the database schema to the newest shipped migration (Alembic ``upgrade head``)."""
    from alembic import command
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(Path(__file__).parent / "migrations"))
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")


def open_database(db: str, *, migrate: bool = True) -> sessionmaker[Any]:
    """Open (and by default upgrade) the database; returns a session factory.

    Raises:
        Invalid: When the database cannot be reached or upgraded; the message says what to check.
    """
    from sqlalchemy.exc import SQLAlchemyError

    url = database_url(db)
    if url.startswith("sqlite:///"):
        Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    try:
        engine = make_engine(url)
        if migrate:
            upgrade(engine)
    except (SQLAlchemyError, OSError) as exc:
        raise Invalid(
            f"cannot open the review database {db}: {exc}; check the path or the PostgreSQL URL "
            "(postgresql+psycopg://user:password@host:port/dbname) and that the server is running"
        ) from exc
    return sessionmaker(engine, expire_on_commit=False)

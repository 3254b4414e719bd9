"""Alembic: upgrading a fresh database gives exactly the models' schema (SQLite, and PostgreSQL
in a throwaway cluster when its binaries are installed)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import inspect


def _diff(url: str) -> list[object]:
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    from scopebench.review.db import Base, make_engine, upgrade

    engine = make_engine(url)
    upgrade(engine)
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
        tables = set(inspect(conn).get_table_names())
    engine.dispose()
    assert {
        "users",
        "sessions",
        "projects",
        "items",
        "answers",
        "ratings",
        "events",
        "alembic_version",
    } <= tables
    return list(diff)


def test_sqlite_upgrade_matches_models(tmp_path: Path) -> None:
    assert _diff(f"sqlite:///{tmp_path / 'fresh.db'}") == []


def test_upgrade_is_idempotent(tmp_path: Path) -> None:
    from scopebench.review.db import open_database

    db = str(tmp_path / "twice.db")
    open_database(db)
    open_database(db)  # a second `serve` on the same file upgrades nothing and fails on nothing


@pytest.mark.postgres
def test_postgres_upgrade_and_two_reviewers(postgres: str, tmp_path: Path) -> None:
    """The same schema on PostgreSQL, and two reviewers' answers committed through it."""
    assert _diff(postgres) == []
    from review_helpers import build_project, write_bench
    from sqlalchemy import select

    from scopebench.review import workflow
    from scopebench.review.db import Answer, Assignment, User

    info = build_project(postgres, tmp_path / "store", write_bench(tmp_path / "bench"))
    for name in ("ann", "bob"):
        with info["sessions"]() as db, db.begin():
            user = db.scalar(select(User).where(User.username == name))
            for a in db.scalars(select(Assignment).where(Assignment.user_id == user.id)).all():
                workflow.open_assignment(db, user, a.id)
                workflow.answer(db, user, a.id, 0, 3)
    with info["sessions"]() as db:
        assert len(db.scalars(select(Answer)).all()) == 8  # ann and bob review every item

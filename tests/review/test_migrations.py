"""Alembic: upgrading a fresh database gives exactly the models' schema (SQLite, and PostgreSQL
in a throwaway cluster when its binaries are installed)."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
from collections.abc import Iterator
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


def _pg_bin() -> Path | None:
    found = shutil.which("initdb")
    if found:
        return Path(found).resolve().parent
    hits = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(hits[-1]).parent if hits else None


@pytest.fixture
def postgres(tmp_path: Path) -> Iterator[str]:
    """A throwaway PostgreSQL cluster on a unix socket in tmp_path (as user postgres when root)."""
    import importlib.util

    bindir = _pg_bin()
    if bindir is None:
        pytest.skip("PostgreSQL's initdb/pg_ctl are not installed (bash .ci/install-postgres.sh)")
    if importlib.util.find_spec("psycopg") is None:
        pytest.skip("psycopg is not installed (pip install -e '.[review]')")
    import tempfile

    from conftest import free_port

    # Not under tmp_path: pytest's folders are private to root, and the server runs as postgres.
    base = Path(tempfile.mkdtemp(prefix="scopebench-pg-"))
    data, sock = base / "pgdata", base / "sock"
    sock.mkdir()
    prefix: list[str] = []
    if os.geteuid() == 0:  # initdb refuses to run as root
        if shutil.which("runuser") is None:
            pytest.skip("running as root without runuser; cannot start PostgreSQL as another user")
        prefix = ["runuser", "-u", "postgres", "--"]
        shutil.chown(base, "postgres")
        shutil.chown(sock, "postgres")
    port = free_port()
    subprocess.run(
        [*prefix, str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "review"],
        check=True,
        capture_output=True,
    )
    subprocess.run(
        [
            *prefix,
            str(bindir / "pg_ctl"),
            "-D",
            str(data),
            "-w",
            "-l",
            str(base / "pg.log"),
            "-o",
            f"-k {sock} -p {port} -c listen_addresses=''",
            "start",
        ],
        check=True,
        capture_output=True,
    )
    try:
        yield f"postgresql+psycopg://review@/postgres?host={sock}&port={port}"
    finally:
        subprocess.run(
            [*prefix, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"], capture_output=True
        )
        shutil.rmtree(base, ignore_errors=True)


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
        assert len(db.scalars(select(Answer)).all()) == 8 - len(
            db.scalars(select(Assignment).where(Assignment.user_id == info["users"]["senior"])).all()
        )

"""Fixtures of the review tests (skipped as a whole without the ``review`` extra)."""

from __future__ import annotations

import glob
import importlib.util
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from review_helpers import Server, free_port

MISSING = [
    m
    for m in ("fastapi", "sqlalchemy", "alembic", "argon2", "krippendorff", "uvicorn", "zxcvbn")
    if importlib.util.find_spec(m) is None
]
if MISSING:
    pytest.skip(
        f"the review extra is not installed ({', '.join(MISSING)}): pip install -e '.[review]'",
        allow_module_level=True,
    )


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A project (see review_helpers.build_project) behind a live server."""
    from review_helpers import build_project, write_bench

    from scopebench.review.app import AppSettings, create_app

    root = tmp_path_factory.mktemp("review")
    data = write_bench(root / "bench")
    db = str(root / "review.db")
    info = build_project(db, root / "store", data)
    app = create_app(AppSettings(db=db, store=root / "store", max_upload_bytes=200_000, max_pixels=1_000_000))
    with Server(app) as server:
        yield info | {"url": server.url, "root": root, "db": db, "data": data}


def _pg_bin() -> Path | None:
    found = shutil.which("initdb")
    if found:
        return Path(found).resolve().parent
    hits = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(hits[-1]).parent if hits else None


@pytest.fixture
def postgres() -> Iterator[str]:
    """A throwaway PostgreSQL cluster on a unix socket (as user postgres when root); its URL.

    Shared by the migration test and the PostgreSQL run of the concurrent load test.
    """

    bindir = _pg_bin()
    if bindir is None:
        pytest.skip("PostgreSQL's initdb/pg_ctl are not installed (bash .ci/install-postgres.sh)")
    if importlib.util.find_spec("psycopg") is None:
        pytest.skip("psycopg is not installed (pip install -e '.[review]')")
    import tempfile

    # Not under pytest's tmp_path: its folders are private to root, and the server runs as postgres.
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

"""40 reviewers at once on a live server (127.0.0.1), on SQLite and on a throwaway PostgreSQL:
each logs in, then all start together on the same four items — open, answer, rate, and read their
queue — and nothing is lost: every request succeeds, every answer and rating is stored, and each
item is decided exactly once, by its first two ratings.

Marked ``slow``. It prints its figures (requests per second and the 95th-percentile latency of the
requests after login, the logins' own latency apart) and asserts none of them: timings belong to
docs/review.md with their command and machine, never to an assert.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from review_helpers import PASSWORD, Server, build_project, write_bench

REVIEWERS = 40
READS = 12  # queue reads per reviewer after the 12 protocol requests
GOOD = {"scientific_validity": 4, "task_alignment": 4, "visual_reasoning_necessity": 4}
VALID = {"problem": "valid", "answer": "valid", "rationale": "valid"}

pytestmark = pytest.mark.slow


@pytest.fixture
def real_argon2(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Passwords hashed with the default argon2 profile, as a lab's server does (the suite's other
    tests use the cheapest): forty logins at once are then as costly as in a real session."""
    from scopebench.review.accounts import PASSWORD_PROFILE_ENV, password_hasher

    monkeypatch.delenv(PASSWORD_PROFILE_ENV, raising=False)
    password_hasher.cache_clear()
    yield
    password_hasher.cache_clear()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def site(request: pytest.FixtureRequest, tmp_path: Path, real_argon2: None) -> Iterator[dict[str, Any]]:
    """A project of four items, 40 more reviewers each assigned all four, behind a live server."""
    from scopebench.review.app import AppSettings, create_app

    db = str(tmp_path / "load.db") if request.param == "sqlite" else request.getfixturevalue("postgres")
    info = build_project(db, tmp_path / "store", write_bench(tmp_path / "bench"))
    _add_reviewers(info)
    with Server(create_app(AppSettings(db=db, store=tmp_path / "store"))) as server:
        yield info | {"url": server.url, "db": request.param}


def _add_reviewers(info: dict[str, Any]) -> None:
    """40 reviewers in group ``load``, each on every item (one default-cost hash for all: 40 argon2
    hashes would only slow the setup)."""
    from sqlalchemy import select

    from scopebench.review.accounts import password_hasher
    from scopebench.review.db import Assignment, ItemRow, Project, User
    from scopebench.review.projects import add_member

    password_hash = password_hasher().hash(PASSWORD)
    assert password_hash.startswith("$argon2id$v=19$m=65536,t=3,p=4$")  # the cost a lab's server pays
    with info["sessions"]() as db, db.begin():
        project = db.get(Project, info["project_id"])
        items = db.scalars(select(ItemRow).where(ItemRow.project_id == project.id)).all()
        for k in range(REVIEWERS):
            user = User(
                username=f"load{k}", password_hash=password_hash, role="reviewer", pseudonym=f"load-{k}"
            )
            db.add(user)
            db.flush()
            add_member(db, project, user, "load")
            for it in items:
                db.add(Assignment(item_id=it.id, user_id=user.id, status="assigned"))


def _reviewer(url: str, name: str, project_id: int, barrier: threading.Barrier) -> dict[str, Any]:
    """One reviewer's session: login (timed apart), then the protocol and reads, each timed."""
    client = httpx.Client(base_url=url, timeout=None)
    try:
        t0 = time.perf_counter()
        r = client.post("/api/login", json={"username": name, "password": PASSWORD})
        login = time.perf_counter() - t0
        assert r.status_code == 200, r.text
        h = {"X-CSRF-Token": r.json()["csrf_token"]}
        queue = client.get(f"/api/projects/{project_id}/queue").json()
    except BaseException:
        barrier.abort()  # the others stop waiting at once and the first failure is reported
        raise
    barrier.wait()  # all forty start on the same first item at once
    began = time.perf_counter()
    calls: list[tuple[str, str, dict[str, Any] | None]] = []
    for q in sorted(queue, key=lambda q: q["key"]):
        aid = q["assignment_id"]
        calls += [
            ("GET", f"/api/assignments/{aid}", None),
            ("POST", f"/api/assignments/{aid}/answer", {"choice": 0, "confidence": 3}),
            ("POST", f"/api/assignments/{aid}/rating", {"scores": GOOD, "verdicts": VALID}),
        ]
    calls += [("GET", f"/api/projects/{project_id}/queue", None)] * READS
    latencies, failed = [], []
    for method, path, body in calls:
        t = time.perf_counter()
        reply = client.request(method, path, json=body, headers=h if method == "POST" else None)
        latencies.append(time.perf_counter() - t)
        if reply.status_code != 200:
            failed.append((path, reply.status_code, reply.text[:200]))
    ended = time.perf_counter()
    client.close()
    return {"login": login, "latencies": latencies, "failed": failed, "began": began, "ended": ended}


def test_forty_reviewers_lose_nothing(site: dict[str, Any]) -> None:
    """The plausible bugs: a write lost or refused under contention ("database is locked", a
    deadlock), an item decided twice or never by two last ratings arriving together."""
    from sqlalchemy import select

    from scopebench.review.db import Answer, Assignment, Event, ItemRow, Rating, User

    barrier = threading.Barrier(REVIEWERS)  # no time limit: a failed login aborts it
    names = [f"load{k}" for k in range(REVIEWERS)]
    start = time.perf_counter()
    with ThreadPoolExecutor(REVIEWERS) as pool:
        futures = [pool.submit(_reviewer, site["url"], n, site["project_id"], barrier) for n in names]
        results = [f.result() for f in futures]
    wall = time.perf_counter() - start
    latencies = np.array([x for r in results for x in r["latencies"]])
    logins = np.array([r["login"] for r in results])
    # From the barrier (all logged in) to the last reviewer's last reply.
    span = max(r["ended"] for r in results) - min(r["began"] for r in results)
    print(
        f"\n[{site['db']}] {REVIEWERS} reviewers, {latencies.size} requests after login: "
        f"{latencies.size / span:.0f} requests/s, p50 {np.percentile(latencies, 50) * 1000:.0f} ms, "
        f"p95 {np.percentile(latencies, 95) * 1000:.0f} ms; logins p50 {np.percentile(logins, 50) * 1000:.0f} ms, "
        f"p95 {np.percentile(logins, 95) * 1000:.0f} ms; wall {wall:.1f} s; "
        f"{sum(len(r['failed']) for r in results)} failed"
    )
    assert [r["failed"] for r in results] == [[]] * REVIEWERS
    with site["sessions"]() as db:
        ids = db.scalars(select(User.id).where(User.username.in_(names))).all()
        n_answers = len(db.scalars(select(Answer).join(Assignment).where(Assignment.user_id.in_(ids))).all())
        n_ratings = len(db.scalars(select(Rating).join(Assignment).where(Assignment.user_id.in_(ids))).all())
        decided = db.execute(
            select(Event.item_id, Event.payload).where(
                Event.project_id == site["project_id"],
                Event.kind.in_(["item_accepted", "item_rejected", "routed_to_senior"]),
            )
        ).all()
        item_ids = db.scalars(select(ItemRow.id).where(ItemRow.project_id == site["project_id"])).all()
    assert (n_answers, n_ratings) == (4 * REVIEWERS, 4 * REVIEWERS)
    assert sorted(i for i, _ in decided) == sorted(item_ids)  # each item decided once, none twice
    assert all(len(d["decisions"]) == 2 for _, d in decided)

"""Roles that keep the protocol: seniors arbitrate and are assigned only where a project says so;
whoever has an unanswered item in a project sees no key, version history, edit, dashboard or
arbitration of it; nobody edits or arbitrates an item they reviewed; and docs/review.md's recipe,
run as written with one senior, gives two reviewers per item and a senior who can arbitrate every
disagreement."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import httpx
import pytest
from review_helpers import PASSWORD, Server, build_project, write_bench
from sqlalchemy import select

from scopebench.review import workflow
from scopebench.review.db import Assignment, ItemRow, Member, Project, User
from scopebench.review.errors import Forbidden, Invalid
from scopebench.review.stats import dashboard

REPO = Path(__file__).resolve().parents[2]
FIXTURE_PATHMMU = REPO / "tests" / "fixtures" / "pathmmu"


@pytest.fixture
def seniors_review(tmp_path: Path) -> dict[str, Any]:
    """The test project, created with ``seniors_review``: the senior holds first-line slots."""
    data = write_bench(tmp_path / "bench")
    return build_project(str(tmp_path / "r.db"), tmp_path / "store", data, seniors_review=True)


def _user(db: Any, name: str) -> User:
    user = db.scalar(select(User).where(User.username == name))
    assert user is not None
    return user


def _slots(db: Any, user: User) -> list[tuple[Assignment, ItemRow]]:
    return [
        (a, it)
        for a, it in db.execute(
            select(Assignment, ItemRow).join(ItemRow).where(Assignment.user_id == user.id)
        )
    ]


def test_seniors_are_assigned_only_where_the_project_says_so(
    seniors_review: dict[str, Any], tmp_path: Path
) -> None:
    """By default a senior takes no slot (the bug: assignment picked seniors like reviewers, so the
    only senior reviewed items he then could not arbitrate); --seniors-review puts them back."""
    with seniors_review["sessions"]() as db:
        assert _slots(db, _user(db, "senior")), "with seniors_review the senior takes slots"
    default = build_project(str(tmp_path / "d.db"), tmp_path / "dstore", write_bench(tmp_path / "dbench"))
    with default["sessions"]() as db:
        assert _slots(db, _user(db, "senior")) == []
        # One reviewer and the senior cannot fill two slots: the message says seniors do not count.
        from scopebench.review.projects import assign

        project = db.get(Project, default["project_id"])
        db.execute(Member.__table__.delete().where(Member.user_id == _user(db, "bob").id))
        with pytest.raises(Invalid, match="seniors arbitrate and are not counted"):
            assign(db, project)


def test_an_unanswered_item_hides_keys_versions_edits_dashboard_and_arbitration(
    seniors_review: dict[str, Any],
) -> None:
    """The senior with an unanswered item of his own: every route that shows the key or others'
    answers refuses him (the bug: GET /items/{id}/versions showed him the key before he answered,
    edit let him set the key to his answer, and the dashboard summarised the others' answers)."""
    sessions = seniors_review["sessions"]
    with sessions() as db, db.begin():
        senior = _user(db, "senior")
        project = db.get(Project, seniors_review["project_id"])
        mine = _slots(db, senior)
        own_item = mine[0][1]
        other = db.scalar(select(ItemRow).where(ItemRow.id.not_in([it.id for _, it in mine])))
        assert other is not None
        for attempt in (
            lambda: workflow.item_versions(db, senior, own_item.id),
            lambda: workflow.edit_item(db, senior, own_item.id, {"answer_index": 1}, reason="mine"),
            lambda: workflow.edit_item(db, senior, other.id, {"answer_index": 1}, reason="x"),
            lambda: dashboard(db, senior, project, resamples=10),
            lambda: workflow.arbitration_queue(db, senior, project),
            lambda: workflow.arbitration_view(db, senior, other.id),
        ):
            with pytest.raises(Forbidden, match="answer them first"):
                attempt()
        for a, _it in mine:  # he answers his items; the project opens to him
            workflow.open_assignment(db, senior, a.id)
            workflow.answer(db, senior, a.id, 0, 3)
    with sessions() as db, db.begin():
        senior = _user(db, "senior")
        project = db.get(Project, seniors_review["project_id"])
        assert dashboard(db, senior, project, resamples=10)["project"]
        assert workflow.item_versions(db, senior, own_item.id)[0]["version"] == 1
        # ... but never edits or arbitrates an item he reviewed himself.
        with pytest.raises(Forbidden, match="you reviewed this item yourself"):
            workflow.edit_item(db, senior, own_item.id, {"answer_index": 1}, reason="mine")
        with pytest.raises(Forbidden, match="you reviewed this item yourself"):
            workflow.arbitration_view(db, senior, own_item.id)
        assert (
            workflow.edit_item(db, senior, other.id, {"question": "Reworded?"}, reason="clarity")["version"]
            == 2
        )


def test_versions_over_http_refuse_a_senior_with_open_items(
    seniors_review: dict[str, Any], tmp_path: Path
) -> None:
    """The route the key leaked through, on a live server: 403 with the reason, no item data."""
    from scopebench.review.app import AppSettings, create_app

    with seniors_review["sessions"]() as db:
        item_id = _slots(db, _user(db, "senior"))[0][1].id
    app = create_app(AppSettings(db=str(tmp_path / "r.db"), store=tmp_path / "store"))
    with Server(app) as server, httpx.Client(base_url=server.url) as c:
        assert c.post("/api/login", json={"username": "senior", "password": PASSWORD}).status_code == 200
        r = c.get(f"/api/items/{item_id}/versions")
        assert r.status_code == 403 and "answer them first" in r.json()["detail"]
        assert "answer_index" not in r.text
        assert c.get(f"/api/projects/{seniors_review['project_id']}/dashboard").status_code == 403


def _recipe(db: str) -> list[list[str]]:
    """The init/user/member/assign commands of docs/review.md, as written (options in [] left
    out), on the PathMMU fixture instead of ~/data/PathMMU and with ``db`` as the database."""
    text = (REPO / "docs" / "review.md").read_text(encoding="utf-8")
    block = text.split("## Commands", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    lines = block.replace("\\\n", " ").splitlines()
    out = []
    for line in lines:
        line = re.sub(r"\s*\[[^\]]*\]", "", line.split("#", 1)[0]).strip()
        words = shlex.split(line)
        if words[:2] == ["scopebench", "review"] and words[2] in ("init", "user", "member", "assign"):
            words = [
                str(FIXTURE_PATHMMU) if w == "~/data/PathMMU" else db if w == "review.db" else w
                for w in words
            ]
            out.append(words[2:])
    return out


def test_the_documented_recipe_gives_two_reviewers_per_item_and_an_arbiter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/review.md's commands with one senior: every item has two reviewers (one per group),
    the senior none, and after the groups disagree on every item he can arbitrate each one (the
    bug: he took 8 of 24 slots, could not arbitrate them, and the baseline gained a group)."""
    from scopebench.cli import main

    db = str(tmp_path / "review.db")
    monkeypatch.setenv("SCOPEBENCH_REVIEW_PASSWORD", PASSWORD)
    commands = _recipe(db)
    assert [c[0] for c in commands].count("user") >= 6  # every user the member lines name is created
    for args in commands:
        assert main(["review", *args]) == 0, args
    from scopebench.review.db import open_database

    sessions = open_database(db)
    keep = {"answerable_without_image": "no", "answer_inferable": "yes", "key_wrong": "no", "atypical": "no"}
    with sessions() as s, s.begin():
        groups = dict(s.execute(select(User.username, Member.group).join(Member)).all())
        per_item: dict[int, list[str]] = {}
        for a, u in s.execute(select(Assignment, User).join(User)).all():
            per_item.setdefault(a.item_id, []).append(groups[u.username])
        assert len(per_item) == 30 and all(sorted(g) == ["group1", "group2"] for g in per_item.values())
        for name in ("ann", "bob", "cid", "dan"):  # group1 keeps every item, group2 drops it
            user = _user(s, name)
            for a, _it in _slots(s, user):
                workflow.open_assignment(s, user, a.id)
                workflow.answer(s, user, a.id, 0, 4)
                workflow.rate(
                    s, user, a.id, keep if groups[name] == "group1" else keep | {"key_wrong": "yes"}, {}
                )
    with sessions() as s, s.begin():
        carl = _user(s, "carl")
        project = s.scalar(select(Project))
        queue = workflow.arbitration_queue(s, carl, project)
        assert len(queue) == 30
        for q in queue:
            workflow.arbitrate(s, carl, q["item_id"], "accept", "the key holds")
        assert dashboard(s, carl, project, resamples=10)["items"] == {"accepted": 30}
    capsys.readouterr()
    out = tmp_path / "runs"
    assert (
        main(
            [
                "review",
                "baseline",
                "--db",
                db,
                "--project",
                commands[0][commands[0].index("--name") + 1],
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert sorted(p.name for p in out.iterdir()) == ["group1", "group2"]
    assert "seniors" not in capsys.readouterr().out  # no note of a missing 'seniors' baseline

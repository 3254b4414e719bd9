"""The live server (uvicorn on 127.0.0.1): authorisation of every route, CSRF, blind review over
HTTP, image paths, uploads, HTML escaping, and a bounded concurrent load."""

from __future__ import annotations

import http.client
import io
import json
import re
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from PIL import Image
from review_helpers import HTML_QUESTION, PASSWORD


def login(url: str, username: str) -> tuple[httpx.Client, str]:
    client = httpx.Client(base_url=url, timeout=30)
    r = client.post("/api/login", json={"username": username, "password": PASSWORD})
    assert r.status_code == 200, r.text
    return client, r.json()["csrf_token"]


def _routes(served: dict[str, Any]) -> list[tuple[str, str]]:
    from scopebench.review import routes_admin, routes_api, routes_pages

    out = []
    for router in (routes_api.router, routes_api.openapi_router, routes_pages.router, routes_admin.router):
        for route in router.routes:
            for method in sorted(route.methods):  # type: ignore[attr-defined]
                path = re.sub(r"\{[^}]+\}", "1", route.path)  # type: ignore[attr-defined]
                out.append((method, path))
    return out


def test_every_route_refuses_anonymous_access(served: dict[str, Any]) -> None:
    open_routes = {("GET", "/login"), ("POST", "/login"), ("POST", "/api/login")}
    checked = 0
    with httpx.Client(base_url=served["url"], timeout=30) as anon:
        for method, path in _routes(served):
            if (method, path) in open_routes:
                continue
            r = anon.request(method, path)
            checked += 1
            if path.startswith("/api/") or path == "/openapi.json":
                assert r.status_code == 401, (method, path, r.status_code)
            elif method == "GET":
                assert r.status_code == 303 and r.headers["location"] == "/login", (method, path)
            else:
                assert r.status_code == 401, (method, path, r.status_code)
    assert checked >= 30
    # The login call itself refuses wrong credentials with one message.
    r = httpx.post(served["url"] + "/api/login", json={"username": "ann", "password": "wrong password"})
    assert r.status_code == 401 and r.json()["detail"] == "wrong username or password"


def test_csrf_token_is_required_for_state_changes(served: dict[str, Any]) -> None:
    client, csrf = login(served["url"], "bob")  # bob's first item; the blind test takes the last
    queue = client.get(f"/api/projects/{served['project_id']}/queue").json()
    aid = queue[0]["assignment_id"]
    client.get(f"/api/assignments/{aid}")
    r = client.post(f"/api/assignments/{aid}/answer", json={"choice": 0, "confidence": 3})
    assert r.status_code == 403 and "CSRF" in r.json()["detail"]
    r = client.post(
        f"/api/assignments/{aid}/answer",
        json={"choice": 0, "confidence": 3},
        headers={"X-CSRF-Token": "forged"},
    )
    assert r.status_code == 403
    r = client.post(
        f"/api/assignments/{aid}/answer", json={"choice": 0, "confidence": 3}, headers={"X-CSRF-Token": csrf}
    )
    assert r.status_code == 200 and r.json()["my_answer"]["confidence"] == 3
    cookie = client.cookies.get("scopebench_session")
    assert cookie
    set_cookie = client.post("/api/login", json={"username": "ann", "password": PASSWORD}).headers[
        "set-cookie"
    ]
    assert "httponly" in set_cookie.lower() and "samesite=lax" in set_cookie.lower()


def test_page_forms_need_the_csrf_field(served: dict[str, Any]) -> None:
    client, _ = login(served["url"], "bob")
    aid = client.get(f"/api/projects/{served['project_id']}/queue").json()[0]["assignment_id"]
    client.get(f"/assignments/{aid}")
    r = client.post(f"/assignments/{aid}/answer", data={"choice": "0", "confidence": "3"})
    assert r.status_code == 403 and "CSRF" in r.text
    # A logged-in request for the login form itself without its double-submit cookie is refused too.
    r = httpx.post(
        served["url"] + "/login", data={"username": "bob", "password": PASSWORD, "csrf_token": "x"}
    )
    assert r.status_code == 403


def test_a_refused_login_shows_the_form_again(served: dict[str, Any]) -> None:
    """Wrong credentials on the login page: the form again, the reason above it, the name kept."""
    client = httpx.Client(base_url=served["url"], timeout=30)
    page = client.get("/login").text
    token = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert token is not None
    r = client.post("/login", data={"username": "eve", "password": "wrong one!", "csrf_token": token[1]})
    assert r.status_code == 401
    assert 'id="login-error"' in r.text and "wrong username or password" in r.text
    assert 'id="username" autocomplete="username" value="eve"' in r.text and 'id="login"' in r.text
    retry = re.search(r'name="csrf_token" value="([^"]+)"', r.text)
    assert retry is not None and retry[1] != token[1]  # a fresh token, matching the new cookie
    r = client.post("/login", data={"username": "eve", "password": PASSWORD, "csrf_token": retry[1]})
    assert r.status_code == 303 and r.headers["location"] == "/"


def test_the_error_page_links_back_to_the_form(served: dict[str, Any]) -> None:
    """A refused rating form: the error page links back to the item (same-site referer only)."""
    client, csrf = login(served["url"], "eve")  # no assignment: the form answers 404 either way
    came_from = served["url"] + "/assignments/1"
    r = client.post("/assignments/1/rating", data={"csrf_token": csrf}, headers={"referer": came_from})
    assert r.status_code == 404 and '<a href="/assignments/1" id="error-back">' in r.text
    r = client.post(
        "/assignments/1/rating", data={"csrf_token": csrf}, headers={"referer": "https://evil.example/x"}
    )
    assert r.status_code == 404 and "error-back" not in r.text


def test_admin_pages_create_users_add_members_and_assign(served: dict[str, Any]) -> None:
    """The admin pages: admins only, CSRF on every form, names escaped, the service's messages."""
    from sqlalchemy import select

    from scopebench.review.db import Member, User

    pid = served["project_id"]
    bob, _ = login(served["url"], "bob")
    assert bob.get("/admin").status_code == 403  # a reviewer
    admin, csrf = login(served["url"], "admin")
    page = admin.get("/admin")
    assert page.status_code == 200 and 'id="new-user"' in page.text and f'id="project-{pid}"' in page.text
    new = {"username": "<i>zed</i>", "password": PASSWORD, "role": "reviewer"}
    assert admin.post("/admin/users", data=new).status_code == 403  # no CSRF field
    r = admin.post("/admin/users", data=new | {"csrf_token": csrf})
    assert r.status_code == 303 and r.headers["location"] == "/admin#users"
    r = admin.post("/admin/users", data=new | {"csrf_token": csrf, "username": "yan", "password": "short"})
    assert r.status_code == 400 and "at least 8 characters" in r.text
    r = admin.post(
        f"/admin/projects/{pid}/members", data={"username": "<i>zed</i>", "group": "g2", "csrf_token": csrf}
    )
    assert r.status_code == 303
    r = admin.post(
        f"/admin/projects/{pid}/members", data={"username": "nobody", "group": "g2", "csrf_token": csrf}
    )
    assert r.status_code == 404 and "create the account first" in r.text
    assert admin.post(f"/admin/projects/{pid}/assign", data={"csrf_token": csrf}).status_code == 303
    page = admin.get("/admin").text
    assert "<i>zed</i>" not in page and "&lt;i&gt;zed&lt;/i&gt;" in page  # escaped, in accounts and members
    assert page.count("&lt;i&gt;zed&lt;/i&gt;") == 2
    with served["sessions"]() as db:
        zed = db.scalar(select(User).where(User.username == "<i>zed</i>"))
        group = db.scalar(select(Member.group).where(Member.user_id == zed.id, Member.project_id == pid))
    assert zed.role == "reviewer" and group == "g2"


def test_arbitration_form_refuses_a_bad_key_index(served: dict[str, Any]) -> None:
    client, csrf = login(served["url"], "admin")  # admins arbitrate too, and reviewed nothing here
    r = client.post(
        "/items/1/arbitrate",
        data={"csrf_token": csrf, "decision": "accept", "reason": "ok", "answer_index": "../1"},
    )
    assert r.status_code == 400 and "option index" in r.text


def test_submissions_refuse_ask_model_without_a_model(served: dict[str, Any]) -> None:
    client, csrf = login(served["url"], "bob")
    r = client.post(
        f"/api/projects/{served['project_id']}/submissions",
        headers={"X-CSRF-Token": csrf},
        data={"question": "q", "answer": "a", "ask_model": "true"},
        files={"image": ("ok.png", _png(), "image/png")},
    )
    assert r.status_code == 400 and "--model" in r.json()["detail"]


def test_blind_review_over_http(served: dict[str, Any]) -> None:
    ann, ann_csrf = login(served["url"], "ann")
    bob, _ = login(served["url"], "bob")
    eve, _ = login(served["url"], "eve")  # a reviewer of no project
    pid = served["project_id"]
    # Items both still have to answer (earlier tests in this module answered some).
    ann_q = {
        q["key"]: q["assignment_id"]
        for q in ann.get(f"/api/projects/{pid}/queue").json()
        if q["status"] == "assigned"
    }
    bob_q = {
        q["key"]: q["assignment_id"]
        for q in bob.get(f"/api/projects/{pid}/queue").json()
        if q["status"] == "assigned"
    }
    shared = sorted(set(ann_q) & set(bob_q))
    assert shared, "ann and bob share at least one unanswered item"
    key = shared[-1]
    view = ann.get(f"/api/assignments/{ann_q[key]}").json()
    assert "answer_index" not in view and "my_answer" not in view
    done = ann.post(
        f"/api/assignments/{ann_q[key]}/answer",
        json={"choice": 1, "confidence": 2},
        headers={"X-CSRF-Token": ann_csrf},
    ).json()
    assert done["my_answer"]["choice"] == 1 and "answer_index" in done
    # Bob, before and after answering, never sees Ann's answer; neither can read her slot.
    text = json.dumps(bob.get(f"/api/assignments/{bob_q[key]}").json())
    assert '"my_answer"' not in text and "reviews" not in text
    assert bob.get(f"/api/assignments/{ann_q[key]}").status_code == 404
    assert (
        bob.get(f"/api/items/{view['item_id']}/arbitration").status_code == 403
    )  # reviewers don't arbitrate
    assert bob.get(f"/api/projects/{pid}/dashboard").status_code == 403
    # Eve is in no project: the project, its queue and its images are "not found" to her.
    assert eve.get(f"/api/projects/{pid}/queue").status_code == 404
    assert eve.get("/api/projects").json() == []
    sha = view["images"][0] if view["images"] else None
    if sha:
        assert eve.get(f"/api/projects/{pid}/images/{sha}").status_code == 404
        img = ann.get(f"/api/projects/{pid}/images/{sha}")
        assert img.status_code == 200 and img.headers["content-type"] == "image/png"


@pytest.mark.parametrize(
    "raw",
    [
        "../../../../etc/passwd",
        "..%2F..%2Fetc%2Fpasswd",
        "/etc/passwd",
        "%2Fetc%2Fpasswd",
        "images/../../review.db",
    ],
)
def test_image_paths_are_refused(served: dict[str, Any], raw: str) -> None:
    client, _ = login(served["url"], "ann")
    cookie = client.cookies.get("scopebench_session")
    # http.client sends the path exactly as written (httpx would normalise ../ away).
    conn = http.client.HTTPConnection("127.0.0.1", int(served["url"].rsplit(":", 1)[1]), timeout=30)
    conn.request(
        "GET",
        f"/api/projects/{served['project_id']}/images/{raw}",
        headers={"Cookie": f"scopebench_session={cookie}"},
    )
    resp = conn.getresponse()
    body = resp.read().decode()
    conn.close()
    assert resp.status in (400, 404), (raw, resp.status)
    assert "root:" not in body
    if resp.status == 400:
        assert "never by a path" in json.loads(body)["detail"]


def _png(size: tuple[int, int] = (4, 4)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, (1, 2, 3)).save(buf, format="PNG")
    return buf.getvalue()


def test_uploads_are_checked(served: dict[str, Any]) -> None:
    client, csrf = login(served["url"], "ann")
    url = f"/api/projects/{served['project_id']}/submissions"
    form = {
        "question": "What is shown?",
        "answer": "A mitotic cell.",
        "modality": "light microscopy",
        "domain": "biology",
        "license": "CC0-1.0",
    }
    h = {"X-CSRF-Token": csrf}
    r = client.post(
        url, data=form, files={"image": ("cell.txt", b"not an image at all", "text/plain")}, headers=h
    )
    assert r.status_code == 400 and "not an image" in r.json()["detail"]
    assert "BytesIO" not in r.json()["detail"]  # not Pillow's message about its in-memory buffer
    r = client.post(
        url, data=form, files={"image": ("big.png", b"\x89PNG" + b"0" * 300_000, "image/png")}, headers=h
    )
    assert r.status_code == 413 and "limit" in r.json()["detail"]
    r = client.post(url, data=form, files={"image": ("bomb.png", _png((1200, 1000)), "image/png")}, headers=h)
    assert r.status_code == 413 and "pixels" in r.json()["detail"]
    r = client.post(url, data=form, files={"image": ("ok.png", _png(), "image/png")}, headers=h)
    assert r.status_code == 200, r.text
    sub = r.json()
    assert sub["question"] == "What is shown?" and sub["model"] is None and len(sub["image_sha256"]) == 64


def test_item_html_is_escaped(served: dict[str, Any]) -> None:
    from sqlalchemy import select

    from scopebench.review.db import Assignment, ItemRow, User

    with served["sessions"]() as db:  # whoever reviews q1, whose question carries HTML
        holder = db.scalar(
            select(User.username)
            .join(Assignment, Assignment.user_id == User.id)
            .join(ItemRow, ItemRow.id == Assignment.item_id)
            .where(ItemRow.key == "local/q1")
        )
    client, _ = login(served["url"], holder)
    pid = served["project_id"]
    queue = client.get(f"/api/projects/{pid}/queue").json()
    page = client.get(f"/projects/{pid}").text
    assert "<script>" not in page and "&lt;script&gt;" in page
    q1 = next(q for q in queue if q["key"] == "local/q1")
    html = client.get(f"/assignments/{q1['assignment_id']}").text
    assert HTML_QUESTION not in html and "&lt;b&gt;stain&lt;/b&gt;" in html
    assert "default-src 'self'" in client.get("/").headers["content-security-policy"]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def load_site(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """The load test's server: the module's SQLite one, or a fresh project on a throwaway PostgreSQL."""
    if request.param == "sqlite":
        yield request.getfixturevalue("served")
        return
    from review_helpers import Server, build_project, write_bench

    from scopebench.review.app import AppSettings, create_app

    url = request.getfixturevalue("postgres")
    info = build_project(url, tmp_path / "store", write_bench(tmp_path / "bench"))
    with Server(create_app(AppSettings(db=url, store=tmp_path / "store"))) as server:
        yield info | {"url": server.url}


@pytest.mark.slow
def test_concurrent_submissions_lose_nothing(load_site: dict[str, Any]) -> None:
    """4 threads × 50 requests on 127.0.0.1: 4 reviewers answer and rate the same 4 items together
    (plus reads); every request succeeds, every answer and rating is stored, and each item is
    decided exactly once, by its first 2 ratings (the item lock of the last rating)."""
    from sqlalchemy import select

    from scopebench.review.accounts import create_user
    from scopebench.review.db import Answer, Assignment, Event, ItemRow, Project, Rating, User
    from scopebench.review.projects import add_member

    served = load_site
    names = [f"load{k}" for k in range(4)]
    with served["sessions"]() as db, db.begin():
        project = db.get(Project, served["project_id"])
        for n in names:
            add_member(db, project, create_user(db, n, PASSWORD, "reviewer"), "load")
        items = db.scalars(select(ItemRow).where(ItemRow.project_id == project.id)).all()
        for n in names:
            uid = db.scalar(select(User.id).where(User.username == n))
            for it in items:
                db.add(Assignment(item_id=it.id, user_id=uid, status="assigned"))

    good = {"scientific_validity": 4, "task_alignment": 4, "visual_reasoning_necessity": 4}
    verdicts = {"problem": "valid", "answer": "valid", "rationale": "valid"}
    barrier = threading.Barrier(len(names))  # no time limit: a failed login aborts it

    def work(name: str) -> int:
        try:
            client, csrf = login(served["url"], name)
            reply = client.get(f"/api/projects/{served['project_id']}/queue")
            assert reply.status_code == 200, reply.text
        except BaseException:
            barrier.abort()  # the others stop waiting at once and the first failure is reported
            raise
        h = {"X-CSRF-Token": csrf}
        ok = 0
        queue = reply.json()
        requests = 1
        barrier.wait()  # all four start on the same item at once
        for q in sorted(queue, key=lambda q: q["key"]):
            aid = q["assignment_id"]
            ok += client.get(f"/api/assignments/{aid}").status_code == 200
            ok += (
                client.post(
                    f"/api/assignments/{aid}/answer", json={"choice": 0, "confidence": 3}, headers=h
                ).status_code
                == 200
            )
            ok += (
                client.post(
                    f"/api/assignments/{aid}/rating", json={"scores": good, "verdicts": verdicts}, headers=h
                ).status_code
                == 200
            )
            requests += 3
        while requests < 50:  # reads up to 50 requests per thread
            ok += client.get(f"/api/projects/{served['project_id']}/queue").status_code == 200
            requests += 1
        client.close()
        return ok

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(work, names))
    assert results == [49] * 4  # every request but the login succeeded
    with served["sessions"]() as db:
        ids = db.scalars(select(User.id).where(User.username.in_(names))).all()
        n_answers = len(db.scalars(select(Answer).join(Assignment).where(Assignment.user_id.in_(ids))).all())
        n_ratings = len(db.scalars(select(Rating).join(Assignment).where(Assignment.user_id.in_(ids))).all())
        decided = db.execute(
            select(Event.item_id, Event.payload).where(
                Event.project_id == served["project_id"],
                Event.kind.in_(["item_accepted", "item_rejected", "routed_to_senior"]),
            )
        ).all()
        item_ids = db.scalars(select(ItemRow.id).where(ItemRow.project_id == served["project_id"])).all()
    assert (n_answers, n_ratings) == (16, 16)
    assert sorted(i for i, _ in decided) == sorted(item_ids)  # each item decided once, none twice
    assert all(len(d["decisions"]) == 2 for _, d in decided)

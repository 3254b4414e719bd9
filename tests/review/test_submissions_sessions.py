"""Expert submissions with a real-time model answer and feedback, their JSONL export, session
expiry and the login rate limit — on a live server whose model is a test backend."""

from __future__ import annotations

import datetime as dt
import io
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from PIL import Image
from review_helpers import PASSWORD, build_project, write_bench


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    from review_helpers import Server

    from scopebench.models.registry import _SCHEMES, register_scheme
    from scopebench.review.app import AppSettings, create_app

    register_scheme("echo", "review_helpers:EchoBackend", bare=True)
    root = tmp_path_factory.mktemp("subs")
    db = str(root / "r.db")
    info = build_project(db, root / "store", write_bench(root / "bench"))
    from scopebench.review.throttle import ThrottleSettings

    throttle = ThrottleSettings(free_per_user=3, base_delay=600.0, max_delay=600.0)
    app = create_app(AppSettings(db=db, store=root / "store", model="echo", throttle=throttle))
    try:
        with Server(app) as server:
            yield info | {"url": server.url, "root": root, "db": db}
    finally:
        _SCHEMES.pop("echo", None)


def _login(url: str, name: str) -> tuple[httpx.Client, str]:
    c = httpx.Client(base_url=url, timeout=30)
    r = c.post("/api/login", json={"username": name, "password": PASSWORD})
    assert r.status_code == 200, r.text
    return c, r.json()["csrf_token"]


def _png() -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (12, 9), (9, 9, 9)).save(buf, format="PNG")
    return buf.getvalue()


def test_submission_model_answer_feedback_and_export(site: dict[str, Any]) -> None:
    ann, csrf = _login(site["url"], "ann")
    h = {"X-CSRF-Token": csrf}
    url = f"/api/projects/{site['project_id']}/submissions"
    form = {
        "question": "What is dividing?",
        "answer": "A HeLa cell in anaphase.",
        "context": "Live imaging, 60x.",
        "ask_model": "true",
        "modality": "Light Microscopy",
        "domain": "biology",
        "license": "CC BY 4.0",
    }
    r = ann.post(url, data=form, files={"image": ("cell.png", _png(), "image/png")}, headers=h)
    assert r.status_code == 200, r.text
    sub = r.json()
    # The model saw the image (12x9) and the context before the question.
    assert sub["model"] == "echo" and sub["model_answer"] == "12x9: Live imaging, 60x.\n\nWhat is dividing?"
    sid = int(sub["id"].removeprefix("submission-"))
    r = ann.post(
        f"/api/submissions/{sid}/feedback",
        json={"verdict": "partly", "feedback": "misses anaphase"},
        headers=h,
    )
    assert r.status_code == 200 and r.json()["feedback_verdict"] == "partly"
    assert (
        ann.post(f"/api/submissions/{sid}/feedback", json={"verdict": "maybe"}, headers=h).status_code == 400
    )
    bob, bob_csrf = _login(site["url"], "bob")  # someone else's submission is not found
    assert (
        bob.post(
            f"/api/submissions/{sid}/feedback", json={"verdict": "wrong"}, headers={"X-CSRF-Token": bob_csrf}
        ).status_code
        == 404
    )
    assert bob.get(url).json() == []
    # The export for `scopebench build`.
    from scopebench.cli import main

    out = site["root"] / "subs-out"
    store = str(site["root"] / "store")
    assert (
        main(
            [
                "review",
                "submissions",
                "--db",
                site["db"],
                "--store",
                store,
                "--project",
                "demo",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    lines = [json.loads(x) for x in (out / "submissions.jsonl").read_text().splitlines()]
    assert len(lines) == 1
    row = lines[0]
    assert row["format"] == "scopebench-review-submission/1" and row["expert"] == "expert-003"
    assert (row["question"], row["expert_answer"], row["feedback_verdict"]) == (
        "What is dividing?",
        "A HeLa cell in anaphase.",
        "partly",
    )
    assert (out / row["image"]).read_bytes() == _png()
    # The image keeps its format's extension; the metadata is in the taxonomy's and SPDX's spelling.
    assert row["image"] == f"images/submission-{sid}.png"
    assert (row["modality"], row["domain"], row["stain"], row["license"]) == (
        "light microscopy",
        "biology",
        None,
        "CC-BY-4.0",
    )


def test_dashboard_of_a_fresh_project_and_serve_wiring(
    site: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    admin, _ = _login(site["url"], "admin")
    d = admin.get(f"/api/projects/{site['project_id']}/dashboard?resamples=20").json()
    assert d["items"] == {"open": 4} and d["baseline"] == {} and d["agreement"]["kappa"] == []
    assert d["agreement"]["alpha"]["answer"]["value"] is None  # nothing answered: undefined, not 0
    assert admin.get(f"/projects/{site['project_id']}/dashboard").status_code == 200
    schema = admin.get("/openapi.json").json()
    assert "/api/assignments/{assignment_id}/answer" in schema["paths"]
    # `review serve` builds the app on the given database and hands it to uvicorn.
    import uvicorn

    from scopebench.cli import main

    seen: dict[str, Any] = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: seen.update(app=app, **kw))
    store = str(site["root"] / "store")
    assert main(["review", "serve", "--db", site["db"], "--store", store, "--port", "9"]) == 0
    assert seen["port"] == 9 and seen["host"] == "127.0.0.1"
    assert "/api/login" in seen["app"].openapi()["paths"]


def test_expired_session_is_refused(site: dict[str, Any]) -> None:
    from sqlalchemy import update

    from scopebench.review.db import LoginSession, utcnow

    client, _ = _login(site["url"], "bob")
    assert client.get("/api/me").status_code == 200
    with site["sessions"]() as db, db.begin():
        db.execute(update(LoginSession).values(expires_at=utcnow() - dt.timedelta(seconds=1)))
    r = client.get("/api/me")
    assert r.status_code == 401 and "expired" in r.json()["detail"]


def test_login_is_rate_limited(site: dict[str, Any]) -> None:
    with httpx.Client(base_url=site["url"], timeout=30) as c:
        codes = [
            c.post("/api/login", json={"username": "eve", "password": "nope nope"}).status_code
            for _ in range(4)
        ]
        assert codes == [401, 401, 401, 429]
        # Even the right password waits out the delay (from a browser that never logged in as eve).
        r = c.post("/api/login", json={"username": "eve", "password": PASSWORD})
        assert r.status_code == 429 and "try again in" in r.json()["detail"]
        assert 500 < int(r.headers["retry-after"]) <= 600

"""Server-rendered pages (Jinja2, autoescaped); each form posts to the same service functions as the API."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, File, Form, Request, UploadFile
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse, Response
from sqlalchemy import select
from sqlalchemy.orm import Session

from scopebench.review import navigation, stats, workflow
from scopebench.review.accounts import end_session, not_found, require_project
from scopebench.review.app import COOKIE, DB, LOGIN_CSRF_COOKIE, Auth, auth, state
from scopebench.review.cognition import suggestions
from scopebench.review.db import ImageRow, ItemRow, Submission
from scopebench.review.errors import Invalid, NotFound, ReviewError
from scopebench.review.routes_api import login_user, set_session_cookie, submit_sync, visible_projects
from scopebench.review.rubrics import Rubric
from scopebench.review.submissions import give_feedback
from scopebench.review.tiles import Pyramid, TileCache, tile_cache

router = APIRouter()


def render(
    request: Request,
    name: str,
    a: Auth | None,
    *,
    db: Session | None = None,
    project_id: int | None = None,
    **ctx: Any,
) -> HTMLResponse:
    """A page with the user, their CSRF token for its forms and, given ``db``, their progress.

    The progress bar (done / assigned) counts the page's project, or all the user's projects on a
    page that belongs to none.
    """
    ctx |= {"user": a.user if a else None, "csrf": a.session.csrf_token if a else ""}
    if a is not None and db is not None:
        ctx["progress"] = navigation.progress(db, a.user, project_id)
    resp: HTMLResponse = state(request).templates.TemplateResponse(request, name, ctx)
    return resp


def go(url: str) -> RedirectResponse:
    """Redirect after a POST (303: the browser follows with a GET)."""
    return RedirectResponse(url, status_code=303)


def _login_form(
    request: Request, error: str | None = None, username: str = "", status: int = 200
) -> HTMLResponse:
    """The login form with a fresh double-submit CSRF token (there is no session yet)."""
    token = secrets.token_urlsafe(24)
    resp = render(request, "login.html", None, login_csrf=token, error=error, username=username)
    resp.status_code = status
    resp.set_cookie(
        LOGIN_CSRF_COOKIE,
        token,
        httponly=True,
        samesite="lax",
        path="/login",
        secure=state(request).settings.secure_cookies,
    )
    return resp


@router.get("/login")
def login_page(request: Request) -> HTMLResponse:
    """The login form."""
    return _login_form(request)


@router.post("/login")
def login_submit(
    request: Request,
    username: str = Form(...),
    password: str = Form(...),
    csrf_token: str = Form(""),
    db: Session = DB,
) -> Response:
    """Check the form's CSRF token and the credentials; then go to the projects.

    A refused login shows the form again with the reason (wrong credentials, too many tries, an
    expired form) and the username kept, rather than an error page the reviewer must navigate back
    from.
    """
    cookie = request.cookies.get(LOGIN_CSRF_COOKIE, "")
    if not cookie or not secrets.compare_digest(cookie, csrf_token):
        return _login_form(request, "the login form expired; log in again", username, 403)
    try:
        _user, token, _csrf = login_user(request, db, username, password)
    except ReviewError as exc:  # wrong credentials (401), too many tries (429)
        return _login_form(request, str(exc), username, exc.status)
    resp = go("/")
    set_session_cookie(resp, request, token)
    resp.delete_cookie(LOGIN_CSRF_COOKIE, path="/login")
    return resp


@router.post("/logout")
def logout(request: Request, a: Auth = Depends(auth), db: Session = DB) -> Response:
    """End the session."""
    end_session(db, request.cookies.get(COOKIE))
    resp = go("/login")
    resp.delete_cookie(COOKIE, path="/")
    return resp


@router.get("/")
def home(request: Request, a: Auth = Depends(auth), db: Session = DB) -> HTMLResponse:
    """The user's projects, each with the user's progress in it."""
    projects = visible_projects(db, a.user)
    mine = {p.id: navigation.progress(db, a.user, p.id) for p in projects}
    return render(request, "projects.html", a, db=db, projects=projects, mine=mine)


@router.get("/projects/{project_id}")
def project_page(
    project_id: int,
    request: Request,
    a: Auth = Depends(auth),
    db: Session = DB,
) -> HTMLResponse:
    """The user's queue in a project (N opens the next item to do), arbitration and dashboard links."""
    project = require_project(db, a.user, project_id)
    queue = workflow.my_queue(db, a.user, project)
    return render(
        request,
        "project.html",
        a,
        db=db,
        project_id=project.id,
        project=project,
        queue=queue,
        todo=navigation.next_todo(queue),
    )


@router.get("/assignments/{assignment_id}")
def assignment_page(
    assignment_id: int,
    request: Request,
    a: Auth = Depends(auth),
    db: Session = DB,
) -> HTMLResponse:
    """Answer first (no key); once answered, the key, the reviewer's answer and the rubric form.

    The page links the previous and next item of the reviewer's queue (keys P and N).
    """
    view = workflow.open_assignment(db, a.user, assignment_id)
    project = require_project(db, a.user, view["project_id"])
    queue = workflow.my_queue(db, a.user, project)
    nav = navigation.neighbours(queue, assignment_id)
    todo = navigation.next_todo(queue, assignment_id)
    if todo is not None:  # its tiles are cut while this item is reviewed
        item_id = next(q["item_id"] for q in queue if q["assignment_id"] == todo)
        _prefetch_tiles(request, db, project.id, item_id)
    return render(
        request,
        "assignment.html",
        a,
        db=db,
        project_id=project.id,
        v=view,
        rubric=Rubric.from_dict(view["rubric"]),
        images=navigation.image_sources(db, project.id, view["images"]),
        nav=nav,
        saved=request.query_params.get("saved") == "1",
    )


def _prefetch_tiles(request: Request, db: Session, project_id: int, item_id: int) -> None:
    """Start cutting the tiles of an item's large images (the reviewer's next) in the background."""
    item = db.get(ItemRow, item_id)
    if item is None:
        return
    store = state(request).store
    cache = tile_cache(store.root)
    for im in navigation.image_sources(db, project_id, item.image_shas):
        if im["kind"] != "dzi":
            continue
        try:
            source = store.path(im["sha"])
        except NotFound:  # a missing file: the item's own page and tile requests report it
            continue
        cache.prefetch(source, im["sha"], cache.pyramid(source, im["sha"], im["mime"]))


@router.post("/assignments/{assignment_id}/answer")
def answer_submit(
    assignment_id: int,
    choice: str = Form(""),
    confidence: str = Form(""),
    a: Auth = Depends(auth),
    db: Session = DB,
) -> Response:
    """Store the first answer, then show the key and the rubric."""
    if choice == "" or confidence == "":
        raise Invalid("choose an option and your confidence (1–5) before submitting")
    workflow.answer(db, a.user, assignment_id, choice, confidence)
    return go(f"/assignments/{assignment_id}")


@router.post("/assignments/{assignment_id}/rating")
async def rating_submit(assignment_id: int, request: Request, a: Auth = Depends(auth)) -> Response:
    """Store the rating from the rubric form (fields ``score_<key>`` and ``verdict_<key>``).

    Then the reviewer's next unfinished item opens (the project page once none is left), so hours
    of review need no trip back to the list.
    """
    form = await request.form()
    scores = {k.removeprefix("score_"): v for k, v in form.items() if k.startswith("score_")}
    verdicts = {k.removeprefix("verdict_"): v for k, v in form.items() if k.startswith("verdict_")}
    comment = str(form.get("comment", ""))
    st = state(request)

    def _rate() -> str:
        with st.sessions() as db, db.begin():
            view = workflow.rate(db, a.user, assignment_id, scores, verdicts, comment)
            project = require_project(db, a.user, view["project_id"])
            todo = navigation.next_todo(workflow.my_queue(db, a.user, project), assignment_id)
            return f"/assignments/{todo}?saved=1" if todo else f"/projects/{project.id}"

    from starlette.concurrency import run_in_threadpool

    return go(await run_in_threadpool(_rate))


@router.get("/projects/{project_id}/arbitration")
def arbitration_list(
    project_id: int,
    request: Request,
    a: Auth = Depends(auth),
    db: Session = DB,
) -> HTMLResponse:
    """Items waiting for a senior."""
    project = require_project(db, a.user, project_id)
    return render(
        request,
        "arbitration_list.html",
        a,
        db=db,
        project_id=project.id,
        project=project,
        queue=workflow.arbitration_queue(db, a.user, project),
    )


@router.get("/items/{item_id}/arbitrate")
def arbitrate_page(
    item_id: int,
    request: Request,
    a: Auth = Depends(auth),
    db: Session = DB,
) -> HTMLResponse:
    """One item with its anonymised reviews and the decision form."""
    view = workflow.arbitration_view(db, a.user, item_id)
    return render(
        request,
        "arbitrate.html",
        a,
        db=db,
        project_id=view["project_id"],
        v=view,
        rubric=Rubric.from_dict(view["rubric"]),
        images=navigation.image_sources(db, view["project_id"], view["images"]),
    )


@router.post("/items/{item_id}/arbitrate")
def arbitrate_submit(
    item_id: int,
    decision: str = Form(...),
    reason: str = Form(""),
    answer_index: str = Form(""),
    a: Auth = Depends(auth),
    db: Session = DB,
) -> Response:
    """Accept or reject (optionally correcting the key)."""
    view = workflow.arbitration_view(db, a.user, item_id)
    edit = None
    if answer_index != "":
        if not answer_index.isdigit():
            raise Invalid(f"the corrected key must be an option index (got {answer_index!r})")
        if int(answer_index) != view["answer_index"]:
            edit = {"answer_index": int(answer_index)}
    workflow.arbitrate(db, a.user, item_id, decision, reason, edit)
    return go(f"/projects/{view['project_id']}/arbitration")


@router.get("/projects/{project_id}/dashboard")
def dashboard_page(
    project_id: int,
    request: Request,
    a: Auth = Depends(auth),
    db: Session = DB,
) -> HTMLResponse:
    """Progress, agreement, flags and the baseline so far."""
    project = require_project(db, a.user, project_id)
    return render(
        request,
        "dashboard.html",
        a,
        db=db,
        project_id=project.id,
        project=project,
        d=stats.dashboard(db, a.user, project, resamples=200),
    )


@router.get("/projects/{project_id}/submit")
def submit_page(
    project_id: int,
    request: Request,
    a: Auth = Depends(auth),
    db: Session = DB,
) -> HTMLResponse:
    """The upload form, with the taxonomy's values as suggestions (HTML datalists)."""
    project = require_project(db, a.user, project_id)
    return render(
        request,
        "submit.html",
        a,
        db=db,
        project_id=project.id,
        project=project,
        model=state(request).settings.model,
        vocabulary=suggestions(),
    )


@router.post("/projects/{project_id}/submit")
async def submit_form(
    project_id: int,
    request: Request,
    image: UploadFile = File(...),
    question: str = Form(...),
    answer: str = Form(...),
    context: str = Form(""),
    ask_model: str = Form(""),
    modality: str = Form(""),
    domain: str = Form(""),
    stain: str = Form(""),
    license: str = Form(""),
    a: Auth = Depends(auth),
) -> Response:
    """Store the upload (and the model's answer), then show it for feedback."""
    from starlette.concurrency import run_in_threadpool

    data = await image.read(state(request).settings.max_upload_bytes + 1)
    sub = await run_in_threadpool(
        submit_sync,
        request,
        a.user.id,
        project_id,
        data,
        image.filename or "upload",
        question,
        answer,
        context,
        ask_model == "on",
        {"modality": modality, "domain": domain, "stain": stain, "license": license},
    )
    return go(f"/submissions/{sub['id'].removeprefix('submission-')}")


@router.get("/submissions/{submission_id}")
def submission_page(
    submission_id: int,
    request: Request,
    a: Auth = Depends(auth),
    db: Session = DB,
) -> HTMLResponse:
    """A submission with the model's answer and the feedback form."""
    sub = db.get(Submission, submission_id)
    if sub is None or (sub.user_id != a.user.id and a.user.role != "admin"):
        raise not_found(f"submission {submission_id}")
    require_project(db, a.user, sub.project_id)
    images = navigation.image_sources(db, sub.project_id, [sub.image_sha])
    return render(request, "submission.html", a, db=db, project_id=sub.project_id, s=sub, images=images)


@router.post("/submissions/{submission_id}/feedback")
def feedback_submit(
    submission_id: int,
    verdict: str = Form(...),
    feedback: str = Form(""),
    a: Auth = Depends(auth),
    db: Session = DB,
) -> Response:
    """Store the expert's feedback on the model's answer."""
    sub = give_feedback(db, a.user, submission_id, verdict, feedback)
    return go(f"/submissions/{sub.id}")


# Tiles and descriptors of a content-addressed image never change: the browser keeps them a day.
_IMMUTABLE = {"Cache-Control": "private, max-age=86400"}


def _tile_source(
    request: Request, a: Auth, db: Session, project_id: int, image_id: str
) -> tuple[TileCache, Path, Pyramid]:
    """The project's image ``image_id`` (404 outside the project) with its tile geometry."""
    project = require_project(db, a.user, project_id)
    row = db.scalar(select(ImageRow).where(ImageRow.project_id == project.id, ImageRow.sha256 == image_id))
    if row is None:
        raise not_found(f"image {image_id[:80]}")
    store = state(request).store
    cache = tile_cache(store.root)
    # A pyramid takes seconds to build: end the read transaction first, since on SQLite it holds
    # the write lock (BEGIN IMMEDIATE) that every reviewer's answer waits on.
    db.commit()
    path = store.path(image_id)
    return cache, path, cache.pyramid(path, image_id, row.mime)


@router.get("/projects/{project_id}/tiles/{image_id}.dzi")
def tile_descriptor(
    project_id: int, image_id: str, request: Request, a: Auth = Depends(auth), db: Session = DB
) -> Response:
    """The Deep Zoom descriptor of a project image (what OpenSeadragon opens for a tiled image)."""
    _cache, _path, pyr = _tile_source(request, a, db, project_id, image_id)
    return Response(pyr.dzi(), media_type="application/xml", headers=_IMMUTABLE)


@router.get("/projects/{project_id}/tiles/{image_id}_files/{level}/{col}_{row}.{fmt}")
def tile(
    project_id: int,
    image_id: str,
    level: int,
    col: int,
    row: int,
    fmt: str,
    request: Request,
    a: Auth = Depends(auth),
    db: Session = DB,
) -> FileResponse:
    """One Deep Zoom tile; the image's whole pyramid is made on the first request and kept on disk."""
    cache, path, pyr = _tile_source(request, a, db, project_id, image_id)
    if fmt != pyr.fmt:
        raise not_found(f"tile format {fmt[:10]!r}; this image's tiles are {pyr.fmt}")
    found = cache.tile(path, image_id, pyr, level, col, row)
    return FileResponse(found, media_type=f"image/{pyr.fmt}", headers=_IMMUTABLE)

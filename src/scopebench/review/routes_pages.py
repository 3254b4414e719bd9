"""Server-rendered pages (Jinja2, autoescaped); each form posts to the same service functions as the API."""

from __future__ import annotations

import secrets
from typing import Any

from fastapi import APIRouter, Depends, File, Form, Request, UploadFile
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy.orm import Session

from scopebench.review import stats, workflow
from scopebench.review.accounts import end_session, not_found, require_project
from scopebench.review.app import COOKIE, DB, LOGIN_CSRF_COOKIE, Auth, auth, state
from scopebench.review.db import Submission
from scopebench.review.errors import Invalid, ReviewError
from scopebench.review.routes_api import login_user, set_session_cookie, submit_sync, visible_projects
from scopebench.review.rubrics import Rubric
from scopebench.review.submissions import give_feedback

router = APIRouter()


def render(request: Request, name: str, a: Auth | None, **ctx: Any) -> HTMLResponse:
    """A page with the user and their CSRF token for its forms."""
    ctx |= {"user": a.user if a else None, "csrf": a.session.csrf_token if a else ""}
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
    """The user's projects."""
    return render(request, "projects.html", a, projects=visible_projects(db, a.user))


@router.get("/projects/{project_id}")
def project_page(
    project_id: int,
    request: Request,
    a: Auth = Depends(auth),
    db: Session = DB,
) -> HTMLResponse:
    """The user's queue in a project, and links to arbitration and the dashboard for seniors."""
    project = require_project(db, a.user, project_id)
    return render(request, "project.html", a, project=project, queue=workflow.my_queue(db, a.user, project))


@router.get("/assignments/{assignment_id}")
def assignment_page(
    assignment_id: int,
    request: Request,
    a: Auth = Depends(auth),
    db: Session = DB,
) -> HTMLResponse:
    """Answer first (no key); once answered, the key, the reviewer's answer and the rubric form."""
    view = workflow.open_assignment(db, a.user, assignment_id)
    rubric = Rubric.from_dict(view["rubric"])
    return render(request, "assignment.html", a, v=view, rubric=rubric)


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
    """Store the rating from the rubric form (fields ``score_<key>`` and ``verdict_<key>``)."""
    form = await request.form()
    scores = {k.removeprefix("score_"): v for k, v in form.items() if k.startswith("score_")}
    verdicts = {k.removeprefix("verdict_"): v for k, v in form.items() if k.startswith("verdict_")}
    comment = str(form.get("comment", ""))
    st = state(request)

    def _rate() -> int:
        with st.sessions() as db, db.begin():
            view = workflow.rate(db, a.user, assignment_id, scores, verdicts, comment)
            return int(view["project_id"])

    from starlette.concurrency import run_in_threadpool

    project_id = await run_in_threadpool(_rate)
    return go(f"/projects/{project_id}")


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
    return render(request, "arbitrate.html", a, v=view, rubric=Rubric.from_dict(view["rubric"]))


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
        request, "dashboard.html", a, project=project, d=stats.dashboard(db, a.user, project, resamples=200)
    )


@router.get("/projects/{project_id}/submit")
def submit_page(
    project_id: int,
    request: Request,
    a: Auth = Depends(auth),
    db: Session = DB,
) -> HTMLResponse:
    """The upload form."""
    project = require_project(db, a.user, project_id)
    return render(request, "submit.html", a, project=project, model=state(request).settings.model)


@router.post("/projects/{project_id}/submit")
async def submit_form(
    project_id: int,
    request: Request,
    image: UploadFile = File(...),
    question: str = Form(...),
    answer: str = Form(...),
    context: str = Form(""),
    ask_model: str = Form(""),
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
    return render(request, "submission.html", a, s=sub)


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

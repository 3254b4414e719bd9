"""The JSON API (``/api/…``): every page action, for scripts. Schema at ``/openapi.json`` (logged in)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from fastapi import APIRouter, Depends, File, Form, Request, UploadFile
from fastapi.responses import FileResponse, JSONResponse, Response
from pydantic import BaseModel, Field
from sqlalchemy import select
from sqlalchemy.orm import Session

from scopebench.review import projects as proj
from scopebench.review import stats, submissions, workflow
from scopebench.review.accounts import (
    authenticate,
    create_user,
    end_session,
    require_project,
    require_role,
    start_session,
)
from scopebench.review.app import COOKIE, DB, Auth, auth, state
from scopebench.review.cognition import check_metadata, suggestions
from scopebench.review.db import ImageRow, Member, Project, Submission, User
from scopebench.review.errors import Invalid, NotFound, Unauthenticated
from scopebench.review.rubrics import load_rubric
from scopebench.review.throttle import DEVICE_COOKIE

router = APIRouter(prefix="/api")


class LoginBody(BaseModel):
    """Credentials."""

    username: str
    password: str


class AnswerBody(BaseModel):
    """A first answer: the 0-based option index and a confidence from 1 to 5."""

    choice: int
    confidence: int


class RatingBody(BaseModel):
    """A rating on the project's rubric."""

    scores: dict[str, Any] = Field(default_factory=dict)
    verdicts: dict[str, Any] = Field(default_factory=dict)
    comment: str = ""


class ArbitrationBody(BaseModel):
    """A senior's decision (``accept``/``reject``), its reason and an optional correction."""

    decision: str
    reason: str
    edit: dict[str, Any] | None = None


class EditBody(BaseModel):
    """Changed item fields (question, choices, answer_index, context) and why."""

    changes: dict[str, Any]
    reason: str


class UserBody(BaseModel):
    """A new account."""

    username: str
    password: str
    role: str = "reviewer"


class MemberBody(BaseModel):
    """A user to add to a project, in a reviewer group."""

    username: str
    group: str = "experts"


class ProjectBody(BaseModel):
    """A benchmark to load for review (the server reads ``data`` from its own disk)."""

    name: str
    benchmark: str
    data: str = ""
    rubric: str = "pathmmu"
    split: str | None = None
    limit: int | None = None
    reviewers: int = 2
    seed: int = 0
    alpha_threshold: float | None = None
    seniors_review: bool = False


class FeedbackBody(BaseModel):
    """The expert's verdict on the model's answer (correct / partly / wrong) and comments."""

    verdict: str
    feedback: str = ""


def set_session_cookie(response: Response, request: Request, token: str) -> None:
    """The session cookie: HttpOnly, SameSite=Lax, Secure when configured.

    After a login it also sets the device cookie :func:`login_user` made, which spares this browser
    the delays others' failed guesses put on the account (:mod:`.throttle`).
    """
    st = state(request)
    response.set_cookie(
        COOKIE,
        token,
        max_age=int(st.ttl.total_seconds()),
        httponly=True,
        samesite="lax",
        secure=st.settings.secure_cookies,
        path="/",
    )
    device = getattr(request.state, "device_cookie", None)
    if device:
        response.set_cookie(
            DEVICE_COOKIE,
            device,
            max_age=180 * 24 * 3600,
            httponly=True,
            samesite="strict",
            secure=st.settings.secure_cookies,
            path="/",
        )


def login_user(request: Request, db: Session, username: str, password: str) -> tuple[User, str, str]:
    """Check credentials (throttled); returns the user, session token and CSRF token.

    Raises:
        TooManyAttempts: While a delay applies to the address or the account (the password is not
            checked then).
        Unauthenticated: For wrong credentials (counted toward the delays).
    """
    st = state(request)
    client = request.client.host if request.client else "?"
    device = request.cookies.get(DEVICE_COOKIE)
    st.throttle.check(client, username, device)
    try:
        user = authenticate(db, username, password)
    except Unauthenticated:
        st.throttle.failed(client, username, device)
        raise
    token, sess = start_session(db, user, st.ttl)
    request.state.device_cookie = st.throttle.device_cookie(user.username)
    return user, token, sess.csrf_token


def _me(user: User) -> dict[str, Any]:
    return {"id": user.id, "username": user.username, "role": user.role, "pseudonym": user.pseudonym}


@router.post("/login")
def api_login(body: LoginBody, request: Request, db: Session = DB) -> JSONResponse:
    """Log in; sets the session cookie and returns the CSRF token for later state-changing calls."""
    user, token, csrf = login_user(request, db, body.username, body.password)
    resp = JSONResponse({"user": _me(user), "csrf_token": csrf})
    set_session_cookie(resp, request, token)
    return resp


@router.post("/logout")
def api_logout(request: Request, a: Auth = Depends(auth), db: Session = DB) -> JSONResponse:
    """End the session."""
    end_session(db, request.cookies.get(COOKIE))
    resp = JSONResponse({"ok": True})
    resp.delete_cookie(COOKIE, path="/")
    return resp


@router.get("/me")
def api_me(a: Auth = Depends(auth)) -> dict[str, Any]:
    """The logged-in user and the session's CSRF token."""
    return {"user": _me(a.user), "csrf_token": a.session.csrf_token}


@router.post("/users")
def api_create_user(body: UserBody, a: Auth = Depends(auth), db: Session = DB) -> dict[str, Any]:
    """Create an account (admin)."""
    require_role(a.user, "admin")
    return _me(create_user(db, body.username, body.password, body.role))


@router.get("/projects")
def api_projects(a: Auth = Depends(auth), db: Session = DB) -> list[dict[str, Any]]:
    """Projects the user can see (all for an admin; their memberships otherwise)."""
    return [project_dict(p) for p in visible_projects(db, a.user)]


def visible_projects(db: Session, user: User) -> list[Project]:
    """Projects visible to ``user``."""
    q = select(Project).order_by(Project.id)
    if user.role != "admin":
        q = q.join(Member, Member.project_id == Project.id).where(Member.user_id == user.id)
    return list(db.scalars(q).all())


def project_dict(p: Project) -> dict[str, Any]:
    """The JSON form of a project."""
    return {
        "id": p.id,
        "name": p.name,
        "benchmark": p.benchmark,
        "split": p.split,
        "n_reviewers": p.n_reviewers,
        "rubric": p.rubric,
        "alpha_threshold": p.alpha_threshold,
        "seniors_review": p.seniors_review,
        "seed": p.seed,
    }


@router.post("/projects")
def api_create_project(
    body: ProjectBody,
    request: Request,
    a: Auth = Depends(auth),
    db: Session = DB,
) -> dict[str, Any]:
    """Load a benchmark from the server's disk into a new project (admin); same as ``review init``."""
    require_role(a.user, "admin")
    project, problems = proj.create_project(
        db,
        state(request).store,
        name=body.name,
        benchmark=body.benchmark,
        data=body.data,
        rubric=load_rubric(body.rubric),
        split=body.split,
        limit=body.limit,
        n_reviewers=body.reviewers,
        seed=body.seed,
        alpha_threshold=body.alpha_threshold,
        seniors_review=body.seniors_review,
    )
    return project_dict(project) | {"problems": problems}


@router.post("/projects/{project_id}/members")
def api_add_member(
    project_id: int,
    body: MemberBody,
    a: Auth = Depends(auth),
    db: Session = DB,
) -> dict[str, Any]:
    """Add a user to a project in a reviewer group (admin)."""
    require_role(a.user, "admin")
    project = require_project(db, a.user, project_id)
    user = db.scalar(select(User).where(User.username == body.username))
    if user is None:
        raise NotFound(f"no user {body.username!r}; create it first")
    m = proj.add_member(db, project, user, body.group, actor=a.user)
    return {"project_id": project.id, "username": user.username, "group": m.group}


@router.post("/projects/{project_id}/assign")
def api_assign(project_id: int, a: Auth = Depends(auth), db: Session = DB) -> dict[str, Any]:
    """Fill open reviewer slots, balanced across reviewers (admin)."""
    require_role(a.user, "admin")
    return {"new_assignments": proj.assign(db, require_project(db, a.user, project_id), actor=a.user)}


@router.get("/projects/{project_id}/queue")
def api_queue(project_id: int, a: Auth = Depends(auth), db: Session = DB) -> list[dict[str, Any]]:
    """The user's own assignments with their status."""
    return workflow.my_queue(db, a.user, require_project(db, a.user, project_id))


@router.get("/assignments/{assignment_id}")
def api_open(assignment_id: int, a: Auth = Depends(auth), db: Session = DB) -> dict[str, Any]:
    """The question (no key before the answer); the first call starts the clock."""
    return workflow.open_assignment(db, a.user, assignment_id)


@router.post("/assignments/{assignment_id}/answer")
def api_answer(
    assignment_id: int,
    body: AnswerBody,
    a: Auth = Depends(auth),
    db: Session = DB,
) -> dict[str, Any]:
    """Store the first answer and confidence; the reply adds the key."""
    return workflow.answer(db, a.user, assignment_id, body.choice, body.confidence, source="api")


@router.post("/assignments/{assignment_id}/rating")
def api_rate(
    assignment_id: int,
    body: RatingBody,
    a: Auth = Depends(auth),
    db: Session = DB,
) -> dict[str, Any]:
    """Rate the item on the rubric (after answering)."""
    return workflow.rate(db, a.user, assignment_id, body.scores, body.verdicts, body.comment, source="api")


@router.get("/projects/{project_id}/arbitration")
def api_arbitration_queue(
    project_id: int,
    a: Auth = Depends(auth),
    db: Session = DB,
) -> list[dict[str, Any]]:
    """Items waiting for a senior (seniors and admins)."""
    return workflow.arbitration_queue(db, a.user, require_project(db, a.user, project_id))


@router.get("/items/{item_id}/arbitration")
def api_arbitration_view(item_id: int, a: Auth = Depends(auth), db: Session = DB) -> dict[str, Any]:
    """The item with its anonymised reviews (seniors and admins who did not review it)."""
    return workflow.arbitration_view(db, a.user, item_id)


@router.post("/items/{item_id}/arbitration")
def api_arbitrate(
    item_id: int,
    body: ArbitrationBody,
    a: Auth = Depends(auth),
    db: Session = DB,
) -> dict[str, Any]:
    """Accept or reject an item in arbitration, with the reason (and an optional correction)."""
    return workflow.arbitrate(db, a.user, item_id, body.decision, body.reason, body.edit)


@router.post("/items/{item_id}/edit")
def api_edit(item_id: int, body: EditBody, a: Auth = Depends(auth), db: Session = DB) -> dict[str, Any]:
    """Version a correction of the item's text (seniors and admins)."""
    return workflow.edit_item(db, a.user, item_id, body.changes, reason=body.reason)


@router.get("/items/{item_id}/versions")
def api_versions(item_id: int, a: Auth = Depends(auth), db: Session = DB) -> list[dict[str, Any]]:
    """Every version of an item: who, when, why (seniors and admins with nothing left to answer)."""
    return workflow.item_versions(db, a.user, item_id)


@router.get("/projects/{project_id}/dashboard")
def api_dashboard(
    project_id: int,
    resamples: int = 1000,
    a: Auth = Depends(auth),
    db: Session = DB,
) -> dict[str, Any]:
    """Progress, agreement (κ, α with bootstrap intervals), flags and the baseline so far."""
    if not 10 <= resamples <= 10000:
        raise Invalid("resamples must be between 10 and 10000")
    return stats.dashboard(db, a.user, require_project(db, a.user, project_id), resamples=resamples)


@router.get("/projects/{project_id}/images/{image_id:path}")
def api_image(
    project_id: int,
    image_id: str,
    request: Request,
    a: Auth = Depends(auth),
    db: Session = DB,
) -> FileResponse:
    """An image of the project by its id (SHA-256); paths are refused."""
    project = require_project(db, a.user, project_id)
    path = state(request).store.path(image_id)  # refuses anything but 64 hex digits
    row = db.scalar(select(ImageRow).where(ImageRow.project_id == project.id, ImageRow.sha256 == image_id))
    if row is None:
        raise NotFound(f"no image {image_id} in project {project.id}")
    return FileResponse(path, media_type=row.mime, headers={"Cache-Control": "private, max-age=3600"})


@router.post("/projects/{project_id}/submissions")
async def api_submit(
    project_id: int,
    request: Request,
    image: UploadFile = File(...),
    question: str = Form(...),
    answer: str = Form(...),
    context: str = Form(""),
    ask_model: bool = Form(False),
    modality: str = Form(""),
    domain: str = Form(""),
    stain: str = Form(""),
    license: str = Form(""),
    a: Auth = Depends(auth),
) -> dict[str, Any]:
    """Upload an image with context, an open question and your answer; optionally ask the model.

    ``modality``, ``domain`` and ``stain`` are taxonomy values (``GET /api/vocabulary`` lists them),
    ``license`` an SPDX id; modality, domain and licence are required.
    """
    st = state(request)
    data = await image.read(st.settings.max_upload_bytes + 1)
    return await _run_sync(
        submit_sync,
        request,
        a.user.id,
        project_id,
        data,
        image.filename or "upload",
        question,
        answer,
        context,
        ask_model,
        {"modality": modality, "domain": domain, "stain": stain, "license": license},
    )


_T = TypeVar("_T")


async def _run_sync(fn: Callable[..., _T], *args: Any) -> _T:
    from starlette.concurrency import run_in_threadpool

    return await run_in_threadpool(fn, *args)


def submit_sync(
    request: Request,
    user_id: int,
    project_id: int,
    data: bytes,
    filename: str,
    question: str,
    answer: str,
    context: str,
    ask_model: bool,
    meta: dict[str, str],
) -> dict[str, Any]:
    """Store a submission, then (outside any transaction: it may take a while) ask the model.

    ``meta`` holds the form's modality, domain, stain and licence, checked against the taxonomy
    and SPDX before anything is stored.
    """
    st = state(request)
    if ask_model and st.answerer.spec is None:
        raise Invalid("this server has no model to ask; start it with `scopebench review serve --model SPEC`")
    checked = check_metadata(meta["modality"], meta["domain"], meta["stain"], meta["license"])
    with st.sessions() as db, db.begin():
        user = db.get(User, user_id)
        assert user is not None
        project = require_project(db, user, project_id)
        submissions.check_quota(
            db, user, project, len(data), st.settings.max_uploads_per_user, st.settings.max_upload_total_bytes
        )
        sub = submissions.create_submission(
            db,
            st.store,
            user,
            project,
            image=data,
            filename=filename,
            question=question,
            expert_answer=answer,
            context=context,
            metadata=checked,
        )
        sub_id, sha = sub.id, sub.image_sha
    if ask_model and st.answerer.spec is not None:
        text, error = st.answerer.answer(question, context, st.store.path(sha), f"submission-{sub_id}")
        with st.sessions() as db, db.begin():
            submissions.record_model_answer(db, sub_id, st.answerer.spec, text, error)
    with st.sessions() as db:
        sub = db.get(Submission, sub_id)
        user = db.get(User, user_id)
        assert sub is not None and user is not None
        return submissions.submission_dict(sub, user.pseudonym)


@router.get("/vocabulary")
def api_vocabulary(a: Auth = Depends(auth)) -> dict[str, list[str]]:
    """The modalities, domains and stains a submission may name (the build's taxonomy)."""
    return suggestions()


@router.get("/projects/{project_id}/submissions")
def api_submissions(project_id: int, a: Auth = Depends(auth), db: Session = DB) -> list[dict[str, Any]]:
    """The user's own submissions (all of them for an admin)."""
    project = require_project(db, a.user, project_id)
    q = (
        select(Submission, User)
        .join(User, User.id == Submission.user_id)
        .where(Submission.project_id == project.id)
    )
    if a.user.role != "admin":
        q = q.where(Submission.user_id == a.user.id)
    return [
        submissions.submission_dict(s, u.pseudonym) for s, u in db.execute(q.order_by(Submission.id)).all()
    ]


@router.post("/submissions/{submission_id}/feedback")
def api_feedback(
    submission_id: int,
    body: FeedbackBody,
    a: Auth = Depends(auth),
    db: Session = DB,
) -> dict[str, Any]:
    """Judge the model's answer to your submission."""
    sub = submissions.give_feedback(db, a.user, submission_id, body.verdict, body.feedback)
    return submissions.submission_dict(sub, a.user.pseudonym)


openapi_router = APIRouter()


@openapi_router.get("/openapi.json", include_in_schema=False)
def openapi(request: Request, a: Auth = Depends(auth)) -> JSONResponse:
    """The OpenAPI schema of this API (logged-in users)."""
    return JSONResponse(request.app.openapi())

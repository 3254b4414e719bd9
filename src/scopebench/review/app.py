"""The FastAPI application: sessions, CSRF, error pages, and the two route sets (pages and API).

Both route sets call the same service functions (:mod:`.workflow`, :mod:`.projects`,
:mod:`.stats`, :mod:`.submissions`), so a rule enforced for one is enforced for the other.
Every route except the login page, the login call and the static files needs a session.
"""

from __future__ import annotations

import datetime as dt
import logging
import secrets
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from sqlalchemy.orm import Session, sessionmaker
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from scopebench.review.accounts import PASSWORD_PROFILE_ENV, password_hasher, session_user
from scopebench.review.db import READ_ONLY, LoginSession, User, open_database
from scopebench.review.errors import Forbidden, ReviewError, Unauthenticated
from scopebench.review.guard import RequestGate
from scopebench.review.store import ImageStore
from scopebench.review.submissions import ModelAnswerer
from scopebench.review.throttle import LoginThrottle, ThrottleSettings, TooManyAttempts

__all__ = ["COOKIE", "CSRF_HEADER", "AppSettings", "create_app"]

COOKIE = "scopebench_session"
LOGIN_CSRF_COOKIE = "scopebench_login_csrf"
CSRF_HEADER = "X-CSRF-Token"
_HERE = Path(__file__).parent
_UNSAFE = {"POST", "PUT", "PATCH", "DELETE"}


@dataclass
class AppSettings:
    """Server settings (``scopebench review serve`` options).

    Attributes:
        db: Database path or URL.
        store: Image store folder.
        session_hours: Session lifetime.
        max_upload_bytes: Largest accepted upload (and request body, plus form overhead).
        max_pixels: Largest accepted image (width × height).
        secure_cookies: Mark cookies Secure (serve behind HTTPS).
        model: Model spec answering submissions in real time (``None``: off).
        base_url: Server for ``openai:`` model specs.
        throttle: How failed logins delay further attempts (per address, per username).
        forwarded_allow_ips: Proxies whose ``X-Forwarded-For`` names the client (comma-separated
            addresses, ``*`` for any); ``None``: the header is ignored and the client is the peer.
        max_uploads_per_user: Uploads one user may store in one project.
        max_upload_total_bytes: Bytes one user's uploads may take in one project.
    """

    db: str
    store: Path
    session_hours: float = 8.0
    max_upload_bytes: int = 10 * 2**20
    max_pixels: int = 40_000_000
    secure_cookies: bool = False
    model: str | None = None
    base_url: str | None = None
    throttle: ThrottleSettings = field(default_factory=ThrottleSettings)
    forwarded_allow_ips: str | None = None
    max_uploads_per_user: int = 200
    max_upload_total_bytes: int = 500 * 2**20


@dataclass
class State:
    """What the routes share."""

    settings: AppSettings
    sessions: sessionmaker[Any]
    store: ImageStore
    answerer: ModelAnswerer
    templates: Jinja2Templates
    throttle: LoginThrottle

    @property
    def ttl(self) -> dt.timedelta:
        """Session lifetime."""
        return dt.timedelta(hours=self.settings.session_hours)


def state(request: Request) -> State:
    """The application state."""
    st: State = request.app.state.review
    return st


def get_db(request: Request) -> Iterator[Session]:
    """One database session per request: committed on success, rolled back on any error.

    Routes take it as ``DB`` (``Depends(get_db, scope="function")``) so the commit happens *before* the
    response is sent: with the default scope FastAPI commits after the reply, so a client could
    read a 200 for a write that was not yet (or never) committed, and on PostgreSQL its next
    request (the first after login, the rating after the answer) did not see it.
    """
    db: Session = state(request).sessions()
    try:
        yield db
        db.commit()
    except BaseException:
        db.rollback()
        raise
    finally:
        db.close()


# The request's database session, committed before the response is sent (see get_db).
DB = Depends(get_db, scope="function")


@dataclass
class Auth:
    """The logged-in user of a request and their session."""

    user: User
    session: LoginSession


def _load_auth(st: State, token: str | None) -> Auth:
    """The user and session of a cookie token, read in a short transaction of its own."""
    with st.sessions() as db:
        db.connection(execution_options={READ_ONLY: True})
        user, sess = session_user(db, token)
        db.commit()
        return Auth(user, sess)


async def _gate_auth(request: Request) -> Auth:
    """The session check of :class:`~scopebench.review.guard.RequestGate` (in the thread pool)."""
    from starlette.concurrency import run_in_threadpool

    return await run_in_threadpool(_load_auth, state(request), request.cookies.get(COOKIE))


def _session_auth(request: Request, db: Session = DB) -> Auth:
    """The session's user: the one the gate found before the body was read (else looked up).

    A sync dependency, so its queries run in the thread pool, never in the event loop, where
    waiting on SQLite's write lock would stall every other request.
    """
    found: Auth | None = getattr(request.state, "review_auth", None)
    if found is not None:
        return found
    user, sess = session_user(db, request.cookies.get(COOKIE))
    # End the read transaction now: on SQLite every transaction holds the write lock (BEGIN
    # IMMEDIATE), and a route may work in its own sessions or wait on a model.
    db.commit()
    return Auth(user, sess)


async def auth(request: Request, a: Auth = Depends(_session_auth)) -> Auth:
    """The request's user; state-changing requests must also carry the session's CSRF token.

    The token comes in the ``X-CSRF-Token`` header (API) or the ``csrf_token`` form field (pages).

    Raises:
        Unauthenticated: Without a valid session.
        Forbidden: Without the CSRF token on a state-changing request.
    """
    if request.method in _UNSAFE:
        sent = request.headers.get(CSRF_HEADER)
        if sent is None and request.headers.get("content-type", "").startswith(
            ("application/x-www-form-urlencoded", "multipart/form-data")
        ):
            form = await request.form()
            value = form.get("csrf_token")
            sent = value if isinstance(value, str) else None
        if not sent or not secrets.compare_digest(sent, a.session.csrf_token):
            raise Forbidden(f"missing or wrong CSRF token: send the {CSRF_HEADER} header you got at login")
    return a


def _wants_html(request: Request) -> bool:
    return not request.url.path.startswith("/api/") and request.url.path != "/openapi.json"


def create_app(settings: AppSettings) -> FastAPI:
    """Build the application (opening and upgrading the database)."""
    # Local: the route modules import this module's dependencies (DB, auth, state).
    from scopebench.review import routes_admin, routes_api, routes_pages

    # A misspelt profile stops the server here rather than at the first login.
    if password_hasher().memory_cost < 1024:
        logging.getLogger(__name__).warning(
            "%s selects argon2's test profile: passwords are hashed at no real cost; unset it",
            PASSWORD_PROFILE_ENV,
        )
    sessions = open_database(settings.db)
    store = ImageStore(settings.store, max_bytes=settings.max_upload_bytes, max_pixels=settings.max_pixels)
    templates = Jinja2Templates(directory=str(_HERE / "templates"))  # autoescape on for .html
    answerer = ModelAnswerer(settings.model, settings.base_url)
    throttle = LoginThrottle(settings.throttle, secrets.token_bytes(32))
    shared = State(settings, sessions, store, answerer, templates, throttle)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        yield
        shared.answerer.close()

    # The OpenAPI schema is served to logged-in users only (routes_api), so no route is anonymous.
    app = FastAPI(
        title="scopebench review", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan
    )
    app.state.review = shared

    # The gate checks sizes and the session before anything reads the body.
    app.add_middleware(
        RequestGate,
        upload_limit=settings.max_upload_bytes,
        authenticate=_gate_auth,
        refuse=_error_response,
    )
    if settings.forwarded_allow_ips:
        # Outside the gate: the client address every check sees is the one a trusted proxy names.
        app.add_middleware(ProxyHeadersMiddleware, trusted_hosts=settings.forwarded_allow_ips)

    @app.exception_handler(ReviewError)
    async def review_error(request: Request, exc: ReviewError) -> Response:
        return _error_response(request, exc)

    app.mount("/static", StaticFiles(directory=str(_HERE / "static")), name="static")
    app.include_router(routes_api.router)
    app.include_router(routes_api.openapi_router)
    app.include_router(routes_pages.router)
    app.include_router(routes_admin.router)
    return app


def _error_response(request: Request, exc: ReviewError) -> Response:
    if _wants_html(request):
        if isinstance(exc, Unauthenticated) and request.method == "GET":
            return RedirectResponse("/login", status_code=303)
        st: State = request.app.state.review
        return st.templates.TemplateResponse(
            request,
            "error.html",
            {"message": str(exc), "status": exc.status, "user": None, "back": _same_site_referer(request)},
            status_code=exc.status,
        )
    headers = {"Retry-After": str(exc.retry_after)} if isinstance(exc, TooManyAttempts) else None
    return JSONResponse({"detail": str(exc)}, status_code=exc.status, headers=headers)


def _same_site_referer(request: Request) -> str | None:
    """The path of the page a failed form came from (same host only), for the error page's back link.

    A refused form (a rating with a criterion missing, an upload too large) otherwise leaves the
    reviewer on an error page with no way back to the item but the browser's history.
    """
    ref = request.headers.get("referer", "")
    base = str(request.base_url)
    if not ref.startswith(base):
        return None
    path = "/" + ref[len(base) :]
    return path if path != request.url.path or request.method != "GET" else None

"""The gate every request passes before the application reads a byte of its body.

FastAPI parses a route's JSON, form or multipart body *before* it runs the route's dependencies,
and Starlette reads a chunked body (which declares no length) whole. So the session check and the
size limits cannot live in dependencies or in a ``Content-Length`` check: this ASGI middleware
runs first and

1. refuses a body whose declared ``Content-Length`` is over the route's limit, unread (413);
2. checks the session of every route but the login routes and ``/static`` (401, or the login page
   for a browser's GET) before the body is read, so an anonymous client cannot make the server
   parse anything but a login, which is small;
3. counts the body as it arrives (chunked or not) and refuses it (413) as soon as it passes the
   limit: the application sees an error instead of the next chunk, and nothing it began to answer
   is sent;
4. adds the security headers to every response.

Limits: the login routes :data:`LOGIN_BODY`, the upload routes the upload limit plus
:data:`FORM_OVERHEAD`, every other route :data:`SMALL_BODY`.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from scopebench.review.errors import ReviewError, TooLarge

__all__ = ["FORM_OVERHEAD", "LOGIN_BODY", "SMALL_BODY", "RequestGate"]

# A login is a username (≤ 80 characters), a password (≤ 1024) and a CSRF token.
LOGIN_BODY = 16 * 1024
# A rating's comment (5000 characters), an item edit with its context, an arbitration reason.
SMALL_BODY = 256 * 1024
# Multipart boundaries and the text fields (question, answer, context) of an upload.
FORM_OVERHEAD = 256 * 1024

_LOGIN_PATHS = frozenset({"/login", "/api/login"})
_UPLOAD_PATHS = re.compile(r"/api/projects/\d+/submissions|/projects/\d+/submit")
_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (
        b"content-security-policy",
        b"default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
        b"frame-ancestors 'none'; form-action 'self'",
    ),
]


class _Refused(Exception):
    """Raised into the application in place of the chunk that took the body over its limit."""


def anonymous(path: str) -> bool:
    """Whether ``path`` is served without a session (the login routes and the static files)."""
    return path in _LOGIN_PATHS or path.startswith("/static/")


class RequestGate:
    """The ASGI middleware described in the module docstring.

    Args:
        app: The application behind the gate.
        upload_limit: Largest accepted upload (bytes); its routes accept that plus the form overhead.
        authenticate: The session check; returns what routes find in ``request.state.review_auth``.
        refuse: The error response (JSON for the API, a page otherwise) for a refused request.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        upload_limit: int,
        authenticate: Callable[[Request], Awaitable[Any]],
        refuse: Callable[[Request, ReviewError], Response],
    ) -> None:
        self.app = app
        self.upload_limit = upload_limit
        self.authenticate = authenticate
        self.refuse = refuse

    def limit(self, method: str, path: str) -> int:
        """The largest body the route accepts."""
        if path in _LOGIN_PATHS:
            return LOGIN_BODY
        if method == "POST" and _UPLOAD_PATHS.fullmatch(path):
            return self.upload_limit + FORM_OVERHEAD
        return SMALL_BODY

    def _too_large(self, size: str, limit: int) -> TooLarge:
        return TooLarge(
            f"the request body is {size} bytes; this route accepts at most {limit:,} bytes"
            + (f" (uploads: {self.upload_limit:,} bytes)" if limit > SMALL_BODY else "")
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check the declared size and the session, then run the application on a counted body."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def send_with_headers(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                have = {k.lower() for k, _ in message.get("headers", [])}
                message["headers"] = list(message.get("headers", [])) + [
                    h for h in _HEADERS if h[0] not in have
                ]
            await send(message)

        async def send_closing(message: Message) -> None:
            # A refusal leaves the body unread: the connection closes after the answer, so the
            # rest of the body is never read, nor taken for the next request.
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), (b"connection", b"close")]
            await send_with_headers(message)

        request = Request(scope)  # headers and cookies only: it has no receive, so no body
        limit = self.limit(scope["method"], scope["path"])
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            await self.refuse(request, self._too_large(f"{int(declared):,}", limit))(
                scope, receive, send_closing
            )
            return
        if not anonymous(scope["path"]):
            try:
                scope.setdefault("state", {})["review_auth"] = await self.authenticate(request)
            except ReviewError as exc:
                await self.refuse(request, exc)(scope, receive, send_closing)
                return
        await self._counted(scope, receive, send_with_headers, send_closing, limit, request)

    async def _counted(
        self, scope: Scope, receive: Receive, send: Send, send_closing: Send, limit: int, request: Request
    ) -> None:
        """Run the application on a ``receive`` that counts the body and stops it past ``limit``."""
        seen = 0
        refused = False
        answered = False

        async def counted_receive() -> Message:
            nonlocal seen, refused
            if refused:  # whatever the application tries next, the body has ended
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    refused = True
                    raise _Refused
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal answered
            if refused:  # the application's answer to the error raised into it; ours goes instead
                return
            answered = True
            await send(message)

        try:
            await self.app(scope, counted_receive, guarded_send)
        except Exception:
            # _Refused itself, or what the application made of it (a parse error, a disconnect).
            if not refused:
                raise
        if refused and not answered:
            refusal = self.refuse(request, self._too_large(f"over {limit:,}", limit))
            await refusal(scope, receive, send_closing)

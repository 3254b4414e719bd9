"""Request bodies are counted as they arrive and refused past the route's limit before anything
parses them, and the session is checked before any body is read — on a live server (127.0.0.1).

Each test streams a body far larger than the limit over a raw socket and stops at the first sign
of an answer (the socket turns readable, or the server closes it): the refusal must come while the
client is still sending, and the server's memory must not grow with the body. The server runs in
this process (a uvicorn thread), so its RSS is this process's.
"""

from __future__ import annotations

import json
import select
import socket
from dataclasses import dataclass
from typing import Any

import httpx
import psutil
import pytest
from review_helpers import PASSWORD

# Far over every limit (the served fixture's uploads: 200 kB), and far over the RSS bound below:
# a server that reads the body whole grows by at least this much.
PLANNED = 400 * 2**20
RSS_BOUND = 100 * 2**20
CHUNK = b"x" * 65536


@dataclass
class Streamed:
    """What a streaming client saw: the status line, the body, and how much it got to send."""

    status: int | None
    body: bytes
    sent: int


def _read_response(sock: socket.socket) -> tuple[int | None, bytes]:
    sock.setblocking(True)
    sock.settimeout(60)  # a hang guard only: the answer is already on its way when we get here
    data = b""
    try:
        while True:
            got = sock.recv(65536)
            if not got:
                break
            data += got
            head, sep, rest = data.partition(b"\r\n\r\n")
            if sep:
                length = next(
                    (
                        int(line.split(b":", 1)[1])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length:")
                    ),
                    None,
                )
                if length is not None and len(rest) >= length:
                    break
    except ConnectionResetError:
        pass
    if not data.startswith(b"HTTP/1.1 "):
        return None, b""
    head, _, rest = data.partition(b"\r\n\r\n")
    assert b"connection: close" in head.lower()  # the unread rest is never taken for a request
    return int(head.split(b" ", 2)[1]), rest


def _frame(data: bytes, chunked: bool) -> bytes:
    return (b"%x\r\n" % len(data) + data + b"\r\n") if chunked else data


def stream(port: int, head: bytes, *, chunked: bool, planned: int = PLANNED, first: bytes = b"") -> Streamed:
    """Send ``head`` and ``first``, then up to ``planned`` body bytes, until the server answers or closes."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(head)
    sock.setblocking(False)
    frame = _frame(CHUNK, chunked)
    pending, sent = _frame(first, chunked) if first else b"", 0
    try:
        while sent < planned:
            readable, writable, _ = select.select([sock], [sock], [], 60)
            if readable or not writable:  # an answer (or a close) while we are still sending
                break
            if not pending:
                pending = frame
            try:
                n = sock.send(pending)
            except (BrokenPipeError, ConnectionResetError):
                break
            pending, sent = pending[n:], sent + n
        status, body = _read_response(sock)
    finally:
        sock.close()
    return Streamed(status, body, sent)


def _port(served: dict[str, Any]) -> int:
    return int(served["url"].rsplit(":", 1)[1])


def _rss() -> int:
    return int(psutil.Process().memory_info().rss)


def _login_cookie(served: dict[str, Any], name: str) -> tuple[str, str]:
    r = httpx.post(served["url"] + "/api/login", json={"username": name, "password": PASSWORD})
    assert r.status_code == 200, r.text
    return r.cookies["scopebench_session"], r.json()["csrf_token"]


def test_chunked_json_login_is_refused_while_streaming(served: dict[str, Any]) -> None:
    """An anonymous chunked JSON body to /api/login (no Content-Length): refused at the login
    limit, not read whole into memory (the bug: 300 MB read in, RSS +900 MiB, refused after)."""
    before = _rss()
    head = (
        b"POST /api/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n"
    )
    got = stream(_port(served), head, chunked=True)
    assert got.status == 413, got
    assert "16,384 bytes" in json.loads(got.body)["detail"]
    assert got.sent < PLANNED  # the answer came while the client was still streaming
    assert _rss() - before < RSS_BOUND


def test_declared_length_over_the_limit_is_refused_unread(served: dict[str, Any]) -> None:
    """A Content-Length over the limit: 413 before a byte of the body is read (the login route's
    limit, not the upload limit, which main applied to every route)."""
    before = _rss()
    head = (
        b"POST /api/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n" % PLANNED
    )
    got = stream(_port(served), head, chunked=False)
    assert got.status == 413 and f"{PLANNED:,} bytes" in json.loads(got.body)["detail"]
    assert got.sent < PLANNED
    assert _rss() - before < RSS_BOUND


def test_anonymous_chunked_upload_is_refused_before_parsing(served: dict[str, Any]) -> None:
    """An anonymous chunked multipart upload: 401 from the session check, before the multipart
    parser reads anything (the bug: 200 MB parsed, then 401)."""
    before = _rss()
    head = (
        f"POST /api/projects/{served['project_id']}/submissions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        "Content-Type: multipart/form-data; boundary=b0undary\r\nTransfer-Encoding: chunked\r\n\r\n"
    ).encode()
    got = stream(_port(served), head, chunked=True)
    assert got.status == 401, got
    assert got.sent < PLANNED
    assert _rss() - before < RSS_BOUND


def test_a_logged_in_chunked_upload_stops_at_the_upload_limit(served: dict[str, Any]) -> None:
    """A reviewer's chunked upload past the upload limit: 413 while streaming, memory flat."""
    cookie, csrf = _login_cookie(served, "bob")
    before = _rss()
    head = (
        f"POST /api/projects/{served['project_id']}/submissions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Cookie: scopebench_session={cookie}\r\nX-CSRF-Token: {csrf}\r\n"
        "Content-Type: multipart/form-data; boundary=b0undary\r\nTransfer-Encoding: chunked\r\n\r\n"
    ).encode()
    # A well-formed multipart start, so the parser reads on into the file's (endless) bytes.
    part = b'--b0undary\r\nContent-Disposition: form-data; name="image"; filename="a.png"\r\n\r\n'
    got = stream(_port(served), head, chunked=True, first=part)
    assert got.status == 413, got
    assert "uploads: 200,000 bytes" in json.loads(got.body)["detail"]
    assert got.sent < PLANNED
    assert _rss() - before < RSS_BOUND


@pytest.mark.parametrize("path", ["/api/assignments/1/rating", "/assignments/1/rating"])
def test_a_logged_in_json_or_form_body_has_the_small_limit(served: dict[str, Any], path: str) -> None:
    """Routes other than the uploads accept 256 KiB: a 1 MB rating is refused (413), unparsed."""
    cookie, csrf = _login_cookie(served, "eve")
    r = httpx.post(
        served["url"] + path,
        content=b"{" + b" " * 1_000_000 + b"}",
        headers={"Content-Type": "application/json", "X-CSRF-Token": csrf},
        cookies={"scopebench_session": cookie},
    )
    assert r.status_code == 413
    assert "262,144 bytes" in r.text

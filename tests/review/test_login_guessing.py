"""Logins that resist guessing without locking owners out, forwarded addresses trusted only from
configured proxies, the password rule, no server path in responses, and the per-user upload quota.

The throttle's delays are checked on a fake clock (no waiting); the rest on live servers (127.0.0.1;
other client addresses are simulated through X-Forwarded-For from a configured proxy).
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from PIL import Image
from review_helpers import PASSWORD, Server, build_project, write_bench

from scopebench.review.errors import Invalid
from scopebench.review.throttle import LoginThrottle, ThrottleSettings, TooManyAttempts


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _throttle(**kw: Any) -> tuple[LoginThrottle, Clock]:
    clock = Clock()
    return LoginThrottle(ThrottleSettings(**kw), b"k" * 32, clock=clock), clock


def _fail(t: LoginThrottle, address: str, user: str, device: str | None = None) -> None:
    t.check(address, user, device)
    t.failed(address, user, device)


def test_spraying_one_address_across_usernames_is_slowed() -> None:
    """Password spraying: one address, a new username each time (the bug: never limited, since
    the count was per user *and* address). Past the free failures, delays double."""
    t, clock = _throttle(free_per_address=3, free_per_user=100, base_delay=2.0, max_delay=16.0)
    for k in range(3):
        _fail(t, "10.0.0.9", f"user{k}")
    waits = []
    for k in range(3, 8):
        with pytest.raises(TooManyAttempts, match="from this address") as exc:
            t.check("10.0.0.9", f"user{k}", None)
        waits.append(exc.value.retry_after)
        clock.now += exc.value.retry_after
        _fail(t, "10.0.0.9", f"user{k}")
    assert waits == [2, 4, 8, 16, 16]  # growing, capped
    t.check("10.0.0.10", "user0", None)  # another address is not slowed


def test_guessing_one_account_from_many_addresses_is_slowed_but_the_owner_gets_in() -> None:
    """One username from a new address each time: slowed per username. The owner, whose browser
    logged in before (device cookie), is not slowed by it; without that cookie the right password
    gets in once the delay is over — a delay, never a lockout (the bug: 5 wrong passwords locked
    the owner out from that address)."""
    t, clock = _throttle(free_per_address=100, free_per_user=3, base_delay=1.0, max_delay=60.0)
    device = t.device_cookie("alice")
    for k in range(3):
        _fail(t, f"10.1.0.{k}", "alice")
    with pytest.raises(TooManyAttempts, match="for this account") as exc:
        t.check("10.1.0.99", "alice", None)
    t.check("192.168.5.5", "alice", device)  # the owner's browser: no wait
    with pytest.raises(TooManyAttempts):
        t.check("192.168.5.5", "alice", t.device_cookie("mallory"))  # a cookie for another name
    with pytest.raises(TooManyAttempts):
        t.check("192.168.5.5", "alice", device[:-2] + "xx")  # a forged one
    clock.now += exc.value.retry_after
    t.check("192.168.5.6", "alice", None)  # after the delay, anyone may try again
    # The owner's own typos count against the device cookie, not against the account.
    for _ in range(3):
        _fail(t, "192.168.5.5", "alice", device)
    with pytest.raises(TooManyAttempts, match="for this account"):
        t.check("192.168.5.5", "alice", device)


def test_failures_are_forgotten_after_the_window() -> None:
    t, clock = _throttle(free_per_address=2, free_per_user=2, base_delay=5.0, window=600.0)
    _fail(t, "a", "u")
    _fail(t, "a", "u")
    with pytest.raises(TooManyAttempts):
        t.check("a", "u", None)
    clock.now += 601
    t.check("a", "u", None)


@pytest.fixture(scope="module")
def proxied(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A server behind a configured proxy (127.0.0.1), so tests can play clients at other addresses."""
    from scopebench.review.app import AppSettings, create_app

    root = tmp_path_factory.mktemp("proxied")
    info = build_project(str(root / "r.db"), root / "store", write_bench(root / "bench"))
    settings = AppSettings(
        db=str(root / "r.db"),
        store=root / "store",
        forwarded_allow_ips="127.0.0.1",
        throttle=ThrottleSettings(free_per_address=4, free_per_user=3, base_delay=600.0, max_delay=3600.0),
        max_uploads_per_user=2,
        max_upload_total_bytes=10_000,
    )
    with Server(create_app(settings)) as server:
        yield info | {"url": server.url, "root": root}


def _login(url: str, user: str, password: str, address: str, **kw: Any) -> httpx.Response:
    return httpx.post(
        url + "/api/login",
        json={"username": user, "password": password},
        headers={"X-Forwarded-For": address},
        **kw,
    )


def test_owner_gets_in_after_others_guess_from_elsewhere(proxied: dict[str, Any]) -> None:
    """Over HTTP: bob logs in from his address; an attacker fails three times on bob from three
    addresses, so the account is delayed (429, Retry-After, the password not even checked);
    bob's browser still gets in at once with the right password."""
    url = proxied["url"]
    first = _login(url, "bob", PASSWORD, "203.0.113.7")
    assert first.status_code == 200
    device = first.cookies["scopebench_device"]
    assert [_login(url, "bob", "Guess-number-1!", f"198.51.100.{k}").status_code for k in range(3)] == [
        401
    ] * 3
    refused = _login(url, "bob", PASSWORD, "198.51.100.50")  # even the right password waits
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) > 500
    owner = _login(url, "bob", PASSWORD, "203.0.113.7", cookies={"scopebench_device": device})
    assert owner.status_code == 200
    # Spraying from one address across usernames is slowed too.
    codes = [
        _login(url, name, "Guess-number-1!", "198.51.100.99").status_code
        for name in ("ann", "eve", "admin", "senior", "ann")
    ]
    assert codes == [401, 401, 401, 401, 429]


def test_forwarded_headers_are_ignored_unless_configured(tmp_path: Path) -> None:
    """A server started as `review serve` starts it (no --forwarded-allow-ips): X-Forwarded-For
    from 127.0.0.1 does not change the address the limits count (the bug: uvicorn trusted it
    from loopback by default, so rotating the header sprayed without limit)."""
    from scopebench.review.app import AppSettings, create_app

    build_project(str(tmp_path / "r.db"), tmp_path / "store", write_bench(tmp_path / "bench"))
    app = create_app(
        AppSettings(
            db=str(tmp_path / "r.db"),
            store=tmp_path / "store",
            throttle=ThrottleSettings(free_per_address=3, base_delay=600.0),
        )
    )
    with Server(app) as server:
        codes = [
            _login(server.url, f"user{k}", "Guess-number-1!", f"198.51.100.{k}").status_code for k in range(4)
        ]
    assert codes == [401, 401, 401, 429]


def test_serve_trusts_no_proxy_headers_by_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`review serve` turns uvicorn's own proxy-header handling off, and passes the option on."""
    import uvicorn

    from scopebench.cli import main

    build_project(str(tmp_path / "r.db"), tmp_path / "store", write_bench(tmp_path / "bench"))
    seen: list[dict[str, Any]] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: seen.append({"app": app, **kw}))
    base = ["review", "serve", "--db", str(tmp_path / "r.db"), "--store", str(tmp_path / "store")]
    assert main(base) == 0
    assert main([*base, "--forwarded-allow-ips", "10.0.0.1"]) == 0
    assert [s["proxy_headers"] for s in seen] == [False, False]
    assert [s["app"].state.review.settings.forwarded_allow_ips for s in seen] == [None, "10.0.0.1"]


@pytest.mark.parametrize(
    ("password", "reason"),
    [
        ("short1!", "at least 8 characters"),
        ("password", "common passwords"),
        ("12345678", "common passwords"),
        ("        ", "common passwords"),
        ("PassWord", "common passwords"),
        ("ann-ann-ann-1", "too easy to guess"),
        ("asdfghjkl;", "too easy to guess"),
        ("Summer2024!", "too easy to guess"),
    ],
)
def test_weak_passwords_are_refused_with_the_reason(tmp_path: Path, password: str, reason: str) -> None:
    """NIST SP 800-63B: length 8, the common-password list, a strength estimate (the bug: any 8
    characters passed, eight spaces included)."""
    from scopebench.review.accounts import create_user
    from scopebench.review.db import open_database

    sessions = open_database(str(tmp_path / "p.db"))
    with sessions() as db, pytest.raises(Invalid, match=reason):
        create_user(db, "ann", password, "reviewer")
    with sessions() as db:  # no composition rule: plain uncommon words pass
        assert create_user(db, "ann", "ochre lantern festival", "reviewer").username == "ann"


def _png(seed: int, size: int = 40) -> bytes:
    buf = io.BytesIO()
    Image.effect_noise((size, size), 20 + seed).convert("RGB").save(buf, format="PNG")
    return buf.getvalue()


def test_uploads_have_a_per_user_quota(proxied: dict[str, Any]) -> None:
    """Count and bytes per user and project (the bug: 1,000 uploads stored, no limit)."""
    r = _login(proxied["url"], "ann", PASSWORD, "203.0.113.20")
    client = httpx.Client(
        base_url=proxied["url"], cookies=r.cookies, headers={"X-CSRF-Token": r.json()["csrf_token"]}
    )
    url = f"/api/projects/{proxied['project_id']}/submissions"
    form = {
        "question": "What is shown?",
        "answer": "Noise.",
        "modality": "light microscopy",
        "domain": "biology",
        "license": "CC0-1.0",
    }

    def post(data: bytes) -> httpx.Response:
        return client.post(url, data=form, files={"image": ("n.png", data, "image/png")})

    big = _png(1, 80)  # over the 10,000-byte quota on its own
    assert len(big) > 10_000
    r = post(big)
    assert r.status_code == 403 and "10,000 bytes" in r.json()["detail"]
    assert post(_png(1)).status_code == 200
    assert post(_png(2)).status_code == 200
    r = post(_png(3))
    assert r.status_code == 403 and "2 of 2 uploads" in r.json()["detail"]


def test_no_server_path_in_any_response(proxied: dict[str, Any]) -> None:
    """Every GET route as admin and as a reviewer, and the error answers (an unknown image id's
    404 named the image folder): no response names the server's folders."""
    from scopebench.review import routes_admin, routes_api, routes_pages

    root = str(proxied["root"])
    bodies = []
    for name, address in (("admin", "203.0.113.30"), ("ann", "203.0.113.31")):
        r = _login(proxied["url"], name, PASSWORD, address)
        with httpx.Client(base_url=proxied["url"], cookies=r.cookies) as c:
            for router in (routes_api.router, routes_pages.router, routes_admin.router):
                for route in router.routes:
                    if "GET" in route.methods:  # type: ignore[attr-defined]
                        path = re.sub(r"\{[^}]+\}", "1", route.path)  # type: ignore[attr-defined]
                        bodies.append(c.get(path).text)
            r = c.get(f"/api/projects/{proxied['project_id']}/images/{'ab' * 32}")
            assert r.status_code == 404
            bodies.append(r.text)
    assert len(bodies) > 30
    assert not [b for b in bodies if root in b or "/tmp/" in b]


def test_passwords_get_argon2s_default_cost_unless_a_profile_is_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The suite hashes with the cheapest profile (tests/conftest.py); a server without the variable
    must not. Catches the test profile leaking into the default, a misspelt profile falling back
    silently, and stored hashes failing to verify once the profile changes."""
    from scopebench.review.accounts import PASSWORD_PROFILE_ENV, password_hasher
    from scopebench.review.errors import Invalid

    try:
        monkeypatch.setenv(PASSWORD_PROFILE_ENV, "CHEAPEST")
        password_hasher.cache_clear()
        cheap = password_hasher().hash("correct horse")
        assert cheap.startswith("$argon2id$v=19$m=8,t=1,p=1$")
        monkeypatch.delenv(PASSWORD_PROFILE_ENV)
        password_hasher.cache_clear()
        assert password_hasher().hash("x").startswith("$argon2id$v=19$m=65536,t=3,p=4$")
        assert password_hasher().verify(cheap, "correct horse")  # a hash keeps its own parameters
        for wrong in ("cheapest", "Parameters", "get_default_parameters"):
            monkeypatch.setenv(PASSWORD_PROFILE_ENV, wrong)
            password_hasher.cache_clear()
            with pytest.raises(Invalid, match="RFC_9106_LOW_MEMORY"):
                password_hasher()
    finally:
        password_hasher.cache_clear()

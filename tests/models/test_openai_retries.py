"""Retries of ``openai:`` requests: what is retried, how long each wait is, and that waits are seeded.

Requests go over TCP to the scripted server of tests/openai_server.py. ``asyncio.sleep`` is replaced
by a recorder that does not wait, so every backoff delay the client chooses is checked exactly
against values computed by hand from ``random.Random(seed)``:

* delay before retry ``k`` (``k`` = attempts so far): ``d = min(backoff_max, backoff_base·2^(k-1))``,
  then "equal jitter" ``d/2 + uniform(0, d/2)``, one draw per retry from the run's seeded RNG;
* a server's ``retry-after-ms`` / ``Retry-After`` (capped by ``retry_after_max``) is a floor.

``random.Random(0).random()`` gives 0.8444218515250481, 0.7579544029403025, 0.420571580830845;
``random.Random(7).random()`` starts 0.32383276483316237.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from helpers import make_items
from openai_server import ChatServer
from scopebench.models import ModelOptions, load_model
from scopebench.models.openai_api import OpenAIBackend
from scopebench.models.scrub import forget_secrets

R0 = (0.8444218515250481, 0.7579544029403025, 0.420571580830845)


@pytest.fixture(scope="module")
def server() -> Iterator[ChatServer]:
    with ChatServer() as srv:
        yield srv


@pytest.fixture(autouse=True)
def _fresh(server: ChatServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    server.state.reset()
    server.state.delay_s = 0.0
    monkeypatch.setenv("OPENAI_API_KEY", "sk-retry-test-0123456789")
    monkeypatch.setenv("SCOPEBENCH_CACHE", str(tmp_path / "cache"))
    yield
    forget_secrets()


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Every positive delay passed to ``asyncio.sleep``, which then does not wait."""
    got: list[float] = []
    real = asyncio.sleep

    async def record(delay: float, result: Any = None) -> Any:
        if delay > 0:
            got.append(delay)
        return await real(0, result)

    monkeypatch.setattr(asyncio, "sleep", record)
    return got


def _backend(base_url: str, model: str, seed: int = 0, **args: object) -> OpenAIBackend:
    opts = ModelOptions(base_url=base_url, seed=seed, extra={"cache": False, "concurrency": 1, **args})
    backend = load_model(f"openai:{model}", opts)
    assert isinstance(backend, OpenAIBackend)
    return backend


def test_wait_sequence_for_a_seed_is_the_hand_computed_one(server: ChatServer, sleeps: list[float]) -> None:
    backend = _backend(server.base_url, "fail500", max_retries=3, backoff_base=1.0, backoff_max=3.0)
    [resp] = backend.predict(make_items(1))
    assert resp.status == "error" and resp.error is not None and "gave up after 4 attempts" in resp.error
    assert len(server.state.log) == 4
    # d = 1, 2, then 4 capped at 3; no wait after the last attempt.
    expected = [0.5 + 0.5 * R0[0], 1.0 + 1.0 * R0[1], 1.5 + 1.5 * R0[2]]
    assert sleeps == pytest.approx(expected, abs=1e-12)


def test_same_seed_same_waits_other_seed_other_waits(server: ChatServer, sleeps: list[float]) -> None:
    for seed in (0, 0, 7):
        _backend(server.base_url, "fail500", seed=seed, max_retries=1).predict(make_items(1))
    assert sleeps == pytest.approx([0.5 + 0.5 * R0[0]] * 2 + [0.5 + 0.5 * 0.32383276483316237], abs=1e-12)


def test_giving_up_draws_nothing_so_the_next_request_continues_the_sequence(
    server: ChatServer, sleeps: list[float]
) -> None:
    # Two items one after the other, one retry each: the second wait is the RNG's second draw.
    # (A wait computed, and drawn, for the attempt after the last would shift it to the third.)
    backend = _backend(server.base_url, "fail500", max_retries=1)
    assert [r.status for r in backend.predict(make_items(2))] == ["error", "error"]
    assert sleeps == pytest.approx([0.5 + 0.5 * R0[0], 0.5 + 0.5 * R0[1]], abs=1e-12)


@pytest.mark.parametrize(
    ("retry_after", "retry_after_ms", "cap", "expected"),
    [
        ("5", None, 300.0, [5.0, 5.0]),  # Retry-After above the backoff: it is the wait
        # Capped at 1.5 s: the floor wins over the first jittered delay, not over the second.
        ("5", None, 1.5, [1.5, 1.0 + 1.0 * R0[1]]),
        ("5", "2500", 300.0, [2.5, 2.5]),  # retry-after-ms wins over Retry-After
        ("0", None, 300.0, [0.5 + 0.5 * R0[0], 1.0 + 1.0 * R0[1]]),  # a zero hint: the backoff
    ],
)
def test_retry_after_is_a_floor_capped_by_retry_after_max(
    server: ChatServer,
    sleeps: list[float],
    monkeypatch: pytest.MonkeyPatch,
    retry_after: str,
    retry_after_ms: str | None,
    cap: float,
    expected: list[float],
) -> None:
    monkeypatch.setattr(server.state, "retry_after", retry_after)
    monkeypatch.setattr(server.state, "retry_after_ms", retry_after_ms)
    backend = _backend(server.base_url, "fail429:2", retry_after_max=cap)
    [resp] = backend.predict(make_items(1))
    assert resp.status == "ok" and resp.extra["attempts"] == 3
    assert sleeps == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("code", [408, 409, 429, 500, 502, 503, 504, 599])
def test_retryable_statuses_are_retried_until_the_limit(
    server: ChatServer, sleeps: list[float], code: int
) -> None:
    [resp] = _backend(server.base_url, f"status:{code}", max_retries=2).predict(make_items(1))
    assert resp.status == "error" and resp.error is not None
    assert f"HTTP {code}" in resp.error and "gave up after 3 attempts" in resp.error
    assert resp.extra["attempts"] == 3 and len(server.state.log) == 3 and len(sleeps) == 2


@pytest.mark.parametrize("code", [400, 401, 403, 404, 422])
def test_other_statuses_fail_at_once(server: ChatServer, sleeps: list[float], code: int) -> None:
    [resp] = _backend(server.base_url, f"status:{code}", max_retries=2).predict(make_items(1))
    assert resp.status == "error" and resp.error is not None
    assert f"HTTP {code}" in resp.error and "gave up" not in resp.error
    assert ("check the key" in resp.error) == (code in (401, 403))
    assert resp.extra["attempts"] == 1 and len(server.state.log) == 1 and sleeps == []


def test_connection_errors_are_retried(sleeps: list[float]) -> None:
    with socket.socket() as sock:  # a port nobody listens on once closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    backend = _backend(f"http://127.0.0.1:{port}/v1", "x", max_retries=2, backoff_base=2.0)
    [resp] = backend.predict(make_items(1))
    assert resp.status == "error" and resp.error is not None
    assert "connection failed" in resp.error and "gave up after 3 attempts" in resp.error
    assert resp.extra["attempts"] == 3 and backend.requests_sent == 3
    assert sleeps == pytest.approx([1.0 + 1.0 * R0[0], 2.0 + 2.0 * R0[1]], abs=1e-12)


def test_max_retries_zero_sends_once(server: ChatServer, sleeps: list[float]) -> None:
    [resp] = _backend(server.base_url, "fail500", max_retries=0).predict(make_items(1))
    assert resp.error is not None and "gave up after 1 attempts" in resp.error
    assert len(server.state.log) == 1 and sleeps == []


def test_seeded_backoff_alone_matches_the_formula() -> None:
    import random

    import tenacity

    from scopebench.models.openai_api import SeededBackoff

    wait = SeededBackoff(random.Random(0), base=0.5, cap=60.0, retry_after_max=300.0, max_retries=3)
    state = tenacity.RetryCallState(retry_object=tenacity.AsyncRetrying(), fn=None, args=(), kwargs={})
    got = []
    for k in (1, 2, 3, 4):  # the 4th attempt is the last allowed: 0, and no draw
        state.attempt_number = k
        got.append(wait(state))
    assert got == pytest.approx([0.25 + 0.25 * R0[0], 0.5 + 0.5 * R0[1], 1.0 + 1.0 * R0[2], 0.0], abs=1e-12)
    assert wait.rng.random() == pytest.approx(0.25891675029296335)  # exactly three draws were made

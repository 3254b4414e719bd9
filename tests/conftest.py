"""Shared test helpers: an in-memory benchmark registered under ``unit`` for engine tests."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import make_items
from openai_server import ChatServer
from scopebench.benchmarks import Benchmark, LoadedBenchmark, register_benchmark
from scopebench.items import Item

# The review app hashes passwords with argon2's CHEAPEST profile in tests (0.2 ms instead of 0.25 CPU s
# a hash, and the suite makes hundreds); test_login_guessing.py checks the real default, and the load
# test logs in with it. Set here, it reaches the in-process servers and the subprocesses alike.
os.environ.setdefault("SCOPEBENCH_ARGON2_PROFILE", "CHEAPEST")


@register_benchmark("unit")
class UnitBenchmark(Benchmark):
    """A benchmark whose items come from the ``SCOPEBENCH_UNIT_N`` data string: ``"N"`` items."""

    title = "unit-test benchmark"
    splits = ("test",)
    tasks = ("t1", "t2")
    default_split = "test"
    data_help = "tests only"

    def load(self, data: str | Path, split: str | None = None) -> LoadedBenchmark:
        n = int(str(data) or "10")
        return LoadedBenchmark(name="unit", data=str(data), items=make_items(n), fingerprint=f"unit-{n}")


@pytest.fixture
def unit_items() -> list[Item]:
    return make_items(10)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked ``slow`` first (stable order otherwise).

    pytest-xdist hands tests to its workers in collection order, so a long test collected last runs
    alone while the other worker idles; started first, the long ones overlap the many short ones.
    Every worker collects the same order, as xdist requires.
    """
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture(scope="module")
def chat_server() -> Iterator[ChatServer]:
    """The OpenAI-compatible stand-in (tests/openai_server.py) on 127.0.0.1, one per test module."""
    with ChatServer() as srv:
        yield srv


@pytest.fixture
def openai_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """An API key for ``openai:`` models and a response cache of the test's own."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("SCOPEBENCH_CACHE", str(tmp_path / "cache"))

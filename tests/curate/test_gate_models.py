"""Gates and generate alike: a lab's OpenAI-compatible server, failures that stop and exit non-zero.

Requests go to tests/openai_server.py on 127.0.0.1, or to a closed port on 127.0.0.1 (connection
refused at once: no wait is involved). Each test names the bug it catches.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest

from openai_server import ChatServer
from scopebench.cli import main
from scopebench.curate.llm import CallCache, LLMCall, LLMClient
from scopebench.models import ChatMessage, ModelOptions, load_model


@pytest.fixture(autouse=True)
def _private_caches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The openai: backend keeps its own disk cache: keep it out of the user's.
    monkeypatch.setenv("SCOPEBENCH_CACHE", str(tmp_path / "backend-cache"))


def _dead_port() -> str:
    """A base URL on 127.0.0.1 where nothing listens (the port was free a moment ago)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def _filter_yaml(path: Path, base_url: str, *, key_env: str = "LAB_KEY", **section: Any) -> Path:
    # Any backend argument rides along: no retries, and no per-request disk cache of the backend's
    # own (so the server sees every call the build's call cache does not answer).
    args = {"base_url": base_url, "api_key_env": key_env, "max_retries": 0, "cache": False}
    body = {"filter": {"shortcut": {"models": [{"model": "openai:say:B", "model_args": args}]}, **section}}
    path.write_text(json.dumps(body))  # JSON is YAML
    return path


def test_a_gate_model_takes_the_generate_block_base_url_and_key_variable(
    built: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Catches gate models that took a spec only (no base_url, no key variable), so a lab's own
    # server could not be a shortcut tester; and a re-run whose ledger repeats the first run's requests.
    monkeypatch.setenv("LAB_KEY", "sk-lab-123")
    n = sum(built["questions"].stats["questions"].values())
    with ChatServer() as server:
        cfg = _filter_yaml(tmp_path / "f.yaml", server.base_url)
        argv = ["build", "filter", str(built["root"] / "questions"), "--out", str(tmp_path / "f"),
                "--config", str(cfg)]  # fmt: skip
        assert main(argv) == 0
        log = list(server.state.log)
        assert len(log) == 2 * n  # every question, text only and choices only
        assert {e.authorization for e in log} == {"Bearer sk-lab-123"} and {e.model for e in log} == {"say:B"}
        stats = json.loads((tmp_path / "f/build.json").read_text())["stats"]
        assert stats["ledger"]["total"]["requests"] == 2 * n and stats["shortcut"]["models"] == [
            "openai:say:B"
        ]
        capsys.readouterr()
        assert main(argv) == 0  # again: every answer from the build's call cache, nothing sent
        assert len(server.state.log) == 2 * n
        again = json.loads((tmp_path / "f/build.json").read_text())["stats"]["ledger"]["total"]
        assert (again["requests"], again["cached"]) == (0, 2 * n)
        assert "sent this run" in capsys.readouterr().out


def test_a_dead_gate_server_stops_the_filter_early_with_a_message(
    built: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Catches a filter that asked a dead server for every question (retrying for minutes) and
    # then exited 0.
    cfg = _filter_yaml(tmp_path / "f.yaml", _dead_port(), max_consecutive_failures=3)
    argv = ["build", "filter", str(built["root"] / "questions"), "--out", str(tmp_path / "f"),
            "--config", str(cfg)]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err.replace("\n", " ")
    assert "filter stopped:" in err and "calls to openai:say:B failed in a row" in err
    assert "base_url" in err


def test_filter_exits_non_zero_past_max_fail_fraction(
    built: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Catches a filter whose every blind answer failed yet "passed" every question and exited 0.
    cfg = _filter_yaml(tmp_path / "f.yaml", _dead_port(), max_consecutive_failures=0, max_fail_fraction=0.25)
    argv = ["build", "filter", str(built["root"] / "questions"), "--out", str(tmp_path / "f"),
            "--config", str(cfg)]  # fmt: skip
    assert main(argv) == 2
    assert "more than max_fail_fraction 25%" in capsys.readouterr().err.replace("\n", " ")
    stats = json.loads((tmp_path / "f/build.json").read_text())["stats"]  # the output is written first
    assert stats["incomplete"] and stats["ledger"]["total"]["failed"] == stats["ledger"]["total"]["requests"]


def _texts(tmp_path: Path) -> Path:
    (tmp_path / "texts.csv").write_text(
        "source,image,caption\nsrc_a,img0.png,A basophil.\nsrc_a,img1.png,A lymphocyte.\nsrc_a,img3.png,Another.\n"
    )
    return tmp_path / "texts.csv"


def test_generate_against_a_dead_port_stops_early(
    built: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Catches generate exiting 0 with every call failed, after retrying for minutes.
    argv = ["build", "generate", str(built["root"] / "questions"), "--out", str(tmp_path / "g"),
            "--model", "openai:tiny", "--model-arg", f"base_url={_dead_port()}", "--model-arg", "max_retries=0",
            "--model-arg", "concurrency=1", "--inputs", str(_texts(tmp_path)), "--max-consecutive-failures", "2"]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err.replace("\n", " ")
    assert "generate stopped: 2 calls to openai:tiny failed in a row" in err


def test_generate_exits_non_zero_past_max_fail_fraction_after_writing_the_failure_rows(
    built: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Catches generate exiting 0 when every reply was unusable.
    with ChatServer() as server:
        argv = ["build", "generate", str(built["root"] / "questions"), "--out", str(tmp_path / "g"),
                "--model", "openai:say:no-json", "--model-arg", f"base_url={server.base_url}",
                "--inputs", str(_texts(tmp_path)), "--tasks", "describe", "--retries", "0"]  # fmt: skip
        assert main(argv) == 2
        assert len(server.state.log) == 3
    assert "3 of 3 calls failed (invalid_json 3)" in capsys.readouterr().err.replace("\n", " ")
    rows = [json.loads(x) for x in (tmp_path / "g/generated.jsonl").read_text().splitlines()]
    assert [r["raw"] for r in rows] == ["no-json"] * 3


def test_the_bar_counts_calls_answered_from_the_cache_and_sent(tmp_path: Path) -> None:
    # Catches a bar that counted tasks (0/1) while hundreds of calls went out.
    class Bar:
        n = 0

        def update(self, k: int) -> None:
            self.n += k

    (tmp_path / "r.jsonl").write_text(
        "".join(json.dumps({"item_id": f"c{i}", "response": "ok"}) + "\n" for i in range(3))
    )
    backend = load_model(f"replay:{tmp_path / 'r.jsonl'}", ModelOptions())
    cache = CallCache(tmp_path / "c.sqlite")
    calls = [LLMCall(f"c{i}", [ChatMessage("user", f"q{i}")]) for i in range(3)]
    bar = Bar()
    LLMClient(backend, cache, progress=bar).chat("t", calls[:1], seed=0)
    LLMClient(backend, cache, progress=bar).chat("t", calls, seed=0)  # one from the cache, two sent
    assert bar.n == 4

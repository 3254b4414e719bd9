"""``--answer-format constrained``: the backend may only answer an option label.

Against real pieces: the local OpenAI-compatible chat_server (tests/openai_server.py enforces a
structured-outputs enum with its tiny GPT-2), a tiny random-weight HF model (a logits restriction
in ``generate``), and the refusals for backends that cannot enforce it. vLLM's guided choice is
checked by tests/models/test_vllm_backend.py where vLLM is installed.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from openai_server import ChatServer
from scopebench.engine import RunConfig, run_benchmark
from scopebench.errors import ModelSpecError
from scopebench.models import ModelOptions, load_model
from scopebench.store import load_run

# Every test here gets an API key and a cache of its own (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("openai_env")


def test_openai_constrained_sends_the_label_schema_and_every_reply_parses(
    chat_server: ChatServer, tmp_path: Path
) -> None:
    # Catches: the schema not sent (or with the wrong labels), the JSON reply not read by the
    # parser, and run.json not saying which format the run used.
    chat_server.state.reset()
    cfg = RunConfig(benchmark="unit", data="8", model="openai:tiny", base_url=chat_server.base_url,
                    answer_format="constrained", model_args={"cache": False})  # fmt: skip
    run_benchmark(cfg, tmp_path / "c")
    sent = [e.body["response_format"] for e in chat_server.state.log]
    assert len(sent) == 8
    assert all(
        f["json_schema"]["schema"]["properties"]["answer"]["enum"] == ["A", "B", "C", "D"] for f in sent
    )
    recs = load_run(tmp_path / "c").records
    assert all(r.status == "ok" and json.loads(r.response or "")["answer"] in "ABCD" for r in recs)
    run_json = json.loads((tmp_path / "c" / "run.json").read_text())
    assert run_json["answer_format"] == "constrained"
    assert run_json["model_identity"]["answer_format"] == "constrained"
    # The same items free-form: no schema sent, and the random model's text is what the parser gets.
    chat_server.state.reset()
    run_benchmark(replace(cfg, answer_format="free"), tmp_path / "f")
    assert all("response_format" not in e.body for e in chat_server.state.log)
    assert json.loads((tmp_path / "f" / "run.json").read_text())["answer_format"] == "free"


def test_hf_constrained_generates_only_labels(tmp_path: Path) -> None:
    # Catches: the logits restriction missing (random weights then write random text) or letting
    # a label outside the item's options through.
    pytest.importorskip("transformers")
    from scopebench.testing.tiny import build_tiny_generative

    model = build_tiny_generative(tmp_path / "m", "llava", seed=0)
    cfg = RunConfig(
        benchmark="unit", data="6", model=f"hf:{model}", answer_format="constrained", no_image=True
    )
    run_benchmark(cfg, tmp_path / "run")
    recs = load_run(tmp_path / "run").records
    assert [r.response for r in recs if r.response not in ("A", "B", "C", "D")] == []
    assert all(r.status == "ok" and r.finish_reason == "stop" and not r.truncated for r in recs)
    assert json.loads((tmp_path / "run" / "run.json").read_text())["answer_format"] == "constrained"


@pytest.mark.parametrize("spec", ["random", "frequent"])
def test_backends_that_cannot_enforce_it_are_refused(spec: str) -> None:
    # Catches: a constrained run silently answered free-form (its numbers would be mislabelled).
    with pytest.raises(ModelSpecError, match=r"cannot enforce a label-only answer.*--answer-format free"):
        load_model(spec, ModelOptions(answer_format="constrained"))


def test_constrained_with_a_strategy_is_refused(chat_server: ChatServer, tmp_path: Path) -> None:
    # Catches: every chain-of-thought turn cut to one label.
    cfg = RunConfig(benchmark="unit", data="2", model="openai:tiny", base_url=chat_server.base_url,
                    answer_format="constrained", strategy="step-by-step")  # fmt: skip
    with pytest.raises(ModelSpecError, match="strategy"):
        run_benchmark(cfg, tmp_path / "s")

"""Why generation stopped reaches the record, the parser and the report.

Against the real OpenAI-compatible test chat_server on 127.0.0.1 (``cut:TEXT`` answers TEXT with
``finish_reason: "length"``), the replay backend's optional ``finish_reason`` field, and the HF
backend's own reading of its generated rows.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from openai_server import ChatServer
from scopebench.engine import RunConfig, run_benchmark
from scopebench.errors import DataFormatError
from scopebench.models.base import Response, finish_reason
from scopebench.models.replay import read_replay_file
from scopebench.report.tables import table_note
from scopebench.store import load_run

# A walk-through the token limit cut: every option but "option 2" ruled out, option 2 reached
# only in the sentence the cut ends (its verdict unwritten).
WALK = "Let me check each one. option 0 is not seen. option 1 is unlikely. option 3 is absent.\nNow option 2"


# Every test here gets an API key and a cache of its own (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("openai_env")


def _run(chat_server: ChatServer, model: str, out: Path) -> list[Any]:
    cfg = RunConfig(
        benchmark="unit", data="4", model=f"openai:{model}", base_url=chat_server.base_url,
        model_args={"cache": False},
    )  # fmt: skip
    result = run_benchmark(cfg, out)
    return [*sorted(load_run(out).records, key=lambda r: r.item_id), result.metrics]


def test_cut_walk_through_is_not_read_by_elimination(chat_server: ChatServer, tmp_path: Path) -> None:
    # Catches: a cut reply read by its one option not yet ruled out (option text), a record that
    # does not say it was cut, and a report that does not say so.
    *cut, metrics = _run(chat_server, f"cut:{WALK}", tmp_path / "cut")
    assert all(r.finish_reason == "length" and r.truncated for r in cut)
    assert all(r.status == "unparsed" and r.choice is None for r in cut)
    assert metrics["overall"]["truncated"] == 4
    note = table_note(metrics)
    assert "4 of 4 replies were cut at the length limit" in note and "max_new_tokens" in note
    # The same words, finished ("stop"), are read as before: option 2 is the one named and not ruled out.
    *whole, metrics = _run(chat_server, f"say:{WALK}", tmp_path / "whole")
    assert all(r.finish_reason == "stop" and not r.truncated for r in whole)
    assert [r.choice for r in whole] == [2, 2, 2, 2]
    assert metrics["overall"]["truncated"] == 0 and "length limit" not in table_note(metrics)


def test_cut_reply_with_a_verdict_before_the_cut_is_read(chat_server: ChatServer, tmp_path: Path) -> None:
    # Catches: truncation handled by dropping every cut reply instead of reading its explicit verdict.
    *recs, _ = _run(
        chat_server, "cut:The answer is C. Option 0 is not seen and option 1 is unli", tmp_path / "r"
    )
    assert [(r.choice, r.truncated) for r in recs] == [(2, True)] * 4


def test_echoed_prompt_is_stripped_in_a_run(chat_server: ChatServer, tmp_path: Path) -> None:
    # Catches: the engine not handing the rendered prompt to the parser. The reply repeats the
    # prompt the "unit" items render to (question, options, instruction), then answers.
    from helpers import make_items
    from scopebench.protocols import render

    prompt = render(make_items(1)[0], "default").text
    *recs, _ = _run(chat_server, "say:USER: " + " ".join(prompt.split()) + " ASSISTANT: D", tmp_path / "e")
    assert recs[0].choice == 3 and recs[0].extra["parse_method"] == "bare_label"


@pytest.mark.parametrize(
    ("raw", "want"),
    [("stop", "stop"), ("eos", "stop"), ("length", "length"), ("MAX_TOKENS", "length"),
     ("content_filter", "content_filter"), ("safety", "content_filter"), ("abort", "error"),
     ("something", None), (None, None), (3, None)],
)  # fmt: skip
def test_finish_reason_names(raw: object, want: str | None) -> None:
    # Catches: a chat_server's own spelling of "cut" (max_tokens, MAX_TOKENS) not read as length.
    assert finish_reason(raw) == want


def test_failed_response_says_error() -> None:
    # Catches: a failed call recorded with no finish reason (or with a stale "stop").
    assert Response("x", status="error", error="boom").finish_reason == "error"
    assert Response("x", status="error", error="withheld", finish_reason="content_filter").finish_reason == (
        "content_filter"
    )


def test_replay_reads_finish_reason_and_refuses_unknown(tmp_path: Path) -> None:
    # Catches: a replay file's finish_reason ignored, or a typo in it silently read as "unknown".
    good = tmp_path / "good.jsonl"
    good.write_text(
        json.dumps({"item_id": "a", "response": "B", "finish_reason": "max_tokens"}) + "\n"
        + json.dumps({"item_id": "b", "response": "C"}) + "\n"
    )  # fmt: skip
    finish: dict[str, str] = {}
    assert read_replay_file(good, finish) == {"a": "B", "b": "C"}  # type: ignore[arg-type]
    assert finish == {"a": "length"}
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"item_id": "a", "response": "B", "finish_reason": "lenght"}) + "\n")
    with pytest.raises(DataFormatError, match="unknown finish_reason"):
        read_replay_file(bad, {})


def test_hf_finish_reasons_from_generated_rows() -> None:
    # Catches: an HF reply that used the whole budget without an end-of-sequence not called
    # "length", or one that ended (padding after its end) called "length".
    torch = pytest.importorskip("torch")
    from types import SimpleNamespace

    from scopebench.models.hf_generative import HFGenerativeBackend

    config = SimpleNamespace(eos_token_id=[2, 9], pad_token_id=0)
    rows = torch.tensor([[5, 6, 7], [5, 2, 0], [5, 9, 0]])
    assert HFGenerativeBackend._finish_reasons(rows, config, 3) == ["length", "stop", "stop"]
    # A batch shorter than the budget stopped for every row.
    assert HFGenerativeBackend._finish_reasons(rows, config, 5) == ["stop", "stop", "stop"]

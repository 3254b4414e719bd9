"""Chain-of-thought strategies run end to end with replayed transcripts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scopebench.engine import RunConfig, run_benchmark
from scopebench.errors import ModelSpecError
from scopebench.models.strategies import STRATEGIES, strategy_steps
from scopebench.store import load_run


def _bench(tmp: Path) -> Path:
    rows = [
        {"id": f"q{i}", "question": f"Which bar is highest in panel {i}?", "choices": ["a", "b", "c"],
         "answer": i % 3, "task": "Quant"}
        for i in range(4)
    ]  # fmt: skip
    path = tmp / "data.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_ddcot_keeps_every_message_and_parses_the_last(tmp_path: Path) -> None:
    data = _bench(tmp_path)
    transcripts = {
        "local/q0": ["1. What is in panel 0?", "Panel 0 shows bars.", "The answer is A"],
        "local/q1": ["1. Which bar?", "The second.", "The answer is (b)"],
        "local/q2": ["sub-questions", "answers"],  # transcript stops early → missing step 3
        "local/q3": ["x", "y", "I am not sure."],  # unparsed final answer
    }
    replay = tmp_path / "t.jsonl"
    replay.write_text(
        "".join(json.dumps({"item_id": k, "responses": v}) + "\n" for k, v in transcripts.items())
    )
    cfg = RunConfig(benchmark="local", data=str(data), model=f"replay:{replay}", strategy="ddcot")
    res = run_benchmark(cfg, tmp_path / "run")
    recs = {r.item_id: r for r in load_run(tmp_path / "run").records}
    msgs = recs["local/q0"].extra["messages"]
    assert [m["role"] for m in msgs] == ["user", "assistant", "user", "assistant", "user", "assistant"]
    assert msgs[0]["text"].startswith("Question: Which bar is highest in panel 0?")
    assert "decompose this question into the sub-questions" in msgs[0]["text"]
    assert msgs[5]["text"] == "The answer is A" and recs["local/q0"].correct is True
    assert recs["local/q1"].choice == 1 and recs["local/q1"].correct is True
    assert recs["local/q2"].status == "missing_response" and "step 3" in (recs["local/q2"].error or "")
    assert recs["local/q3"].status == "unparsed"
    assert res.metrics["overall"]["correct"] == 2
    cfg_json = json.loads((tmp_path / "run" / "run.json").read_text())
    assert cfg_json["strategy"] == "ddcot" and cfg_json["mode"] == "strategy:ddcot"


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_every_strategy_ends_with_an_answer_format(name: str) -> None:
    steps = strategy_steps(name)
    assert steps[-1].instruction == "" or "The answer is X" in steps[-1].instruction
    assert len(steps) == (3 if name in {"ddcot", "cantor"} else 1)


def test_strategy_needs_a_chat_backend(tmp_path: Path) -> None:
    cfg = RunConfig(benchmark="local", data=str(_bench(tmp_path)), model="random", strategy="vot")
    with pytest.raises(ModelSpecError, match="cannot hold a multi-turn conversation"):
        run_benchmark(cfg, tmp_path / "run")
    with pytest.raises(ModelSpecError, match="unknown strategy"):
        strategy_steps("tree-of-thought")


def test_strategies_command_on_spur_fixture_with_transcripts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from helpers import FIXTURES
    from scopebench.benchmarks import get_benchmark
    from scopebench.cli import main

    items = get_benchmark("spur").load(FIXTURES / "spur").items
    # Every item's transcript ends with answer A: ddcot's accuracy is the share of answer A.
    replay = tmp_path / "t.jsonl"
    replay.write_text(
        "".join(
            json.dumps({"item_id": it.id, "responses": ["plan", "work", "The answer is A"]}) + "\n"
            for it in items
        )
    )
    code = main(
        ["strategies", "--bench", "spur", "--data", str(FIXTURES / "spur"), "--model", f"replay:{replay}",
         "--out", str(tmp_path / "out"), "--strategies", "direct,ddcot", "--no-image"]
    )  # fmt: skip
    assert code == 0
    out = capsys.readouterr().out
    share_a = sum(it.answer_index == 0 for it in items) / len(items)
    assert f"{100 * share_a:.1f}%" in out  # the table (rich may wrap the "(n=…)" part)
    # ddcot reads all three replies (the last answers A); direct reads only the first ("plan").
    assert load_run(tmp_path / "out" / "ddcot").metrics["overall"]["accuracy"] == pytest.approx(share_a)
    assert load_run(tmp_path / "out" / "direct").metrics["overall"]["unparsed"] == len(items)
    assert "perception_correct" in out or "perception_wrong" in out
    ddcot = load_run(tmp_path / "out" / "ddcot")
    assert len(ddcot.records[0].extra["messages"]) == 6


def test_replies_beyond_the_strategys_steps_are_counted_and_warned_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A ddcot-style transcript replayed with `direct`: only its first reply is used."""
    data = _bench(tmp_path)
    lines = [
        {"item_id": "local/q0", "responses": ["Let me think.", "The answer is A"]},  # 1 unused
        {"item_id": "local/q1", "responses": ["a", "b", "The answer is B"]},  # 2 unused
        {"item_id": "local/q2", "responses": ["The answer is C"]},  # exactly one step
        {"item_id": "local/q3", "response": "The answer is A"},  # a single reply
    ]
    replay = tmp_path / "t.jsonl"
    replay.write_text("".join(json.dumps(x) + "\n" for x in lines))
    cfg = RunConfig(
        benchmark="local", data=str(data), model=f"replay:{replay}", strategy="direct", batch_size=2
    )
    with caplog.at_level("WARNING", logger="scopebench.models.strategies"):
        run_benchmark(cfg, tmp_path / "run")
    warnings = [r.getMessage() for r in caplog.records if r.name == "scopebench.models.strategies"]
    assert len(warnings) == 1  # once per run, not per batch
    assert (
        warnings[0].startswith("2 of 4 items have more replies") and "'direct' has steps (1)" in warnings[0]
    )
    recs = {r.item_id: r for r in load_run(tmp_path / "run").records}
    assert recs["local/q0"].extra["unused_replies"] == 1 and recs["local/q0"].status == "unparsed"
    assert recs["local/q1"].extra["unused_replies"] == 2
    assert "unused_replies" not in recs["local/q2"].extra and recs["local/q2"].correct is True
    assert "unused_replies" not in recs["local/q3"].extra
    # ddcot uses all three of q1's replies: nothing unused, no warning about q1.
    caplog.clear()
    cfg = RunConfig(benchmark="local", data=str(data), model=f"replay:{replay}", strategy="ddcot")
    with caplog.at_level("WARNING", logger="scopebench.models.strategies"):
        run_benchmark(cfg, tmp_path / "run3")
    assert not [r for r in caplog.records if r.name == "scopebench.models.strategies"]
    assert (
        "unused_replies" not in {r.item_id: r for r in load_run(tmp_path / "run3").records}["local/q1"].extra
    )


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        # ddcot has 3 steps: q2's 2-reply transcript and q3's empty one cannot be answered either.
        ("ddcot", "4 of 6 items have no response"),
        ("direct", "3 of 6 items have no response"),  # q2 is answered from its first reply
        (None, "3 of 6 items have no response"),  # no strategy: a transcript's last reply
    ],
)
def test_the_missing_response_warning_counts_exactly_the_records_written(
    strategy: str | None, expected: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The replay's "N of M items have no response" is exactly the missing_response records.

    Before, items with an empty transcript, or (under a strategy) fewer replies than steps, were
    recorded as missing_response without being counted: "2 of 6" above 4 such records.
    """
    rows = [{"id": f"q{i}", "question": f"Q{i}?", "choices": ["a", "b", "c"], "answer": 0} for i in range(6)]
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    lines = [
        {"item_id": "local/q0", "responses": ["subs", "answers", "The answer is A"]},
        {"item_id": "local/q1", "responses": ["subs", "answers", "The answer is B"]},
        {"item_id": "local/q2", "responses": ["subs", "The answer is A"]},  # short for ddcot
        {"item_id": "local/q3", "responses": []},  # no reply at all
    ]  # q4, q5: no line
    replay = tmp_path / "t.jsonl"
    replay.write_text("".join(json.dumps(x) + "\n" for x in lines))
    cfg = RunConfig(benchmark="local", data=str(data), model=f"replay:{replay}", strategy=strategy)
    with caplog.at_level("WARNING", logger="scopebench.models"):
        run_benchmark(cfg, tmp_path / "run")
    (warning,) = [r.getMessage() for r in caplog.records if "have no response" in r.getMessage()]
    assert warning.startswith(expected)
    n_missing = sum(r.status == "missing_response" for r in load_run(tmp_path / "run").records)
    assert n_missing == int(expected.split()[0])

"""Chain-of-thought strategies run end to end with replayed transcripts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scopebench.engine import RunConfig, load_run, run_benchmark
from scopebench.errors import ModelSpecError
from scopebench.models.strategies import STRATEGIES, strategy_steps


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
        ["-q", "strategies", "--bench", "spur", "--data", str(FIXTURES / "spur"), "--model", f"replay:{replay}",
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

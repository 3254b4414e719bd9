"""The strategy sweep as a library call (the `scopebench strategies` command prints what it returns)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import FIXTURES
from scopebench.benchmarks import get_benchmark
from scopebench.engine import RunConfig
from scopebench.errors import ModelSpecError
from scopebench.experiments.strategies import run_strategy_sweep


def _replay(tmp_path: Path) -> tuple[str, float, int]:
    items = get_benchmark("spur").load(FIXTURES / "spur").items
    replay = tmp_path / "t.jsonl"
    replay.write_text(
        "".join(
            json.dumps({"item_id": it.id, "responses": ["plan", "work", "The answer is A"]}) + "\n"
            for it in items
        )
    )
    return f"replay:{replay}", sum(it.answer_index == 0 for it in items) / len(items), len(items)


def test_sweep_runs_each_strategy_in_its_own_folder_in_order(tmp_path: Path) -> None:
    model, share_a, n = _replay(tmp_path)
    base = RunConfig(benchmark="spur", data=str(FIXTURES / "spur"), model=model, no_image=True)
    sweep = run_strategy_sweep(base, ["ddcot", "direct"], tmp_path / "out")
    assert [s.strategy for s in sweep] == ["ddcot", "direct"]
    assert [s.result.run_dir for s in sweep] == [tmp_path / "out" / "ddcot", tmp_path / "out" / "direct"]
    # ddcot reads all three replies (the last answers A); direct reads only the first ("plan").
    assert sweep[0].result.metrics["overall"]["accuracy"] == pytest.approx(share_a)
    assert sweep[1].result.metrics["overall"]["unparsed"] == n
    assert {row.group for row in sweep[0].decoupling} >= {"perception_correct", "perception_wrong"}


def test_sweep_checks_every_strategy_name_before_any_run(tmp_path: Path) -> None:
    base = RunConfig(benchmark="demo", data="", model="random")
    with pytest.raises(ModelSpecError, match="unknown strategy 'tree-of-thought'"):
        run_strategy_sweep(base, ["direct", "tree-of-thought"], tmp_path / "out")
    assert not (tmp_path / "out").exists()

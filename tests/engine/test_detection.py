"""Detection items end to end: replayed raw outputs are parsed into boxes and scored with GRIT."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from scopebench.engine import RunConfig, load_run, run_benchmark
from scopebench.protocols import render_detection_prompt


def _bench(tmp: Path) -> Path:
    Image.new("RGB", (200, 100)).save(tmp / "cells.png")
    rows = [
        {"id": "d1", "question": "Detect nucleus", "image": "cells.png", "class_name": "nucleus",
         "boxes": [{"x1": 0, "y1": 0, "x2": 100, "y2": 50, "label": "nucleus"}]},
        {"id": "d2", "question": "Detect nucleus", "image": "cells.png", "class_name": "nucleus",
         "boxes": [{"x1": 0, "y1": 0, "x2": 100, "y2": 50, "label": "nucleus"},
                   {"x1": 100, "y1": 50, "x2": 200, "y2": 100, "label": "nucleus"}]},
        {"id": "d3", "question": "Detect cell", "image": "cells.png", "class_name": "cell", "boxes": []},
        {"id": "m1", "question": "Which stain?", "image": "cells.png", "choices": ["H&E", "DAPI"],
         "answer": 1},
    ]  # fmt: skip
    path = tmp / "data.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_replayed_detection_outputs_scored_with_grit(tmp_path: Path) -> None:
    data = _bench(tmp_path)
    answers = {
        # Qwen grid: (0,0)-(500,500) on 200×100 → (0,0)-(100,50): a perfect box.
        "local/d1": "<ref>nucleus</ref><box>(0,0),(500,500)</box>",
        # JSON pixels: one perfect box, the second object missed → 1 / (1 + 2 - 1) = 0.5.
        "local/d2": '[{"x1": 0, "y1": 0, "x2": 100, "y2": 50}]',
        # Nothing there and nothing predicted → 1.
        "local/d3": "There is no cell.",
        "local/m1": "B",
    }
    replay = tmp_path / "answers.jsonl"
    replay.write_text("".join(json.dumps({"item_id": k, "response": v}) + "\n" for k, v in answers.items()))
    run_benchmark(RunConfig(benchmark="local", data=str(data), model=f"replay:{replay}"), tmp_path / "run")
    recs = {r.item_id: r for r in load_run(tmp_path / "run").records}
    assert recs["local/d1"].kind == "detection" and recs["local/d1"].extra["box_format"] == "qwen"
    assert recs["local/d1"].extra["grit"] == pytest.approx(1.0)
    assert recs["local/d1"].extra["boxes"] == [[0.0, 0.0, 100.0, 50.0]]
    assert recs["local/d2"].extra["grit"] == pytest.approx(0.5)
    assert recs["local/d3"].extra["grit"] == 1.0 and recs["local/d3"].extra["boxes"] == []
    assert recs["local/d1"].correct is None and recs["local/d1"].choice is None
    assert recs["local/m1"].kind == "mcq" and recs["local/m1"].correct is True


def test_detection_prompts_per_family(tmp_path: Path) -> None:
    from scopebench.benchmarks import get_benchmark

    items = {it.id: it for it in get_benchmark("local").load(_bench(tmp_path)).items}
    d1 = items["local/d1"]
    assert render_detection_prompt(d1, "qwen") == "Detect nucleus"
    assert render_detection_prompt(d1, "paligemma") == "detect nucleus; nucleus"
    assert render_detection_prompt(d1, "paligemma-segment") == "segment nucleus; nucleus"
    assert "200×100 image" in render_detection_prompt(d1, "json")


def test_demo_detection_split_scores_easy_and_hard(tmp_path: Path) -> None:
    from scopebench.benchmarks import get_benchmark
    from scopebench.benchmarks.demo import generate_demo

    demo = generate_demo(tmp_path / "demo", seed=0, n_per_class=1)
    items = get_benchmark("demo").load(str(demo), split="detection").items
    # Qwen-style exact boxes for every cell (0–1000 grid of the 128-px image), nothing for nuclei.
    lines = []
    for it in items:
        if it.metadata["class_name"] == "cell":
            boxes = "".join(
                f"<box>({b.x1 * 1000 / 128:.0f},{b.y1 * 1000 / 128:.0f}),"
                f"({b.x2 * 1000 / 128:.0f},{b.y2 * 1000 / 128:.0f})</box>"
                for b in it.targets
            )
        else:
            boxes = "[]"
        lines.append(json.dumps({"item_id": it.id, "response": boxes}))
    replay = tmp_path / "replay.jsonl"
    replay.write_text("\n".join(lines) + "\n")
    cfg = RunConfig(benchmark="demo", data=str(demo), split="detection", model=f"replay:{replay}")
    loc = {r["group"]: r for r in run_benchmark(cfg, tmp_path / "run").metrics["localization"]}
    # Rounding to the 0–1000 grid moves box edges by < 0.07 px: IoU stays above 0.98.
    assert loc["class=cell"]["score"] > 0.98 and loc["split=easy"]["score"] == loc["class=cell"]["score"]
    assert loc["class=nucleus"]["score"] == 0.0 == loc["split=hard"]["score"]
    assert loc["overall"]["score"] == pytest.approx(loc["class=cell"]["score"] / 2)
    assert loc["overall"]["n"] == len(items) == 4

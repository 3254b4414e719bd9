"""The Ray executor gives the same records as the local one (local Ray instance, 2 workers)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scopebench.engine import RunConfig, load_run, run_benchmark


@pytest.mark.slow
def test_ray_executor_equals_local(tmp_path: Path) -> None:
    pytest.importorskip("ray", reason="ray is an optional extra (pip install 'scopebench[ray]')")
    pytest.importorskip("scopebench.benchmarks.local")
    data = tmp_path / "data.jsonl"
    with open(data, "w") as fh:
        for i in range(30):
            row = {"id": f"q{i}", "question": f"Q{i}?", "choices": ["x", "y", "z", "w"], "answer": i % 4}
            fh.write(json.dumps(row) + "\n")
    replay = tmp_path / "answers.jsonl"
    replay.write_text(
        "".join(json.dumps({"item_id": f"local/q{i}", "response": "ABCD?"[i % 5]}) + "\n" for i in range(28))
    )
    results = {}
    for model in ("random", "frequent", f"replay:{replay}"):
        for executor in ("local", "ray"):
            cfg = RunConfig(
                benchmark="local",
                data=str(data),
                model=model,
                seed=3,
                batch_size=4,
                executor=executor,
                workers=2,
            )
            res = run_benchmark(cfg, tmp_path / f"{executor}-{model[:6]}")
            results[(model, executor)] = (
                [(r.item_id, r.status, r.choice) for r in load_run(res.run_dir).records],
                res.metrics["overall"],
            )
        assert results[(model, "local")] == results[(model, "ray")], model
    overall = results[(f"replay:{replay}", "ray")][1]
    assert (overall["missing_response"], overall["unparsed"]) == (2, 5)

"""`--limit 0.1` (a seeded sample of a fraction) and `--tasks` on `run`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scopebench.cli import main
from scopebench.engine import RunConfig, run_benchmark
from scopebench.engine.limits import apply_limit
from scopebench.errors import ConfigMismatchError, DataFormatError, ModelSpecError
from scopebench.store import load_run


def test_a_fraction_is_a_seeded_sample_recorded_in_run_json(tmp_path: Path) -> None:
    # Catches: a fraction read as the first items (or refused), an unseeded draw, a sample whose
    # size is not ceil(fraction × n), and a limit not recorded.
    cfg = RunConfig.from_options("unit", "40", "random", limit=0.1, seed=3)
    run_benchmark(cfg, tmp_path / "a")
    ids = sorted(r.item_id for r in load_run(tmp_path / "a").records)
    assert len(ids) == 4 and ids != [f"unit/{i:03d}" for i in range(4)]
    run_benchmark(cfg, tmp_path / "b")  # same seed: the same items
    assert sorted(r.item_id for r in load_run(tmp_path / "b").records) == ids
    run_benchmark(RunConfig.from_options("unit", "40", "random", limit=0.1, seed=4), tmp_path / "c")
    assert sorted(r.item_id for r in load_run(tmp_path / "c").records) != ids
    run_json = json.loads((tmp_path / "a" / "run.json").read_text())
    assert (run_json["limit"], run_json["seed"], run_json["n_items"]) == (0.1, 3, 4)


def test_a_larger_fraction_extends_the_run_and_a_count_is_refused(tmp_path: Path) -> None:
    # Catches: a raised fraction that draws other items (the stored ones would not be part of it),
    # and a switch from a fraction to a count treated as raising the limit.
    small = apply_limit(list(range(100)), 0.1, 7)  # type: ignore[arg-type]
    assert set(small) <= set(apply_limit(list(range(100)), 0.3, 7))  # type: ignore[arg-type]
    run_benchmark(RunConfig.from_options("unit", "40", "random", limit=0.1), tmp_path / "r")
    res = run_benchmark(RunConfig.from_options("unit", "40", "random", limit=0.25), tmp_path / "r")
    assert (res.n_items, res.n_new) == (10, 6)
    with pytest.raises(ConfigMismatchError, match="another way"):
        run_benchmark(RunConfig.from_options("unit", "40", "random", limit=20), tmp_path / "r")


@pytest.mark.parametrize("limit", [0, 1.0, 1.5, -0.1])
def test_limits_no_run_can_honour_are_refused(tmp_path: Path, limit: float) -> None:
    with pytest.raises(ModelSpecError, match="fraction between 0 and 1"):
        run_benchmark(RunConfig.from_options("unit", "4", "random", limit=limit), tmp_path / "r")


def test_run_tasks_and_a_fraction_from_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Catches: `run` without --tasks; tasks applied after the limit (a sample of all items);
    # tasks not part of the run's identity; an unknown task not named with the ones there are.
    out = tmp_path / "r"
    base = ["-q", "run", "--bench", "unit", "--data", "20", "--model", "random", "--out", str(out)]
    assert main([*base, "--tasks", "t2", "--limit", "0.5"]) == 0
    records = load_run(out).records
    assert len(records) == 5 and {r.task for r in records} == {"t2"}
    assert json.loads((out / "run.json").read_text())["tasks"] == ["t2"]
    assert main([*base, "--tasks", "t1", "--limit", "0.5"]) == 2  # another item set: refused
    assert "tasks" in capsys.readouterr().err
    assert main([*base, "--tasks", "t9", "--fresh"]) == 2
    assert "has no task t9; it has: s, t1, t2" in " ".join(capsys.readouterr().err.split())
    with pytest.raises(DataFormatError):
        run_benchmark(RunConfig.from_options("unit", "4", "random", tasks=["nope"]), tmp_path / "x")


def test_an_eval_config_takes_a_fraction(tmp_path: Path) -> None:
    # Catches: the eval config's limit still typed as a count (a fraction refused by validation).
    cfg = tmp_path / "eval.yaml"
    cfg.write_text("out: g\nlimit: 0.5\nmodels: [random]\nbenchmarks: [{name: unit, data: '10'}]\n")
    assert main(["-q", "eval", str(cfg)]) == 0
    run_json = json.loads((tmp_path / "g/unit/default/random/run.json").read_text())
    assert (run_json["limit"], run_json["n_items"]) == (0.5, 5)

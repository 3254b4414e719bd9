"""`scopebench eval CONFIG` and `run` with several --bench/--model: grids of ordinary runs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from scopebench.cli import main
from scopebench.errors import DataFormatError
from scopebench.paper.grid import load_eval_config, plan_grid

DOC = Path(__file__).resolve().parents[2] / "docs" / "tables.md"

_CONFIG = """
out: grid
seed: 3
limit: 6
protocols: [default]
models:
  - random
  - spec: frequent
    name: Frequent choice
benchmarks:
  - name: unit
    data: "10"
"""


def _write(tmp_path: Path, text: str, name: str = "eval.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_plan_names_run_folders_predictably_and_carries_every_option(tmp_path: Path) -> None:
    cfg = load_eval_config(_write(tmp_path, _CONFIG.replace("[default]", "[default, owner]")))
    plan = plan_grid(cfg, tmp_path / "root")
    assert [(r.out_dir.relative_to(tmp_path / "root").as_posix(), r.label) for r in plan] == [
        ("unit/default/random", "random (default)"),
        ("unit/default/Frequent_choice", "Frequent choice (default)"),
        ("unit/owner/random", "random (owner)"),
        ("unit/owner/Frequent_choice", "Frequent choice (owner)"),
    ]
    first = plan[0].config
    assert (first.benchmark, first.data, first.model, first.seed, first.limit) == (
        "unit",
        "10",
        "random",
        3,
        6,
    )
    assert plan[2].config.protocol == "owner" and plan[1].config.label == "Frequent choice (default)"


def test_yaml_and_toml_configs_are_the_same_grid(tmp_path: Path) -> None:
    toml = """
seed = 3
limit = 6
models = ["random", {spec = "frequent", name = "Frequent choice"}]
benchmarks = [{name = "unit", data = "10"}]
"""
    a = load_eval_config(_write(tmp_path, _CONFIG))
    b = load_eval_config(_write(tmp_path, toml, "eval.toml"))
    assert a.models == b.models and a.benchmarks == b.benchmarks and (a.seed, a.limit) == (b.seed, b.limit)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("models: [random]\nbenchmarks: [{name: unit, splt: test}]\n", "benchmarks.0.splt: Extra inputs"),
        ("models: [{name: x}]\nbenchmarks: [unit]\n", "models.0.spec: Field required"),
        (
            "models: [random]\nbenchmarks: [unit]\nlimit: 0\n",
            "limit.constrained-int: Input should be greater than or equal to 1",
        ),
        ("models: []\nbenchmarks: [unit]\n", "models: List should have at least 1 item"),
        (
            "models: [random]\nbenchmarks: [unit]\nengine: {executor: gpu}\n",
            "engine.executor: Input should be",
        ),
        ("benchmarks: [unit]\n", "models: Field required"),
    ],
)
def test_a_bad_config_names_the_key(tmp_path: Path, text: str, named: str) -> None:
    with pytest.raises(DataFormatError) as exc:
        load_eval_config(_write(tmp_path, text))
    assert named in str(exc.value)


def test_eval_cli_reports_a_bad_key_without_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, "models: [random]\nbenchmarks: [unit]\nsed: 1\n")
    assert main(["eval", str(path)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "sed: Extra inputs are not permitted" in err and "Traceback" not in err


def test_two_models_sharing_a_folder_name_are_refused(tmp_path: Path) -> None:
    cfg = load_eval_config(
        _write(tmp_path, "models: [random, {spec: frequent, name: random}]\nbenchmarks: [unit]\n")
    )
    with pytest.raises(DataFormatError, match="share a run folder name"):
        plan_grid(cfg, tmp_path)


def test_eval_runs_the_grid_resumes_after_a_crash_and_writes_the_tables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import scopebench.engine as engine

    path = _write(tmp_path, _CONFIG)
    real = engine.run_benchmark
    calls: list[str] = []

    def crash_on_second(config, out, **kw):  # type: ignore[no-untyped-def]
        calls.append(config.model)
        if len(calls) == 2:
            raise RuntimeError("node lost")
        return real(config, out, **kw)

    monkeypatch.setattr(engine, "run_benchmark", crash_on_second)
    with pytest.raises(RuntimeError, match="node lost"):
        main(["eval", str(path)])
    assert (tmp_path / "grid/unit/default/random/metrics.json").is_file()
    assert not (tmp_path / "grid/unit/default/Frequent_choice").exists()
    monkeypatch.setattr(engine, "run_benchmark", real)
    capsys.readouterr()
    assert main(["eval", str(path)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    # The finished run is resumed with nothing to do; only the crashed one runs.
    assert "random: " in out and "(n=6, 0 new)" in out and "(n=6, 6 new)" in out
    tables = tmp_path / "grid" / "tables"
    md = (tables / "unit.md").read_text()
    assert "| random " in md and "| Frequent choice " in md
    assert {p.name for p in tables.iterdir()} >= {
        "unit.tex",
        "unit.csv",
        "forest-unit.png",
        "forest-unit.svg",
    }
    # The display name is recorded, so a later `scopebench table` names the run the same way.
    cfg = json.loads((tmp_path / "grid/unit/default/Frequent_choice/run.json").read_text())
    assert cfg["label"] == "Frequent choice" and cfg["seed"] == 3 and cfg["limit"] == 6
    assert main(["table", str(tmp_path / "grid"), "--out", str(tmp_path / "again")]) == 0
    # Same rows (a folder of runs is read in name order, the grid in config order).
    assert sorted((tmp_path / "again" / "unit.md").read_text().splitlines()) == sorted(md.splitlines())


def test_eval_tasks_keep_only_those_items(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = "out: g\nmodels: [random]\nbenchmarks: [{name: unit, data: '10', tasks: [t2]}]\n"
    assert main(["eval", str(_write(tmp_path, text))]) == 0
    ids = [
        json.loads(x)["item_id"]
        for x in (tmp_path / "g/unit/default/random/records.jsonl").read_text().splitlines()
    ]
    assert ids == [f"unit/{i:03d}" for i in (1, 3, 5, 7, 9)]
    capsys.readouterr()
    assert main(["eval", str(_write(tmp_path, text.replace("[t2]", "[t9]")))]) == 2
    assert "has no task t9; it has: s, t1, t2" in " ".join(capsys.readouterr().err.split())


def test_run_with_several_models_is_a_grid_with_tables(tmp_path: Path) -> None:
    out = tmp_path / "grid"
    argv = ["run", "--bench", "unit", "--data", "10", "--model", "random", "--model", "frequent"]
    assert main([*argv, "--limit", "4", "--out", str(out)]) == 0
    assert (out / "unit/default/random/run.json").is_file() and (
        out / "unit/default/frequent/run.json"
    ).is_file()
    assert "| frequent " in (out / "tables/unit.md").read_text()
    # --data once per --bench
    assert (
        main(
            [
                "run",
                "--bench",
                "unit",
                "--bench",
                "demo",
                "--data",
                "10",
                "--model",
                "random",
                "--out",
                str(out),
            ]
        )
        == 2
    )


@pytest.mark.slow
def test_the_docs_eval_config_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/tables.md's eval.yaml (the README's example), run as written on the offline demo."""
    block = re.search(r"<!-- file: eval.yaml -->\n```yaml\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert block is not None
    monkeypatch.setenv("SCOPEBENCH_CACHE", str(tmp_path / "cache"))
    path = _write(tmp_path, block.group(1))
    assert main(["eval", str(path)]) == 0
    root = tmp_path / "runs" / "eval"
    assert sorted(p.name for p in (root / "demo" / "default").iterdir()) == ["Frequent_choice", "random"]
    metrics = json.loads((root / "demo/default/random/metrics.json").read_text())
    assert metrics["overall"]["n"] == 40
    assert "| Frequent choice " in (root / "tables" / "demo.md").read_text()


def test_the_readme_eval_config_is_the_docs_one(tmp_path: Path) -> None:
    """The README's short eval.yaml is valid and the grid of docs/tables.md's (which is run above)."""
    readme = (DOC.parents[1] / "README.md").read_text(encoding="utf-8")
    short = re.search(r"```yaml\n(# eval.yaml\n.*?)```", readme, re.S)
    full = re.search(r"<!-- file: eval.yaml -->\n```yaml\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert short is not None and full is not None
    a = load_eval_config(_write(tmp_path, short.group(1), "short.yaml"))
    b = load_eval_config(_write(tmp_path, full.group(1), "full.yaml"))
    keys = ("models", "benchmarks", "protocols", "seed", "limit", "out")
    assert [getattr(a, k) for k in keys] == [getattr(b, k) for k in keys]


def test_quiet_eval_prints_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, "out: g\nmodels: [random]\nbenchmarks: [{name: unit, data: '4'}]\n")
    try:
        assert main(["-q", "eval", str(path)]) == 0
        assert capsys.readouterr().out == ""
        assert (tmp_path / "g" / "tables" / "unit.md").is_file()
    finally:
        from scopebench.cli import paper

        paper.console.quiet = False

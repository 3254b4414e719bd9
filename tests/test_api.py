"""The public Python API (scopebench.evaluate / load_* / compare, Results) and docs/api.md."""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import scopebench
from helpers import FIXTURES, REPO
from scopebench.errors import ConfigMismatchError, DataNotFoundError, ScopebenchError, UsageError

DOC = REPO / "docs" / "api.md"


@pytest.fixture(scope="module")
def demo_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache holding the generated demo benchmark (generated once for this module)."""
    from scopebench.benchmarks.demo import DEMO_VERSION, generate_demo

    cache = tmp_path_factory.mktemp("cache")
    generate_demo(cache / "demo" / f"v{DEMO_VERSION}-seed0", seed=0)
    return cache


@pytest.fixture
def in_tmp(tmp_path: Path, demo_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SCOPEBENCH_CACHE", str(demo_cache))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def doc_blocks(text: str) -> list[tuple[str, str | None]]:
    """(python code, the ```text block right after it or None) for every ```python block."""
    pattern = re.compile(r"```python\n(?P<code>.*?)```\s*(?:```text\n(?P<out>.*?)```)?", re.S)
    return [(m["code"], m["out"]) for m in pattern.finditer(text)]


def test_docs_api_example_prints_what_it_shows(in_tmp: Path) -> None:
    """docs/api.md runs as written and prints exactly the output it shows under each block."""
    blocks = doc_blocks(DOC.read_text(encoding="utf-8"))
    assert len(blocks) >= 7 and all(out is not None for _, out in blocks)
    namespace: dict[str, object] = {}
    for code, expected in blocks:
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            exec(compile(code, str(DOC), "exec"), namespace)
        assert buf.getvalue() == expected, f"docs/api.md block\n{code}"
    # The README's Python API section quotes the same run.
    run = namespace["random_run"]
    assert isinstance(run, scopebench.Results)
    quoted = f"{run.accuracy:.3f}…, ({run.interval[0]:.3f}…, {run.interval[1]:.3f}…)"
    assert quoted == "0.208…, (0.145…, 0.289…)" and quoted in (REPO / "README.md").read_text(encoding="utf-8")


def test_docs_extending_python_example(in_tmp: Path) -> None:
    """docs/extending.md's Python section: evaluate() on a one-file benchmark prints 0.750."""
    from test_plugins import DOC as EXTENDING
    from test_plugins import doc_files

    (in_tmp / "mybench.py").write_text(doc_files()["mybench.py"], encoding="utf-8")
    text = EXTENDING.read_text(encoding="utf-8")
    code = text.split("## Python", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(compile(code, str(EXTENDING), "exec"), {})
    assert buf.getvalue() == "0.750\n"
    assert "which prints `0.750`" in text


def test_evaluate_equals_the_cli_run(in_tmp: Path) -> None:
    """The same run from Python and from `scopebench run`: same run.json identity, same metrics."""
    res = scopebench.evaluate("demo", "random", out="api", seed=3, limit=40)
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    cli = subprocess.run(
        [sys.executable, "-m", "scopebench", "run", "--bench", "demo", "--model", "random", "--seed", "3",
         "--limit", "40", "--out", "cli"],
        cwd=in_tmp, env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert cli.returncode == 0, cli.stderr
    api_m = json.loads((in_tmp / "api" / "metrics.json").read_text())
    cli_m = json.loads((in_tmp / "cli" / "metrics.json").read_text())
    for key in ("overall", "by_task", "by_subset", "by_split", "owner", "baselines", "counts"):
        assert api_m[key] == cli_m[key], key
    assert res.overall.n == 40 and res.overall.correct == cli_m["overall"]["correct"]
    assert res.accuracy == cli_m["overall"]["accuracy"]
    assert res.interval == (cli_m["overall"]["ci_low"], cli_m["overall"]["ci_high"])
    api_cfg = json.loads((in_tmp / "api" / "run.json").read_text())
    cli_cfg = json.loads((in_tmp / "cli" / "run.json").read_text())
    for key in ("benchmark", "data_fingerprint", "limit", "seed", "model", "protocol", "parser_version"):
        assert api_cfg[key] == cli_cfg[key], key
    assert "plugins" not in api_cfg and "plugins" not in cli_cfg  # built-ins: run.json as before
    # The CLI resumes the API's run (same identity, cached metrics: nothing new).
    again = subprocess.run(
        [sys.executable, "-m", "scopebench", "run", "--bench", "demo", "--model", "random", "--seed", "3",
         "--limit", "40", "--out", "api"],
        cwd=in_tmp, env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert "0 new this time" in again.stdout


def test_results_hand_computed(in_tmp: Path) -> None:
    """A tiny run whose numbers are known: `unit` items' answers cycle through 4 options."""
    res = scopebench.evaluate(
        "unit", "replay:" + _replay(in_tmp, [0, 1, 0, 0, 0, 1, 2, 3]), data="8", out="r"
    )
    # answers 0,1,2,3,0,1,2,3 vs replies A,B,A,A,A,B,C,D → items 0,1,4,5,6,7 right: 6 of 8.
    assert (res.overall.n, res.overall.correct, res.accuracy) == (8, 6, 0.75)
    assert (round(res.interval[0], 4), round(res.interval[1], 4)) == (0.4093, 0.9285)  # Wilson 6/8
    t1 = res.group("task=t1")  # even items 0,2,4,6: right 0,4,6
    t2 = res.group("task=t2")  # odd items 1,3,5,7: right 1,5,7
    assert (t1.n, t1.correct, t2.n, t2.correct) == (4, 3, 4, 3)
    assert res.owner == () and res.localization == ()
    assert res.counts == {"records": 8, "mcq": 8}
    df = res.to_pandas()
    assert list(df["correct"]) == [True, True, False, False, True, True, True, True]
    assert list(df["choice"]) == [0, 1, 0, 0, 0, 1, 2, 3]
    frame = res.metrics_frame()
    assert list(frame["section"])[:3] == ["overall", "task", "task"]
    assert frame.loc[frame.group == "task=t1", "correct"].item() == 3
    assert "Results(unit — replay:" in repr(res) and "75.0% [40.9, 92.9], n=8" in repr(res)
    with pytest.raises(
        ScopebenchError,
        match="no group 'task=zz' in this run; it has: task=t1, task=t2, subset=s, split=test",
    ):
        res.group("task=zz")


def _replay(folder: Path, choices: list[int]) -> str:
    path = folder / "answers.jsonl"
    path.write_text(
        "".join(
            json.dumps({"item_id": f"unit/{i:03d}", "response": "ABCD"[c]}) + "\n"
            for i, c in enumerate(choices)
        )
    )
    return str(path)


def test_load_run_of_a_stopped_run_computes_without_writing(in_tmp: Path) -> None:
    res = scopebench.evaluate("unit", "random", data="6", out="r")
    (in_tmp / "r" / "metrics.json").unlink()  # as after a Ctrl-C before the end
    again = scopebench.load_run(in_tmp / "r")
    assert again.accuracy == res.accuracy and again.overall.correct == res.overall.correct
    assert not (in_tmp / "r" / "metrics.json").exists()  # reading never writes
    with pytest.raises(DataNotFoundError, match="not a scopebench run directory"):
        scopebench.load_run(in_tmp)


def test_nan_is_nan_not_zero(in_tmp: Path) -> None:
    """An empty group's accuracy is undefined (null in metrics.json), never 0."""
    from scopebench.results import AccuracyRow

    row = AccuracyRow.from_dict(
        {"group": "g", "n": 0, "correct": 0, "accuracy": None, "denominator": 0, "ci_low": None,
         "ci_high": None, "ci_method": "wilson", "policy": "exclude", "extra_key": 1}
    )  # fmt: skip
    assert math.isnan(row.accuracy) and math.isnan(row.ci_low) and row.n == 0


def test_evaluate_options_and_errors(in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(UsageError, match=r"no option batchsize; options: .*batch_size"):
        scopebench.evaluate("unit", "random", data="4", batchsize=2)
    with pytest.raises(TypeError):  # UsageError is a TypeError, as Python's own
        scopebench.evaluate("unit", "random", data="4", nope=1)
    res = scopebench.evaluate("unit", "random", data="10", out="r", exclude_ids={"unit/000"}, batch_size=3)
    assert res.overall.n == 9 and "unit/000" not in {r.item_id for r in res.records}
    # The CLI's refusals, with the CLI's messages.
    with pytest.raises(ConfigMismatchError):
        scopebench.evaluate("unit", "random", data="10", out="r", seed=1)
    assert scopebench.evaluate("unit", "random", data="10", out="r", seed=1, fresh=True).config["seed"] == 1
    monkeypatch.setattr(tempfile, "tempdir", str(in_tmp))
    tmp = scopebench.evaluate("unit", "random", data="3")  # out=None: a kept temporary folder
    assert tmp.run_dir.is_dir() and tmp.run_dir.name.startswith("scopebench-run-")


def test_evaluate_with_a_built_backend(in_tmp: Path) -> None:
    model = scopebench.load_model("random", seed=2, batch_size=4)
    try:
        res = scopebench.evaluate("unit", model, data="8", out="r", seed=2)
        assert res.config["model"] == "random" and res.config["seed"] == 2
        by_spec = scopebench.evaluate("unit", "random", data="8", out="r2", seed=2, batch_size=4)
        assert [r.choice for r in res.records] == [r.choice for r in by_spec.records]
        with pytest.raises(UsageError, match="built with seed=2 and this run has seed=0"):
            scopebench.evaluate("unit", model, data="8", out="r3")
        with pytest.raises(UsageError, match="device describe the model"):
            scopebench.evaluate("unit", model, data="8", out="r3", seed=2, device="cpu")
    finally:
        model.close()


def test_load_model_routes_backend_options() -> None:
    from scopebench.errors import ModelSpecError

    model = scopebench.load_model("random", seed=5, device="cpu")
    assert (model.options.seed, model.options.device, model.options.extra) == (5, "cpu", {})
    with pytest.raises(ModelSpecError, match="unknown --model-arg temperature for random models"):
        scopebench.load_model("random", temperature=0.1)


def test_load_benchmark(in_tmp: Path) -> None:
    loaded = scopebench.load_benchmark("unit", data="5")
    assert [it.id for it in loaded.items] == [f"unit/{i:03d}" for i in range(5)]
    demo = scopebench.load_benchmark("demo", split="train")
    assert {it.split for it in demo.items} == {"train"}


def test_public_names_and_light_import() -> None:
    for name in ("evaluate", "load_benchmark", "load_model", "load_run", "compare", "Results", "AccuracyRow"):
        assert name in scopebench.__all__ and name in dir(scopebench)
        # The row types are the typed metrics of scoring.schema, re-exported by results.
        assert getattr(scopebench, name).__module__ in (
            "scopebench.api",
            "scopebench.results",
            "scopebench.scoring.schema",
        )
    with pytest.raises(AttributeError, match="no attribute 'evaluat'"):
        scopebench.evaluat  # type: ignore[attr-defined]  # noqa: B018
    code = (
        "import sys, scopebench;"
        "light = [m for m in ('scopebench.api', 'scopebench.engine', 'pandas') if m in sys.modules];"
        "scopebench.evaluate, scopebench.Results;"
        "heavy = [m for m in ('torch', 'transformers', 'ray', 'vllm', 'open_clip', 'fastapi') if m in sys.modules];"
        "print(light, heavy)"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    # `import scopebench` loads neither the API nor pandas; touching the API loads no heavy backend.
    assert out.stdout.strip() == "[] []"


def test_owner_rows_are_typed_from_metrics_json(in_tmp: Path) -> None:
    """PathMMU's owner table (fixture data) as OwnerRows, field for field from metrics.json."""
    res = scopebench.evaluate("pathmmu", "frequent", data=FIXTURES / "pathmmu", out="pm", split=None)
    rows = json.loads((in_tmp / "pm" / "metrics.json").read_text())["owner"]["rows"]
    assert len(res.owner) == len(rows) > 0
    for typed, raw in zip(res.owner, rows, strict=True):
        assert (typed.split_or_group, typed.subset_or_task, typed.weighting) == (
            raw["split_or_group"],
            raw["subset_or_task"],
            raw["weighting"],
        )
        assert (typed.n, typed.correct, typed.ci_method) == (raw["n"], raw["correct"], raw["ci_method"])
        assert typed.accuracy == raw["accuracy"] or (math.isnan(typed.accuracy) and raw["accuracy"] is None)
    owner = res.metrics_frame().query("section == 'owner'")
    assert list(owner["subset_or_task"]) == [r["subset_or_task"] for r in rows]

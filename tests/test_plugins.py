"""Third-party benchmarks and backends: entry points, plugin files, and the docs/extending.md examples.

A distribution is "installed" the way pip leaves it: a ``NAME-VERSION.dist-info`` folder with
``METADATA`` and ``entry_points.txt`` next to the package on a ``sys.path`` folder, which
:func:`importlib.metadata.entry_points` finds. Runs go through the real CLI in a subprocess with
that folder on ``PYTHONPATH``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import REPO
from scopebench.benchmarks import registry as bench_registry
from scopebench.errors import BenchmarkNotFoundError, ModelSpecError, PluginError
from scopebench.plugins import clear_plugin_cache

DOC = REPO / "docs" / "extending.md"

_FILE_BLOCK = re.compile(r"```(?:python|toml|text)\n# file: (?P<path>\S+)\n(?P<body>.*?)```", re.S)


def doc_files() -> dict[str, str]:
    """The ``# file: PATH`` blocks of docs/extending.md (the marker line left out)."""
    return {m["path"]: m["body"] for m in _FILE_BLOCK.finditer(DOC.read_text(encoding="utf-8"))}


def install_dist(site: Path, name: str, version: str, entry_points: dict[str, dict[str, str]]) -> None:
    """Write the ``*.dist-info`` pip would write for ``entry_points`` ({group: {name: target}})."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    lines = []
    for group, eps in entry_points.items():
        lines.append(f"[{group}]")
        lines += [f"{k} = {v}" for k, v in eps.items()]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")


def install_doc_package(site: Path) -> None:
    """Install docs/extending.md's ``mylab-bench`` package into ``site``, from its pyproject table."""
    files = doc_files()
    for rel, body in files.items():
        if rel.startswith("mylab_bench/"):
            (site / rel).parent.mkdir(parents=True, exist_ok=True)
            (site / rel).write_text(body, encoding="utf-8")
    project = tomllib.loads(files["pyproject.toml"])["project"]
    install_dist(site, project["name"], project["version"], project["entry-points"])


def scopebench(site: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), str(REPO / "src")]),
        "COLUMNS": "400",  # rich folds table cells at the terminal width; keep messages on one line
    }
    return subprocess.run(
        [sys.executable, "-m", "scopebench", *args], cwd=cwd, env=env, capture_output=True, text=True
    )


def listing(command: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The output of ``scopebench COMMAND`` run in this process on a wide console.

    In a subprocess the CLI's console is 120 columns wide and folds long messages inside table
    cells, which no substring check survives.
    """
    import io

    from rich.console import Console

    import scopebench.cli as cli

    wide = Console(width=600, file=io.StringIO(), record=True)
    monkeypatch.setattr(cli, "console", wide)
    assert cli.main([command]) == 0
    return wide.export_text()


def overall(run_dir: Path) -> dict[str, object]:
    metrics = json.loads((run_dir / "metrics.json").read_text())
    row: dict[str, object] = metrics["overall"]
    return row


@pytest.fixture
def site(tmp_path: Path) -> Path:
    folder = tmp_path / "site"
    folder.mkdir()
    return folder


@pytest.fixture
def on_path(site: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """``site`` on this interpreter's ``sys.path``, with the registries' plugin state reset after."""
    monkeypatch.syspath_prepend(str(site))
    clear_plugin_cache()
    before = dict(bench_registry._REGISTRY)
    yield site
    for name, cls in list(bench_registry._REGISTRY.items()):
        # Built-ins imported meanwhile stay (their modules are not imported twice); plugins go.
        if name not in before and not cls.__module__.startswith("scopebench."):
            del bench_registry._REGISTRY[name]
    clear_plugin_cache()
    for mod in [m for m in sys.modules if m.startswith(("mylab_bench", "brokenlab"))]:
        del sys.modules[mod]


# The docs' worked examples, end to end -------------------------------------------------------------


def test_doc_entry_points_run_end_to_end(site: Path, tmp_path: Path) -> None:
    install_doc_package(site)
    res = scopebench(site, tmp_path, "run", "--bench", "mylab", "--model", "mylab-pick", "--out", "r1")
    assert res.returncode == 0, res.stderr
    # Answers cycle through 4 options; always the first: items 0 and 4 of 8.
    row = overall(tmp_path / "r1")
    assert (row["n"], row["correct"], row["accuracy"]) == (8, 2, 0.25)
    config = json.loads((tmp_path / "r1" / "run.json").read_text())
    assert config["benchmark"] == "mylab"
    # The run names the distribution behind its benchmark and model (reproducibility of numbers).
    assert config["plugins"] == {
        "benchmark": {"entry_point": "mylab_bench.loader:MyLabBenchmark", "distribution": "mylab-bench 0.1"},
        "model": {"entry_point": "mylab_bench.backend:PickBackend", "distribution": "mylab-bench 0.1"},
    }
    # The argument after the plugin scheme reaches the backend: option 1 of 12 → items 1, 5, 9.
    res = scopebench(
        site, tmp_path, "run", "--bench", "mylab", "--data", "12", "--model", "mylab-pick:1", "--out", "r2"
    )
    assert res.returncode == 0, res.stderr
    row = overall(tmp_path / "r2")
    assert (row["n"], row["correct"]) == (12, 3)
    records = [json.loads(line) for line in (tmp_path / "r2" / "records.jsonl").read_text().splitlines()]
    assert {r["choice"] for r in records} == {1} and {r["model"] for r in records} == {"mylab-pick:1"}


def test_doc_listings_show_the_plugins(on_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_doc_package(on_path)
    assert "My lab's private benchmark" in listing("benchmarks", monkeypatch)
    out = listing("models", monkeypatch)
    line = next(line for line in out.splitlines() if "mylab-pick" in line and "PickBackend" in line)
    assert "mylab-bench 0.1" in line and "ok" in line


def test_doc_one_file_benchmark_runs(tmp_path: Path) -> None:
    """docs/extending.md §1: a benchmark from one file outside the package, run by the CLI."""
    (tmp_path / "mybench.py").write_text(doc_files()["mybench.py"], encoding="utf-8")
    res = scopebench(
        tmp_path,
        tmp_path,
        "run",
        "--bench",
        "mybench.py:MyBenchmark",
        "--model",
        "frequent",
        "--out",
        "runs/mybench-frequent",
    )
    assert res.returncode == 0, res.stderr
    row = overall(tmp_path / "runs" / "mybench-frequent")
    config = json.loads((tmp_path / "runs" / "mybench-frequent" / "run.json").read_text())
    source = (tmp_path / "mybench.py").resolve()
    assert config["plugins"] == {
        "benchmark": {"file": str(source), "sha256": hashlib.sha256(source.read_bytes()).hexdigest()}
    }
    # The doc's numbers: 6 of 8 answers are the first option → 75.0% [40.9, 92.9] (Wilson).
    assert (row["n"], row["correct"], row["accuracy"]) == (8, 6, 0.75)
    assert (round(float(row["ci_low"]) * 100, 1), round(float(row["ci_high"]) * 100, 1)) == (40.9, 92.9)  # type: ignore[arg-type]
    doc = DOC.read_text(encoding="utf-8")
    assert "**75.0%** (6 of 8; 95% Wilson interval [40.9, 92.9])" in doc
    assert "**25.0%** (2 of 8)" in doc and "**25.0%** (3 of 12)" in doc
    # Resuming the same command reuses the run (the spec string is the run's benchmark identity).
    again = scopebench(
        tmp_path, tmp_path, "run", "--bench", "mybench.py:MyBenchmark", "--model", "frequent", "--out",
        "runs/mybench-frequent",
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert "0 new this time" in again.stdout


def _labquiz_checks(run_dir: Path) -> None:
    """The numbers docs/extending.md §3 states for the lab quiz, read from the run directory."""
    row = overall(run_dir)
    assert (row["n"], row["correct"]) == (6, 4)
    assert (round(float(row["ci_low"]) * 100, 1), round(float(row["ci_high"]) * 100, 1)) == (30.0, 90.3)  # type: ignore[arg-type]
    metrics = json.loads((run_dir / "metrics.json").read_text())
    owner = metrics["owner"]
    assert owner["description"] == "Lab quiz: accuracy per task (count, stain) and overall"
    cells = {(r["split_or_group"], r["subset_or_task"]): (r["correct"], r["n"]) for r in owner["rows"]}
    assert cells == {("test", "count"): (3, 4), ("test", "stain"): (1, 2), ("test", "overall"): (4, 6)}
    records = [json.loads(line) for line in (run_dir / "records.jsonl").read_text().splitlines()]
    # Read as numbers (the owner prompt's labels): "Answer: (3)" is option 3, never unparsed.
    assert [r["choice"] for r in sorted(records, key=lambda r: r["item_id"])] == [0, 1, 0, 0, 2, 2]
    assert json.loads((run_dir / "run.json").read_text())["protocol"] == "owner"


def test_doc_owner_protocol_benchmark_from_one_file_and_from_an_entry_point(
    site: Path, tmp_path: Path
) -> None:
    """docs/extending.md §3: owner prompt, answer prefix and aggregation in one file, run both ways."""
    files = doc_files()
    for name in ("labquiz.py", "labquiz-answers.jsonl"):
        (tmp_path / name).write_text(files[name], encoding="utf-8")
    args = ("--protocol", "owner", "--model", "replay:labquiz-answers.jsonl")
    res = scopebench(tmp_path, tmp_path, "run", "--bench", "labquiz.py:LabQuiz", *args, "--out", "runs/file")
    assert res.returncode == 0, res.stderr
    _labquiz_checks(tmp_path / "runs" / "file")
    # The same file as an installed distribution's entry point.
    (site / "labquiz.py").write_text(files["labquiz.py"], encoding="utf-8")
    install_dist(site, "labquiz", "1.0", {"scopebench.benchmarks": {"labquiz": "labquiz:LabQuiz"}})
    res = scopebench(site, tmp_path, "run", "--bench", "labquiz", *args, "--out", "runs/entry")
    assert res.returncode == 0, res.stderr
    _labquiz_checks(tmp_path / "runs" / "entry")
    config = json.loads((tmp_path / "runs" / "entry" / "run.json").read_text())
    assert config["plugins"]["benchmark"] == {"entry_point": "labquiz:LabQuiz", "distribution": "labquiz 1.0"}


def test_owner_hooks_of_a_one_file_benchmark_render_and_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The owner prompt, labels and answer prefix of §3 reach the Request; no published rows."""
    monkeypatch.setattr(bench_registry, "_REGISTRY", dict(bench_registry._REGISTRY))  # forget it after
    from scopebench.benchmarks.registry import get_benchmark, published_key
    from scopebench.protocols import render, resolve_protocol
    from scopebench.report.published import load_published

    (tmp_path / "labquiz.py").write_text(doc_files()["labquiz.py"], encoding="utf-8")
    spec = f"{tmp_path / 'labquiz.py'}:LabQuiz"
    item = get_benchmark(spec).load("").items[4]
    assert resolve_protocol("owner", spec) == "labquiz-owner"
    req = render(item, "owner")
    assert req.text == "How many nuclei are in field 4?\n(1) none\n(2) one\n(3) two\nReply as Answer: (N)."
    assert (req.labels, req.option_labels, req.answer_prefix) == ("numbers", ("1", "2", "3"), "Answer: (")
    assert (req.protocol, render(item).answer_prefix) == ("labquiz-owner", "")
    # published_key None: no rows, never every benchmark's rows.
    assert published_key(spec) is None and load_published(spec) == []
    assert {r["benchmark"] for r in load_published("pathmmu")} == {"pathmmu"}


# Broken and clashing plugins -----------------------------------------------------------------------


def _install_broken(site: Path) -> None:
    pkg = site / "brokenlab"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "bad.py").write_text("import libfoo_that_is_not_installed\n")
    (pkg / "notabench.py").write_text("class Thing:\n    pass\n")
    install_dist(
        site,
        "brokenlab",
        "2.3",
        {
            "scopebench.benchmarks": {
                "broken": "brokenlab.bad:Bench",
                "ubench": "brokenlab.notabench:Thing",
                "notabench": "brokenlab.notabench:Thing",
            },
            "scopebench.models": {
                "broken-model": "brokenlab.bad:Model",
                "random": "brokenlab.notabench:Thing",
                "plip": "brokenlab.notabench:Thing",
            },
        },
    )


def test_listings_survive_broken_plugins(on_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _install_broken(on_path)
    out = listing("benchmarks", monkeypatch)
    broken = next(line for line in out.splitlines() if line.startswith("│ broken "))
    assert "unavailable" in broken and "brokenlab 2.3" in broken
    assert "ModuleNotFoundError: No module named 'libfoo_that_is_not_installed'" in broken
    assert "is not a Benchmark subclass" in out
    clash = next(line for line in out.splitlines() if "ubench (brokenlab 2.3)" in line)
    assert "the benchmark 'ubench' declared by brokenlab 2.3" in clash and "clashes with a built-in" in clash
    assert next(line for line in out.splitlines() if line.startswith("│ ubench ")).count("unavailable") == 0
    out = listing("models", monkeypatch)
    line = next(line for line in out.splitlines() if "broken-model" in line and "brokenlab" in line)
    assert "unavailable" in line and "libfoo_that_is_not_installed" in line
    for name in ("random", "plip"):  # a built-in scheme and a preset name
        line = next(
            line for line in out.splitlines() if line.startswith(f"│ {name} ") and "brokenlab" in line
        )
        assert "unavailable: the model scheme" in line and "clashes with a built-in name" in line


def test_run_with_broken_plugin_says_whose_and_why(site: Path, tmp_path: Path) -> None:
    _install_broken(site)
    res = scopebench(site, tmp_path, "run", "--bench", "broken", "--model", "random", "--out", "r")
    assert res.returncode == 2  # a user error: message, no traceback
    assert "Traceback" not in res.stderr
    assert "the benchmark 'broken' of brokenlab 2.3 (brokenlab.bad:Bench) failed to import" in res.stderr
    assert not (tmp_path / "r").exists()
    res = scopebench(site, tmp_path, "run", "--bench", "demo", "--model", "broken-model", "--out", "r")
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "the model scheme 'broken-model' of brokenlab 2.3" in res.stderr


def test_clashing_entry_points_never_replace_builtins(on_path: Path) -> None:
    _install_broken(on_path)
    from scopebench.benchmarks import get_benchmark
    from scopebench.models.registry import backend_class, model_plugins, split_spec

    # The built-ins win; the clashing plugins are known but marked.
    assert type(get_benchmark("ubench")).__module__ == "scopebench.benchmarks.ubench"
    assert backend_class("random").__module__ == "scopebench.models.baselines"
    assert split_spec("plip") == ("clip", "vinid/plip")
    problems = {e.name: e.problem for e in model_plugins()}
    assert problems["broken-model"] is None  # declared fine; fails only on import
    assert "clashes" in str(problems["random"]) and "clashes" in str(problems["plip"])
    with pytest.raises(PluginError, match="not a Benchmark subclass"):
        get_benchmark("notabench")
    with pytest.raises(BenchmarkNotFoundError):
        get_benchmark("nosuch")


def test_duplicate_names_refuse_both(on_path: Path) -> None:
    for dist, target in (("lab-a", "x:A"), ("lab-b", "y:B")):
        install_dist(on_path / dist, dist, "1.0", {"scopebench.models": {"shared": target}})
        sys.path.insert(0, str(on_path / dist))
    try:
        clear_plugin_cache()
        from scopebench.models.registry import split_spec

        with pytest.raises(ModelSpecError, match=r"declared twice, by lab-a 1\.0 .* and by lab-b 1\.0"):
            split_spec("shared")
    finally:
        for dist in ("lab-a", "lab-b"):
            sys.path.remove(str(on_path / dist))


def test_entry_points_are_discovered_lazily(site: Path, tmp_path: Path) -> None:
    """Declared plugins are not imported by `import scopebench` or by a built-in run's setup."""
    install_doc_package(site)
    code = (
        "import sys, scopebench, scopebench.benchmarks, scopebench.models;"
        "from scopebench.benchmarks import get_benchmark; get_benchmark('local');"
        "from scopebench.models.registry import load_model; load_model('random');"
        "print([m for m in sys.modules if m.startswith('mylab_bench')])"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO / "src")])}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# Plugin files --------------------------------------------------------------------------------------


def test_plugin_file_errors_say_what_to_fix(tmp_path: Path) -> None:
    from scopebench.benchmarks import get_benchmark

    with pytest.raises(PluginError, match=r"plugin file .*nope\.py not found"):
        get_benchmark(str(tmp_path / "nope.py") + ":X")
    (tmp_path / "two.py").write_text(doc_files()["mybench.py"])
    with pytest.raises(PluginError, match="no Benchmark subclass named 'Typo'; it defines: MyBenchmark"):
        get_benchmark(str(tmp_path / "two.py") + ":Typo")
    (tmp_path / "bad.py").write_text("raise RuntimeError('boom at import')\n")
    with pytest.raises(PluginError, match=r"bad\.py failed to import: RuntimeError: boom at import"):
        get_benchmark(str(tmp_path / "bad.py") + ":X")


def test_plugin_file_is_imported_once(tmp_path: Path) -> None:
    from scopebench.benchmarks import get_benchmark

    (tmp_path / "counted.py").write_text(
        doc_files()["mybench.py"] + "\nimport builtins\n"
        "builtins._scopebench_counted = getattr(builtins, '_scopebench_counted', 0) + 1\n"
    )
    import builtins

    spec = str(tmp_path / "counted.py") + ":MyBenchmark"
    first, second = get_benchmark(spec), get_benchmark(spec)
    assert type(first) is type(second)  # one class: isinstance checks and registries agree
    assert builtins._scopebench_counted == 1  # type: ignore[attr-defined]
    assert first.name == "counted"  # undecorated: named after its file
    assert len(first.load("").items) == 8


def test_register_benchmark_refuses_a_builtin_name() -> None:
    from scopebench.benchmarks import Benchmark, register_benchmark

    with pytest.raises(PluginError, match="registers the benchmark name 'spur', which is a built-in"):

        @register_benchmark("spur")
        class Impostor(Benchmark):  # pragma: no cover - never registered
            def load(self, data: str | Path, split: str | None = None) -> object:  # type: ignore[override]
                raise AssertionError

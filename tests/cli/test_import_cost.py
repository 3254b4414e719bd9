"""Running one command imports only its command module; printing help loads no heavy library.

The ``scopebench`` group imports a command's module only when that command is asked for, so a
command module importing another at its top, or the group going back to importing every module
to build itself, makes every invocation pay for all of them (rich tables, the review app's
checks, the probes): this checks which modules a fresh interpreter holds afterwards. ``--help`` of
the group imports every command module, so whatever those import at their top is paid there: a
top-level ``import matplotlib`` (or a module that imports one, such as the report's plotting
helpers) slipped into the import chain again is what the second half catches. The same holds for
our own heavy layers: a CLI module importing scoring (numpy), the answer parser's compiled
patterns, the pydantic configuration models, the run store (sqlite3) or a probe at its top, or an
option declaration (a choices list, a help text) that needs one of them. Real invariants of
``sys.modules``, not timings.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from scopebench.cli import _COMMAND_MODULES

# Libraries that take tenths of a second or more to import and that no help text needs.
_HEAVY = (
    "matplotlib",
    "pandas",
    "datasets",
    "torch",
    "transformers",
    "ray",
    "pyarrow",
    "scipy",
    "numpy",
    "pydantic",
    "sqlite3",
    "tqdm",
    "scopebench.scoring",
    "scopebench.parsing",
    "scopebench.config",
    "scopebench.report",
    "scopebench.store",
    "scopebench.engine",
    "scopebench.models",
    "scopebench.experiments.probes.base",
)


def _loaded_after(argv: list[str], names: Sequence[str] = _HEAVY) -> list[str]:
    """The modules of ``names`` loaded once ``scopebench ARGV`` has run in a fresh interpreter."""
    code = (
        "import contextlib, io, json, sys\n"
        "from scopebench.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        f"    main({argv!r})\n"
        f"print(json.dumps([m for m in {tuple(names)!r} if m in sys.modules]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=dict(os.environ)
    )
    loaded: list[str] = json.loads(out.stdout.strip().splitlines()[-1])
    return loaded


def test_help_of_the_group_and_of_a_probe_loads_no_heavy_module() -> None:
    """``--help`` itself (logging set-up, flag hoisting) and a probe whose help is its module's
    docstring: reading that docstring by importing the probe would load the engine and numpy."""
    assert _loaded_after(["--help"]) == []
    assert _loaded_after(["probe", "shortcut", "--help"]) == []
    assert _loaded_after(["probe", "matching", "--help"]) == []


_COMMAND_MODULE_NAMES = tuple(sorted(set(_COMMAND_MODULES.values())))


@pytest.mark.parametrize("module", _COMMAND_MODULE_NAMES, ids=lambda m: m.rsplit(".", 1)[-1])
def test_a_command_imports_only_its_own_command_module(module: str) -> None:
    """Catches the group importing every command module again (``build_cli`` registering them all)
    and a command module importing another at its top: `scopebench build run` would pay for the
    review app's, the probes' and the reports' modules and their libraries."""
    command = next(name for name, owner in _COMMAND_MODULES.items() if owner == module)
    assert _loaded_after([command, "--help"], _COMMAND_MODULE_NAMES) == [module]


def test_the_group_help_lists_every_command_module() -> None:
    """The group's --help shows each command's short help, which needs every module: a lazy group
    that listed only the modules loaded so far would print a partial command list."""
    assert _loaded_after(["--help"], _COMMAND_MODULE_NAMES) == list(_COMMAND_MODULE_NAMES)


def _random_baseline_run(tmp_path: Path, n: int) -> list[str]:
    """``scopebench`` arguments of a run of the random baseline on ``n`` text questions (written)."""
    rows = [
        {"question": f"Q{i}?", "choices": ["a", "b", "c"], "answer": i % 3, "task": f"t{i % 2}"}
        for i in range(n)
    ]
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = str(tmp_path / "run")
    return ["-q", "run", "--bench", "local", "--data", str(data), "--model", "random", "--out", out]


def test_a_run_and_its_report_import_neither_pandas_nor_scipy_stats(tmp_path: Path) -> None:
    """Catches the Wilson interval (every accuracy row has one) going back to statsmodels, which
    imports pandas, or to scipy.stats: 0.75 CPU s or more added to every run, a tenth of a 10-item
    run with a tiny CLIP."""
    argv = _random_baseline_run(tmp_path, 12)
    loaded = _loaded_after(argv, ("pandas", "statsmodels", "scipy.stats", "scopebench.report"))
    assert loaded == ["scopebench.report"]  # the report was written, without them
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["overall"]["ci_method"] == "wilson" and metrics["overall"]["n"] == 12


def test_a_command_runs_without_full_collections_while_importing_and_restores_the_thresholds(
    tmp_path: Path,
) -> None:
    """Catches the command line going back to Python's default collector thresholds, under which
    a full collection (a walk over every object alive) runs again and again while torch,
    transformers and matplotlib are imported: 7 of them, 0.9 s, in a 10-item CLIP run; one in
    this run of the random baseline, whose report imports matplotlib."""
    import gc

    argv = _random_baseline_run(tmp_path, 6)
    code = (
        "import gc, json\nfrom scopebench.cli import main\nfull = []\n"
        "gc.callbacks.append(lambda phase, info: full.append(1) if phase == 'start' and info['generation'] == 2 else None)\n"
        f"assert main({argv!r}) == 0\n"
        "print(json.dumps([len(full), gc.get_threshold()]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    full, after = json.loads(out.stdout.strip().splitlines()[-1])
    assert full == 0 and after == [700, 10, 10]  # and the defaults are back once it returns
    before = gc.get_threshold()
    from scopebench.cli import main

    assert main(["--help"]) == 0 and gc.get_threshold() == before


def test_the_executable_freezes_the_collector_before_the_interpreter_exits() -> None:
    """Catches the executable going back to calling ``main`` bare: the interpreter's exit then
    walks every object alive in full collections (0.9-1.5 s of a 10-item CLIP run). ``main``
    itself must leave a calling program's collector alone."""
    from importlib.metadata import entry_points

    code = (
        "import contextlib, gc, io, json, runpy\nfrom scopebench.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    assert main(['--help']) == 0\n    after_main = gc.get_freeze_count()\n"
        "    with contextlib.suppress(SystemExit):\n"
        "        runpy.run_module('scopebench', run_name='__main__')\n"  # python -m scopebench
        "print(json.dumps([after_main, gc.get_freeze_count()]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code, "--help"], capture_output=True, text=True, check=True)
    after_main, after_module = json.loads(out.stdout.strip().splitlines()[-1])
    assert after_main == 0 and after_module > 1000
    (script,) = [e for e in entry_points(group="console_scripts") if e.name == "scopebench"]
    assert script.value == "scopebench.cli:entry"

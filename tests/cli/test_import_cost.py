"""Printing help loads no plotting, table or model library.

``scopebench --help`` (and every command's ``--help``) builds the whole click group, so whatever the
CLI modules import at their top is paid by every invocation. A top-level ``import matplotlib`` (or a
module that imports one, such as the report's plotting helpers) slipped into the import chain
again is what this catches: a real invariant of ``sys.modules``, not a timing. The same holds for
our own heavy layers: a CLI module importing scoring (numpy), the answer parser's compiled
patterns, the pydantic configuration models, the run store (sqlite3) or a probe at its top, or an
option declaration (a choices list, a help text) that needs one of them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

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


def test_building_the_cli_loads_no_heavy_library() -> None:
    code = (
        "import json, sys\n"
        "from scopebench.cli import build_cli\n"
        "build_cli()\n"
        f"print(json.dumps([m for m in {_HEAVY!r} if m in sys.modules]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=dict(os.environ)
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def _loaded_after(argv: list[str]) -> list[str]:
    """The modules of ``_HEAVY`` loaded once ``scopebench ARGV`` has printed its help."""
    code = (
        "import contextlib, io, json, sys\n"
        "from scopebench.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        f"    main({argv!r})\n"
        f"print(json.dumps([m for m in {_HEAVY!r} if m in sys.modules]))\n"
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

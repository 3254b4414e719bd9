"""Printing help loads no plotting, table or model library.

``scopebench --help`` (and every command's ``--help``) builds the whole click group, so whatever the
CLI modules import at their top is paid by every invocation. A top-level ``import matplotlib`` (or a
module that imports one, such as the report's plotting helpers) slipped into the import chain
again is what this catches: a real invariant of ``sys.modules``, not a timing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

# Libraries that take tenths of a second or more to import and that no help text needs.
_HEAVY = ("matplotlib", "pandas", "datasets", "torch", "transformers", "ray", "pyarrow", "scipy")


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

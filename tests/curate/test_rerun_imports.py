"""A ``build run`` that reuses every step imports no step implementation and no heavy library.

Deciding that nothing changed needs build.yaml's sections validated, the step keys and the cached
``build.json`` files; not datasets/pyarrow (writing outputs), scipy and NumPy (answer positions),
the engine (behind the filter's gates), torch, or any step's implementation. A step module imported at the pipeline's top again,
or a heavy import moved back to a configuration module, is what this catches: an invariant of
``sys.modules`` in a fresh interpreter, not a timing (the cost itself is in bench/bench_ingest.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from curate_helpers import make_sources

from scopebench.curate import run_build

# Heavy libraries, and our own modules that hold a step's implementation or load the engine.
_NOT_ON_A_REUSING_RUN = (
    "datasets",
    "pyarrow",
    "scipy",
    "torch",
    "transformers",
    "ray",
    "pandas",
    "numpy",
    "license_expression",  # its SPDX index: the input hash needs the manifest's paths only
    "scopebench.engine",
    "scopebench.models",
    "scopebench.parsing",
    "scopebench.curate.ingestion.step",
    "scopebench.curate.questions",
    "scopebench.curate.generation.step",
    "scopebench.curate.filtering.step",
    "scopebench.curate.splits",
    "scopebench.curate.exporting",
    "scopebench.curate.balance",
    # The other commands' modules: the lazy `scopebench` group imports only `build`'s.
    "scopebench.cli.core",
    "scopebench.cli.report",
    "scopebench.cli.probe",
    "scopebench.cli.tools",
    "scopebench.cli.review",
    "scopebench.cli.paper",
    "scopebench.cli.finetune",
)

# Runs the CLI as `scopebench build run` does, then reports its exit code, what it printed and
# which of the modules above it loaded.
_WRAPPER = """
import contextlib, io, json, sys
from scopebench.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        code = main(["build", "run", sys.argv[1]])
    except SystemExit as exc:
        code = exc.code
names = json.loads(sys.argv[2])
print(json.dumps({"code": code, "out": out.getvalue(), "loaded": [m for m in names if m in sys.modules]}))
"""


def test_a_run_with_nothing_changed_loads_no_step_implementation(tmp_path: Path) -> None:
    """Catches a step module (or datasets, scipy, the engine) imported before a step needs to run,
    and a "light" re-run that only looks light because it stopped recognising the cached steps."""
    make_sources(tmp_path)
    build = tmp_path / "build.yaml"
    build.write_text("manifest: manifest.yaml\nout: out\nseed: 3\nsplit: {tiny: 1}\n")
    cold = run_build(build)
    assert [r.cached for r in cold.steps] == [False] * 4
    stamps = {p: p.stat().st_mtime_ns for p in (tmp_path / "out").glob("*/build.json")}
    assert len(stamps) == 4

    env = {**os.environ, "COLUMNS": "160"}
    done = subprocess.run(
        [sys.executable, "-c", _WRAPPER, str(build), json.dumps(_NOT_ON_A_REUSING_RUN)],
        capture_output=True, text=True, check=True, env=env,
    )  # fmt: skip
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["code"] == 0, done.stderr
    assert got["loaded"] == []
    # Still a real re-run: every step is reported reused, and none rewrote its output.
    # The summary table's first line of each step (a long cell wraps onto lines with no step name).
    cells = [line.split("│")[1:-1] for line in got["out"].splitlines() if line.startswith("│")]
    steps = [(c[0].strip(), c[-1].strip()) for c in cells if c[0].strip()]
    assert steps == [("ingest", "yes"), ("questions", "yes"), ("split", "yes"), ("export", "yes")], got["out"]
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps

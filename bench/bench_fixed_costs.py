"""Fixed costs: printing help, and where a 10-item `scopebench run` with a tiny CLIP spends its time.

Each figure is CPU seconds (user + system), the minimum of ``--repeat`` runs: on a shared machine
waiting for a core inflates wall time by a factor that changes from one run to the next, CPU time
much less. The load average is printed with them. On an idle machine wall ≈ CPU for these
single-threaded commands, except the model work (torch uses every core). Every command runs in a
fresh interpreter, as a user's does.

Prints:
* ``scopebench --help``: seconds, its ratio to the 0.4 s target, and whether any plotting, table
  or model library was imported to print it;
* the 10-item run (2 images × 5 questions, tiny random CLIP, CPU), end to end, against its parts:
  interpreter start, importing the CLI and the ``run`` command's module, importing torch +
  transformers, building the model from its folder, the model's work (2 images and 20 captions
  encoded), and the rest (run store, data loading and checks, metrics with bootstrap intervals,
  report files) — what is ours; then the rest apart, in an interpreter that imports each part
  (our modules, torch + transformers, matplotlib) before it runs the command, with the report's
  tables and plots timed;
* the same command on the finished run (nothing to predict): the floor of any invocation.

Usage: python bench/bench_fixed_costs.py [--repeat 5] [--out /tmp/scopebench-fixed]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

from _data import make_data

_HEAVY = (
    "matplotlib", "pandas", "datasets", "torch", "transformers", "ray", "pyarrow", "scipy", "numpy",
    "pydantic", "sqlite3", "tqdm", "scopebench.scoring", "scopebench.parsing",
)  # fmt: skip

# What the CLI imports before `run` starts: the group, and the module of `run` (cli.core) it loads.
_CLI_FOR_RUN = "import click, scopebench.cli as c; g = c.build_cli(); g.get_command(click.Context(g), 'run')"

# The parts a run is measured against, under the collector thresholds the command line sets (a
# full collection at every tenth middle-generation one would bill torch's import for 0.9 s of
# collections the run itself no longer does).
_MODEL_WORK = """
import gc, json, sys, time, logging
from pathlib import Path
from scopebench.cli import _COMMAND_GC_THRESHOLDS
gc.set_threshold(*_COMMAND_GC_THRESHOLDS)
logging.getLogger("transformers").setLevel(logging.ERROR)
t0 = time.process_time()
import torch
from transformers import AutoModel, AutoProcessor
from PIL import Image
t1 = time.process_time()
model = AutoModel.from_pretrained(sys.argv[1]).eval()
proc = AutoProcessor.from_pretrained(sys.argv[1])
t2 = time.process_time()
data = Path(sys.argv[2])
rows = [json.loads(x) for x in data.read_text().splitlines()]
images = sorted({r["image"] for r in rows})
captions = sorted({c for r in rows for c in r["captions"]})
with torch.inference_mode():
    pil = [Image.open(data.parent / p).convert("RGB") for p in images]
    model.get_image_features(pixel_values=proc(images=pil, return_tensors="pt")["pixel_values"])
    model.get_text_features(**proc(text=captions, padding=True, return_tensors="pt"))
t3 = time.process_time()
print(json.dumps({"import": t1 - t0, "build": t2 - t1, "work": t3 - t2}))
"""

# The rest, split: one interpreter imports our modules of a run, then the plotting library, then
# runs the command (whose remaining imports are transformers' CLIP modules) with timers on the
# report's tables and plots.
_REST_PARTS = """
import gc, json, sys, time
from scopebench.cli import _COMMAND_GC_THRESHOLDS, main
gc.set_threshold(*_COMMAND_GC_THRESHOLDS)
t0 = time.process_time()
import scopebench.engine.runner, scopebench.benchmarks.local, scopebench.models.contrastive
import scopebench.report, scopebench.scoring.metrics, scopebench.store
t1 = time.process_time()
import torch, transformers
from transformers import AutoConfig, AutoModel, AutoProcessor
t2 = time.process_time()
import scopebench.report.plots
t3 = time.process_time()
import scopebench.report as report
spent = [0.0]
write = report._write_tables_and_plots
def timed(*args, **kwargs):
    start = time.process_time()
    try:
        return write(*args, **kwargs)
    finally:
        spent[0] += time.process_time() - start
report._write_tables_and_plots = timed
data, model, out = sys.argv[1:4]
main(["-q", "run", "--bench", "local", "--data", data, "--model", "clip:" + model, "--out", out])
t4 = time.process_time()
parts = {"ours": t1 - t0, "torch": t2 - t1, "plotting": t3 - t2, "run": t4 - t3, "report": spent[0]}
print(json.dumps(parts))
"""


def _timed(cmd: list[str], repeat: int, env: dict[str, str]) -> float:
    """CPU seconds (user + system) of the command, the minimum of ``repeat`` runs.

    CPU time, not wall time: on a machine shared with other jobs, waiting for a core inflates wall
    time many times over, and that inflation changes between one measurement and the next.
    """
    best = float("inf")
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(cmd, check=True, capture_output=True, env=env)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        best = min(best, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return best


def _model_parts(model_dir: Path, data: Path, repeat: int, env: dict[str, str]) -> dict[str, float]:
    runs = [
        json.loads(subprocess.run([sys.executable, "-c", _MODEL_WORK, str(model_dir), str(data)], check=True,
                                  capture_output=True, text=True, env=env).stdout.strip().splitlines()[-1])
        for _ in range(repeat)
    ]  # fmt: skip
    return {k: min(r[k] for r in runs) for k in runs[0]}


def _help_imports(env: dict[str, str]) -> list[str]:
    # --help of the group imports every command module (each command's short help).
    code = (
        "import contextlib, io, json, sys\nfrom scopebench.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n    main(['--help'])\n"
        f"print(json.dumps([m for m in {_HEAVY!r} if m in sys.modules]))"
    )
    done = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, env=env)
    loaded: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return loaded


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", default="/tmp/scopebench-fixed")
    args = ap.parse_args()
    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    env = {**os.environ, "TRANSFORMERS_VERBOSITY": "error"}
    from scopebench.testing.tiny import build_tiny_clip

    model_dir = build_tiny_clip(out / "tiny-clip", kind="clip", seed=0)
    data = make_data(out / "data", 2)
    py = [sys.executable]
    cli = [*py, "-m", "scopebench"]
    load = os.getloadavg()[0]

    t_help = _timed([*cli, "--help"], args.repeat, env)
    t_python = _timed([*py, "-c", "pass"], args.repeat, env)
    t_cli = _timed([*py, "-c", _CLI_FOR_RUN], args.repeat, env)
    parts = _model_parts(model_dir, data, args.repeat, env)
    run = [*cli, "-q", "run", "--bench", "local", "--data", str(data), "--model", f"clip:{model_dir}"]
    t_run = min(_timed([*run, "--out", str(out / f"run-{r}")], 1, env) for r in range(args.repeat))
    t_again = _timed([*run, "--out", str(out / "run-0")], args.repeat, env)
    ours = t_run - t_cli - parts["import"] - parts["build"] - parts["work"]
    rest = []
    for r in range(args.repeat):
        argv = [*py, "-c", _REST_PARTS, str(data), str(model_dir), str(out / f"rest-{r}")]
        done = subprocess.run(argv, check=True, capture_output=True, text=True, env=env)
        rest.append(json.loads(done.stdout.strip().splitlines()[-1]))
    split = {k: min(r[k] for r in rest) for k in rest[0]}

    print(f"load average {load:.1f} on {os.cpu_count()} cores; CPU seconds, minimum of {args.repeat}")
    print(f"scopebench --help:                  {t_help:6.2f} s   ratio to 0.4 s = {t_help / 0.4:5.2f}x")
    print(f"  heavy libraries loaded for help:  {_help_imports(env) or 'none'}")
    print(f"10-item run, tiny CLIP, end to end: {t_run:6.2f} s")
    print(f"  interpreter start:                {t_python:6.2f} s")
    print(f"  import the CLI and `run` (start): {t_cli:6.2f} s")
    print(f"  import torch + transformers:      {parts['import']:6.2f} s")
    print(f"  build the model from its folder:  {parts['build']:6.2f} s")
    print(f"  model work (2 images, 20 texts):  {parts['work']:6.2f} s")
    print(f"  the rest (store, data, metrics):  {ours:6.2f} s")
    print("the same run apart, in an interpreter that imports each part before it runs the command:")
    print(f"    torch + transformers:           {split['torch']:6.2f} s")
    print(f"    our modules a run imports:      {split['ours']:6.2f} s   (with numpy, pydantic, PIL, SQLite)")
    print(f"    matplotlib, for the plots:      {split['plotting']:6.2f} s")
    print(f"    the run once all is imported:   {split['run']:6.2f} s   (with the model's load and work,")
    print(f"      of which tables and plots:    {split['report']:6.2f} s    and CLIP's modules' import)")
    print(f"same command on the finished run:   {t_again:6.2f} s")
    print(f"ratio run / model work = {t_run / parts['work']:6.1f}x")


if __name__ == "__main__":
    main()

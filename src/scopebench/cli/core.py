"""The core commands' options: benchmarks, validate, run, strategies, models, export, demo.

Their bodies are in :mod:`scopebench.cli` (``cmd_<name>(args) -> int``); the option groups that
several commands share come from :mod:`scopebench.cli.options`, declared once.
"""

from __future__ import annotations

import click

from scopebench import cli as _cli
from scopebench.cli.options import (
    MODEL_SPEC,
    Args,
    argument,
    command,
    engine_options,
    json_flag,
    model_options,
    pass_args,
    run_options,
    split_option,
    with_tracking,
)

__all__ = ["register"]


def register(group: click.Group) -> None:
    """Add the core commands to the ``scopebench`` group."""
    for cmd in (benchmarks, validate, run, strategies, models, export, demo):
        group.add_command(cmd)


@command("benchmarks", short_help="list benchmarks, their splits/tasks and the data each needs")
@json_flag("print the list as JSON (for scripts)")
@pass_args
def benchmarks(args: Args) -> int:
    """List benchmarks, their splits/tasks and the data each needs."""
    return _cli.cmd_benchmarks(args)


@command("validate", short_help="load a benchmark and report counts and every data problem")
@argument("bench", help="benchmark name (see `scopebench benchmarks`)")
@click.option("--data", help="data location (folder, file or dataset id)")
@split_option("only this split")
@click.option("--max-problems", type=int, help="list at most N problems in all")
@click.option(
    "--all", is_flag=True, help=f"list every problem (default: {_cli._PROBLEMS_PER_KIND} of each kind)"
)
@click.option("--json", metavar="FILE", help="also write every problem to FILE as JSON")
@click.option("--no-images", is_flag=True, help="do not decode the images (faster)")
@click.option("--strict", is_flag=True, help="exit 1 on warnings too (errors always exit 1)")
@pass_args
def validate(args: Args) -> int:
    """Load a benchmark and report counts and every data problem (exit 1 on errors)."""
    return _cli.cmd_validate(args)


@command("run", short_help="evaluate a model on a benchmark (resumable)")
# Several --bench/--model: a grid of runs under --out, then the paper tables (docs/tables.md).
@click.option("--bench", required=True, multiple=True, help="benchmark name (repeatable)")
@click.option("--data", multiple=True, help="data location (not needed for `demo`); one per --bench")
@click.option("--model", required=True, multiple=True, type=MODEL_SPEC,
              help="model spec: random, frequent, replay:FILE, … (repeatable)")  # fmt: skip
@click.option("--out", required=True, help="run directory (resumed if it exists); with several: their root")
@click.option("--label", help="display name of the run in tables and reports (recorded in run.json)")
@run_options()
@model_options
@engine_options
@click.option(
    "--log-samples",
    type=click.BOOL,
    default=True,
    show_default=True,
    help="store each record's sample (prompt, question, options, answer key); false for very large runs",
)
@click.option(
    "--box-repair",
    is_flag=True,
    help="detection: swap reversed box corners and clip boxes to the image before GRIT scoring "
    "(off: boxes are scored as written, as the official metric does; recorded in run.json)",
)
@click.option(
    "--answer-format",
    type=click.Choice(["free", "constrained"]),
    default="free",
    show_default=True,
    help="constrained: the backend may only answer an option label (openai: structured outputs, "
    "vllm: guided choice, hf: --mode generate a logits restriction; refused elsewhere); "
    "recorded in run.json",
)
@click.option(
    "--gen-arg",
    multiple=True,
    metavar="KEY=VALUE",
    help="generation beyond greedy: temperature (≥ 0), top_p (0 < p ≤ 1), n (samples per item; "
    "the record keeps each with its seed, the majority answers); openai:, vllm:, hf: --mode generate",
)
@click.option(
    "--strategy",
    help="chain-of-thought strategy: direct, step-by-step, vot, ddcot, cantor (generative models)",
)
@click.option(
    "--judge",
    metavar="SPEC",
    help="answer-extraction judge asked only about unparsed responses: a generative model "
    "(openai:gpt-4o-mini, hf:…, vllm:…) or replay:FILE",
)
@click.option(
    "--judge-arg",
    multiple=True,
    metavar="KEY=VALUE",
    help="judge option: device, base_url, batch_size, or a backend option (like --model-arg)",
)
@click.option(
    "--rejudge",
    is_flag=True,
    help="drop the judge verdicts stored in --out and judge again (with no --judge: remove them)",
)
@with_tracking()
@pass_args
def run(args: Args) -> int:
    """Evaluate a model on a benchmark into a run directory (resumable).

    Several --bench/--model: a grid of runs under --out, then the paper tables.
    """
    args.bench, args.model, args.data = list(args.bench), list(args.model), list(args.data)
    return _cli.cmd_run(args)


@command("strategies", short_help="compare chain-of-thought strategies (accuracy per task, decoupling)")
@click.option("--bench", required=True, help="benchmark name")
@click.option("--data", help="data location")
@click.option(
    "--model", required=True, type=MODEL_SPEC, help="generative model spec (hf:, vllm:, openai:, replay:)"
)
@click.option("--out", required=True, help="folder for one run directory per strategy")
@click.option(
    "--strategies", default="direct,step-by-step,vot,ddcot,cantor", help="comma-separated (default: all)"
)
@run_options()
@model_options
@engine_options
@pass_args
def strategies(args: Args) -> int:
    """Compare chain-of-thought strategies (accuracy per task, decoupling)."""
    return _cli.cmd_strategies(args)


@command("models", short_help="list the model presets of the seed papers and the spec schemes")
@json_flag("print presets and schemes as JSON (for scripts)")
@pass_args
def models(args: Args) -> int:
    """List the model presets of the seed papers and the spec schemes."""
    return _cli.cmd_models(args)


@command("export", short_help="write a run's per-item records as Parquet or JSONL")
@argument("run", help="run directory")
@click.option("--format", type=click.Choice(["parquet", "jsonl"]), default="parquet", help="default parquet")
@click.option("--out", help="output file (default: RUN/records.<format>)")
@click.option(
    "--salvage",
    metavar="NEWDIR",
    help="copy a damaged run's configuration and every readable record into the new run folder "
    "NEWDIR, which `scopebench run … --out NEWDIR` then resumes",
)
@pass_args
def export(args: Args) -> int:
    """Write a run's per-item records as Parquet or JSONL (or salvage a damaged run)."""
    return _cli.cmd_export(args)


@command("demo", short_help="generate the offline demo benchmark and evaluate the demo models",
               greedy=("--models",))  # fmt: skip
@click.option("--data", help="folder for the generated benchmark (default: the cache)")
@click.option("--out", default="runs/demo", help="folder for the run directories (default runs/demo)")
@click.option("--seed", type=int, default=0, help="generation and evaluation seed (default 0)")
@click.option("--models", multiple=True, metavar="SPEC…", help="model specs to run (default: the demo set)")
@click.option("--tables", is_flag=True, help="also print each model's full metrics table")
@pass_args
def demo(args: Args) -> int:
    """Generate the offline demo benchmark and evaluate the demo models."""
    return _cli.cmd_demo(args)

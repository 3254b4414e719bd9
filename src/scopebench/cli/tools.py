"""``scopebench merge`` (weight interpolation, α sweeps) and ``scopebench linear-probe``."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import click
from rich.table import Table

from scopebench.cli.options import (
    Args,
    argument,
    batch_size_option,
    command,
    device_option,
    limit_option,
    pass_args,
    seed_option,
    split_option,
)
from scopebench.cli.output import out_console, print_wide
from scopebench.errors import DataFormatError, ModelError

__all__ = ["cmd_linear_probe", "cmd_merge", "register"]

# Piped output gets a fixed wide layout, as in scopebench.cli, so table columns are not truncated.
console = out_console(120)


def _pct(x: float) -> str:
    return "–" if math.isnan(x) else f"{100 * x:.1f}%"


def _ci(low: float, high: float) -> str:
    return "–" if math.isnan(low) else f"[{100 * low:.1f}, {100 * high:.1f}]"


def cmd_merge(args: Args) -> int:
    """Merge two models at one α, or sweep α over a grid and evaluate each merge."""
    from scopebench.experiments.merge import merge_models, parse_alphas, sweep_alphas, write_sweep_outputs

    if (args.alpha is None) == (args.sweep is None):
        raise ModelError("give exactly one of --alpha A (one merge) or --sweep [A1,A2,…] (evaluate a grid)")
    if args.alpha is not None:
        if args.bench:
            raise ModelError("--bench evaluates a --sweep; for one α, evaluate the merged folder with `run`")
        res = merge_models(args.base, args.tuned, args.alpha, args.out)
        console.print(
            f"merged {res.interpolated} tensors ({res.parameters:,} values) at α={res.alpha:g} "
            f"(1 = base, 0 = tuned); {len(res.copied_from_tuned)} non-float tensor(s) and "
            f"{len(res.files_copied)} file(s) copied from the tuned model"
        )
        console.print(f"model: {res.model_spec}   provenance: {res.out_dir / 'scopebench_merge.json'}")
        return 0
    if not args.bench:
        raise ModelError(
            "--sweep evaluates each α on a benchmark: add --bench NAME (and --data for its data)"
        )
    alphas = parse_alphas(args.sweep)
    from scopebench.config import RunConfig

    # The evaluation of every α, built once; each merge's spec replaces the model.
    evaluation = RunConfig.from_options(
        args.bench, args.data or "", f"clip:{args.base}", split=args.split, limit=args.limit,
        seed=args.seed, device=args.device, batch_size=args.batch_size,
    )  # fmt: skip
    rows = sweep_alphas(args.base, args.tuned, alphas, args.out, evaluation, openclip_arch=args.openclip_arch)
    title = f"{args.bench}: merge of {Path(args.base).name} (α) and {Path(args.tuned).name} (1 − α)"
    files = write_sweep_outputs(rows, args.out, title=title)
    table = Table(title=title)
    for col in ("α", "n", "accuracy", "95% CI"):
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(f"{r.alpha:g}", str(r.n), _pct(r.accuracy), _ci(r.ci_low, r.ci_high))
    console.print(table)
    console.print("α = 1 is the base model, α = 0 the tuned model")
    console.print(f"table and plot: {', '.join(str(f) for f in files)}")
    return 0


def _load_split(bench: str, data: str, split: str | None) -> list[Any]:
    from scopebench.benchmarks import get_benchmark

    loaded = get_benchmark(bench).load(data, split=split)
    return list(loaded.items)


def cmd_linear_probe(args: Args) -> int:
    """Train a linear probe per task on a training split; evaluate on the benchmark's items."""
    from scopebench.benchmarks import get_benchmark
    from scopebench.benchmarks.local import LocalBenchmark
    from scopebench.experiments.linear_probe import check_features, run_linear_probe, write_probe_outputs

    check_features(args.features)  # a typo fails before the data are read
    bench = get_benchmark(args.bench)
    if args.train:
        train = list(
            LocalBenchmark().load_file(Path(args.train).expanduser(), "train", args.train_split).items
        )
        train_from = f"{args.train} (local format)"
    elif "train" in bench.splits:
        train = _load_split(args.bench, args.data or "", "train")
        train_from = f"the {args.bench} benchmark's train split"
    else:
        raise DataFormatError(
            f"benchmark {args.bench!r} has no training split; pass --train FILE with labelled training "
            "images in the local format (question, choices, answer, image, task: see docs/tools.md)"
        )
    test = _load_split(args.bench, args.data or "", args.split)
    if args.limit is not None:
        test = test[: args.limit]
    result = run_linear_probe(
        train, test, args.features, seed=args.seed, C=args.C, optuna_trials=args.optuna_trials,
        device=args.device, batch_size=args.batch_size,
    )  # fmt: skip
    result.config.update(benchmark=args.bench, data=args.data, split=args.split, train=train_from)
    title = f"Linear probe on {args.bench} ({args.features} features)"
    files = write_probe_outputs(result, args.out, title=title)
    table = Table(title=title)
    for col in (
        "task",
        "status",
        "train",
        "test",
        "accuracy",
        "95% CI",
        "balanced acc.",
        "macro-F1",
        "chance",
        "PCA comp.",
        "C",
        *(["CV bal. acc."] if args.optuna_trials > 0 else []),
    ):
        table.add_column(col, justify="left" if col in ("task", "status") else "right")
    for t in result.tasks:
        cv = [_pct(t.cv_balanced_accuracy) if t.cv_balanced_accuracy is not None else "–"]
        table.add_row(
            t.task, t.status, str(t.n_train), str(t.n_test), _pct(t.accuracy), _ci(t.ci_low, t.ci_high),
            _pct(t.balanced_accuracy), _pct(t.macro_f1), _pct(t.chance),
            "–" if t.pca_components is None else str(t.pca_components), "–" if t.C is None else f"{t.C:.4g}",
            *(cv if args.optuna_trials > 0 else []),
        )  # fmt: skip
    print_wide(console, table)  # task names never cut with "…"
    o = result.overall
    console.print(f"overall: {_pct(o['accuracy'])} {_ci(o['ci_low'], o['ci_high'])} over {o['n']} items")
    if result.skipped:
        console.print("not evaluated: " + ", ".join(f"{k}: {v}" for k, v in sorted(result.skipped.items())))
    console.print(f"results: {', '.join(str(f) for f in files)}")
    return 0


def register(group: click.Group) -> None:
    """Add ``merge`` and ``linear-probe`` to the ``scopebench`` group."""
    group.add_command(_merge)
    group.add_command(_linear_probe)


@command(
    "merge",
    short_help="interpolate two contrastive models' weights (α·base + (1−α)·tuned); --sweep evaluates α",
)
@argument("base", help="base model: transformers folder (clip:) or open_clip checkpoint file")
@argument("tuned", help="fine-tuned model of the same architecture")
@click.option("--alpha", type=float, help="weight of the base model in [0, 1] (1 = base, 0 = tuned)")
@click.option(
    "--sweep", is_flag=False, flag_value="", metavar="A1,A2,…",
    help="evaluate a grid of α (default grid 0,0.1,…,1) on --bench; OUT/alpha-<a>/{model,run}",
)  # fmt: skip
@click.option("--out", required=True, help="merged model folder (--alpha) or sweep folder (--sweep)")
@click.option("--bench", help="benchmark for --sweep")
@click.option("--data", help="data location of --bench")
@split_option("split to evaluate")
@limit_option()
@seed_option("seed of the runs and bootstrap intervals (default 0)")
@device_option("auto, cpu, cuda …")
@batch_size_option()
@click.option("--openclip-arch", help="open_clip architecture of checkpoint files, for --sweep")
@pass_args
def _merge(args: Args) -> int:
    """Interpolate two contrastive models' weights (α·base + (1−α)·tuned); --sweep evaluates α."""
    return cmd_merge(args)


@command("linear-probe", short_help="linear-probe baseline: image features → logistic regression per task")
@click.option("--bench", required=True, help="benchmark name")
@click.option("--data", help="data location (not needed for `demo`)")
@click.option(
    "--features", default="handcrafted",
    help="handcrafted (scikit-image, offline; default), dinov2:<folder or hub id>[?pool=cls|mean] "
    "(μ-Bench §C.7), vision:<folder or hub id>[?pool=pooler|cls|mean], clip:<folder or hub id> "
    "or openclip:<model>",
)  # fmt: skip
@click.option("--out", required=True, help="output folder (JSON, Markdown, CSV, predictions)")
@click.option("--train", help="training data in the local format (default: the benchmark's train split)")
@click.option("--train-split", help="only this split of --train")
@split_option("benchmark split to evaluate (default: the benchmark's default)")
@limit_option("evaluate only the first N benchmark items")
@seed_option("seed of the classifier, CV, Optuna and bootstrap")
@click.option("--C", "C", type=float, default=1.0, help="inverse regularisation strength (default 1.0)")
@click.option("--optuna-trials", type=int, default=0, help="tune C with Optuna (extra scopebench[probe])")
@device_option("device for model features")
@batch_size_option("images per model call")
@pass_args
def _linear_probe(args: Args) -> int:
    """Linear-probe baseline: image features → logistic regression per task."""
    return cmd_linear_probe(args)

"""``scopebench finetune generative|contrastive`` (docs/finetune.md)."""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console
from rich.table import Table

from scopebench.cli.options import (
    Args,
    Group,
    batch_size_option,
    command,
    device_option,
    model_arg_option,
    pass_args,
    seed_option,
    split_option,
)

if TYPE_CHECKING:
    from scopebench.experiments.finetune import EvalSpec
from scopebench.errors import UsageError

__all__ = ["cmd_finetune", "register"]

console = Console(width=None if sys.stdout.isatty() else 120)


def _cell(row: dict[str, Any]) -> str:
    if math.isnan(row["accuracy"]):
        return "–"
    return f"{100 * row['accuracy']:.1f}% [{100 * row['ci_low']:.1f}, {100 * row['ci_high']:.1f}]"


def _model_args(pairs: Sequence[str]) -> tuple[tuple[str, Any], ...]:
    from scopebench.cli.options import parse_key_values

    return tuple(sorted(parse_key_values(pairs).items()))


def cmd_finetune(args: Args) -> int:
    """Run one fine-tuning recipe and print the before/after table."""
    from scopebench.experiments.finetune import DataSource, LoopConfig
    from scopebench.experiments.finetune.generative import LoraSettings
    from scopebench.experiments.finetune.run import finetune_contrastive, finetune_generative

    loop = LoopConfig(
        steps=args.steps,
        batch_size=args.batch_size,
        lr=args.lr,
        weight_decay=args.weight_decay,
        warmup_steps=args.warmup_steps,
        seed=args.seed,
        checkpoint_every=args.checkpoint_every,
        keep_checkpoints=args.keep_checkpoints,
        eval_every=args.eval_every,
        max_grad_norm=args.max_grad_norm,
        device=args.device,
    )
    source = DataSource(args.bench, args.split, args.data or "") if args.bench else None
    evaluation = _evaluation(args)
    out = Path(args.out)
    if args.recipe == "contrastive":
        result = finetune_contrastive(
            args.model,
            out,
            loop,
            source=source,
            pairs_file=Path(args.pairs) if args.pairs else None,
            evaluation=evaluation,
            group_batches=args.group_batches,
            freeze_temperature=args.freeze_temperature,
            fresh=args.fresh,
        )
    else:
        if source is None:
            raise UsageError(
                "finetune generative needs the training data: --bench NAME [--split S] [--data D]"
            )
        lora = LoraSettings(
            r=args.lora_r,
            alpha=args.lora_alpha,
            dropout=args.lora_dropout,
            target_modules=args.target_modules,
            qlora=args.qlora,
        )
        result = finetune_generative(
            args.model,
            out,
            loop,
            source,
            target=args.target,
            lora=lora,
            protocol=args.protocol,
            evaluation=evaluation,
            fresh=args.fresh,
        )
    _print_result(result.record)
    console.print(f"model: {result.spec}   record: {out / 'finetune.json'}   report: {out / 'report.md'}")
    return 0


def _evaluation(args: Args) -> EvalSpec | None:
    """The held-out evaluation of ``--eval-split`` (``None`` without it)."""
    from scopebench.experiments.finetune import DataSource, EvalSpec

    if not args.eval_split:
        return None
    eval_source = DataSource(
        args.eval_bench or args.bench or "", args.eval_split, args.eval_data or args.data or ""
    )
    if not eval_source.benchmark:
        raise UsageError("--eval-split needs a benchmark: --eval-bench NAME (or --bench)")
    evaluation = EvalSpec(
        eval_source,
        args.protocol,
        getattr(args, "mode", None),
        args.eval_limit,
        None,
        _model_args(args.model_arg),
    )
    return evaluation


def _print_result(record: dict[str, Any]) -> None:
    """The training summary line and the held-out accuracy table (before/after) of a fine-tune."""
    training = record["training"]
    console.print(
        f"trained {training['steps']} steps on {record['data']['n_examples']} examples "
        f"(loss {training['first_loss']:.4f} → {training['last_loss']:.4f}"
        + (f", resumed from step {training['resumed_from']}" if training["resumed_from"] else "")
        + ")"
    )
    evals = record.get("evaluation") or {}
    if evals:
        table = Table(title="held-out accuracy, 95% Wilson interval")
        table.add_column("")
        for name in evals:
            table.add_column(name)
        table.add_row("all", *(_cell(e) for e in evals.values()))
        for task in sorted({t for e in evals.values() for t in e["by_task"]}):
            table.add_row(
                task, *(_cell(e["by_task"][task]) if task in e["by_task"] else "–" for e in evals.values())
            )
        table.add_row("parse rate", *(f"{100 * e['parse_rate']:.1f}%" for e in evals.values()))
        console.print(table)


def _common(*, lr: float, steps: int, batch: int) -> Callable[[Callable[..., int]], Callable[..., int]]:
    """The options both recipes share, declared once (their defaults differ per recipe)."""
    options = [
        click.option("--model", required=True, help="base model (a folder, hub id, or clip:/hf: spec)"),
        click.option("--out", required=True, help="output folder (re-running the command resumes it)"),
        click.option(
            "--bench", help="training benchmark (`local` with --data for a `scopebench build` output)"
        ),
        split_option("training split (e.g. train)"),
        click.option("--data", help="data location of --bench"),
        click.option("--eval-split", help="held-out split evaluated before and after (through the engine)"),
        click.option("--eval-bench", help="benchmark of --eval-split (default: --bench)"),
        click.option("--eval-data", help="data location of --eval-bench (default: --data)"),
        click.option("--eval-limit", type=int, help="evaluate only the first N held-out items"),
        click.option("--eval-every", type=int, default=0, help="also evaluate every N steps (default 0: no)"),
        model_arg_option("K=V", "backend option at evaluation"),
        click.option("--steps", type=int, default=steps, help=f"optimizer steps (default {steps})"),
        batch_size_option(f"examples per step (default {batch})", default=batch),
        click.option("--lr", type=float, default=lr, help=f"AdamW learning rate (default {lr:g})"),
        click.option("--weight-decay", type=float, default=0.0, help="AdamW weight decay (default 0)"),
        click.option("--warmup-steps", type=int, default=0, help="linear warm-up steps (default 0)"),
        click.option(
            "--max-grad-norm", type=float, default=1.0, help="gradient clipping (0: none; default 1)"
        ),
        seed_option("seed of the order, initialisation, evaluation (default 0)"),
        click.option(
            "--checkpoint-every", type=int, default=50, help="checkpoint every N steps (default 50)"
        ),
        click.option("--keep-checkpoints", type=int, default=2, help="checkpoints kept (default 2)"),
        device_option("auto (accelerate picks; GPUs via `accelerate launch`) or cpu"),
        click.option("--fresh", is_flag=True, help="delete --out first instead of resuming it"),
    ]

    def decorate(f: Callable[..., int]) -> Callable[..., int]:
        for option in reversed(options):
            f = option(f)
        return f

    return decorate


@command("generative", short_help="LoRA/QLoRA supervised fine-tuning of an hf: VLM")
@_common(lr=2e-4, steps=200, batch=8)
@click.option(
    "--target",
    default="answer",
    type=click.Choice(["answer", "explanation+answer"]),
    help="what the model learns to write (default answer; PathMMU's w/ A vs w/ A&E)",
)
@click.option("--protocol", default="default", help="prompt protocol, the same at training and evaluation")
@click.option("--mode", default="generate", help="evaluation mode (generate or choice-logprob)")
@click.option("--lora-r", type=int, default=8, help="LoRA rank (default 8)")
@click.option("--lora-alpha", type=int, default=16, help="LoRA alpha (default 16)")
@click.option("--lora-dropout", type=float, default=0.0, help="LoRA dropout (default 0)")
@click.option("--target-modules", default="all-linear", help="all-linear or names: q_proj,v_proj")
@click.option("--qlora", is_flag=True, help="4-bit base (needs bitsandbytes and CUDA)")
@pass_args
def _generative(args: Args) -> int:
    """LoRA/QLoRA supervised fine-tuning of an hf: VLM."""
    args.recipe = "generative"
    return cmd_finetune(args)


@command("contrastive", short_help="contrastive fine-tuning of a clip: (CLIPModel) model")
@_common(lr=1e-5, steps=500, batch=32)
@click.option("--pairs", help='JSON Lines of {"image": PATH, "caption": TEXT} instead of --bench')
@click.option(
    "--group-batches",
    is_flag=True,
    help="each batch from one task (or pairs 'group'): other tasks' captions are never negatives",
)
@click.option("--freeze-temperature", is_flag=True, help="keep the logit scale fixed (default: trained)")
@pass_args
def _contrastive(args: Args) -> int:
    """Contrastive fine-tuning of a clip: (CLIPModel) model."""
    args.recipe, args.protocol = "contrastive", "default"
    return cmd_finetune(args)


def register(group: click.Group) -> None:
    """Add ``finetune generative`` and ``finetune contrastive`` to the ``scopebench`` group."""
    finetune = Group(
        "finetune",
        short_help="fine-tune a model on a benchmark split (LoRA VLMs, contrastive CLIP)",
        help="Fine-tune a model on a benchmark split (LoRA VLMs, contrastive CLIP); docs/finetune.md.",
        subcommand_metavar="RECIPE [ARGS]...",
    )
    finetune.add_command(_generative)
    finetune.add_command(_contrastive)
    group.add_command(finetune)

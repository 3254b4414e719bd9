"""``scopebench finetune generative|contrastive`` (docs/finetune.md)."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from scopebench.errors import UsageError

__all__ = ["add_subcommands", "cmd_finetune"]

console = Console(width=None if sys.stdout.isatty() else 120)


def _cell(row: dict[str, Any]) -> str:
    if math.isnan(row["accuracy"]):
        return "–"
    return f"{100 * row['accuracy']:.1f}% [{100 * row['ci_low']:.1f}, {100 * row['ci_high']:.1f}]"


def _model_args(pairs: list[str]) -> tuple[tuple[str, Any], ...]:
    from scopebench.cli import _parse_model_args

    return tuple(sorted(_parse_model_args(pairs).items()))


def cmd_finetune(args: argparse.Namespace) -> int:
    """Run one fine-tuning recipe and print the before/after table."""
    from scopebench.experiments.finetune import DataSource, EvalSpec, LoopConfig
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
    evaluation = None
    if args.eval_split:
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
    record = result.record
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
    console.print(f"model: {result.spec}   record: {out / 'finetune.json'}   report: {out / 'report.md'}")
    return 0


def _common(p: argparse.ArgumentParser, *, lr: float, steps: int, batch: int) -> None:
    p.add_argument("--model", required=True, help="base model (a folder, hub id, or clip:/hf: spec)")
    p.add_argument("--out", required=True, help="output folder (re-running the command resumes it)")
    p.add_argument("--bench", help="training benchmark (`local` with --data for a `scopebench build` output)")
    p.add_argument("--split", help="training split (e.g. train)")
    p.add_argument("--data", help="data location of --bench")
    p.add_argument("--eval-split", help="held-out split evaluated before and after (through the engine)")
    p.add_argument("--eval-bench", help="benchmark of --eval-split (default: --bench)")
    p.add_argument("--eval-data", help="data location of --eval-bench (default: --data)")
    p.add_argument("--eval-limit", type=int, help="evaluate only the first N held-out items")
    p.add_argument("--eval-every", type=int, default=0, help="also evaluate every N steps (default 0: no)")
    p.add_argument(
        "--model-arg", action="append", default=[], metavar="K=V", help="backend option at evaluation"
    )
    p.add_argument("--steps", type=int, default=steps, help=f"optimizer steps (default {steps})")
    p.add_argument("--batch-size", type=int, default=batch, help=f"examples per step (default {batch})")
    p.add_argument("--lr", type=float, default=lr, help=f"AdamW learning rate (default {lr:g})")
    p.add_argument("--weight-decay", type=float, default=0.0, help="AdamW weight decay (default 0)")
    p.add_argument("--warmup-steps", type=int, default=0, help="linear warm-up steps (default 0)")
    p.add_argument("--max-grad-norm", type=float, default=1.0, help="gradient clipping (0: none; default 1)")
    p.add_argument(
        "--seed", type=int, default=0, help="seed of the order, initialisation, evaluation (default 0)"
    )
    p.add_argument("--checkpoint-every", type=int, default=50, help="checkpoint every N steps (default 50)")
    p.add_argument("--keep-checkpoints", type=int, default=2, help="checkpoints kept (default 2)")
    p.add_argument(
        "--device", default="auto", help="auto (accelerate picks; GPUs via `accelerate launch`) or cpu"
    )
    p.add_argument("--fresh", action="store_true", help="delete --out first instead of resuming it")
    p.set_defaults(func=cmd_finetune)


def add_subcommands(sub: Any) -> None:
    """Add ``finetune generative`` and ``finetune contrastive``."""
    p = sub.add_parser(
        "finetune", help="fine-tune a model on a benchmark split (LoRA VLMs, contrastive CLIP)"
    )
    recipes = p.add_subparsers(dest="recipe", required=True, metavar="RECIPE")
    g = recipes.add_parser("generative", help="LoRA/QLoRA supervised fine-tuning of an hf: VLM")
    _common(g, lr=2e-4, steps=200, batch=8)
    g.add_argument(
        "--target",
        default="answer",
        choices=("answer", "explanation+answer"),
        help="what the model learns to write (default answer; PathMMU's w/ A vs w/ A&E)",
    )
    g.add_argument(
        "--protocol", default="default", help="prompt protocol, the same at training and evaluation"
    )
    g.add_argument("--mode", default="generate", help="evaluation mode (generate or choice-logprob)")
    g.add_argument("--lora-r", type=int, default=8, help="LoRA rank (default 8)")
    g.add_argument("--lora-alpha", type=int, default=16, help="LoRA alpha (default 16)")
    g.add_argument("--lora-dropout", type=float, default=0.0, help="LoRA dropout (default 0)")
    g.add_argument("--target-modules", default="all-linear", help="all-linear or names: q_proj,v_proj")
    g.add_argument("--qlora", action="store_true", help="4-bit base (needs bitsandbytes and CUDA)")
    c = recipes.add_parser("contrastive", help="contrastive fine-tuning of a clip: (CLIPModel) model")
    _common(c, lr=1e-5, steps=500, batch=32)
    c.add_argument("--pairs", help='JSON Lines of {"image": PATH, "caption": TEXT} instead of --bench')
    c.add_argument(
        "--group-batches",
        action="store_true",
        help="each batch from one task (or pairs 'group'): other tasks' captions are never negatives",
    )
    c.add_argument(
        "--freeze-temperature", action="store_true", help="keep the logit scale fixed (default: trained)"
    )
    c.set_defaults(protocol="default")

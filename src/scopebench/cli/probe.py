"""``scopebench probe NAME``: the seed papers' robustness and shortcut analyses.

The analyses themselves live in :mod:`scopebench.experiments.probes` and know nothing of the
command line; this module declares their subcommands (:func:`add_subcommands`), builds each
probe's run configuration from the options (:func:`config_from_args`, shared with ``run``) and
prints the tables the probes return.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.table import Table

from scopebench.cli.output import out_console, print_wide
from scopebench.engine import RunConfig
from scopebench.errors import ScopebenchError
from scopebench.experiments.probes import image_probes, matching, shortcut, text_probes
from scopebench.experiments.probes.base import ProbeRun, fmt_pct
from scopebench.report.tables import format_interval
from scopebench.transforms.image import CORRUPTIONS

__all__ = [
    "add_common_probe_args",
    "add_subcommands",
    "config_from_args",
    "console",
    "models_from_args",
    "print_table",
    "probe_from_args",
]

# Piped output gets a fixed wide layout (as in scopebench.cli) so table cells do not wrap.
console = out_console(140)


def add_common_probe_args(
    parser: argparse.ArgumentParser,
    *,
    model: bool = True,
    models_help: str | None = None,
    bootstrap: bool = True,
) -> None:
    """Add the options every probe shares (benchmark, data, model, output, run settings).

    Args:
        parser: The probe's subparser.
        model: Add a required ``--model`` (probes that take several models add their own).
        models_help: For probes that run several models: instead of one required ``--model``, add
            ``--models`` (comma-separated, with this help) and a repeatable ``--model`` that adds
            to them; read both with :func:`models_from_args`.
        bootstrap: Add ``--resamples`` (probes that report bootstrap CIs).
    """
    parser.add_argument("--bench", required=True, help="benchmark name (see `scopebench benchmarks`)")
    parser.add_argument("--data", help="data location (not needed for `demo`)")
    if models_help is not None:
        parser.add_argument("--models", default="", help=models_help)
        parser.add_argument(
            "--model", action="append", default=[], help="a model spec (repeatable; adds to --models)"
        )
    elif model:
        parser.add_argument("--model", required=True, help="model spec: random, frequent, clip:DIR, hf:…")
    parser.add_argument("--out", required=True, help="probe folder: one run directory per condition + report")
    parser.add_argument("--split", help="split to evaluate (default: the benchmark's default)")
    parser.add_argument("--limit", type=int, help="evaluate only the first N items")
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of every random choice and bootstrap (default 0)"
    )
    parser.add_argument("--batch-size", type=int, help="items per model call")
    parser.add_argument("--protocol", default="default", help="prompt protocol: default or owner")
    parser.add_argument("--mode", help="backend mode, e.g. generate or choice-logprob")
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:1 …")
    parser.add_argument("--base-url", help="server URL for openai: models")
    parser.add_argument(
        "--model-arg", action="append", default=[], metavar="KEY=VALUE", help="backend option"
    )
    parser.add_argument("--exclude", help="file of item ids (one per line) to leave out")
    parser.add_argument("--fresh", action="store_true", help="discard stored results of other configurations")
    parser.add_argument(
        "--retry-errors", action="store_true", help="redo items whose stored result is an error"
    )
    parser.add_argument(
        "--max-fail-fraction", type=float, default=0.5, help="stop a run when more items fail (default 0.5)"
    )
    if bootstrap:
        parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples (default 1000)")
    parser.add_argument("--executor", choices=["local", "ray"], default="local", help="where model calls run")
    parser.add_argument("--ray-address", help="Ray cluster address for --executor ray")
    parser.add_argument("--workers", type=int, help="Ray actors (default: one per GPU, else 2)")


def models_from_args(args: argparse.Namespace, default: Sequence[str] = ()) -> list[str]:
    """The model specs of ``--models`` (comma-separated) then each ``--model``; ``default`` if none.

    Args:
        args: Options added by :func:`add_common_probe_args` with ``models_help``.
        default: Specs used when neither option names a model.
    """
    models = [m.strip() for m in str(args.models or "").split(",") if m.strip()] + list(args.model)
    return models or list(default)


def config_from_args(args: argparse.Namespace, *, model: str | None = None) -> RunConfig:
    """The base :class:`~scopebench.engine.RunConfig` of a probe from its parsed options.

    Args:
        args: Options added by :func:`add_common_probe_args`.
        model: Model spec overriding ``args.model`` (probes running several models).
    """
    # One builder for `run` and the probes, so a new run option reaches both.
    from scopebench.cli import _run_config

    config: RunConfig = _run_config(args, **({} if model is None else {"model": model}))
    return config


def probe_from_args(args: argparse.Namespace, *, model: str | None = None) -> ProbeRun:
    """A :class:`~scopebench.experiments.probes.base.ProbeRun` from the common options."""
    return ProbeRun(
        config=config_from_args(args, model=model),
        out=Path(args.out),
        fresh=args.fresh,
        retry_errors=args.retry_errors,
        resamples=args.resamples,
    )


def print_table(title: str, head: Sequence[str], body: Sequence[Sequence[Any]]) -> None:
    """Print a probe's table on the console."""
    table = Table(title=title)
    for h in head:
        table.add_column(str(h))
    for row in body:
        table.add_row(*(str(c) for c in row))
    print_wide(console, table)  # names never cut with "…"


def add_subcommands(sub: Any) -> None:
    """Register ``probe`` and its subcommands."""
    p = sub.add_parser(
        "probe",
        help="robustness and shortcut analyses: corruptions, noise, no-image, swap, permutation…",
        description="Run one of the seed papers' analyses through the engine and write its report.",
    )
    probe_sub = p.add_subparsers(dest="probe", metavar="PROBE")
    probe_sub.required = True
    _add_image_probes(probe_sub)
    _add_text_probes(probe_sub)
    _add_shortcut(probe_sub)
    _add_matching(probe_sub)


# Image probes (corruptions, noise, no-image) ------------------------------------------------------


def _cmd_corruptions(args: argparse.Namespace) -> int:
    names = [c.strip() for c in (args.corruptions or ",".join(CORRUPTIONS)).split(",") if c.strip()]
    with probe_from_args(args) as probe:
        report = image_probes.corruptions_probe(
            probe, names, image_probes.parse_levels(args.levels), args.gallery_item
        )
    _print_report(report, f"corruptions — {args.model} (accuracy % [95% CI])")
    console.print(f"mean accuracy over corruptions and levels: {fmt_pct(report['mean_over_corruptions'])}%")
    return 0


def _print_report(report: dict[str, Any], title: str) -> None:
    print_table(title, report["table"]["head"], report["table"]["body"])
    console.print(f"report and plots written: {', '.join(report['files'])}")


def _cmd_noise(args: argparse.Namespace) -> int:
    with probe_from_args(args) as probe:
        report = image_probes.noise_probe(probe)
    _print_report(report, f"noise images — {args.model} (accuracy % [95% CI])")
    return 0


def _cmd_no_image(args: argparse.Namespace) -> int:
    with probe_from_args(args) as probe:
        report = image_probes.no_image_probe(probe)
    _print_report(report, f"no image — {args.model} (accuracy % [95% CI])")
    return 0


def _add_image_probes(probe_sub: Any) -> None:
    """Add the ``corruptions``, ``noise`` and ``no-image`` probes."""
    p = probe_sub.add_parser(
        "corruptions", help="accuracy under 8 image corruptions × 5 levels (PathMMU §4.2)"
    )
    add_common_probe_args(p)
    p.add_argument("--corruptions", help="comma-separated subset (default: all eight)")
    p.add_argument(
        "--levels", default="1,2,3,4,5", help="severity levels to run (default 1,2,3,4,5; 0 = clean)"
    )
    p.add_argument("--gallery-item", help="item id shown in the gallery (default: the first with an image)")
    p.set_defaults(func=_cmd_corruptions)

    p = probe_sub.add_parser("noise", help="images replaced by Gaussian noise (PathMMU Table 3)")
    add_common_probe_args(p)
    p.set_defaults(func=_cmd_noise)

    p = probe_sub.add_parser("no-image", help="the same prompts without images (PathMMU Table 1 text-only)")
    add_common_probe_args(p)
    p.set_defaults(func=_cmd_no_image)


# Text probes (swap, permutation) ------------------------------------------------------------------


def _table(report: Mapping[str, Any]) -> dict[str, Any]:
    return {"head": report["table"]["head"], "body": report["table"]["body"]}


def _cmd_swap(args: argparse.Namespace) -> int:
    with probe_from_args(args) as probe:
        report = text_probes.swap_probe(probe, args.scope)
    print_table(f"swapped questions — {args.model} (accuracy % [95% CI])", **_table(report))
    console.print(
        f"{report['n_question_changed']} of {report['n_items']} items got a different question; "
        f"files: {', '.join(report['files'])}"
    )
    return 0


def _cmd_permutation(args: argparse.Namespace) -> int:
    with probe_from_args(args) as probe:
        report = text_probes.permutation_probe(probe, args.rotations)
    print_table(
        f"circular evaluation, K = {report['rotations']} — {args.model} (% [95% CI])", **_table(report)
    )
    print_table(
        "position bias (overall)",
        ["letter", "chosen", "chosen %", "answer", "answer %"],
        [
            [b["letter"], b["chosen"], fmt_pct(b["chosen_share"]), b["answer"], fmt_pct(b["answer_share"])]
            for b in report["position_bias"]["overall"]
        ],
    )
    console.print(f"files: {', '.join(report['files'])}")
    return 0


def _add_text_probes(probe_sub: Any) -> None:
    """Add the ``swap`` and ``permutation`` probes."""
    p = probe_sub.add_parser("swap", help="questions swapped among items, options kept (PathMMU Fig. 5)")
    add_common_probe_args(p)
    p.add_argument(
        "--scope",
        choices=["task", "all"],
        default="task",
        help="swap within benchmark/task (default) or across the whole benchmark",
    )
    p.set_defaults(func=_cmd_swap)

    p = probe_sub.add_parser(
        "permutation", help="circular evaluation: options rotated K times, position bias"
    )
    add_common_probe_args(p)
    p.add_argument("--rotations", type=int, help="K rotations (default: the largest number of options)")
    p.set_defaults(func=_cmd_permutation)


# Text-shortcut filter ------------------------------------------------------------------------------


def cmd_shortcut(args: argparse.Namespace) -> int:
    """Run the text-shortcut filter and print its counts."""
    models = models_from_args(args)
    if not models:
        raise ScopebenchError("give the text-only models with --models SPEC1,SPEC2,… (any backends)")
    rule = shortcut.ShortcutRule(args.min_models, args.min_tries, args.model_correct)
    result = shortcut.run_shortcut(
        config_from_args(args, model="random"),  # the model is replaced per run
        models,
        args.out,
        rule,
        tries=args.tries,
        temperature=args.temperature,
        fresh=args.fresh,
        retry_errors=args.retry_errors,
    )
    c = result["counts"]
    table = Table(title=f"text-shortcut filter — {args.bench}: {c['flagged']} of {c['items']} flagged")
    for h in ("group", "items", "flagged", "kept"):
        table.add_column(h, justify="left" if h == "group" else "right")
    table.add_row("overall", str(c["items"]), str(c["flagged"]), str(c["kept"]))
    for r in c["by_task"]:
        table.add_row(r["group"], str(r["items"]), str(r["flagged"]), str(r["kept"]))
    console.print(table)
    for d in result["rule"]["description"]:
        console.print(f"rule {d}")
    if c["items_with_errors"]:
        console.print(
            f"[yellow]warning:[/yellow] {c['items_with_errors']} item(s) had a failed try "
            f"({c['kept_items_with_errors']} of them kept); see {args.out}/shortcut.md"
        )
    console.print(
        f"kept/flagged lists and report in {args.out}/; evaluate the filtered set with "
        f"`scopebench run … --exclude {args.out}/flagged.txt`"
    )
    return 0


def _first_paragraph(doc: str | None) -> str | None:
    return doc.split("\n\n")[0].replace("``", "") if doc else None


def _add_shortcut(probe_sub: Any) -> None:
    """Register ``shortcut`` on the subparsers of ``scopebench probe``."""
    p = probe_sub.add_parser(
        "shortcut",
        help="flag items text-only models answer correctly (PathMMU 3-of-4, SPUR 5-of-10 filters)",
        description=_first_paragraph(shortcut.__doc__),
    )
    add_common_probe_args(
        p,
        models_help="comma-separated text-only model specs (any backends), e.g. hf:…,openai:…",
        bootstrap=False,
    )
    p.add_argument("--tries", type=int, default=1, help="tries per model (R; try r uses seed + r)")
    p.add_argument("--temperature", type=float, help="sampling temperature for vllm: and openai: models")
    p.add_argument("--min-models", type=int, help="flag when at least K models answer correctly (K-of-N)")
    p.add_argument("--min-tries", type=int, help="flag when a model is correct in at least r of R tries")
    p.add_argument(
        "--model-correct",
        choices=["majority", "any", "all"],
        default="majority",
        help="when a model answers correctly across its tries, for --min-models (default majority)",
    )
    p.set_defaults(func=cmd_shortcut)


# Question–option matching -------------------------------------------------------------------------


def cmd_matching(args: argparse.Namespace) -> int:
    """Run the matching baselines and print the accuracy table."""
    result = matching.run_matching(
        config_from_args(args, model="random"),  # the model is replaced per run
        models_from_args(args, matching.DEFAULT_MODELS),
        args.out,
        items_file=args.items,
        resamples=args.resamples,
        fresh=args.fresh,
        retry_errors=args.retry_errors,
    )
    pct = matching.pct
    table = Table(title=f"question–option matching (text only) — {args.bench}")
    for h in ("model", "group", "n", "accuracy", "95% CI"):
        table.add_column(h, justify="left" if h in ("model", "group") else "right")
    for r in result["rows"]:
        table.add_row(r["model"], r["group"], str(r["n"]), pct(r["accuracy"]), format_interval(r))
    for r in result["chance"]:
        table.add_row(r["model"], r["group"], str(r["n"]), pct(r["accuracy"]), "")
    console.print(table)
    if result["published"]:
        console.print(f"{len(result['published'])} published row(s) beside ours in {args.out}/matching.md")
    console.print(f"report in {args.out}/ (matching.json, .csv, .md, .png, .svg)")
    return 0


def _add_matching(probe_sub: Any) -> None:
    """Register ``matching`` on the subparsers of ``scopebench probe``."""
    p = probe_sub.add_parser(
        "matching",
        help="question–option matching baselines: BERT next-sentence prediction and sentence embeddings",
        description=_first_paragraph(matching.__doc__),
    )
    add_common_probe_args(
        p, models_help="comma-separated matching models (default: " + ",".join(matching.DEFAULT_MODELS) + ")"
    )
    p.add_argument(
        "--items", help="evaluate only the item ids in this file (e.g. the flagged.txt of probe shortcut)"
    )
    p.set_defaults(func=cmd_matching)

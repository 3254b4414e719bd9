"""``scopebench probe NAME``: the seed papers' robustness and shortcut analyses.

The analyses themselves live in :mod:`scopebench.experiments.probes` and know nothing of the
command line; this module declares their subcommands (:func:`add_subcommands`), builds each
probe's run configuration from the options (:func:`config_from_args`, shared with ``run``) and
prints the tables the probes return.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.table import Table

from scopebench.cli.options import (
    MODEL_SPEC,
    Args,
    Group,
    command,
    engine_options,
    model_options,
    pass_args,
    resamples_option,
    run_options,
)
from scopebench.cli.output import out_console, print_wide
from scopebench.errors import ScopebenchError
from scopebench.experiments.probes import DEFAULT_MATCHING_MODELS

if TYPE_CHECKING:
    from scopebench.config import RunConfig
    from scopebench.experiments.probes.base import ProbeRun

# The probes (the engine, numpy, plotting) are imported inside the commands that run them:
# `scopebench --help` builds every command and must not pay for them (tests/cli/test_import_cost.py).

__all__ = [
    "config_from_args",
    "console",
    "models_from_args",
    "print_table",
    "probe_from_args",
    "probe_options",
    "register",
]

# Piped output gets a fixed wide layout (as in scopebench.cli) so table cells do not wrap.
console = out_console(140)


def probe_options(
    *, model: bool = True, models_help: str | None = None, bootstrap: bool = True
) -> Callable[[Callable[..., int]], Callable[..., int]]:
    """The options every probe shares (benchmark, data, model, output, run settings), declared once.

    The run, model and engine settings are :mod:`scopebench.cli.options`' groups (those of ``run``),
    so a probe's RunConfig is built as ``run``'s.

    Args:
        model: Add a required ``--model`` (probes that take several models add their own).
        models_help: For probes that run several models: instead of one required ``--model``, add
            ``--models`` (comma-separated, with this help) and a repeatable ``--model`` that adds
            to them; read both with :func:`models_from_args`.
        bootstrap: Add ``--resamples`` (probes that report bootstrap CIs).
    """
    options = [
        click.option("--bench", required=True, help="benchmark name (see `scopebench benchmarks`)"),
        click.option("--data", help="data location (not needed for `demo`)"),
    ]
    if models_help is not None:
        options += [
            click.option("--models", default="", help=models_help),
            click.option("--model", multiple=True, help="a model spec (repeatable; adds to --models)"),
        ]
    elif model:
        options.append(
            click.option(
                "--model", required=True, type=MODEL_SPEC, help="model spec: random, frequent, clip:DIR, hf:…"
            )
        )
    options += [
        click.option("--out", required=True, help="probe folder: one run directory per condition + report"),
        run_options(
            seed_help="seed of every random choice and bootstrap (default 0)",
            fresh_help="discard stored results of other configurations",
            no_image=False,
        ),
        model_options,
        engine_options,
    ]
    if bootstrap:
        options.append(resamples_option())

    def decorate(f: Callable[..., int]) -> Callable[..., int]:
        for option in reversed(options):
            f = option(f)
        return f

    return decorate


def models_from_args(args: Args, default: Sequence[str] = ()) -> list[str]:
    """The model specs of ``--models`` (comma-separated) then each ``--model``; ``default`` if none.

    Args:
        args: Options added by :func:`probe_options` with ``models_help``.
        default: Specs used when neither option names a model.
    """
    models = [m.strip() for m in str(args.models or "").split(",") if m.strip()] + list(args.model)
    return models or list(default)


def config_from_args(args: Args, *, model: str | None = None) -> RunConfig:
    """The base :class:`~scopebench.engine.RunConfig` of a probe from its parsed options.

    Args:
        args: Options added by :func:`probe_options`.
        model: Model spec overriding ``args.model`` (probes running several models).
    """
    # One builder for `run` and the probes, so a new run option reaches both.
    from scopebench.cli import _run_config

    config: RunConfig = _run_config(args, **({} if model is None else {"model": model}))
    return config


def probe_from_args(args: Args, *, model: str | None = None) -> ProbeRun:
    """A :class:`~scopebench.experiments.probes.base.ProbeRun` from the common options."""
    from scopebench.experiments.probes.base import ProbeRun

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


def register(group: click.Group) -> None:
    """Add ``probe`` and its subcommands to the ``scopebench`` group."""
    probe = Group(
        "probe",
        short_help="robustness and shortcut analyses: corruptions, noise, no-image, swap, permutation…",
        help="Run one of the seed papers' analyses through the engine and write its report.",
        subcommand_metavar="PROBE [ARGS]...",
    )
    for cmd in (_corruptions, _noise, _no_image, _swap, _permutation, _shortcut, _matching):
        probe.add_command(cmd)
    group.add_command(probe)


# Image probes (corruptions, noise, no-image) ------------------------------------------------------


def _cmd_corruptions(args: Args) -> int:
    from scopebench.experiments.probes import image_probes
    from scopebench.experiments.probes.base import fmt_pct
    from scopebench.transforms.image import CORRUPTIONS

    names = [c.strip() for c in (args.corruptions or ",".join(CORRUPTIONS)).split(",") if c.strip()]
    with probe_from_args(args) as probe:
        report = image_probes.corruptions_probe(
            probe, names, image_probes.parse_levels(args.levels), args.gallery_item
        )
    _print_report(report, f"corruptions — {args.model.raw} (accuracy % [95% CI])")
    console.print(f"mean accuracy over corruptions and levels: {fmt_pct(report['mean_over_corruptions'])}%")
    return 0


def _print_report(report: dict[str, Any], title: str) -> None:
    print_table(title, report["table"]["head"], report["table"]["body"])
    console.print(f"report and plots written: {', '.join(report['files'])}")


def _cmd_noise(args: Args) -> int:
    from scopebench.experiments.probes import image_probes

    with probe_from_args(args) as probe:
        report = image_probes.noise_probe(probe)
    _print_report(report, f"noise images — {args.model.raw} (accuracy % [95% CI])")
    return 0


def _cmd_no_image(args: Args) -> int:
    from scopebench.experiments.probes import image_probes

    with probe_from_args(args) as probe:
        report = image_probes.no_image_probe(probe)
    _print_report(report, f"no image — {args.model.raw} (accuracy % [95% CI])")
    return 0


@command("corruptions", short_help="accuracy under 8 image corruptions × 5 levels (PathMMU §4.2)")
@probe_options()
@click.option("--corruptions", help="comma-separated subset (default: all eight)")
@click.option("--levels", default="1,2,3,4,5", help="severity levels to run (default 1,2,3,4,5; 0 = clean)")
@click.option("--gallery-item", help="item id shown in the gallery (default: the first with an image)")
@pass_args
def _corruptions(args: Args) -> int:
    """Accuracy under 8 image corruptions × 5 levels (PathMMU §4.2)."""
    return _cmd_corruptions(args)


@command("noise", short_help="images replaced by Gaussian noise (PathMMU Table 3)")
@probe_options()
@pass_args
def _noise(args: Args) -> int:
    """Images replaced by Gaussian noise (PathMMU Table 3)."""
    return _cmd_noise(args)


@command("no-image", short_help="the same prompts without images (PathMMU Table 1 text-only)")
@probe_options()
@pass_args
def _no_image(args: Args) -> int:
    """The same prompts without images (PathMMU Table 1 text-only)."""
    return _cmd_no_image(args)


# Text probes (swap, permutation) ------------------------------------------------------------------


def _table(report: Mapping[str, Any]) -> dict[str, Any]:
    return {"head": report["table"]["head"], "body": report["table"]["body"]}


def _cmd_swap(args: Args) -> int:
    from scopebench.experiments.probes import text_probes

    with probe_from_args(args) as probe:
        report = text_probes.swap_probe(probe, args.scope)
    print_table(f"swapped questions — {args.model.raw} (accuracy % [95% CI])", **_table(report))
    console.print(
        f"{report['n_question_changed']} of {report['n_items']} items got a different question; "
        f"files: {', '.join(report['files'])}"
    )
    return 0


def _cmd_permutation(args: Args) -> int:
    from scopebench.experiments.probes import text_probes
    from scopebench.experiments.probes.base import fmt_pct

    with probe_from_args(args) as probe:
        report = text_probes.permutation_probe(probe, args.rotations)
    print_table(
        f"circular evaluation, K = {report['rotations']} — {args.model.raw} (% [95% CI])", **_table(report)
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


@command("swap", short_help="questions swapped among items, options kept (PathMMU Fig. 5)")
@probe_options()
@click.option(
    "--scope",
    type=click.Choice(["task", "all"]),
    default="task",
    help="swap within benchmark/task (default) or across the whole benchmark",
)
@pass_args
def _swap(args: Args) -> int:
    """Questions swapped among items, options kept (PathMMU Fig. 5)."""
    return _cmd_swap(args)


@command("permutation", short_help="circular evaluation: options rotated K times, position bias")
@probe_options()
@click.option("--rotations", type=int, help="K rotations (default: the largest number of options)")
@pass_args
def _permutation(args: Args) -> int:
    """Circular evaluation: options rotated K times, position bias."""
    return _cmd_permutation(args)


# Text-shortcut filter ------------------------------------------------------------------------------


def cmd_shortcut(args: Args) -> int:
    """Run the text-shortcut filter and print its counts."""
    from scopebench.experiments.probes import shortcut

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


@command(
    "shortcut",
    short_help="flag items text-only models answer correctly (PathMMU 3-of-4, SPUR 5-of-10 filters)",
    help_module="scopebench.experiments.probes.shortcut",
)
@probe_options(
    models_help="comma-separated text-only model specs (any backends), e.g. hf:…,openai:…", bootstrap=False
)
@click.option("--tries", type=int, default=1, help="tries per model (R; try r uses seed + r)")
@click.option("--temperature", type=float, help="sampling temperature for vllm: and openai: models")
@click.option("--min-models", type=int, help="flag when at least K models answer correctly (K-of-N)")
@click.option("--min-tries", type=int, help="flag when a model is correct in at least r of R tries")
@click.option(
    "--model-correct",
    type=click.Choice(["majority", "any", "all"]),
    default="majority",
    help="when a model answers correctly across its tries, for --min-models (default majority)",
)
@pass_args
def _shortcut(args: Args) -> int:
    return cmd_shortcut(args)


# Question–option matching -------------------------------------------------------------------------


def cmd_matching(args: Args) -> int:
    """Run the matching baselines and print the accuracy table."""
    from scopebench.experiments.probes import matching
    from scopebench.report.tables import format_interval

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


@command(
    "matching",
    short_help="question–option matching baselines: BERT next-sentence prediction and sentence embeddings",
    help_module="scopebench.experiments.probes.matching",
)
@probe_options(
    models_help="comma-separated matching models (default: " + ",".join(DEFAULT_MATCHING_MODELS) + ")"
)
@click.option(
    "--items", help="evaluate only the item ids in this file (e.g. the flagged.txt of probe shortcut)"
)
@pass_args
def _matching(args: Args) -> int:
    return cmd_matching(args)

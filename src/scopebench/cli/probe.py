"""``scopebench probe NAME``: the seed papers' robustness and shortcut analyses.

Each probe module listed in :data:`_PROBE_MODULES` defines ``add_probe_parser(probe_sub)``, which
adds its subcommand(s) to the ``probe`` subparsers with ``set_defaults(func=...)`` (``func(args)``
returns the exit code). A module absent from this installation is skipped. Probe modules share the
options of :func:`add_common_probe_args` and build their run configuration with
:func:`config_from_args`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from scopebench.engine import RunConfig

__all__ = [
    "add_common_probe_args",
    "add_subcommands",
    "config_from_args",
    "console",
    "models_from_args",
    "print_table",
    "probe_from_args",
]

#: Modules that add probes (``add_probe_parser(probe_sub)``), in the order they are listed.
_PROBE_MODULES = (
    "scopebench.probes.image_probes",
    "scopebench.probes.text_probes",
    "scopebench.probes.shortcut",
    "scopebench.probes.matching",
)

# Piped output gets a fixed wide layout (as in scopebench.cli) so table cells do not wrap.
console = Console(width=None if sys.stdout.isatty() else 140)


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


def probe_from_args(args: argparse.Namespace, *, model: str | None = None) -> Any:
    """A :class:`~scopebench.probes.base.ProbeRun` from the common options."""
    from scopebench.probes.base import ProbeRun

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
    console.print(table)


def add_subcommands(sub: Any) -> None:
    """Register ``probe`` and every available probe module's subcommands."""
    p = sub.add_parser(
        "probe",
        help="robustness and shortcut analyses: corruptions, noise, no-image, swap, permutation…",
        description="Run one of the seed papers' analyses through the engine and write its report.",
    )
    probe_sub = p.add_subparsers(dest="probe", metavar="PROBE")
    probe_sub.required = True
    from scopebench.cli import _present_modules

    for module in _present_modules(_PROBE_MODULES):
        module.add_probe_parser(probe_sub)

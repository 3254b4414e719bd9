"""The CLI's shared options, declared once with click, and the typed options objects they build.

Each group of options that several commands share is one decorator here (:func:`model_options`,
:func:`run_options`, :func:`engine_options`, :func:`seed_option`, …). A decorator adds the click
options and, for the run settings, replaces their values by one frozen options object per concern
(:class:`ModelOptions`, :class:`RunOptions`, :class:`EngineOptions`) that the command bodies pass
down; :func:`scopebench.cli._run_config` turns them into the engine's RunConfig in one place.

Model specs are parsed once, here at the boundary, into a
:class:`~scopebench.models.registry.ModelSpec` (:data:`MODEL_SPEC`): a typo fails before anything
runs, with the registry's did-you-mean message.
"""

from __future__ import annotations

import functools
import json
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import click

from scopebench.errors import DataFormatError, DataNotFoundError
from scopebench.models.registry import ModelSpec, parse_spec

__all__ = [
    "CONTEXT_SETTINGS",
    "MODEL_SPEC",
    "Args",
    "Command",
    "EngineOptions",
    "Group",
    "ModelOptions",
    "ModelSpecType",
    "RunOptions",
    "argument",
    "command",
    "engine_options",
    "group",
    "model_options",
    "pass_args",
    "run_options",
]

F = TypeVar("F", bound=Callable[..., Any])
Decorator = Callable[[F], F]

#: The command bodies' arguments: the parsed options by name (``args.out``, ``args.run.seed``…),
#: plus the global ``quiet`` and ``verbose``.
Args = types.SimpleNamespace

#: -h works as with argparse; help is wrapped at the terminal width, at most 120 columns.
CONTEXT_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"], "max_content_width": 120}


# Parameter types -------------------------------------------------------------------------------


class ModelSpecType(click.ParamType):
    """A ``--model`` value parsed into a :class:`~scopebench.models.registry.ModelSpec`.

    An unknown scheme raises our :class:`~scopebench.errors.ModelSpecError` (with the did-you-mean
    suggestion), which the CLI prints as every other error of ours.
    """

    name = "spec"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> ModelSpec:
        """Parse ``value`` once (a ModelSpec given as default is kept)."""
        return parse_spec(value)


#: The click type of every option that names one model to evaluate.
MODEL_SPEC = ModelSpecType()


def parse_key_values(pairs: Sequence[str], flag: str = "--model-arg") -> dict[str, Any]:
    """``KEY=VALUE`` pairs as a dict; each value JSON-decoded when it is JSON (``3``, ``true``).

    Raises:
        DataFormatError: For a pair without ``=`` or without a key.
    """
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise DataFormatError(f"{flag} expects key=value, got {pair!r}")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def read_exclude(path: str | None) -> frozenset[str]:
    """The item ids of an ``--exclude`` file (one per line; blank lines ignored)."""
    if not path:
        return frozenset()
    p = Path(path)
    if not p.is_file():
        raise DataNotFoundError(f"--exclude file not found: {p}")
    return frozenset(line.strip() for line in p.read_text(encoding="utf-8").splitlines() if line.strip())


# Commands with argparse's conveniences -----------------------------------------------------------


class Argument(click.Argument):
    """A positional argument with a help text, listed under "Arguments:" in ``--help``."""

    def __init__(self, param_decls: Sequence[str], help: str | None = None, **attrs: Any) -> None:
        super().__init__(param_decls, **attrs)
        self.help = help

    def get_help_record(self, ctx: click.Context) -> tuple[str, str]:
        """``(METAVAR, help)`` for the Arguments section."""
        return (self.make_metavar(ctx), self.help or "")


def argument(*decls: str, help: str | None = None, **attrs: Any) -> Decorator[Any]:
    """``click.argument`` with a help text (argparse showed one for each positional)."""
    return click.argument(*decls, cls=Argument, help=help, **attrs)


class Command(click.Command):
    """A command with an "Arguments:" help section and argparse's ``nargs="+"`` options.

    Options named in ``greedy`` take every value up to the next option (``--models a b c``), as
    argparse's ``nargs="+"`` did; they are declared ``multiple=True``.
    """

    def __init__(self, *args: Any, greedy: Sequence[str] = (), **kwargs: Any) -> None:
        kwargs.setdefault("context_settings", CONTEXT_SETTINGS)
        super().__init__(*args, **kwargs)
        self.greedy = tuple(greedy)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """Expand ``--opt a b`` of a greedy option into ``--opt a --opt b``, then parse."""
        return super().parse_args(ctx, expand_greedy(args, self.greedy))

    def format_arguments(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The positional arguments with their help, in one "Arguments" section (click ≥ 8.2)."""
        arguments = [
            r for p in self.get_params(ctx) if isinstance(p, Argument) if (r := p.get_help_record(ctx))
        ]
        if arguments:
            with formatter.section("Arguments"):
                formatter.write_dl(arguments)

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The options; before click 8.2 (no ``format_arguments`` step) the arguments first."""
        if not hasattr(click.Command, "format_arguments"):
            self.format_arguments(ctx, formatter)
        # Only the options: an Argument's help record (ours has one) is the section above.
        options = [
            r
            for p in self.get_params(ctx)
            if not isinstance(p, click.Argument)
            if (r := p.get_help_record(ctx))
        ]
        if options:
            with formatter.section("Options"):
                formatter.write_dl(options)


def expand_greedy(args: Sequence[str], greedy: Sequence[str]) -> list[str]:
    """``--opt a b --x`` → ``--opt a --opt b --x`` for each option in ``greedy``.

    Values end at the next word starting with ``-`` (an option) or at ``--``.
    """
    out: list[str] = []
    current: str | None = None
    rest = list(args)
    while rest:
        word = rest.pop(0)
        if word == "--":
            out += [word, *rest]
            break
        if word in greedy:
            current = word
            out.append(word)
            if rest and not rest[0].startswith("-"):
                out.append(rest.pop(0))
            continue
        if current is not None and not (word.startswith("-") and len(word) > 1):
            out += [current, word]
            continue
        current = None
        out.append(word)
    return out


class Group(click.Group):
    """A command group whose commands (and sub-groups) are :class:`Command`/:class:`Group`."""

    command_class = Command

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("context_settings", CONTEXT_SETTINGS)
        super().__init__(*args, **kwargs)


Group.group_class = Group


def command(name: str, **attrs: Any) -> Callable[[Callable[..., Any]], Command]:
    """``click.command`` making a :class:`Command` (help section of arguments, greedy options)."""
    return click.command(name, cls=Command, **attrs)


def group(name: str, **attrs: Any) -> Callable[[Callable[..., Any]], Group]:
    """``click.group`` making a :class:`Group`."""
    return click.group(name, cls=Group, **attrs)


def pass_args(func: Callable[[Args], int]) -> Callable[..., int]:
    """A click callback calling ``func(args)`` with the options as one namespace.

    ``args`` also holds the global ``quiet`` and ``verbose`` flags of the ``scopebench`` group.
    """

    @functools.wraps(func)
    def callback(**kwargs: Any) -> int:
        root = click.get_current_context().find_root().params
        args = Args(quiet=bool(root.get("quiet")), verbose=int(root.get("verbose") or 0), **kwargs)
        return func(args)

    return callback


def _collect(name: str, fields: Sequence[str], build: Callable[[dict[str, Any]], Any]) -> Decorator[Any]:
    """Replace the keyword arguments ``fields`` of a callback by ``name=build(those values)``."""

    def decorate(f: F) -> F:
        @functools.wraps(f)
        def wrapper(**kwargs: Any) -> Any:
            picked = {k: kwargs.pop(k) for k in fields if k in kwargs}
            kwargs[name] = build(picked)
            return f(**kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate


def _stack(f: F, decorators: Sequence[Decorator[Any]]) -> F:
    """Apply ``decorators`` so that they appear in ``--help`` in the order given."""
    for d in reversed(decorators):
        f = d(f)
    return f


# Typed options objects ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelOptions:
    """How the model runs: backend mode, device, server, options and batch size.

    Attributes:
        mode: Backend mode (``generate``, ``choice-logprob``…); None: the backend's default.
        device: ``auto``, ``cpu``, ``cuda``, ``cuda:1``…
        base_url: Server URL for ``openai:`` models.
        model_args: ``--model-arg KEY=VALUE`` options, values JSON-decoded.
        batch_size: Items per model call; None: the backend's default.
    """

    mode: str | None = None
    device: str = "auto"
    base_url: str | None = None
    model_args: dict[str, Any] = field(default_factory=dict)
    batch_size: int | None = None


@dataclass(frozen=True)
class RunOptions:
    """What a run evaluates and how it resumes.

    Attributes:
        split: The split; None: the benchmark's default.
        limit: Only the first N items.
        seed: Seed of every random choice (recorded in run.json).
        protocol: Prompt protocol (``default`` or ``owner``).
        no_image: Prompts without images.
        exclude_ids: Item ids left out (``--exclude FILE``).
        fresh: Discard stored results and start again.
        retry_errors: Redo items whose stored result is an error.
        max_fail_fraction: Stop when more items fail.
    """

    split: str | None = None
    limit: int | None = None
    seed: int = 0
    protocol: str = "default"
    no_image: bool = False
    exclude_ids: frozenset[str] = frozenset()
    fresh: bool = False
    retry_errors: bool = False
    max_fail_fraction: float = 0.5


@dataclass(frozen=True)
class EngineOptions:
    """Where model calls run: locally, or on Ray actors.

    Attributes:
        executor: ``local`` or ``ray``.
        ray_address: Ray cluster address; None: a local Ray.
        workers: Ray actors; None: one per GPU, else 2.
    """

    executor: str = "local"
    ray_address: str | None = None
    workers: int | None = None


# Shared option groups ----------------------------------------------------------------------------


def split_option(help: str = "split to evaluate (default: the benchmark's default)") -> Decorator[Any]:
    """``--split NAME``."""
    return click.option("--split", help=help)


def limit_option(help: str = "evaluate only the first N items") -> Decorator[Any]:
    """``--limit N``."""
    return click.option("--limit", type=int, help=help)


def seed_option(
    help: str = "seed for every random choice (default 0)", default: int | None = 0
) -> Decorator[Any]:
    """``--seed N`` (every random choice takes a seed, recorded with the results)."""
    return click.option("--seed", type=int, default=default, help=help)


def batch_size_option(help: str = "items per model call", default: int | None = None) -> Decorator[Any]:
    """``--batch-size N``."""
    return click.option("--batch-size", type=int, default=default, help=help)


def device_option(help: str = "auto, cpu, cuda, cuda:1 …") -> Decorator[Any]:
    """``--device`` with its ``auto`` default (once missing in ``strategies``: a crash on hf:)."""
    return click.option("--device", default="auto", help=help)


def model_arg_option(metavar: str = "KEY=VALUE", help: str = "backend option") -> Decorator[Any]:
    """Repeatable ``--model-arg KEY=VALUE``."""
    return click.option("--model-arg", multiple=True, metavar=metavar, help=help)


def base_url_option() -> Decorator[Any]:
    """``--base-url URL`` of an OpenAI-compatible server."""
    return click.option("--base-url", help="server URL for openai: models")


def resume_options(fresh_help: str) -> list[Decorator[Any]]:
    """``--fresh`` and ``--retry-errors``."""
    return [
        click.option("--fresh", is_flag=True, help=fresh_help),
        click.option("--retry-errors", is_flag=True, help="redo items whose stored result is an error"),
    ]


def resamples_option() -> Decorator[Any]:
    """``--resamples N`` of the bootstrap intervals."""
    return click.option("--resamples", type=int, default=1000, help="bootstrap resamples (default 1000)")


def model_options(f: F) -> F:
    """``--mode``, ``--device``, ``--base-url``, ``--model-arg``, ``--batch-size`` → ``model_opts``."""

    def build(v: dict[str, Any]) -> ModelOptions:
        return ModelOptions(v["mode"], v["device"], v["base_url"], parse_key_values(v["model_arg"]),
                            v["batch_size"])  # fmt: skip

    f = _collect("model_opts", ("mode", "device", "base_url", "model_arg", "batch_size"), build)(f)
    return _stack(
        f,
        [
            batch_size_option(),
            click.option("--mode", help="backend mode, e.g. generate or choice-logprob"),
            device_option(),
            base_url_option(),
            model_arg_option(),
        ],
    )


def run_options(
    *,
    seed_help: str = "seed for every random choice (default 0)",
    fresh_help: str = "discard results stored in --out and start again",
    no_image: bool = True,
) -> Decorator[Any]:
    """The run settings shared by ``run``, ``strategies`` and the probes → ``run`` (RunOptions).

    Declared once: ``strategies`` once had its own ``--device`` without the ``auto`` default.
    """
    names = ("split", "limit", "seed", "protocol", "no_image", "exclude", "fresh", "retry_errors",
             "max_fail_fraction")  # fmt: skip

    def build(v: dict[str, Any]) -> RunOptions:
        return RunOptions(
            split=v["split"], limit=v["limit"], seed=v["seed"], protocol=v["protocol"],
            no_image=bool(v.get("no_image", False)), exclude_ids=read_exclude(v["exclude"]),
            fresh=v["fresh"], retry_errors=v["retry_errors"], max_fail_fraction=v["max_fail_fraction"],
        )  # fmt: skip

    def decorate(f: F) -> F:
        f = _collect("run", names, build)(f)
        image = (
            [click.option("--no-image", is_flag=True, help="send prompts without images")] if no_image else []
        )
        return _stack(
            f,
            [
                split_option(),
                limit_option(),
                seed_option(seed_help),
                click.option("--protocol", default="default", help="prompt protocol: default or owner"),
                *image,
                click.option("--exclude", help="file of item ids (one per line) to leave out"),
                *resume_options(fresh_help),
                click.option(
                    "--max-fail-fraction",
                    type=float,
                    default=0.5,
                    help="stop when more items fail (default 0.5)",
                ),
            ],
        )

    return decorate


def engine_options(f: F) -> F:
    """``--executor``, ``--ray-address``, ``--workers`` → ``engine`` (EngineOptions)."""

    def build(v: dict[str, Any]) -> EngineOptions:
        return EngineOptions(v["executor"], v["ray_address"], v["workers"])

    f = _collect("engine", ("executor", "ray_address", "workers"), build)(f)
    return _stack(
        f,
        [
            click.option(
                "--executor",
                type=click.Choice(["local", "ray"]),
                default="local",
                help="where model calls run",
            ),
            click.option("--ray-address", help="Ray cluster address for --executor ray (default: local Ray)"),
            click.option("--workers", type=int, help="Ray actors (default: one per GPU, else 2)"),
        ],
    )


def json_flag(help: str) -> Decorator[Any]:
    """``--json``: print the listing as JSON for scripts (output options)."""
    return click.option("--json", is_flag=True, help=help)

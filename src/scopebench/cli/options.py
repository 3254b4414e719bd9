"""The CLI's shared options, declared once with click, and the typed options objects they build.

Each group of options that several commands share is one decorator here (:func:`model_options`,
:func:`run_options`, :func:`engine_options`, :func:`seed_option`, …). A decorator adds the click
options and, for the run settings, moves their values into the command's ``args.settings`` under
the names :meth:`RunConfig.from_options <scopebench.config.RunConfig.from_options>` takes;
:func:`scopebench.cli._run_config` turns them into the run's frozen
:class:`~scopebench.config.RunConfig` in one place.

Model specs are parsed once, here at the boundary, into a
:class:`~scopebench.models.registry.ModelSpec` (:data:`MODEL_SPEC`): a typo fails before anything
runs, with the registry's did-you-mean message.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import json
import types
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from scopebench.errors import DataFormatError, DataNotFoundError

if TYPE_CHECKING:
    from scopebench.models.registry import ModelSpec

__all__ = [
    "CONTEXT_SETTINGS",
    "MODEL_SPEC",
    "Args",
    "Command",
    "Group",
    "LazyGroup",
    "ModelSpecType",
    "argument",
    "command",
    "engine_options",
    "executor_options",
    "group",
    "model_options",
    "module_summary",
    "pass_args",
    "present_module",
    "run_options",
    "tracking_options",
    "with_tracking",
]

F = TypeVar("F", bound=Callable[..., Any])
Decorator = Callable[[F], F]

#: The command bodies' arguments: the parsed options by name (``args.out``, ``args.settings``…),
#: plus the global ``quiet`` and ``verbose``.
Args = types.SimpleNamespace

#: -h works as with argparse; help is wrapped at the terminal width, at most 120 columns.
CONTEXT_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"], "max_content_width": 120}


# Parameter types -------------------------------------------------------------------------------


class ModelSpecType(click.ParamType["ModelSpec"]):
    """A ``--model`` value parsed into a :class:`~scopebench.models.registry.ModelSpec`.

    An unknown scheme raises our :class:`~scopebench.errors.ModelSpecError` (with the did-you-mean
    suggestion), which the CLI prints as every other error of ours.
    """

    name = "spec"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> ModelSpec:
        """Parse ``value`` once (a ModelSpec given as default is kept)."""
        # Imported here: the model registry pulls in the prompt and parsing layers, which --help
        # must not pay for.
        from scopebench.models.registry import parse_spec

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

    def __init__(
        self, *args: Any, greedy: Sequence[str] = (), help_module: str | None = None, **kwargs: Any
    ) -> None:
        kwargs.setdefault("context_settings", CONTEXT_SETTINGS)
        super().__init__(*args, **kwargs)
        self.greedy = tuple(greedy)
        self.help_module = help_module

    def format_help_text(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The help text; with ``help_module``, its docstring's first paragraph, read when shown."""
        if self.help is None and self.help_module is not None:
            self.help = module_summary(self.help_module)
        super().format_help_text(ctx, formatter)

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


def present_module(name: str) -> types.ModuleType | None:
    """Module ``name`` imported, or ``None`` when this installation lacks it.

    Only the module's own absence is ``None``: a module whose import fails on a missing dependency
    raises that ModuleNotFoundError, which must reach the user (it names what to install).
    """
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name != name:
            raise
        return None


class LazyGroup(Group):
    """A group whose commands are imported only when asked for (click's lazy-loading pattern).

    ``lazy`` maps each command name to the module that defines it: the one place that says which
    command lives where. The first time one of a module's commands is asked for, the module is
    imported and its ``register(group)`` adds its commands, so running one command imports only
    its module (and what that imports). Listing every command (``--help`` of the group, the
    did-you-mean of a mistyped name) imports every module. A module absent from
    this installation is not offered.
    """

    def __init__(self, *args: Any, lazy: Mapping[str, str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy)
        self._registered: set[str] = set()

    def _load(self, module_name: str) -> None:
        """Import ``module_name`` (once) and let it add its commands to this group."""
        if module_name in self._registered:
            return
        module = present_module(module_name)
        if module is not None:
            module.register(self)
        self._registered.add(module_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Every command name, sorted; a command of an absent module is left out."""
        present = {
            name
            for name, module_name in self.lazy.items()
            if name in self.commands or importlib.util.find_spec(module_name) is not None
        }
        return sorted(present | set(self.commands))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The command ``cmd_name``, importing its module the first time (``None``: no such command)."""
        if cmd_name not in self.commands and cmd_name in self.lazy:
            self._load(self.lazy[cmd_name])
        return self.commands.get(cmd_name)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """As click's; an unknown name first loads every module, so "Did you mean" sees every command."""
        if args and self.get_command(ctx, args[0]) is None:
            for module_name in dict.fromkeys(self.lazy.values()):
                self._load(module_name)
        return super().resolve_command(ctx, args)


def module_summary(name: str) -> str | None:
    """The first paragraph of module ``name``'s docstring, read from its source, not imported.

    A command whose help is its module's docstring (``help_module=``) would otherwise import that
    module, and everything it imports, only to print ``--help``.
    """
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        return None
    doc = ast.get_docstring(ast.parse(Path(spec.origin).read_text(encoding="utf-8")))
    return doc.split("\n\n")[0].replace("``", "") if doc else None


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


def _collect(fields: Sequence[str], build: Callable[[dict[str, Any]], dict[str, Any]]) -> Decorator[Any]:
    """Move the keyword arguments ``fields`` of a callback into its ``settings`` dict.

    ``build`` turns the values as click parsed them into run settings named as
    :meth:`RunConfig.from_options <scopebench.config.RunConfig.from_options>` takes them; the
    groups of one command add to one dict, which :func:`scopebench.cli._run_config` turns into
    the run's configuration once.
    """

    def decorate(f: F) -> F:
        @functools.wraps(f)
        def wrapper(**kwargs: Any) -> Any:
            picked = {k: kwargs.pop(k) for k in fields if k in kwargs}
            kwargs["settings"] = {**kwargs.get("settings", {}), **build(picked)}
            return f(**kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate


def _stack(f: F, decorators: Sequence[Decorator[Any]]) -> F:
    """Apply ``decorators`` so that they appear in ``--help`` in the order given."""
    for d in reversed(decorators):
        f = d(f)
    return f


# Shared option groups ----------------------------------------------------------------------------


def split_option(help: str = "split to evaluate (default: the benchmark's default)") -> Decorator[Any]:
    """``--split NAME``."""
    return click.option("--split", help=help)


class LimitType(click.ParamType[int | float]):
    """A ``--limit`` value: a number of items (≥ 1), or a fraction between 0 and 1 (a seeded sample)."""

    name = "N|FRACTION"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int | float:
        """``10`` → 10 items; ``0.1`` → a tenth of the items; anything else a usage error."""
        if isinstance(value, int | float) and not isinstance(value, bool):
            return value
        try:
            number = float(value)
        except ValueError:
            number = 0.0
        if number.is_integer() and number >= 1 and "." not in str(value):
            return int(number)
        if 0 < number < 1:
            return number
        self.fail(f"{value!r} is neither a number of items (≥ 1) nor a fraction between 0 and 1", param, ctx)


def limit_option(
    help: str = "evaluate only the first N items, or a seeded sample of a fraction (0.1)",
) -> Decorator[Any]:
    """``--limit N`` or ``--limit 0.1``."""
    return click.option("--limit", type=LimitType(), help=help)


def seed_option(
    help: str = "seed for every random choice (default 0)", default: int | None = 0
) -> Decorator[Any]:
    """``--seed N`` (every random choice takes a seed, recorded with the results)."""
    return click.option("--seed", type=int, default=default, help=help)


class BatchSizeType(click.ParamType[int | str]):
    """A ``--batch-size`` value: a whole number of at least 1, or ``auto``."""

    name = "N|auto"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int | str:
        """``auto`` as is; anything else a whole number ≥ 1 (else click's usage error)."""
        if isinstance(value, int) or value == "auto":
            return value  # type: ignore[no-any-return]
        try:
            size = int(value)
        except ValueError:
            size = 0
        if size < 1:
            self.fail(f"{value!r} is neither a whole number of at least 1 nor auto", param, ctx)
        return size


def batch_size_option(
    help: str = "items per model call", default: int | None = None, *, auto: bool = False
) -> Decorator[Any]:
    """``--batch-size N`` (``auto`` too where the engine sizes the calls)."""
    return click.option("--batch-size", type=BatchSizeType() if auto else int, default=default, help=help)


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
    """``--mode``, ``--device``, ``--base-url``, ``--model-arg``, ``--batch-size``: model settings."""

    def build(v: dict[str, Any]) -> dict[str, Any]:
        return {"mode": v["mode"], "device": v["device"], "base_url": v["base_url"],
                "model_args": parse_key_values(v["model_arg"]), "batch_size": v["batch_size"]}  # fmt: skip

    f = _collect(("mode", "device", "base_url", "model_arg", "batch_size"), build)(f)
    return _stack(
        f,
        [
            batch_size_option(
                "items per model call (images per call for contrastive models); auto: the largest "
                "that fits, halved after each out-of-memory failure (the size used is recorded in "
                "run.json)",
                auto=True,
            ),
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
    """The run settings shared by ``run``, ``strategies`` and the probes.

    ``--fresh`` and ``--retry-errors`` stay flags of the invocation (``args.fresh``,
    ``args.retry_errors``), not settings of the run. Declared once, so every command that takes
    them has the same flags and defaults (``--device``'s ``auto`` included).
    """
    names = ("split", "tasks", "limit", "seed", "protocol", "no_image", "exclude", "max_fail_fraction")

    def build(v: dict[str, Any]) -> dict[str, Any]:
        return {
            "split": v["split"], "tasks": _task_list(v["tasks"]), "limit": v["limit"], "seed": v["seed"],
            "protocol": v["protocol"],
            "no_image": bool(v.get("no_image", False)), "exclude_ids": read_exclude(v["exclude"]),
            "max_fail_fraction": v["max_fail_fraction"],
        }  # fmt: skip

    def decorate(f: F) -> F:
        f = _collect(names, build)(f)
        image = (
            [click.option("--no-image", is_flag=True, help="send prompts without images")] if no_image else []
        )
        return _stack(
            f,
            [
                split_option(),
                click.option(
                    "--tasks", metavar="T1,T2", help="evaluate only the items of these tasks (or subsets)"
                ),
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


def _task_list(value: str | None) -> tuple[str, ...] | None:
    """``--tasks a,b`` as ``("a", "b")``; ``None`` when not given."""
    if value is None:
        return None
    return tuple(t.strip() for t in value.split(",") if t.strip()) or None


def executor_options(help: str) -> list[Decorator[Any]]:
    """``--executor local|ray`` (described by ``help``) and ``--ray-address``: evaluation and build alike."""
    return [
        click.option(
            "--executor",
            type=click.Choice(["local", "ray"]),
            default="local",
            help=help,
        ),
        click.option("--ray-address", help="Ray cluster address for --executor ray (default: local Ray)"),
    ]


def engine_options(f: F) -> F:
    """``--executor``, ``--ray-address``, ``--workers``: where the model calls run."""

    def build(v: dict[str, Any]) -> dict[str, Any]:
        return {"executor": v["executor"], "ray_address": v["ray_address"], "workers": v["workers"]}

    f = _collect(("executor", "ray_address", "workers"), build)(f)
    return _stack(
        f,
        [
            *executor_options("where model calls run"),
            click.option("--workers", type=int, help="Ray actors (default: one per GPU, else 2)"),
        ],
    )


def tracking_options(what: str = "each run's metrics, tables and plots") -> list[Decorator[Any]]:
    """``--log-to tensorboard|mlflow|wandb`` and ``--log-dir DIR`` (``report``, ``run``, ``eval``)."""
    return [
        click.option(
            "--log-to",
            type=click.Choice(["tensorboard", "mlflow", "wandb"]),
            help=f"also log {what} there (extras track-tensorboard, …; wandb: a samples table too)",
        ),
        click.option(
            "--log-dir", default="scopebench-logs", help="tracking folder (default scopebench-logs)"
        ),
    ]


def with_tracking(what: str = "each finished run's metrics, tables and plots") -> Decorator[Any]:
    """:func:`tracking_options` as one decorator."""

    def decorate(f: F) -> F:
        return _stack(f, tracking_options(what))

    return decorate


def json_flag(help: str) -> Decorator[Any]:
    """``--json``: print the listing as JSON for scripts (output options)."""
    return click.option("--json", is_flag=True, help=help)

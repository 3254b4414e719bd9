"""``scopebench table`` and ``scopebench eval``: from runs (or an eval config) to the paper tables."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from scopebench.cli.options import Args, argument, command, pass_args, with_tracking

__all__ = ["cmd_eval", "cmd_run_grid", "cmd_table", "register", "run_grid", "write_tables"]

# As the other commands: the terminal's width, or 120 columns when piped.
console = Console(width=None if sys.stdout.isatty() else 120)


def write_tables(
    run_dirs: Sequence[str | Path],
    out_dir: str | Path,
    *,
    published: bool = False,
    labels: Sequence[str] | None = None,
    echo: bool = True,
) -> list[Path]:
    """Write the paper tables (``.tex``/``.md``/``.csv``) and forest plots of ``run_dirs``.

    Args:
        run_dirs: Run directories, any benchmarks (folders of runs are expanded by the caller).
        out_dir: Output folder (created).
        published: Add the published rows beside ours.
        labels: Display names (default: :func:`scopebench.report.labels.display_names`).
        echo: Print each table's Markdown.

    Returns:
        The files written.
    """
    from scopebench.paper.forest import chance_level, plot_forest
    from scopebench.paper.summary import benchmark_column, build_summary, model_labels
    from scopebench.paper.tables import (
        build_paper_tables,
        file_stem,
        table_to_markdown,
        write_paper_tables,
    )
    from scopebench.results import Results
    from scopebench.store.rundir import load_run

    data = [load_run(d) for d in run_dirs]
    results = [Results.from_run(d) for d in data]
    if labels is None:
        # Told apart within a benchmark's table: runs in different tables may share a name.
        labels = model_labels(results)
    tables = build_paper_tables(results, labels, published=published)
    written = write_paper_tables(tables, out_dir)
    if len({benchmark_column(r) for r in results}) > 1:
        summary = build_summary(results, labels)
        written += write_paper_tables([summary], out_dir)
        if echo:
            console.print(table_to_markdown(summary), markup=False, highlight=False, soft_wrap=True)
    for table in tables:
        idx = [i for i, r in enumerate(results) if r.benchmark == table.benchmark]
        chances = [chance_level(results[i], data[i].items) for i in idx]
        written += plot_forest(
            [labels[i] for i in idx],
            [results[i] for i in idx],
            chances,
            Path(out_dir) / f"forest-{file_stem(table.benchmark)}",
            f"{table.benchmark}: accuracy with 95% interval",
        )
        if echo:
            console.print(table_to_markdown(table), markup=False, highlight=False, soft_wrap=True)
    return written


def cmd_table(args: Args) -> int:
    """Paper tables and forest plots of RUN… (folders of runs expanded) into ``--out``."""
    from scopebench.cli.report import _incomplete_note
    from scopebench.report.labels import expand_run_dirs

    runs = expand_run_dirs(args.runs)
    _quiet(args)
    written = write_tables(runs, args.out, published=args.published)
    for run in runs:
        if note := _incomplete_note(run):
            console.print(note, markup=False, highlight=False, soft_wrap=True)
    console.print(
        f"{len(written)} files written to {args.out}/ (.tex, .md, .csv per benchmark, and summary.* "
        "across benchmarks; forest-*.png/.svg)"
    )
    return 0


def run_grid(
    runs: Sequence[Any], *, fresh: bool = False, retry_errors: bool = False, seed: int = 0
) -> list[Path]:
    """Run (or resume) every :class:`~scopebench.paper.grid.GridRun`; returns their run folders.

    Each is an ordinary run with the CLI's report files; a finished one costs only loading.
    """
    from scopebench.cli import _write_outputs
    from scopebench.engine import run_benchmark
    from scopebench.paper.grid import resolve_tasks

    done = []
    for k, run in enumerate(runs, 1):
        run = resolve_tasks(run)
        result = run_benchmark(
            run.config,
            run.out_dir,
            fresh=fresh,
            retry_errors=retry_errors,
            on_metrics=lambda d: _write_outputs(d, seed),
            metrics_key=f"report:seed={seed}",
        )
        ov = result.metrics["overall"]
        acc = ov["accuracy"]
        shown = "n/a" if acc is None or acc != acc else f"{100 * acc:.1f}%"
        console.print(
            f"[{k}/{len(runs)}] {run.config.benchmark} · {run.config.protocol} · {run.label}: {shown} "
            f"(n={ov['n']}, {result.n_new} new) → {run.out_dir}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        done.append(run.out_dir)
    return done


def cmd_eval(args: Args) -> int:
    """Run an eval config's grid (resumable), then write its paper tables."""
    from scopebench.paper.grid import load_eval_config, plan_grid

    _quiet(args)
    cfg_path = Path(args.config)
    cfg = load_eval_config(cfg_path)
    root = Path(args.out) if args.out else _relative_to(cfg_path, cfg.out)
    plan = plan_grid(cfg, root)
    console.print(f"{len(plan)} run(s): {len(cfg.models)} model(s) × {len(cfg.benchmarks)} benchmark(s) "
                  f"× {len(cfg.protocols)} protocol(s) under {root}/")  # fmt: skip
    dirs = run_grid(plan, fresh=args.fresh, retry_errors=args.retry_errors, seed=cfg.seed)
    _log_runs(args, dirs)
    tables = Path(args.tables) if args.tables else (
        _relative_to(cfg_path, cfg.tables.out) if cfg.tables.out else root / "tables"
    )  # fmt: skip
    written = write_tables(
        dirs, tables, published=cfg.tables.published or args.published, labels=[r.label for r in plan]
    )
    console.print(f"paper tables: {len(written)} files in {tables}/")
    return 0


def _log_runs(args: Args, dirs: list[Path]) -> None:
    """``--log-to``: log each finished run of the grid (under its label)."""
    from scopebench.cli import log_to_tracker

    for run_dir in dirs:
        log_to_tracker(args, Path(run_dir))


def _quiet(args: Args) -> None:
    """``-q``: nothing but errors (which the CLI prints on stderr) — no tables, no progress lines."""
    console.quiet = bool(getattr(args, "quiet", False))


def _relative_to(config_path: Path, where: str) -> Path:
    """A path of the config, relative to the config file's folder unless absolute."""
    p = Path(where).expanduser()
    return p if p.is_absolute() else config_path.parent / p


def register(group: click.Group) -> None:
    """Add ``table`` and ``eval`` to the ``scopebench`` group."""
    group.add_command(_table_command)
    group.add_command(_eval_command)


@command("table", short_help="paper tables (LaTeX, Markdown, CSV) and forest plots of runs")
@argument(
    "runs", nargs=-1, required=True, metavar="RUN...", help="run directories, or folders of them (runs/demo)"
)
@click.option("--out", default="tables", help="output folder (default: tables)")
@click.option("--published", is_flag=True, help="add the published numbers (labelled, not reproduced here)")
@pass_args
def _table_command(args: Args) -> int:
    """Paper tables (LaTeX, Markdown, CSV) and forest plots of runs."""
    args.runs = list(args.runs)
    return cmd_table(args)


@command("eval", short_help="run a grid of models × benchmarks × protocols from a config file")
@argument("config", metavar="CONFIG", help="eval config (.yaml, .yml or .toml): docs/tables.md")
@click.option("--out", help="root of the run folders (default: the config's `out`)")
@click.option("--tables", help="folder of the paper tables (default: the config's, else OUT/tables)")
@click.option("--published", is_flag=True, help="add the published numbers to the tables")
@click.option("--fresh", is_flag=True, help="discard every run's stored results and start again")
@click.option("--retry-errors", is_flag=True, help="redo items whose stored result is an error")
@with_tracking()
@pass_args
def _eval_command(args: Args) -> int:
    """Run a grid of models × benchmarks × protocols from a config file, then its paper tables."""
    return cmd_eval(args)


def cmd_run_grid(args: Args, run_config: Any) -> int:
    """``scopebench run`` with several ``--bench``/``--model``: every pair under ``--out``, then tables.

    Run folders are named as an eval config's (``OUT/<bench>[-<split>]/<protocol>/<model>``);
    ``--data`` is given once per ``--bench`` (in order), or not at all.

    Args:
        args: The ``run`` command's arguments (``bench``, ``model`` and ``data`` are lists; the
            models parsed ModelSpecs).
        run_config: The CLI's ``_run_config(args, **overrides)``.
    """
    from scopebench.errors import DataFormatError
    from scopebench.paper.grid import GridRun, ModelEntry, slug

    _quiet(args)
    data = list(args.data or [])
    if data and len(data) != len(args.bench):
        raise DataFormatError(
            f"--data is given {len(data)} time(s) for {len(args.bench)} --bench: give one --data per "
            "--bench, in the same order (none for `demo`), or write an eval config (scopebench eval)"
        )
    if args.label:
        raise DataFormatError("--label names one run; with several --model, write an eval config with names")
    specs = [m.raw for m in args.model]
    names = [ModelEntry(spec=m).display_name() for m in specs]
    if len(set(map(slug, names))) < len(names):
        raise DataFormatError("the --model values share a run folder name: give each model once")
    plan = []
    for k, bench in enumerate(args.bench):
        for model, name in zip(specs, names, strict=True):
            config = run_config(args, benchmark=bench, model=model, data=data[k] if data else "", label=name)
            folder = slug(bench if config.split is None else f"{bench}-{config.split}")
            plan.append(GridRun(name, config, Path(args.out) / folder / slug(config.protocol) / slug(name)))
    seed = int(args.settings["seed"])
    dirs = run_grid(plan, fresh=args.fresh, retry_errors=args.retry_errors, seed=seed)
    _log_runs(args, dirs)
    tables = Path(args.out) / "tables"
    written = write_tables(dirs, tables, labels=[r.label for r in plan])
    console.print(f"paper tables: {len(written)} files in {tables}/")
    return 0

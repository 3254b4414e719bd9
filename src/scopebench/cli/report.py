"""``scopebench compare`` and ``scopebench report``: leaderboards, paired tests and report files."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.table import Table

from scopebench.cli.options import (
    Args,
    argument,
    command,
    pass_args,
    resamples_option,
    seed_option,
    with_tracking,
)
from scopebench.cli.output import out_console, print_wide
from scopebench.display import shown
from scopebench.errors import RunDirReadOnlyError

if TYPE_CHECKING:
    from scopebench.config import ReportConfig

# The report, scoring and store modules (numpy, the answer parser, plotting helpers) are imported
# inside the commands that use them: `scopebench --help` builds every command and must not pay
# for them (tests/cli/test_import_cost.py).

__all__ = ["cmd_compare", "cmd_report", "register"]

# As the main CLI's console: the terminal's width, or 120 columns when piped or redirected (rich's
# default 80 would truncate the accuracy and interval cells of a file or a log).
console = out_console(120)


def _markdown(head: Sequence[str], body: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in body]
    return "\n".join(lines) + "\n"


def _latex(head: Sequence[str], body: Sequence[Sequence[str]]) -> str:
    from scopebench.report.tables import _tex

    lines = [r"\begin{tabular}{ll" + "r" * (len(head) - 2) + "}", r"\toprule"]
    lines.append(" & ".join(_tex(h) for h in head) + r" \\")
    lines.append(r"\midrule")
    lines += [" & ".join(_tex(c) for c in row) + r" \\" for row in body]
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"


def _csv(head: Sequence[str], body: Sequence[Sequence[str]]) -> str:
    import csv
    import io

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(head)
    w.writerows(body)
    return buf.getvalue()


def _print_table(title: str, head: Sequence[str], body: Sequence[Sequence[str]]) -> None:
    table = Table(title=title)
    for h in head:
        table.add_column(h)
    for row in body:
        table.add_row(*row)
    print_wide(console, table)  # names never cut with "…"


def _check_runs(runs: Sequence[str], *, one_benchmark: bool) -> None:
    """Fail before writing anything when a RUN is no run directory or the benchmarks differ.

    A folder that holds run directories (``runs/demo``) gets a hint to pass them (``runs/demo/*``).

    Raises:
        DataNotFoundError: When a RUN is not a run directory.
        ConfigMismatchError: When ``one_benchmark`` and the runs are of different benchmarks.
    """
    from scopebench.errors import ConfigMismatchError, DataNotFoundError
    from scopebench.store.rundir import CONFIG_FILE, STORE_FILE

    benches: dict[str, list[str]] = {}
    for run in runs:
        path = Path(run)
        if not (path / CONFIG_FILE).is_file() or not (path / STORE_FILE).is_file():
            inner = (
                sorted(p.name for p in path.iterdir() if (p / CONFIG_FILE).is_file()) if path.is_dir() else []
            )
            if inner:
                shown = ", ".join(inner[:5]) + (", …" if len(inner) > 5 else "")
                raise DataNotFoundError(
                    f"{run} is not a scopebench run directory but holds {len(inner)} of them ({shown}): "
                    f"pass them, e.g. `{path / '*'}`"
                )
            raise DataNotFoundError(
                f"{run} is not a scopebench run directory (no {CONFIG_FILE} / {STORE_FILE}); "
                "pass the --out folder of a `scopebench run`"
            )
        cfg = json.loads((path / CONFIG_FILE).read_text(encoding="utf-8"))
        benches.setdefault(str(cfg.get("benchmark", "?")), []).append(run)
    if one_benchmark and len(benches) > 1:
        detail = "; ".join(f"{b}: {', '.join(rs)}" for b, rs in sorted(benches.items()))
        raise ConfigMismatchError(
            f"runs are of different benchmarks ({detail}); nothing was written — "
            "compare or put in one HTML report the runs of one benchmark at a time"
        )


_FileFunc = Callable[[Args], int]


def _file_errors_as_messages(func: _FileFunc) -> _FileFunc:
    """``func``, with a path it cannot create or open reported as one message, not a traceback.

    ``--out``/``--html`` in a read-only or missing place (or under a plain file) is a user error.
    """

    def run(args: Args) -> int:
        try:
            return func(args)
        except (
            PermissionError,
            NotADirectoryError,
            IsADirectoryError,
            FileNotFoundError,
            FileExistsError,
        ) as exc:
            raise RunDirReadOnlyError(
                f"cannot write or open {exc.filename or '?'} ({exc.strerror or exc}): give --out / --html "
                "a place you can write to, and runs you can read"
            ) from exc

    return run


def cmd_compare(args: Args) -> int:
    """Print the leaderboard and pairwise tests; write md/csv/json/tex to ``--out``."""
    from scopebench.report import json_safe
    from scopebench.report.html import heatmap_values
    from scopebench.report.labels import expand_run_dirs
    from scopebench.report.published import published_leaderboard
    from scopebench.report.tables import leaderboard_columns, leaderboard_table, pairwise_rows, truncated_note
    from scopebench.scoring.compare import compare_runs

    args.runs = expand_run_dirs(args.runs)  # a folder of runs (runs/demo) stands for its runs
    _check_runs(args.runs, one_benchmark=True)
    report: ReportConfig = args.report
    result = compare_runs(args.runs, report)
    _use_display_names(result)
    if report.published:
        result["published"] = published_leaderboard(result["benchmark"], leaderboard_columns(result))
    head, body = leaderboard_table(result)
    _print_table(
        f"{result['benchmark']} leaderboard (seed {result['seed']}, {report.resamples} resamples)", head, body
    )
    if result["pairs"]:
        _print_table(
            "pairwise: paired bootstrap of the difference, McNemar exact test",
            ["A", "B", "n", "A − B", "95% CI", "b", "c", "McNemar p"],
            pairwise_rows(result["pairs"]),
        )
    for w in result["warnings"]:
        console.print(f"[yellow]warning:[/yellow] {w}")
    for entry in result["leaderboard"]:
        cut = truncated_note(entry.get("overall") or {}, entry.get("model", ""))
        if cut:
            console.print(f"[yellow]truncated:[/yellow] {cut}")
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "compare.json").write_text(
            json.dumps(json_safe(result), indent=2, ensure_ascii=False), encoding="utf-8"
        )
        (out / "compare.md").write_text(_markdown(head, body), encoding="utf-8")
        (out / "compare.csv").write_text(_csv(head, body), encoding="utf-8")
        (out / "compare.tex").write_text(_latex(head, body), encoding="utf-8")
        from scopebench.report.plots import plot_heatmap

        groups, values = heatmap_values(result["leaderboard"])
        # Display names: path-free, two runs of one model told apart by their folder.
        columns = [e["model"] for e in result["leaderboard"]]
        if groups:
            plot_heatmap(
                groups,
                columns,
                values,
                out / "heatmap",
                f"{result['benchmark']}: accuracy (%) per group and model",
            )
        console.print(f"comparison written to {out}/ (compare.json, .md, .csv, .tex, heatmap.png/.svg)")
    return 0


def _use_display_names(result: dict[str, Any]) -> None:
    """Name the leaderboard's runs and pairs by display name (report/labels.py), not model spec."""
    from scopebench.report.labels import relabel_comparison, run_display_names
    from scopebench.store.rundir import load_run

    runs = [e["run"] for e in result["leaderboard"]]
    names = run_display_names([load_run(r) for r in runs])
    relabel_comparison(result, dict(zip(runs, names, strict=True)))


def _metrics_only(run: str, args: Args) -> dict[str, Any]:
    """The metrics ``report`` would write, computed without writing anything."""
    from scopebench.report import run_seed
    from scopebench.scoring import compute_metrics
    from scopebench.store.rundir import load_run

    data = load_run(run)
    report: ReportConfig = args.report
    seed = report.seed if report.seed is not None else run_seed(data)
    metrics: dict[str, Any] = compute_metrics(
        data.records, benchmark=data.benchmark, policy=report.policy, items=data.items, seed=seed,
        resamples=report.resamples,
    )  # fmt: skip
    metrics["model"] = shown(data.model)
    return metrics


def _summary(runs: Sequence[str], metrics: Sequence[dict[str, Any]], out: str | None) -> None:
    """Runs of several benchmarks: print the models × benchmarks table (and write it to ``out``).

    Its numbers are the ones just reported (the same policy, seed and resamples).
    """
    from dataclasses import replace

    from scopebench.paper.summary import benchmark_column, build_summary, model_labels
    from scopebench.paper.tables import table_to_markdown, write_paper_tables
    from scopebench.results import Results
    from scopebench.store.rundir import load_run

    results = [Results.from_run(replace(load_run(r), metrics=m)) for r, m in zip(runs, metrics, strict=True)]
    if len({benchmark_column(r) for r in results}) < 2:
        return
    table = build_summary(results, model_labels(results))
    console.print(table_to_markdown(table), markup=False, highlight=False, soft_wrap=True)
    if out:
        written = write_paper_tables([table], out)
        console.print(f"models × benchmarks summary written to {', '.join(map(str, written))}")


def _incomplete_note(run: str) -> str | None:
    """A warning when ``run`` holds results for fewer items than it set out to answer.

    An interrupted run (Ctrl-C, SIGTERM, a crash) or one still running has its items in the store
    but not all their records; its numbers are then those of a subset, which a table alone hides.
    """
    from scopebench.store.rundir import STORE_FILE
    from scopebench.store.runstore import RunStore

    with RunStore(Path(run) / STORE_FILE, readonly=True) as store:
        n_items, done = len(store.items()), len(store.done_ids())
    if done >= n_items:
        return None
    return (
        f"warning: {run} holds results for {done} of its {n_items} items: the run is incomplete "
        "(interrupted, or still running), so these numbers cover only those items. Run the same "
        "`scopebench run` command again to finish it."
    )


def cmd_report(args: Args) -> int:
    """Write metrics.json/csv/md/tex and plots for each run (into ``--out/<run folder>`` if given).

    ``<run folder>`` is the run's shortest distinguishing path suffix with ``/`` → ``_``
    (:func:`~scopebench.scoring.compare.run_folder_names`), so no two runs share one.

    Without ``--out`` the files go into the run directory only for the run's own settings (policy
    wrong, its seed, default resamples), else into its ``report-<policy>-seed<S>-<R>`` subfolder:
    a report never changes the run's headline ``metrics.json`` (see docs/report.md).
    With ``--html FILE`` also writes the single-file HTML report of all the runs.
    """
    from scopebench.report import render_metrics_table, report_dir, write_run_outputs
    from scopebench.report.labels import expand_run_dirs
    from scopebench.report.published import PUBLISHED_NOTE, published_rows
    from scopebench.scoring.compare import run_folder_names
    from scopebench.store import rundir

    # Checked first: a wrong argument must not leave half of the report files written.
    args.runs = expand_run_dirs(args.runs)  # a folder of runs (runs/demo) stands for its runs
    _check_runs(args.runs, one_benchmark=bool(args.html))
    report: ReportConfig = args.report
    # Runs with one folder name (sweep/alpha-*/run, */clean) get distinct output folders.
    folders = run_folder_names(args.runs)
    reported: list[dict[str, Any]] = []
    for run, folder in zip(args.runs, folders, strict=True):
        if not args.out and not rundir.is_writable(run):
            # A read-only run (an archive, a colleague's folder) is reported, never written to.
            metrics = _metrics_only(run, args)
            console.print(
                render_metrics_table(metrics, title=f"{metrics['benchmark']} — {metrics['model']} ({run})"),
                crop=False,  # never cut off the right-hand (judge) columns, as in cli._print_metrics
            )
            console.print(f"{run} is read-only: no report files were written; pass --out DIR to write them")
            reported.append(metrics)
            if note := _incomplete_note(run):
                console.print(note)
            continue
        out = Path(args.out) / folder if args.out else report_dir(run, report)
        metrics = write_run_outputs(run, report, out_dir=out)
        reported.append(metrics)
        console.print(
            render_metrics_table(metrics, title=f"{metrics['benchmark']} — {metrics['model']} ({run})"),
            crop=False,
        )
        if report.published:
            head, body = published_rows(metrics)
            if body:
                _print_table(f"{metrics['benchmark']}: {PUBLISHED_NOTE}", head, body)
                note = f"{PUBLISHED_NOTE}: values in percent as printed in the papers\n\n"
                (out / "published.md").write_text(note + _markdown(head, body), encoding="utf-8")
                (out / "published.csv").write_text(_csv(head, body), encoding="utf-8")
        console.print(f"report files of {run} written to {out}/")
        if args.log_to:
            from scopebench.report.tracking import log_run, run_params, sample_rows

            run_json = json.loads((Path(run) / rundir.CONFIG_FILE).read_text(encoding="utf-8"))
            params = run_params(run_json, metrics)
            samples = sample_rows(rundir.load_run(run).records) if args.log_to == "wandb" else []
            where = log_run(
                args.log_to, folder, metrics, out, Path(args.log_dir), params=params, samples=samples
            )
            console.print(f"logged {run} to {args.log_to} in {where}")
        if note := _incomplete_note(run):
            console.print(note)
    _summary(args.runs, reported, args.out)
    if args.html:
        from scopebench.report.html import items_dir_for, write_html_report

        path = write_html_report(
            args.runs,
            args.html,
            report,
        )
        console.print(
            f"HTML report written to {path}; its items are in {path.parent / items_dir_for(path)}/ "
            "(keep that folder beside the page)"
        )
    return 0


def _runs_options(name: str) -> Callable[[Callable[..., int]], Callable[..., int]]:
    """The options ``compare`` and ``report`` share, declared once (their defaults differ in --seed).

    ``--seed``, ``--resamples``, ``--policy`` and ``--published`` become one
    :class:`~scopebench.config.ReportConfig`, ``args.report``, which the commands pass down.
    """
    report = name == "report"

    def decorate(f: Callable[..., int]) -> Callable[..., int]:
        f = _collect_report(f)
        for option in reversed(
            [
                argument("runs", nargs=-1, required=True, metavar="RUN...", help="run directories"),
                click.option("--out", default=None, help="output folder"),
                click.option("--published", is_flag=True, help="add published numbers (not reproduced here)"),
                seed_option(
                    "bootstrap seed (default: " + ("each run's own seed)" if report else "0)"),
                    default=None if report else 0,
                ),
                resamples_option(),
                click.option(
                    "--policy",
                    type=click.Choice(["wrong", "exclude"]),
                    default="wrong",
                    help="unparsed answers, errors and missing images/responses: count as wrong (default) "
                    "or exclude from the denominator",
                ),
            ]
        ):
            f = option(f)
        return f

    return decorate


def _collect_report(f: Callable[..., int]) -> Callable[..., int]:
    """Replace a callback's ``seed``, ``resamples``, ``policy``, ``published`` by ``report``."""

    @functools.wraps(f)
    def wrapper(**kwargs: Any) -> int:
        from scopebench.config import ReportConfig

        names = ("seed", "resamples", "policy", "published")
        kwargs["report"] = ReportConfig(**{k: kwargs.pop(k) for k in names})
        return f(**kwargs)

    return wrapper


@command("compare", short_help="leaderboard of runs on one benchmark with paired tests")
@_runs_options("compare")
@pass_args
def _compare_command(args: Args) -> int:
    """Leaderboard of runs on one benchmark with paired tests."""
    return _file_errors_as_messages(cmd_compare)(args)


@command("report", short_help="write metrics tables and plots for each run (and an HTML report)")
@_runs_options("report")
@with_tracking("each run's metrics, tables and plots")
@click.option(
    "--html", metavar="FILE", help="also write an HTML report of all RUNs (FILE + FILE-stem_items/)"
)
@pass_args
def _report_command(args: Args) -> int:
    """Write metrics tables and plots for each run (and an HTML report of them all)."""
    return _file_errors_as_messages(cmd_report)(args)


def register(group: click.Group) -> None:
    """Add ``compare`` and ``report`` to the ``scopebench`` group."""
    group.add_command(_compare_command)
    group.add_command(_report_command)

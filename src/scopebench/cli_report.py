"""``scopebench compare`` and ``scopebench report``: leaderboards, paired tests and report files."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from scopebench.report import json_safe, render_metrics_table, write_run_outputs
from scopebench.report.published import published_leaderboard
from scopebench.report.tables import format_accuracy, format_interval
from scopebench.scoring.compare import compare_runs

__all__ = ["add_subcommands", "cmd_compare", "cmd_report", "leaderboard_table"]

console = Console()


def _columns(result: Mapping[str, Any]) -> list[str]:
    cols: list[str] = []
    for entry in result["leaderboard"]:
        for r in entry["owner"]:
            key = f"{r['split_or_group']}/{r['subset_or_task']}"
            if key not in cols:
                cols.append(key)
    return cols


def leaderboard_table(result: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Header and string cells of the leaderboard (runs, then published rows if present)."""
    cols = _columns(result)
    head = ["model", "source", "overall", "95% CI", *cols]
    body = []
    for e in result["leaderboard"]:
        owner = {f"{r['split_or_group']}/{r['subset_or_task']}": r for r in e["owner"]}
        body.append(
            [
                e["model"],
                e["source"],
                format_accuracy(e["overall"]),
                format_interval(e["overall"]),
                *[format_accuracy(owner[c]) if c in owner else "" for c in cols],
            ]
        )
    for p in result.get("published", []):
        cells = []
        for c in cols:
            v = p["cells"].get(c)
            cells.append("" if v is None else f"{v[0]:.1f}%" + ("" if v[1] is None else f" ±{v[1]:.1f}"))
        body.append([p["model"], p["source"], "", "", *cells])
    return head, body


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


def cmd_compare(args: argparse.Namespace) -> int:
    """Print the leaderboard and pairwise tests; write md/csv/json/tex to ``--out``."""
    result = compare_runs(args.runs, seed=args.seed, resamples=args.resamples)
    if args.published:
        result["published"] = published_leaderboard(result["benchmark"], _columns(result))
    head, body = leaderboard_table(result)
    table = Table(title=f"{result['benchmark']} leaderboard (seed {args.seed}, {args.resamples} resamples)")
    for h in head:
        table.add_column(h)
    for row in body:
        table.add_row(*row)
    console.print(table)
    pairs = Table(title="pairwise: paired bootstrap of the difference, McNemar exact test")
    for h in ("A", "B", "n", "A − B", "95% CI", "b", "c", "McNemar p"):
        pairs.add_column(h)
    for p in result["pairs"]:
        pairs.add_row(
            p["model_a"],
            p["model_b"],
            str(p["n_common"]),
            f"{100 * p['difference']:+.1f}",
            f"[{100 * p['ci_low']:+.1f}, {100 * p['ci_high']:+.1f}]",
            str(p["b_a_right_b_wrong"]),
            str(p["c_a_wrong_b_right"]),
            f"{p['mcnemar_p']:.3g}",
        )
    if result["pairs"]:
        console.print(pairs)
    for w in result["warnings"]:
        console.print(f"[yellow]warning:[/yellow] {w}")
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "compare.json").write_text(
            json.dumps(json_safe(result), indent=2, ensure_ascii=False), encoding="utf-8"
        )
        (out / "compare.md").write_text(_markdown(head, body), encoding="utf-8")
        (out / "compare.csv").write_text(_csv(head, body), encoding="utf-8")
        (out / "compare.tex").write_text(_latex(head, body), encoding="utf-8")
        console.print(f"comparison written to {out}/ (compare.json, .md, .csv, .tex)")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """Write metrics.json/csv/md/tex and plots for each run (into ``--out/<run name>`` if given)."""
    for run in args.runs:
        out = Path(args.out) / Path(run).name if args.out else None
        metrics = write_run_outputs(run, seed=args.seed, resamples=args.resamples, out_dir=out)
        console.print(render_metrics_table(metrics))
        if args.published:
            cols = [
                f"{r['split_or_group']}/{r['subset_or_task']}"
                for r in (metrics.get("owner") or {}).get("rows", [])
            ]
            pub = published_leaderboard(metrics["benchmark"], cols)
            if pub:
                t = Table(title="published, not reproduced here")
                t.add_column("model")
                for c in cols:
                    t.add_column(c)
                for p in pub:
                    t.add_row(
                        p["model"], *[f"{p['cells'][c][0]:.1f}" if c in p["cells"] else "" for c in cols]
                    )
                console.print(t)
        console.print(f"report files written to {out or run}/")
    return 0


def add_subcommands(sub: Any) -> None:
    """Register ``compare`` and ``report`` on the CLI's subparsers."""
    for name, func, help_text in (
        ("compare", cmd_compare, "leaderboard of runs on one benchmark with paired tests"),
        ("report", cmd_report, "write metrics tables and plots for each run"),
    ):
        p = sub.add_parser(name, help=help_text)
        p.add_argument("runs", nargs="+", metavar="RUN", help="run directories")
        p.add_argument("--out", default=None, help="output folder")
        p.add_argument("--published", action="store_true", help="add published numbers (not reproduced here)")
        p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
        p.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples (default 1000)")
        p.set_defaults(func=func)

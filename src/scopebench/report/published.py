"""Published numbers shipped with scopebench (``data/published_results.csv``).

Columns: ``benchmark, source_table, model, split_or_group, subset_or_task, value, ci_halfwidth``;
``value`` and ``ci_halfwidth`` are percentages as printed in the papers. They are shown beside a
user's runs, marked :data:`PUBLISHED_NOTE`, and never recomputed here.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from importlib import resources
from typing import Any

from scopebench.benchmarks.registry import find_benchmark

__all__ = [
    "CONDITION_TABLES",
    "PUBLISHED_NOTE",
    "load_published",
    "published_leaderboard",
    "published_rows",
]

#: The label every published row carries.
PUBLISHED_NOTE = "published, not reproduced here"

#: Source tables measured under a changed condition (corrupted images, images replaced by noise,
#: text-only filtered samples): not clean zero-shot accuracy, so the leaderboard leaves them out
#: by default — beside a clean run they would read as its competitors.
CONDITION_TABLES = frozenset(
    {
        "PathMMU Table 2 (corruptions averaged over 5 levels, test_tiny)",
        "PathMMU Table 3 (images replaced by Gaussian noise)",
        "PathMMU Fig. 5 right (1,600 text-guessable filtered samples; text-only)",
    }
)


def _float(s: str) -> float | None:
    s = (s or "").strip()
    return float(s) if s else None


def load_published(benchmark: str | None = None) -> list[dict[str, Any]]:
    """Rows of the shipped CSV (all, or one benchmark's), values as floats (percent).

    A benchmark's rows are those under its :attr:`~scopebench.benchmarks.Benchmark.published_key`
    (a plugin benchmark may name a built-in's key; an unknown name keys itself).
    """
    if benchmark is not None:
        bench = find_benchmark(benchmark)
        if bench is not None:
            if bench.published_key is None:
                return []  # nothing published (never "every benchmark's rows")
            benchmark = bench.published_key
    text = (
        resources.files("scopebench.report")
        .joinpath("data/published_results.csv")
        .read_text(encoding="utf-8")
    )
    rows = []
    for r in csv.DictReader(io.StringIO(text)):
        if benchmark is not None and r["benchmark"] != benchmark:
            continue
        rows.append(
            {
                "benchmark": r["benchmark"],
                "source_table": r["source_table"],
                "model": r["model"],
                "split_or_group": r["split_or_group"],
                "subset_or_task": r["subset_or_task"],
                "value": _float(r["value"]),
                "ci_halfwidth": _float(r["ci_halfwidth"]),
            }
        )
    return rows


def published_leaderboard(
    benchmark: str, columns: list[str], *, conditions: bool = False
) -> list[dict[str, Any]]:
    """One leaderboard row per published model and source table with its values for ``columns``.

    Args:
        benchmark: Benchmark name.
        columns: ``"<split_or_group>/<subset_or_task>"`` keys, as in the owner aggregation.
        conditions: Also the rows of :data:`CONDITION_TABLES` (corruptions, noise, text-only);
            by default only the clean tables (PathMMU Table 1, μ-Bench Tables 6/7, SPUR's).

    Returns:
        Rows ``{"model", "source", "source_table", "cells": {column: (value, halfwidth)}}`` in
        percent, for models with at least one of ``columns``.
    """
    wanted = {c.lower(): c for c in columns}
    by_model: dict[tuple[str, str], dict[str, Any]] = {}
    for r in load_published(benchmark):
        key = f"{r['split_or_group']}/{r['subset_or_task']}".lower()
        if key not in wanted or r["value"] is None:
            continue
        if not conditions and r["source_table"] in CONDITION_TABLES:
            continue
        entry = by_model.setdefault(
            (r["model"], r["source_table"]),
            {"model": r["model"], "source": PUBLISHED_NOTE, "source_table": r["source_table"], "cells": {}},
        )
        entry["cells"][wanted[key]] = (r["value"], r["ci_halfwidth"])
    return list(by_model.values())


def published_rows(metrics: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Published rows matching a run's owner columns, as a header and string cells (percent).

    Args:
        metrics: A run's metrics dict (its ``benchmark`` and ``owner`` rows select the columns).

    Returns:
        ``(["model", "source table", *columns], rows)``; only columns some published row has.
    """
    owner_rows = (metrics.get("owner") or {}).get("rows", [])
    cols = [f"{r['split_or_group']}/{r['subset_or_task']}" for r in owner_rows]
    # Every table, each row naming its source table (conditions included, labelled as such).
    pub = published_leaderboard(str(metrics["benchmark"]), cols, conditions=True)
    used = [c for c in cols if any(c in p["cells"] for p in pub)]
    body = []
    for p in pub:
        cells = []
        for c in used:
            v = p["cells"].get(c)
            cells.append("" if v is None else f"{v[0]:.1f}" + ("" if v[1] is None else f" ±{v[1]:.1f}"))
        body.append([p["model"], p["source_table"], *cells])
    return ["model", "source table", *used], body

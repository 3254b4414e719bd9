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

__all__ = ["PUBLISHED_NOTE", "load_published", "published_leaderboard", "published_rows"]

#: The label every published row carries.
PUBLISHED_NOTE = "published, not reproduced here"


def _float(s: str) -> float | None:
    s = (s or "").strip()
    return float(s) if s else None


def load_published(benchmark: str | None = None) -> list[dict[str, Any]]:
    """Rows of the shipped CSV (all, or one benchmark's), values as floats (percent)."""
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


def published_leaderboard(benchmark: str, columns: list[str]) -> list[dict[str, Any]]:
    """One leaderboard row per published model with its values for ``columns``.

    Args:
        benchmark: Benchmark name.
        columns: ``"<split_or_group>/<subset_or_task>"`` keys, as in the owner aggregation.

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
    pub = published_leaderboard(str(metrics["benchmark"]), cols)
    used = [c for c in cols if any(c in p["cells"] for p in pub)]
    body = []
    for p in pub:
        cells = []
        for c in used:
            v = p["cells"].get(c)
            cells.append("" if v is None else f"{v[0]:.1f}" + ("" if v[1] is None else f" ±{v[1]:.1f}"))
        body.append([p["model"], p["source_table"], *cells])
    return ["model", "source table", *used], body

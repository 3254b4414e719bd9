"""One table across benchmarks: models × benchmarks, each run's headline accuracy.

Rows are models (one per display name), columns are benchmarks; a cell is the run's headline
accuracy with its 95% interval and its item count, ``54.2 [50.1, 58.3] n=120``. A column's best
value is bold only when every run in it answered the same items (:func:`~scopebench.paper.tables.
item_set`); otherwise the caption says which columns mix item sets and nothing there is bold.

``local`` and ``hf`` runs name their column after their data too (``hf (mmmu-art.yaml)``), since
two of them are different benchmarks under one loader.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from scopebench.paper.tables import OURS, Cell, Column, PaperRow, PaperTable, item_set
from scopebench.report.labels import run_display_names
from scopebench.results import Results

__all__ = ["SUMMARY", "benchmark_column", "build_summary", "model_labels"]

#: The summary table's name (its file stem: ``summary.md``, ``.tex``, ``.csv``).
SUMMARY = "summary"
#: Loaders whose runs are told apart by their data (any file or dataset).
_DATA_NAMED = frozenset({"local", "hf"})


def benchmark_column(result: Results) -> str:
    """The column of a run: its benchmark, and for ``local``/``hf`` the name of its data."""
    if result.benchmark not in _DATA_NAMED:
        return result.benchmark
    data = str(result.config.get("data") or "")
    name = Path(data.partition("?")[0]).name or data
    return f"{result.benchmark} ({name})" if name else result.benchmark


def model_labels(results: Sequence[Results]) -> list[str]:
    """Each run's display name, told apart within its benchmark only.

    Runs in different benchmarks may share a name — that is how one model's runs of several
    benchmarks share a row of the summary (:func:`scopebench.report.labels.run_display_names`).
    """
    names = [""] * len(results)
    for bench in dict.fromkeys(benchmark_column(r) for r in results):
        idx = [i for i, r in enumerate(results) if benchmark_column(r) == bench]
        for i, name in zip(idx, run_display_names([results[i] for i in idx]), strict=True):
            names[i] = name
    return names


def build_summary(results: Sequence[Results], labels: Sequence[str]) -> PaperTable:
    """The models × benchmarks table of ``results``.

    Args:
        results: Runs of any benchmarks.
        labels: Each run's display name; runs of one model on several benchmarks share a row
            when they share a name. Two runs of one name on one benchmark get a row each.

    Returns:
        A :class:`PaperTable` named :data:`SUMMARY` whose columns are benchmarks (first-seen order)
        and whose cells show their item count.
    """
    columns: list[Column] = []
    rows: list[PaperRow] = []
    for result, label in zip(results, labels, strict=True):
        key = benchmark_column(result)
        if key not in {c.key for c in columns}:
            columns.append(Column(key, "", key))
        row = next((r for r in rows if r.label == label and key not in r.cells), None)
        if row is None:
            row = PaperRow(label, OURS)
            rows.append(row)
        row.cells[key] = Cell.from_row(result.overall, item_set(result))
    methods = sorted({r.overall.ci_method for r in results if r.overall.ci_method})
    policies = sorted({r.overall.policy for r in results if r.overall.policy})
    return PaperTable(SUMMARY, columns, rows, methods, policies, show_n=True)

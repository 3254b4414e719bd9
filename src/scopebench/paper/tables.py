"""Paper tables: many runs (of one or several benchmarks) as the table a paper prints.

One table per benchmark, laid out as its owners publish it (rows are models):

* ``pathmmu`` — PathMMU Table 1: per subset (Overall, PubMed, SocialPath, EduContent, Atlas,
  PathCLS) the ``Tiny`` (test_tiny) and ``ALL`` (test ∪ test_tiny) columns, validation first when
  a run has it; the ``test`` split alone is shown only when no run has ALL (the paper has no such
  column).
* ``ubench`` — μ-Bench Tables 6/7: coarse, fine and cognition macro-averages on all data, then on
  the pathology-only view.
* ``spur`` — SPUR's seven tasks (NP, MP, IL, TA, HI, Qual, Quant) and overall, per split.
* ``microvqa`` — MicroVQA tasks 1, 2, 3 and overall.
* any other benchmark — one column per task, then overall.

Cells are the run's own ``metrics.json`` numbers (the owner aggregation for the four benchmarks
above, else the task rows and the headline row), in percent with the row's 95% interval as
``54.2 [50.1, 58.3]``. The best of our values in each column (compared as printed, to one
decimal; ties all marked) is bold; published rows are never marked, since they were not measured
here (and include human experts). Published rows (``--published``) are the numbers
of ``report/data/published_results.csv`` whose keys match a column (the clean tables only),
labelled with their source table, quoted with the digits printed (``62.68 ± 0.35``), never
rounded or recomputed.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from scopebench.report.published import PUBLISHED_NOTE, published_leaderboard
from scopebench.report.tables import tex_escape as _tex
from scopebench.results import AccuracyRow, Results

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "Cell",
    "Column",
    "PaperRow",
    "PaperTable",
    "build_paper_tables",
    "file_stem",
    "item_set",
    "table_to_csv",
    "table_to_latex",
    "table_to_markdown",
    "write_paper_tables",
]

#: Source of our own rows.
OURS = "ours"
_MISSING = "–"


@dataclass(frozen=True, slots=True)
class Column:
    """One column of a paper table.

    Attributes:
        key: The owner key ``split_or_group/subset_or_task`` (``test_tiny/PubMed``), ``task=NAME``
            or ``overall`` (benchmarks without an owner aggregation).
        top: The upper header (PathMMU: the subset; μ-Bench: ``all data``/``pathology``).
        bottom: The lower header (PathMMU: ``Tiny``/``ALL``; μ-Bench: ``coarse``…).
    """

    key: str
    top: str
    bottom: str

    @property
    def name(self) -> str:
        """One-line header: ``"PubMed Tiny"``."""
        return f"{self.top} {self.bottom}".strip()


@dataclass(frozen=True, slots=True)
class Cell:
    """One number of a table, in percent.

    Attributes:
        value: Accuracy in percent (NaN when undefined).
        low: Lower bound of the 95% interval (NaN when there is none).
        high: Upper bound.
        n: Items behind the number (``None`` for published numbers).
        halfwidth: A published ``±`` half-width as printed (published cells only).
        method: How our interval was computed (``wilson``…; empty for published cells).
        items: The item set of the run behind the number (:func:`item_set`; empty for published
            cells): values of different item sets are never ranked against each other.
    """

    value: float
    low: float = math.nan
    high: float = math.nan
    n: int | None = None
    halfwidth: float | None = None
    method: str = ""
    items: str = ""

    @classmethod
    def from_row(cls, row: AccuracyRow, items: str = "") -> Cell:
        """A cell of one of our accuracy rows (fractions → percent)."""
        return cls(100 * row.accuracy, 100 * row.ci_low, 100 * row.ci_high, row.n, method=row.ci_method,
                   items=items)  # fmt: skip

    @property
    def rounded(self) -> float:
        """The value as printed (one decimal), what the best mark compares."""
        return round(self.value, 1)


@dataclass(slots=True)
class PaperRow:
    """One row: a run of ours, or a published model.

    Attributes:
        label: The display name (:func:`scopebench.report.labels.display_names`) or published name.
        source: :data:`OURS`, or ``published: <source table>``.
        cells: Cells by column key.
        n: The items the run answered (our rows; ``None`` for published rows).
    """

    label: str
    source: str
    cells: dict[str, Cell] = field(default_factory=dict)
    n: int | None = None


@dataclass(slots=True)
class PaperTable:
    """A benchmark's table: columns in its published layout, our rows, then published rows.

    Attributes:
        benchmark: The benchmark name.
        columns: Columns in order.
        rows: Rows in order.
        ci_methods: How our intervals were computed (``wilson``, ``stratified-bootstrap-percentile``…).
        policies: What unscorable answers counted as in our runs (``wrong``/``exclude``).
        show_n: Print each cell's item count (the models × benchmarks summary).
    """

    benchmark: str
    columns: list[Column]
    rows: list[PaperRow]
    ci_methods: list[str] = field(default_factory=list)
    policies: list[str] = field(default_factory=list)
    show_n: bool = False

    def _ours(self, key: str) -> dict[int, Cell]:
        return {
            i: r.cells[key]
            for i, r in enumerate(self.rows)
            if r.source == OURS and key in r.cells and not math.isnan(r.cells[key].value)
        }

    def mixed(self) -> list[Column]:
        """Columns whose values of ours come from runs on different item sets (40 vs 120 items)."""
        return [c for c in self.columns if len({cell.items for cell in self._ours(c.key).values()}) > 1]

    def best(self) -> dict[str, set[int]]:
        """Indices of our rows holding the best (highest, as printed) value of each column.

        Published rows are not candidates: they were not measured here. Nor is any value of a
        column whose runs used different item sets (:meth:`mixed`): a best among them means nothing.
        """
        mixed = {c.key for c in self.mixed()}
        out: dict[str, set[int]] = {}
        for col in self.columns:
            values = {i: cell.rounded for i, cell in self._ours(col.key).items()}
            if values and col.key not in mixed:
                top = max(values.values())
                out[col.key] = {i for i, v in values.items() if v == top}
        return out

    def caption(self) -> str:
        """What every number is (plain text; escaped by each writer)."""
        methods = ", ".join(self.ci_methods) or "none"
        policy = "/".join(self.policies) or "wrong"
        what = "models × benchmarks: headline accuracy" if self.show_n else f"{self.benchmark}: accuracy"
        items = " and n, the items behind it" if self.show_n else ""
        text = (
            f"{what} (%) with its 95% interval [low, high]{items} (interval: {methods}; "
            f"unparsed answers and errors count as {policy}); our best value per column in bold."
        )
        if mixed := self.mixed():
            names = ", ".join(c.name for c in mixed)
            text += (
                f" Warning: {names} mix runs on different item sets (see n): no value there "
                "is bold; compare only runs on the same items."
            )
        if any(r.source != OURS for r in self.rows):
            text += f" Rows marked published: numbers printed in the papers ({PUBLISHED_NOTE})."
        return text


# Layouts ----------------------------------------------------------------------------------------

_PATHMMU_SUBSETS = ("overall", "PubMed", "SocialPath", "EduContent", "Atlas", "PathCLS")
_PATHMMU_SPLITS = ("val", "test_tiny", "ALL", "test")
_SPLIT_NAMES = {"test_tiny": "Tiny", "ALL": "ALL", "val": "Val", "test": "Test", "overall": "Overall"}
_UBENCH_GROUPS = ("coarse", "fine", "cognition")
_UBENCH_VIEWS = {"all": "all data", "pathology": "pathology"}
_TASK_ORDER = {
    "spur": ("NP", "MP", "IL", "TA", "HI", "Qual", "Quant", "overall"),
    "microvqa": ("1", "2", "3", "overall"),
}


def _rank(value: str, order: Sequence[str]) -> tuple[int, str]:
    return (order.index(value), "") if value in order else (len(order), value)


def _pathmmu_columns(keys: Iterable[tuple[str, str]]) -> list[Column]:
    keys = list(keys)
    has_all = any(split == "ALL" for split, _ in keys)
    # The paper prints Tiny and ALL; the test split alone appears only when nothing pools it.
    kept = [(s, t) for s, t in keys if not (has_all and s == "test")]
    kept.sort(key=lambda k: (_rank(k[1], _PATHMMU_SUBSETS), _rank(k[0], _PATHMMU_SPLITS)))
    return [Column(f"{s}/{t}", _SPLIT_NAMES.get(t, t), _SPLIT_NAMES.get(s, s)) for s, t in kept]


def _ubench_columns(keys: Iterable[tuple[str, str]]) -> list[Column]:
    ordered = sorted(keys, key=lambda k: (_rank(k[1], tuple(_UBENCH_VIEWS)), _rank(k[0], _UBENCH_GROUPS)))
    return [Column(f"{g}/{v}", _UBENCH_VIEWS.get(v, v), g) for g, v in ordered]


def _per_task_columns(benchmark: str) -> Callable[[Iterable[tuple[str, str]]], list[Column]]:
    order = _TASK_ORDER[benchmark]

    def columns(keys: Iterable[tuple[str, str]]) -> list[Column]:
        splits: list[str] = []
        for s, _ in keys:
            if s not in splits:
                splits.append(s)
        ordered = sorted(keys, key=lambda k: (splits.index(k[0]), _rank(k[1], order)))
        return [Column(f"{s}/{t}", _SPLIT_NAMES.get(s, s), _SPLIT_NAMES.get(t, t)) for s, t in ordered]

    return columns


_LAYOUTS: dict[str, Callable[[Iterable[tuple[str, str]]], list[Column]]] = {
    "pathmmu": _pathmmu_columns,
    "ubench": _ubench_columns,
    "spur": _per_task_columns("spur"),
    "microvqa": _per_task_columns("microvqa"),
}


def item_set(result: Results) -> str:
    """A short hash naming the items a run answered (its records' item ids).

    Two runs compare only on the same items: a 40-item and a 120-item run of one benchmark (or
    two splits) get different item sets.
    """
    digest = hashlib.sha256("\n".join(sorted(r.item_id for r in result.records)).encode())
    return digest.hexdigest()[:12]


def _our_cells(result: Results) -> dict[str, Cell]:
    """A run's cells by column key: its owner rows, or (no owner aggregation) tasks and overall."""
    items = item_set(result)
    if result.owner:
        return {f"{r.split_or_group}/{r.subset_or_task}": Cell.from_row(r, items) for r in result.owner}
    cells = {r.group: Cell.from_row(r, items) for r in result.groups if r.group.startswith("task=")}
    cells["overall"] = Cell.from_row(result.overall, items)
    return cells


def _columns(benchmark: str, results: Sequence[Results], cells: Sequence[dict[str, Cell]]) -> list[Column]:
    keys: list[str] = []
    for c in cells:
        keys += [k for k in c if k not in keys]
    layout = _LAYOUTS.get(benchmark)
    if layout is not None and any(r.owner for r in results):
        return layout([(k.split("/", 1)[0], k.split("/", 1)[1]) for k in keys if "/" in k])
    tasks = sorted(k for k in keys if k.startswith("task="))
    return [Column(k, "", k.removeprefix("task=")) for k in tasks] + [Column("overall", "", "overall")]


def build_paper_tables(
    results: Sequence[Results], labels: Sequence[str], *, published: bool = False
) -> list[PaperTable]:
    """One :class:`PaperTable` per benchmark of ``results`` (benchmarks in first-seen order).

    Args:
        results: Runs, any benchmarks.
        labels: Each run's display name (:func:`scopebench.report.labels.display_names`).
        published: Add the published rows whose keys match the table's columns.

    Returns:
        The tables; our rows keep the order of ``results``.
    """
    by_bench: dict[str, list[int]] = {}
    for i, r in enumerate(results):
        by_bench.setdefault(r.benchmark, []).append(i)
    tables = []
    for bench, idx in by_bench.items():
        runs = [results[i] for i in idx]
        cells = [_our_cells(r) for r in runs]
        columns = _columns(bench, runs, cells)
        rows = [
            PaperRow(labels[i], OURS, c, len(results[i].records)) for i, c in zip(idx, cells, strict=True)
        ]
        if published:
            for p in published_leaderboard(bench, [c.key for c in columns]):
                pub = {k: Cell(v, n=None, halfwidth=hw) for k, (v, hw) in p["cells"].items()}
                rows.append(PaperRow(p["model"], f"published: {p['source_table']}", pub))
        methods = sorted({c.method for cs in cells for c in cs.values() if c.method})
        policies = sorted({run.overall.policy for run in runs if run.overall.policy})
        tables.append(PaperTable(bench, columns, rows, methods, policies))
    return tables


# Writers ----------------------------------------------------------------------------------------


def _number(x: float) -> str:
    return f"{x:.1f}"


def _cell_parts(cell: Cell | None, show_n: bool = False) -> tuple[str, str]:
    """``(value, rest)`` of a cell as printed: ``("54.2", " [50.1, 58.3]")``, ``("62.68", " ± 0.35")``.

    With ``show_n`` our cells add their item count: ``" [50.1, 58.3] n=120"``.
    """
    if cell is None or math.isnan(cell.value):
        return _MISSING, ""
    if cell.n is None:  # published: the digits the paper printed (62.68 ± 0.35), never rounded
        return str(cell.value), "" if cell.halfwidth is None else f" ± {cell.halfwidth}"
    n = f" n={cell.n}" if show_n else ""
    if math.isnan(cell.low) or math.isnan(cell.high):
        return _number(cell.value), n
    return _number(cell.value), f" [{_number(cell.low)}, {_number(cell.high)}]{n}"


def _source(table: PaperTable, row: PaperRow, mixed: bool) -> str:
    """The source column: with runs on different item sets, our rows say how many items they had."""
    if not mixed or row.source != OURS or row.n is None:
        return row.source
    return f"{OURS} (n={row.n})"


def _frame(table: PaperTable, bold: Callable[[str], str], text: Callable[[str], str]) -> pd.DataFrame:
    """The table as strings, best values wrapped by ``bold``, other text passed through ``text``."""
    import pandas as pd

    best = table.best()
    mixed = bool(table.mixed()) and not table.show_n
    body = []
    for i, row in enumerate(table.rows):
        cells = [text(row.label), text(_source(table, row, mixed))]
        for col in table.columns:
            value, rest = _cell_parts(row.cells.get(col.key), table.show_n)
            marked = bold(value) if i in best.get(col.key, set()) else value
            cells.append(marked + text(rest))
        body.append(cells)
    tuples = [("", "model"), ("", "source"), *[(c.top, c.bottom) for c in table.columns]]
    return pd.DataFrame(body, columns=pd.MultiIndex.from_tuples(tuples))


def table_to_latex(table: PaperTable) -> str:
    r"""The table as a LaTeX ``table`` with booktabs rules (pandas ``Styler.to_latex``).

    Needs ``\usepackage{booktabs}``; μ in a benchmark or model name needs a Unicode engine or
    ``\usepackage[utf8]{inputenc}`` with a μ definition.
    """
    frame = _frame(table, lambda v: rf"\textbf{{{v}}}", _tex)
    if any(c.top for c in table.columns):
        frame.columns = frame.columns.map(lambda t: (_tex(t[0]), _tex(t[1])))
    else:  # one header row: no empty spanning row above it
        frame.columns = [_tex(t[1]) for t in frame.columns]
    styler = frame.style.hide(axis="index")
    return str(
        styler.to_latex(
            hrules=True,  # booktabs \toprule, \midrule, \bottomrule
            multicol_align="c",
            column_format="ll" + "c" * len(table.columns),
            caption=_tex(table.caption()),
            label=f"tab:{table.benchmark}",
            position_float="centering",
        )
    )


def table_to_markdown(table: PaperTable) -> str:
    """The table as Markdown (pandas ``to_markdown``; bold best values), after its caption."""
    frame = _frame(table, lambda v: f"**{v}**", _md_escape)
    # Headers too: a task named "a|b" would otherwise split its column in two.
    frame.columns = ["model", "source", *(_md_escape(c.name) for c in table.columns)]
    md = frame.to_markdown(index=False, disable_numparse=True)
    return f"{table.caption()}\n\n{md}\n"


def _md_escape(text: str) -> str:
    # tabulate (under to_markdown) does not escape "|", which ends a cell in every Markdown table.
    return text.replace("|", r"\|")


def table_to_csv(table: PaperTable) -> str:
    """The table as CSV: per column its value, ``low`` and ``high`` (percent, one decimal).

    Published rows have ``±`` half-widths, not intervals: their ``low``/``high`` are empty and
    the half-width is in a ``… ±`` column. CSV carries no best mark (it is markup).
    """
    import pandas as pd

    # Columns with a published half-width get a "±" column (the published rows' notation).
    with_hw = {
        c.key
        for c in table.columns
        if any(c.key in r.cells and r.cells[c.key].halfwidth is not None for r in table.rows)
    }
    records = []
    for row in table.rows:
        rec: dict[str, object] = {"model": row.label, "source": row.source}
        for col in table.columns:
            cell = row.cells.get(col.key)
            for name, x in (
                (col.name, math.nan if cell is None else cell.value),
                (f"{col.name} low", math.nan if cell is None else cell.low),
                (f"{col.name} high", math.nan if cell is None else cell.high),
                *(
                    ((f"{col.name} n", math.nan if cell is None or cell.n is None else cell.n),)
                    if table.show_n
                    else ()
                ),
            ):
                # Ours to one decimal, as in the tables; published numbers as printed.
                rec[name] = (
                    None if math.isnan(x) else (x if cell is not None and cell.n is None else round(x, 1))
                )
            if col.key in with_hw:
                rec[f"{col.name} ±"] = None if cell is None else cell.halfwidth
        records.append(rec)
    frame = pd.DataFrame(records)
    for name in frame.columns:
        if str(name).endswith(" n"):
            frame[name] = frame[name].astype("Int64")  # counts stay integers beside empty cells
    return str(frame.to_csv(index=False, lineterminator="\n"))


def file_stem(benchmark: str) -> str:
    """A file name for a benchmark's outputs (a plugin ``path/b.py:Class`` → ``b.py_Class``)."""
    name = benchmark.replace("\\", "/").rsplit("/", 1)[-1]
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name) or "benchmark"


def write_paper_tables(tables: Sequence[PaperTable], out_dir: str | Path) -> list[Path]:
    """Write ``<benchmark>.tex``, ``.md`` and ``.csv`` of each table into ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for table in tables:
        for ext, writer in (("tex", table_to_latex), ("md", table_to_markdown), ("csv", table_to_csv)):
            path = out / f"{file_stem(table.benchmark)}.{ext}"
            path.write_text(writer(table), encoding="utf-8")
            written.append(path)
    return written

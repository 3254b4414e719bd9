"""Tables of a run's metrics: flat rows, CSV, Markdown, LaTeX (booktabs) and a rich table."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rich.markup import escape
from rich.table import Table

from scopebench.scoring.schema import LeaderboardEntry, Metrics

__all__ = [
    "format_accuracy",
    "format_interval",
    "format_judge_free",
    "format_percent",
    "format_score",
    "format_score_interval",
    "interval_note",
    "judge_note",
    "judge_used",
    "leaderboard_columns",
    "leaderboard_table",
    "localization_rows",
    "metrics_rows",
    "pairwise_rows",
    "render_metrics_table",
    "report_columns",
    "report_rows",
    "rows_to_csv",
    "rows_to_latex",
    "rows_to_markdown",
    "table_note",
    "tex_escape",
    "truncated_note",
]

_COLUMNS = (
    "section",
    "group",
    "n",
    "correct",
    "denominator",
    "accuracy",
    "ci_low",
    "ci_high",
    "ci_method",
    "unparsed",
    "errors",
    "missing_image",
    "missing_response",
    "score",
)
#: Columns added when a judge answered (``metrics["judge"]`` is set): see :func:`report_columns`.
_JUDGE_COLUMNS = ("n_judge", "judge_free_accuracy")


def judge_used(metrics: Mapping[str, Any]) -> bool:
    """Whether the run asked an answer-extraction judge (its tables then show the judge columns)."""
    return metrics.get("judge") is not None


def report_columns(metrics: Mapping[str, Any]) -> tuple[str, ...]:
    """CSV columns of a run: the standard ones, plus ``n_judge`` and ``judge_free_accuracy`` with a judge."""
    return _COLUMNS + _JUDGE_COLUMNS if judge_used(metrics) else _COLUMNS


def _isnan(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def format_percent(row: Mapping[str, Any]) -> str:
    """``"54.2%"``: the accuracy alone (tables with an interval column), ``"n/a"`` when undefined."""
    acc: Any = row.get("accuracy")
    return "n/a" if _isnan(acc) else f"{100 * float(acc):.1f}%"


def format_accuracy(row: Mapping[str, Any]) -> str:
    """``"54.2% [50.1, 58.3]"``: the accuracy and its 95% interval in percent, ``"n/a"`` when undefined.

    The interval is printed as its two bounds, never as ``± half-width``: intervals near 0% or 100%
    are asymmetric (1 of 12 is ``8.3% [1.5, 35.4]``).
    """
    interval = format_interval(row)
    return format_percent(row) + (f" {interval}" if interval and not _isnan(row.get("accuracy")) else "")


def format_interval(row: Mapping[str, Any]) -> str:
    """``"[50.1, 58.3]"`` in percent, or an empty string when there is no interval."""
    lo: Any = row.get("ci_low")
    hi: Any = row.get("ci_high")
    if _isnan(lo) or _isnan(hi):
        return ""
    return f"[{100 * float(lo):.1f}, {100 * float(hi):.1f}]"


def metrics_rows(metrics: Mapping[str, Any] | Metrics) -> list[dict[str, Any]]:
    """Every accuracy row of a metrics dict (or its typed view), flattened with a ``section`` column.

    Sections: ``overall``, ``task``, ``subset``, ``split``, ``metadata:<field>``, ``owner`` and
    ``baseline:random`` / ``baseline:frequent`` (overall, per task, owner rows).
    """
    m = metrics if isinstance(metrics, Metrics) else Metrics.from_dict(metrics)
    out: list[dict[str, Any]] = [{"section": "overall", **m.overall.to_dict()}]
    for section, rows in (("task", m.by_task), ("subset", m.by_subset), ("split", m.by_split)):
        out += [{"section": section, **r.to_dict()} for r in rows]
    for fld, field_rows in m.by_metadata.items():
        out += [{"section": f"metadata:{fld}", **r.to_dict()} for r in field_rows]
    out += [{"section": "owner", **r.to_dict()} for r in m.owner_rows]
    for name, base in m.baselines.items():
        sec = f"baseline:{name}"
        out.append({"section": sec, **base.overall.to_dict()})
        out += [{"section": sec, **r.to_dict()} for r in base.by_task]
        out += [{"section": sec, **r.to_dict()} for r in base.owner]
    return out


def localization_rows(metrics: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The GRIT localization rows (per class, per easy/hard split, overall) with section ``localization``.

    Each has ``group``, ``n``, ``score`` (mean GRIT score in ``[0, 1]``) and its 95% interval.
    """
    return [{"section": "localization", **r} for r in metrics.get("localization") or []]


def report_rows(metrics: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The rows of a run's tables: :func:`metrics_rows`, then :func:`localization_rows`."""
    return metrics_rows(metrics) + localization_rows(metrics)


def format_score(row: Mapping[str, Any]) -> str:
    """A localization row's ``"GRIT 0.742"`` (score in ``[0, 1]``), ``"n/a"`` when undefined.

    Its interval is :func:`format_score_interval` (``[0.700, 0.781]``), in its own column.
    """
    score: Any = row.get("score")
    return "n/a" if _isnan(score) else f"GRIT {float(score):.3f}"


def format_score_interval(row: Mapping[str, Any]) -> str:
    """A localization row's ``"[0.700, 0.781]"``, or an empty string when there is no interval."""
    return _score_interval(row)


def _score_interval(row: Mapping[str, Any]) -> str:
    lo: Any = row.get("ci_low")
    hi: Any = row.get("ci_high")
    if _isnan(lo) or _isnan(hi):
        return ""
    return f"[{float(lo):.3f}, {float(hi):.3f}]"


def _cell(v: Any) -> str:
    if _isnan(v):
        return ""
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def rows_to_csv(rows: Sequence[Mapping[str, Any]], columns: Sequence[str] = _COLUMNS) -> str:
    """CSV text with ``columns`` (missing values empty)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    for r in rows:
        w.writerow([_cell(r.get(c)) for c in columns])
    return buf.getvalue()


def _group_label(row: Mapping[str, Any]) -> str:
    # n and correct of a macro row are totals while its accuracy is a mean over tasks: say so.
    if str(row.get("weighting", "")).startswith("macro"):
        return f"{row['group']} (macro over tasks)"
    return str(row["group"])


def format_judge_free(row: Mapping[str, Any]) -> str:
    """A row's judge-free accuracy (judge answers counted as unparsed) as ``"41.2%"``; ``""`` if none."""
    acc: Any = row.get("judge_free_accuracy")
    return "" if _isnan(acc) else f"{100 * float(acc):.1f}%"


def _display(rows: Sequence[Mapping[str, Any]], judge: bool = False) -> list[list[str]]:
    table = _display_base(rows)
    if not judge:
        return table
    return [
        [*cells, "", ""]
        if r.get("section") == "localization"
        else [*cells, str(r.get("n_judge", 0)), format_judge_free(r)]
        for r, cells in zip(rows, table, strict=True)
    ]


def _head(judge: bool) -> list[str]:
    return _HEAD + _JUDGE_HEAD if judge else _HEAD


def _display_base(rows: Iterable[Mapping[str, Any]]) -> list[list[str]]:
    return [
        [str(r["section"]), str(r["group"]), str(r["n"]), format_score(r), _score_interval(r), "", "", "", ""]
        if r.get("section") == "localization"
        else [
            str(r.get("section", "")),
            _group_label(r),
            str(r["n"]),
            format_percent(r),
            format_interval(r),
            str(r["unparsed"]),
            str(r["errors"]),
            str(r["missing_image"]),
            str(r["missing_response"]),
        ]
        for r in rows
    ]


_HEAD = ["section", "group", "n", "accuracy", "95% CI", "unparsed", "errors", "no image", "no response"]
# With a judge: how many of the row's answers are the judge's, and the accuracy without them.
_JUDGE_HEAD = ["judge", "judge-free"]
# Never cut: these stay whole; the others wrap at spaces (a value may take two lines, never "…").
# Never wrapped: an interval split over two lines ("[34.2," / "66.8]") is easy to misread.
_KEEP_WHOLE = {"section", "n", "accuracy", "95% CI", "judge-free"}


def rows_to_markdown(
    rows: Sequence[Mapping[str, Any]], title: str = "", note: str = "", *, judge: bool = False
) -> str:
    """A GitHub-flavoured Markdown table of accuracy rows (``note`` is printed above it).

    ``judge`` adds the columns ``judge`` (answers from the judge) and ``judge-free`` (accuracy
    with those answers counted as unparsed).
    """
    head = _head(judge)
    lines = [f"## {title}", ""] if title else []
    if note:
        lines += [note, ""]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "|".join(["---", "---"] + ["---:"] * (len(head) - 2)) + "|")
    for cells in _display(rows, judge):
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"


#: LaTeX's special characters in text mode, and ``±`` (pdfLaTeX without a Unicode setup rejects it).
_TEX_ESCAPE = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "±": r"$\pm$",
}


def tex_escape(text: str) -> str:
    r"""``text`` safe in a LaTeX table cell or caption: ``\ & % $ # _ { } ~ ^`` escaped, ``±`` as ``$\pm$``.

    One character at a time, so an escape's own backslash and braces are never escaped again.
    Used by every LaTeX writer (run tables here, paper tables in :mod:`scopebench.paper.tables`).
    """
    return "".join(_TEX_ESCAPE.get(ch, ch) for ch in text)


# The old private name: cli/report.py (compare.tex) imports it.
_tex = tex_escape


def rows_to_latex(
    rows: Sequence[Mapping[str, Any]], caption: str = "", note: str = "", *, judge: bool = False
) -> str:
    """A booktabs ``tabular`` of accuracy rows (needs the LaTeX package booktabs).

    ``note`` (policy, interval method) is appended to the caption; ``judge`` adds the judge columns
    as in :func:`rows_to_markdown`.
    """
    head = _head(judge)
    lines = [r"\begin{table}[t]", r"\centering"]
    text = ". ".join(t for t in (caption, note) if t)
    if text:
        lines.append(rf"\caption{{{tex_escape(text)}}}")
    lines += [r"\begin{tabular}{ll" + "r" * (len(head) - 2) + "}", r"\toprule"]
    lines.append(" & ".join(tex_escape(h) for h in head) + r" \\")
    lines.append(r"\midrule")
    for cells in _display(rows, judge):
        lines.append(" & ".join(tex_escape(c) for c in cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(lines) + "\n"


def render_metrics_table(metrics: Mapping[str, Any], title: str | None = None) -> Table:
    """A rich table: overall, per task / subset / split, the owner aggregation and localization.

    Accuracy shows as ``54.2%`` beside its ``[lo, hi]`` 95% interval; the GRIT localization score of
    detection items (section ``localization``) as ``GRIT 0.742`` beside ``[0.700, 0.781]``. When a
    judge answered (``metrics["judge"]``), the columns ``judge`` and ``judge-free`` and a caption line
    (:func:`judge_note`) show how many answers are the judge's and the accuracy without them.

    Args:
        metrics: A run's metrics (``metrics.json``).
        title: Table title (default: the benchmark); the policy for unscorable answers is appended.
    """
    title = f"{title or metrics.get('benchmark', '')} — policy {metrics.get('policy', '')}"
    judge = judge_used(metrics)
    # Escaped: rich reads "[low, high]" (and any "[…]" in a model or judge spec) as markup and drops it.
    caption = interval_note(metrics) + ("\n" + judge_note(metrics) if judge else "")
    cut = truncated_note(metrics.get("overall") or {})
    caption += "\n" + cut if cut else ""
    table = Table(title=escape(title), caption=escape(caption))
    for h in _head(judge):
        # Numbers and section names never shrink to "…": a long group name wraps instead.
        if h == "group":
            table.add_column(h, justify="left", overflow="fold", min_width=16)
        else:
            # Count columns may wrap their header ("no / response"); their cells are short.
            table.add_column(
                h, justify="left" if h == "section" else "right", no_wrap=h in _KEEP_WHOLE, overflow="fold"
            )
    # The console shows each baseline's overall row only; the files have all of them.
    rows = [
        r
        for r in report_rows(metrics)
        if not r["section"].startswith("metadata:")
        and not (r["section"].startswith("baseline:") and r["group"] != "overall")
    ]
    if len(metrics.get("by_split", [])) <= 1:
        rows = [r for r in rows if r["section"] != "split"]
    for cells in _display(rows, judge):
        table.add_row(*(escape(str(c)) for c in cells))  # group names come from the data
    return table


def leaderboard_columns(result: Mapping[str, Any]) -> list[str]:
    """``"<split_or_group>/<subset_or_task>"`` owner columns of a comparison, in first-seen order."""
    cols: list[str] = []
    for entry in result["leaderboard"]:
        for key in LeaderboardEntry.from_dict(entry).owner_by_column():
            if key not in cols:
                cols.append(key)
    return cols


def leaderboard_table(result: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Header and string cells of the leaderboard: runs, baselines, then published rows if present.

    Columns: model, source, n, overall accuracy, its 95% CI, unparsed, errors, missing (image or
    response), then the owner aggregation's columns (``54.2% [50.1, 58.3]``). Published cells are
    quoted as their papers print them (``value ±half-width``, the papers' own notation).
    """
    cols = leaderboard_columns(result)
    head = ["model", "source", "n", "overall", "95% CI", "unparsed", "errors", "missing", *cols]
    body = []
    for e in (LeaderboardEntry.from_dict(d) for d in [*result["leaderboard"], *result.get("baselines", [])]):
        owner = e.owner_by_column()
        ov = e.overall
        body.append(
            [
                e.model,
                e.source,
                str(ov.n),
                format_percent(ov.to_dict()),
                format_interval(ov.to_dict()),
                str(ov.unparsed),
                str(ov.errors),
                str(ov.missing_image + ov.missing_response),
                *[format_accuracy(owner[c].to_dict()) if c in owner else "" for c in cols],
            ]
        )
    for p in result.get("published", []):
        cells = []
        for c in cols:
            v = p["cells"].get(c)
            cells.append("" if v is None else f"{v[0]:.1f}%" + ("" if v[1] is None else f" ±{v[1]:.1f}"))
        # The source table tells clean accuracy from a condition (noise, corruptions).
        source = f"{p['source']}: {p['source_table']}" if p.get("source_table") else p["source"]
        body.append([p["model"], source, "", "", "", "", "", "", *cells])
    return head, body


def pairwise_rows(pairs: Iterable[Mapping[str, Any]]) -> list[list[str]]:
    """String cells of the pairwise comparisons of :func:`~scopebench.scoring.compare.compare_runs`.

    Columns: model A, model B, shared items, A − B in percentage points, its 95% CI, b (A right,
    B wrong), c (A wrong, B right), McNemar p; a pair without shared items says so.
    """
    return [
        [p["model_a"], p["model_b"], "0", "no shared items", "", "", "", "no test"]
        if not p["n_common"]
        else [
            p["model_a"],
            p["model_b"],
            str(p["n_common"]),
            f"{100 * p['difference']:+.1f}",
            f"[{100 * p['ci_low']:+.1f}, {100 * p['ci_high']:+.1f}]",
            str(p["b_a_right_b_wrong"]),
            str(p["c_a_wrong_b_right"]),
            f"{p['mcnemar_p']:.3g}",
        ]
        for p in pairs
    ]


def table_note(metrics: Mapping[str, Any]) -> str:
    """One line saying the policy and the interval method of a metrics dict."""
    note = (
        f"Policy for unparsed answers, errors and missing images/responses: {metrics.get('policy', '?')} "
        f"(wrong = counted as incorrect; exclude = left out of the denominator). " + interval_note(metrics)
    )
    note += " " + judge_note(metrics) if judge_used(metrics) else ""
    cut = truncated_note(metrics.get("overall") or {})
    return note + (" " + cut if cut else "")


def truncated_note(overall: Mapping[str, Any], model: str = "") -> str:
    """One line saying how many replies the token limit cut, with the fix; ``""`` when none was.

    Args:
        overall: A run's overall accuracy row (its ``truncated`` and ``n``).
        model: The model's name, for a line among several runs' (``compare``).
    """
    cut = int(overall.get("truncated") or 0)
    if not cut:
        return ""
    who = f"{model}: " if model else ""
    return (
        f"{who}{cut} of {overall.get('n', '?')} replies were cut at the length limit (truncated) and read "
        "only by an explicit answer before the cut; raise the budget with --model-arg max_new_tokens=N "
        "(hf:) or max_tokens=N (openai:, vllm:) to let them finish."
    )


def interval_note(metrics: Mapping[str, Any]) -> str:
    """One sentence naming the 95% interval of each kind of row (each row's ``ci_method`` says it too)."""
    boot = metrics.get("bootstrap") or {}
    methods = metrics.get("intervals") or {}
    macro = methods.get("macro_average", "stratified-bootstrap-percentile")
    return (
        f"95% CI as [low, high]: {methods.get('proportion', 'wilson')} score interval for accuracies; "
        f"{macro} for macro-averages and bootstrap-percentile for GRIT scores "
        f"({boot.get('resamples', '?')} resamples, seed {boot.get('seed', '?')})."
    )


def judge_note(metrics: Mapping[str, Any]) -> str:
    """One line saying how many answers came from the answer-extraction judge, and the judge-free accuracy."""
    j = metrics.get("judge") or {}
    free = j.get("judge_free") or {}
    return (
        f"{j.get('answered', 0)} answer(s) came from the answer-extraction judge "
        f"{', '.join(j.get('specs') or [])}, asked about {j.get('asked', 0)} unparsed response(s) "
        f"({j.get('none', 0)} none, {j.get('unreadable', 0)} unreadable, {j.get('failed', 0)} failed); "
        f"judge-free accuracy (judge answers counted as unparsed): {format_accuracy(free)}; "
        "column judge-free gives it per row."
    ).replace("  ", " ")

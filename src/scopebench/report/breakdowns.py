"""SPUR's fine-grained breakdowns: MP accuracy by panel category, TA accuracy by relation count.

A third table, every task's accuracy by panel category, serves built benchmarks (whose tasks are
not SPUR's) as well.

The SPUR paper reports two breakdowns beside its seven task accuracies: the MP (morphology
perception) accuracy per category of stained panel (Cell / Tissue / Microorganism / Subcellular)
and the TA (trend analysis) accuracy as the number of cross-panel relations a question involves
grows from 1 to 4. Both are computed here from a run's records and the item summaries the run
stores (:attr:`scopebench.store.rundir.RunData.items`), with nothing re-run.

Where the groups come from (SPUR's ``dataset/`` files; the loader keeps every extra field in
``Item.metadata``):

* **panel category** — a built benchmark's ``panel_category`` (``build filter``'s ``categories``;
  ``cell`` → Cell, ``tissue`` → Tissue, ``microorganism`` → Microorganism, ``subcellular`` →
  Subcellular, others as given), else the single-panel records' ``figure_type`` field, read as given:
  ``Cell Staining Image`` → Cell, ``Tissue Staining Image`` → Tissue, ``Microorganism Staining
  Image`` → Microorganism, ``Subcellular / Organelle Staining Image`` → Subcellular. The short
  names are the paper's; the mapping from the file's strings to them is *inferred* from the
  wording (the repository documents neither). Any other ``figure_type`` is kept verbatim as its
  own group; a record without one is grouped under ``unknown``.
* **number of relations** — the multi-panel records' ``relation_number`` field (a string ``"1"``
  … ``"4"`` in the files), read as given; a missing or non-integer value is grouped under
  ``unknown``.
* **MP / TA** themselves are the loader's task mapping (:data:`scopebench.benchmarks.spur.TASK_MAP`),
  which is inferred from the tags.

Every row is an :class:`~scopebench.scoring.accuracy.AccuracyRow` (same policy, counts and 95 %
Wilson interval as the run's task rows), so no record of MP/TA is dropped: it lands in a named
group or in ``unknown``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from scopebench.items import Record
from scopebench.report.published import load_published
from scopebench.scoring.accuracy import Policy, group_rows

__all__ = [
    "PANEL_CATEGORIES",
    "UNKNOWN",
    "panel_category",
    "plot_spur_breakdowns",
    "relation_count",
    "spur_breakdowns",
    "spur_breakdowns_markdown",
    "write_spur_breakdowns",
]

#: SPUR ``figure_type`` → the paper's panel category (inferred from the wording).
PANEL_CATEGORIES: dict[str, str] = {
    "cell staining image": "Cell",
    "tissue staining image": "Tissue",
    "microorganism staining image": "Microorganism",
    "subcellular / organelle staining image": "Subcellular",
}

#: ``build filter``'s ``panel_category`` values → the paper's names (other values are kept as given).
_BUILT_CATEGORIES = {"cell": "Cell", "tissue": "Tissue", "microorganism": "Microorganism",
                     "subcellular": "Subcellular"}  # fmt: skip

#: Group of a record whose item lacks the field (or has an unusable value).
UNKNOWN = "unknown"

# The order of the paper's figures; other groups follow alphabetically.
_CATEGORY_ORDER = ("Cell", "Tissue", "Microorganism", "Subcellular")


def panel_category(metadata: Mapping[str, Any]) -> str:
    """The panel category of a SPUR single-panel item, or of a built one (see the module docstring)."""
    built = metadata.get("panel_category")
    if isinstance(built, str) and built.strip() and built != UNKNOWN:
        return _BUILT_CATEGORIES.get(built.strip().lower(), built.strip())
    raw = metadata.get("figure_type")
    if not isinstance(raw, str) or not raw.strip():
        return UNKNOWN
    text = " ".join(raw.split())
    return PANEL_CATEGORIES.get(text.lower(), text)


def relation_count(metadata: Mapping[str, Any]) -> str:
    """The number of cross-panel relations of a SPUR multi-panel item, as a string, or ``unknown``."""
    raw = metadata.get("relation_number")
    if isinstance(raw, bool) or raw is None:
        return UNKNOWN
    try:
        n = int(str(raw).strip())
    except ValueError:
        return UNKNOWN
    return str(n) if n >= 1 else UNKNOWN


def _sort_key(order: Sequence[str]) -> Any:
    def key(row: Mapping[str, Any]) -> tuple[int, Any, str]:
        label = str(row["group"]).split("=", 1)[-1]
        if label in order:
            return (0, order.index(label), label)
        if label.isdigit():
            return (1, int(label), label)
        return (3 if label == UNKNOWN else 2, 0, label)

    return key


def spur_breakdowns(
    records: Sequence[Record],
    items: Mapping[str, Mapping[str, Any]],
    *,
    policy: Policy = "wrong",
) -> dict[str, Any]:
    """MP accuracy by panel category and TA accuracy by number of relations.

    Args:
        records: A SPUR run's records.
        items: The run's item summaries by id (their ``metadata`` holds the fields).
        policy: What unscorable records count as (as in the run's metrics).

    Returns:
        ``{"policy", "mp_by_category": [row…], "ta_by_relations": [row…]}``; rows are
        :meth:`AccuracyRow.to_dict` dicts with groups ``category=<name>`` and ``relations=<n>``.
    """

    def meta(r: Record) -> Mapping[str, Any]:
        return (items.get(r.item_id) or {}).get("metadata") or {}

    mp = [r for r in records if r.task == "MP" and r.kind == "mcq"]
    every = [r for r in records if r.kind == "mcq"]
    ta = [r for r in records if r.task == "TA" and r.kind == "mcq"]
    mp_rows = [row.to_dict() for row in group_rows(mp, lambda r: panel_category(meta(r)), "category", policy)]
    ta_rows = [
        row.to_dict() for row in group_rows(ta, lambda r: relation_count(meta(r)), "relations", policy)
    ]
    all_rows = [
        row.to_dict() for row in group_rows(every, lambda r: panel_category(meta(r)), "category", policy)
    ]
    return {
        "policy": policy,
        "mp_by_category": sorted(mp_rows, key=_sort_key(_CATEGORY_ORDER)),
        "all_by_category": sorted(all_rows, key=_sort_key(_CATEGORY_ORDER)),
        "ta_by_relations": sorted(ta_rows, key=_sort_key(())),
    }


def _json_safe(obj: Any) -> Any:
    """NaN/inf → ``None`` recursively (strict JSON), as :func:`scopebench.report.json_safe`."""
    if isinstance(obj, float):
        return None if math.isnan(obj) or math.isinf(obj) else obj
    if isinstance(obj, dict):
        return {k: _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_json_safe(v) for v in obj]
    return obj


def _pct(x: Any) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * float(x):.1f}"


def spur_breakdowns_markdown(breakdowns: Mapping[str, Any], title: str = "") -> str:
    """The two breakdowns as Markdown tables, with the published values beside them."""
    pub = published_breakdowns()
    lines = [f"# {title or 'SPUR breakdowns'}", ""]
    sections = (
        ("MP accuracy by panel category", "mp_by_category", "MP"),
        ("TA accuracy by number of cross-panel relations", "ta_by_relations", "TA"),
        ("Accuracy of every task by panel category", "all_by_category", "all"),
    )
    for heading, key, task in sections:
        lines += [f"## {heading}", "", "| group | n | correct | accuracy (%) | 95% CI | published (%) |",
                  "|---|---|---|---|---|---|"]  # fmt: skip
        for r in breakdowns[key]:
            ci = "–" if r["ci_low"] is None or math.isnan(r["ci_low"]) else (
                f"[{_pct(r['ci_low'])}, {_pct(r['ci_high'])}]")  # fmt: skip
            refs = pub.get(f"{task}|{r['group']}", [])
            shown = "; ".join(f"{v:.2f} ({m})" for m, v in refs) or "–"
            lines.append(
                f"| {r['group']} | {r['n']} | {r['correct']} | {_pct(r['accuracy'])} | {ci} | {shown} |"
            )
        lines.append("")
    lines.append(
        f"Policy `{breakdowns['policy']}`; 95% Wilson score intervals. Categories come from the items' "
        "`panel_category` (a `scopebench build` output) or `figure_type`, relation counts from "
        "`relation_number` (see docs/benchmarks.md); published "
        "values are the SPUR paper's, not reproduced here."
    )
    return "\n".join(lines) + "\n"


def published_breakdowns() -> dict[str, list[tuple[str, float]]]:
    """SPUR's published breakdown values: ``"MP|category=X"`` / ``"TA|relations=n"`` → (model, %)."""
    out: dict[str, list[tuple[str, float]]] = {}
    for r in load_published("spur"):
        key = str(r["subset_or_task"])
        if "|" in key and r["value"] is not None:
            out.setdefault(key, []).append((str(r["model"]), float(r["value"])))
    return out


def plot_spur_breakdowns(breakdowns: Mapping[str, Any], stem: Path, title: str = "") -> list[Path]:
    """The paper's two figures in one: MP bars by category, TA accuracy against relation count.

    Saved as ``stem.png`` and ``stem.svg``; whiskers are the 95 % Wilson intervals.
    """
    import matplotlib.pyplot as plt

    # Here, not at the top: importing the report package (the CLI does, to print help) must not
    # load matplotlib.
    from scopebench.report.plots import save_figure

    fig, (ax_mp, ax_ta) = plt.subplots(1, 2, figsize=(9.0, 3.6))
    for ax, key, name, kind in (
        (ax_mp, "mp_by_category", "MP by panel category", "bar"),
        (ax_ta, "ta_by_relations", "TA by number of relations", "line"),
    ):
        rows = [r for r in breakdowns[key] if r["accuracy"] is not None and not math.isnan(r["accuracy"])]
        labels = [str(r["group"]).split("=", 1)[-1] for r in rows]
        acc = [100 * r["accuracy"] for r in rows]
        err = [[max(0.0, a - 100 * r["ci_low"]) for a, r in zip(acc, rows, strict=True)],
               [max(0.0, 100 * r["ci_high"] - a) for a, r in zip(acc, rows, strict=True)]]  # fmt: skip
        x = list(range(len(rows)))
        if kind == "bar":
            ax.bar(x, acc, yerr=err, capsize=3, color="#4C72B0")
        else:
            ax.errorbar(x, acc, yerr=err, capsize=3, marker="o", color="#C44E52")
        ax.set_xticks(x, labels)
        ax.set_ylim(0, 100)
        ax.set_ylabel("accuracy (%) with 95% CI")
        ax.set_title(name, fontsize=10)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return save_figure(fig, stem)


def write_spur_breakdowns(
    records: Sequence[Record],
    items: Mapping[str, Mapping[str, Any]],
    out_dir: Path,
    *,
    policy: Policy = "wrong",
    title: str = "",
) -> dict[str, Any]:
    """Write ``spur_breakdowns.json``, ``.md`` and the ``spur_breakdowns.png``/``.svg`` figure."""
    result = spur_breakdowns(records, items, policy=policy)
    out_dir.mkdir(parents=True, exist_ok=True)
    text = json.dumps(_json_safe(result), indent=2, ensure_ascii=False)
    (out_dir / "spur_breakdowns.json").write_text(text, encoding="utf-8")
    (out_dir / "spur_breakdowns.md").write_text(spur_breakdowns_markdown(result, title), encoding="utf-8")
    if result["mp_by_category"] or result["ta_by_relations"]:
        plot_spur_breakdowns(result, out_dir / "spur_breakdowns", title)
    return result

"""``scopebench probe matching`` — question–option matching baselines (PathMMU Fig. 5 right).

How far can a benchmark be answered by matching the options to the question text alone? PathMMU
answers with BERT next-sentence prediction (``nsp:`` — each option scored as the continuation of
the question); the sentence-embedding baseline (``embed:`` — cosine similarity of question and
option) asks the same question another way. This probe runs each model text only through the
engine (``OUT/runs/<model-slug>/``, so it resumes), and reports accuracy with 95% Wilson CIs
overall, per task and per subset beside

* chance: the expected accuracy of a uniform guess, the mean of ``1 / #options`` over the items;
* PathMMU's published rows for BERT/BiomedBERT with NSP and the random baseline of the same figure,
  where the benchmark has them. Those were measured on the 1,600 *text-guessable* items the
  authors filtered out, not on the released splits: compare like with like by running this probe
  on the items a shortcut filter flagged (``--items OUT/flagged.txt`` of ``probe shortcut``).

Outputs in ``OUT``: ``matching.json``, ``matching.csv``, ``matching.md`` and a bar plot
``matching.png``/``.svg``.
"""

from __future__ import annotations

import json
import logging
import math
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scopebench.engine import load_items, run_benchmark
from scopebench.errors import ScopebenchError
from scopebench.experiments.probes import DEFAULT_MATCHING_MODELS
from scopebench.experiments.probes.shortcut import model_slug, read_id_file
from scopebench.items import Item, Record
from scopebench.models import parse_spec
from scopebench.report import json_safe
from scopebench.report.published import PUBLISHED_NOTE, load_published
from scopebench.report.tables import format_interval, rows_to_csv
from scopebench.scoring.accuracy import accuracy_row
from scopebench.store import load_run

if TYPE_CHECKING:
    from scopebench.engine import RunConfig

__all__ = [
    "CHANCE_LABEL",
    "DEFAULT_MODELS",
    "chance_rows",
    "matching_rows",
    "pct",
    "published_matching_rows",
    "run_matching",
]

log = logging.getLogger(__name__)

#: PathMMU's two NSP models and the offline embedding baseline.
DEFAULT_MODELS = DEFAULT_MATCHING_MODELS
CHANCE_LABEL = "chance (1/#options)"
_OURS = "this run"


def _groupers(records: Sequence[Record]) -> list[tuple[str, Callable[[Record], str | None]]]:
    """``overall``, ``task`` and — unless it is the same partition as task — ``subset``."""
    out: list[tuple[str, Callable[[Record], str | None]]] = [
        ("overall", lambda r: "overall"),
        ("task", lambda r: r.task),
    ]
    if any(r.subset is not None and r.subset != r.task for r in records):
        out.append(("subset", lambda r: r.subset))
    return out


def matching_rows(
    records_by_model: Mapping[str, Sequence[Record]], *, seed: int, resamples: int = 1000
) -> list[dict[str, Any]]:
    """Accuracy rows (with 95% Wilson CIs) per model: overall, per task, per subset.

    Unscorable records (unparsed, error, missing) count as wrong and are counted in the row.
    """
    rows = []
    for model, records in records_by_model.items():
        recs = [r for r in records if r.kind == "mcq"]
        for section, key in _groupers(recs):
            groups: dict[str, list[Record]] = defaultdict(list)
            for r in recs:
                k = key(r)
                if k is not None:
                    groups[k].append(r)
            for k in sorted(groups):
                label = "overall" if section == "overall" else f"{section}={k}"
                row = accuracy_row(label, groups[k], "wrong", seed=seed, resamples=resamples).to_dict()
                rows.append({"model": model, "source": _OURS, "section": section, **row})
    return rows


def chance_rows(items: Sequence[Item], records: Sequence[Record]) -> list[dict[str, Any]]:
    """Expected accuracy of a uniform guess (mean of ``1/#options``) for the groups of ``records``."""
    n_opts = {it.id: len(it.choices) for it in items if it.kind == "mcq" and it.choices}
    recs = [r for r in records if r.item_id in n_opts]
    rows = []
    for section, key in _groupers(recs):
        groups: dict[str, list[float]] = defaultdict(list)
        for r in recs:
            k = key(r)
            if k is not None:
                groups[k].append(1.0 / n_opts[r.item_id])
        for k in sorted(groups):
            vals = groups[k]
            rows.append(
                {
                    "model": CHANCE_LABEL,
                    "source": "expected value",
                    "section": section,
                    "group": "overall" if section == "overall" else f"{section}={k}",
                    "n": len(vals),
                    "accuracy": sum(vals) / len(vals),
                }
            )
    return rows


def published_matching_rows(benchmark: str) -> list[dict[str, Any]]:
    """Published question–option matching rows (models "… w/ NSP") and their figure's random row.

    Values are turned from percent into fractions, like ours; each row names its source table
    and the item set it was measured on (``section``: ``published:<split_or_group>``).
    """
    rows = load_published(benchmark)
    tables = {r["source_table"] for r in rows if "nsp" in r["model"].lower()}
    out = []
    for r in rows:
        if r["source_table"] not in tables or r["value"] is None:
            continue
        if "nsp" not in r["model"].lower() and not r["model"].lower().startswith("random"):
            continue
        half = r["ci_halfwidth"]
        out.append(
            {
                "model": r["model"],
                "source": f"{PUBLISHED_NOTE} ({r['source_table']})",
                "section": f"published:{r['split_or_group']}",
                "group": r["subset_or_task"],
                "accuracy": r["value"] / 100,
                "ci_halfwidth": None if half is None else half / 100,
            }
        )
    return out


def _restrict(base: RunConfig, items_file: str | Path) -> tuple[RunConfig, dict[str, Any]]:
    """Evaluate only the ids listed in ``items_file`` (by excluding every other item)."""
    wanted = read_id_file(items_file)
    _, universe = load_items(replace(base, limit=None, exclude_ids=frozenset()))
    ids = {it.id for it in universe}
    unknown = [i for i in wanted if i not in ids]
    if len(unknown) == len(wanted):
        raise ScopebenchError(
            f"none of the {len(wanted)} ids in {items_file} is an item of {base.benchmark} "
            f"({base.split or 'default split'}); item ids look like {next(iter(sorted(ids)), '?')!r}"
        )
    if unknown:
        log.warning(
            "%d id(s) of %s are not items of this benchmark (e.g. %r)", len(unknown), items_file, unknown[0]
        )
    exclude = frozenset(ids - set(wanted)) | base.exclude_ids
    info = {"file": str(items_file), "listed": len(wanted), "unknown": len(unknown)}
    return replace(base, exclude_ids=exclude), info


def run_matching(
    base: RunConfig,
    models: Sequence[str],
    out: str | Path,
    *,
    items_file: str | Path | None = None,
    resamples: int = 1000,
    fresh: bool = False,
    retry_errors: bool = False,
) -> dict[str, Any]:
    """Run each matching model text only and write the report.

    Args:
        base: Shared run settings; ``model`` is replaced by each of ``models``, ``no_image`` forced.
        models: Model specs (``nsp:…``, ``embed:…``, or any other backend), no repeats.
        out: Output folder (runs under ``out/runs/<slug>/``).
        items_file: Evaluate only the item ids listed there (e.g. a shortcut filter's
            ``flagged.txt``).
        resamples: Bootstrap resamples per interval (seeded with ``base.seed``).
        fresh: Discard stored results of a different configuration instead of refusing.
        retry_errors: Redo items whose stored record is an error.

    Returns:
        The content of ``matching.json``.
    """
    if not models:
        raise ScopebenchError("give at least one model (--models nsp:…,embed:default)")
    if len(set(models)) != len(models):
        raise ScopebenchError("a model is listed twice in --models; list each once")
    parsed = {spec: parse_spec(spec) for spec in models}  # once: a typo fails before any run
    base = replace(base, no_image=True)
    restriction = None
    if items_file is not None:
        base, restriction = _restrict(base, items_file)
    out = Path(out)
    _, items = load_items(base)
    taken: set[str] = set()
    records: dict[str, list[Record]] = {}
    runs = []
    for spec in models:
        run_dir = out / "runs" / model_slug(spec, taken)
        cfg = replace(base, model=spec)
        res = run_benchmark(cfg, run_dir, fresh=fresh, retry_errors=retry_errors, model_spec=parsed[spec])
        run = load_run(run_dir)
        records[spec] = run.records
        runs.append(
            {
                "model": spec,
                "run_dir": str(run_dir),
                "mode": run.config.get("mode"),
                "n_items": res.n_items,
                "n_new": res.n_new,
            }
        )
    first = next(iter(records.values()))
    result = {
        "benchmark": base.benchmark,
        "data": base.data,
        "split": base.split,
        "limit": base.limit,
        "seed": base.seed,
        "items_filter": restriction,
        "intervals": {"accuracy": "wilson"},
        "bootstrap": {
            "method": "bootstrap-percentile",
            "confidence": 0.95,
            "resamples": resamples,
            "seed": base.seed,
        },
        "runs": runs,
        "rows": matching_rows(records, seed=base.seed, resamples=resamples),
        "chance": chance_rows(items, first),
        "published": published_matching_rows(base.benchmark),
    }
    _write_outputs(out, result)
    return result


# Outputs -------------------------------------------------------------------------------------------

_COLUMNS = (
    "model",
    "source",
    "section",
    "group",
    "n",
    "correct",
    "accuracy",
    "ci_low",
    "ci_high",
    "ci_halfwidth",
    "ci_method",
    "unparsed",
    "errors",
    "missing_image",
    "missing_response",
)


def _nan(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def pct(x: Any) -> str:
    """A proportion as a percentage with one decimal; empty for an undefined value."""
    return "" if _nan(x) else f"{100 * float(x):.1f}"


def _all_rows(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [*result["rows"], *result["chance"], *result["published"]]


def _write_outputs(out: Path, result: dict[str, Any]) -> None:

    out.mkdir(parents=True, exist_ok=True)
    (out / "matching.json").write_text(
        json.dumps(json_safe(result), indent=2, ensure_ascii=False), encoding="utf-8"
    )
    (out / "matching.csv").write_text(rows_to_csv(_all_rows(result), _COLUMNS), encoding="utf-8")
    (out / "matching.md").write_text(_markdown(result), encoding="utf-8")
    _plot(out / "matching", result)


def _markdown(result: Mapping[str, Any]) -> str:

    split = result["split"] or "default split"
    lines = [f"# Question–option matching — {result['benchmark']} ({split})", ""]
    lines.append(
        "Text only: each model chooses the option that best matches the question, without the image. "
        "Accuracy in %, 95% Wilson score interval [low, high]; "
        "unparsed answers and errors count as wrong."
    )
    filt = result.get("items_filter")
    if filt:
        lines.append(
            f"Items restricted to the {filt['listed']} ids listed in `{filt['file']}` "
            f"({filt['unknown']} of them not in this benchmark)."
        )
    lines += [
        "",
        "| model | source | group | n | accuracy | 95% CI | unparsed | errors |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in result["rows"]:
        ci = format_interval(r)
        errors = r["errors"] + r["missing_image"] + r["missing_response"]
        lines.append(f"| {r['model']} | {r['source']} | {r['group']} | {r['n']} | {pct(r['accuracy'])} | "
                     f"{ci} | {r['unparsed']} | {errors} |")  # fmt: skip
    for r in result["chance"]:
        lines.append(
            f"| {r['model']} | {r['source']} | {r['group']} | {r['n']} | {pct(r['accuracy'])} | | | |"
        )
    by_table: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for r in result["published"]:
        by_table[r["source"]].append(r)
    for source, prows in by_table.items():
        lines += ["", f"{source[:1].upper()}{source[1:]}; *set* is the item set it was measured on:", ""]
        lines += ["| model | set | group | accuracy |", "|---|---|---|---:|"]
        for r in prows:
            acc = pct(r["accuracy"]) + ("" if _nan(r["ci_halfwidth"]) else f" ±{pct(r['ci_halfwidth'])}")
            lines.append(
                f"| {r['model']} | {r['section'].removeprefix('published:')} | {r['group']} | {acc} |"
            )
    lines += ["", "Runs: " + ", ".join(f"`{r['run_dir']}`" for r in result["runs"]), ""]
    return "\n".join(lines)


def _plot(stem: Path, result: Mapping[str, Any]) -> None:
    """Grouped bars (one per model) with CI whiskers per group; chance as a black tick."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from scopebench.report.plots import save_figure

    rows = result["rows"]
    sections = {r["section"] for r in rows}
    shown = "subset" if "subset" in sections else "task"
    groups = ["overall", *sorted({r["group"] for r in rows if r["section"] == shown})]
    models = [r["model"] for r in result["runs"]]
    cell = {(r["model"], r["group"]): r for r in rows}
    chance = {r["group"]: r["accuracy"] for r in result["chance"]}
    width = 0.8 / max(1, len(models))
    # + 2 inches for the legend, which sits right of the axes so it never covers a (100%) bar.
    fig, ax = plt.subplots(figsize=(max(4.5, 1.1 * len(groups) * max(1, len(models)) ** 0.5 + 2.5) + 2, 3.8))
    for j, m in enumerate(models):
        xs, ys, lo, hi = [], [], [], []
        for i, g in enumerate(groups):
            r = cell.get((m, g))
            if r is None or _nan(r["accuracy"]):
                continue
            a = 100 * r["accuracy"]
            xs.append(i - 0.4 + width * (j + 0.5))
            ys.append(a)
            lo.append(0.0 if _nan(r["ci_low"]) else max(0.0, a - 100 * r["ci_low"]))
            hi.append(0.0 if _nan(r["ci_high"]) else max(0.0, 100 * r["ci_high"] - a))
        ax.bar(xs, ys, width=width, yerr=[lo, hi], capsize=2, label=m)
    for i, g in enumerate(groups):
        if g in chance:
            # Only the first tick is labelled, so the legend lists chance once.
            label = CHANCE_LABEL if i == 0 else "_nolegend_"
            ax.hlines(100 * chance[g], i - 0.45, i + 0.45, colors="k", linestyles="--", lw=1, label=label)
    ax.set_xticks(range(len(groups)), [g.split("=", 1)[-1] for g in groups], rotation=30, ha="right")
    ax.set_ylabel("accuracy (%) with 95% CI")
    ax.set_ylim(0, 100)
    ax.set_title(f"question–option matching, text only — {result['benchmark']}", fontsize=10)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    fig.tight_layout()
    save_figure(fig, stem)

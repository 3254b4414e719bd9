"""What every probe shares: run a condition through the engine, summarise it, write the report.

A probe is a set of *conditions* (clean, ``corrupt:jpeg:3``, no image, swapped questions,
rotation 2…). Each condition is an ordinary run of :func:`~scopebench.engine.run_benchmark` into
``OUT/<condition>/``, so it resumes and caches like any run and carries its own provenance. The
probe then reads the conditions' records back, computes its numbers from them (accuracy with its
95% Wilson score interval from :mod:`scopebench.scoring.intervals`, paired-bootstrap intervals for
differences) and writes ``OUT/<probe>.json`` / ``.csv`` / ``.md`` and its plots (PNG and SVG),
with the published rows of the seed papers beside ours where they exist.

Unscorable records (unparsed, error, missing image…) count as wrong, as in every headline number.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from scopebench.engine import RunConfig, run_benchmark
from scopebench.errors import ConfigMismatchError
from scopebench.items import Record
from scopebench.models import Backend, ModelSpec, load_model, parse_spec
from scopebench.report import json_safe
from scopebench.report.published import PUBLISHED_NOTE, load_published
from scopebench.scoring.accuracy import accuracy_row
from scopebench.scoring.bootstrap import DEFAULT_RESAMPLES, paired_diff_ci
from scopebench.store import RunData, load_run
from scopebench.store.rundir import CONFIG_FILE
from scopebench.transforms import transform_hook

__all__ = [
    "PAPER_BENCHMARK",
    "Condition",
    "ProbeRun",
    "accuracy_summary",
    "by_group",
    "check_condition_dir",
    "compare_conditions",
    "condition_dir",
    "drop_summary",
    "fmt_acc",
    "fmt_pct",
    "markdown_table",
    "n_options",
    "paper_source",
    "plot_grouped_bars",
    "published_rows",
    "read_records",
    "report_header",
    "run_condition",
    "write_report",
]


@dataclass(frozen=True, slots=True)
class Condition:
    """One evaluation setting of a probe.

    Attributes:
        name: Folder name under the probe's output (``clean``, ``jpeg-3``, ``rotate-1``…).
        transform: Item transform ``NAME[:ARG]`` (see :mod:`scopebench.transforms`).
        no_image: Send prompts without images.
    """

    name: str
    transform: str | None = None
    no_image: bool = False


@dataclass(slots=True)
class ProbeRun:
    """What a probe needs to run its conditions.

    Attributes:
        config: The base run configuration (the user's ``--bench``, ``--model``, … options).
        out: The probe's output folder.
        fresh: Discard stored results of a different configuration in a condition's folder.
        retry_errors: Redo items whose stored record is an error.
        resamples: Bootstrap resamples per interval (seeded with ``config.seed``).
    """

    config: RunConfig
    out: Path
    fresh: bool = False
    retry_errors: bool = False
    resamples: int = DEFAULT_RESAMPLES
    # One model per distinct set of options, shared by every condition that uses it: a full
    # corruptions probe is 41 runs, and reloading a 7B model for each would dwarf the work.
    _backends: dict[str, Backend] = field(default_factory=dict, repr=False)
    # Each model spec string parsed once for the whole probe: its checks, models and runs share it.
    _specs: dict[str, ModelSpec] = field(default_factory=dict, repr=False)

    def model_spec(self, model: str) -> ModelSpec:
        """``model`` parsed (once per probe; the conditions' runs reuse it through their backend)."""
        if model not in self._specs:
            self._specs[model] = parse_spec(model)
        return self._specs[model]

    def backend_for(self, config: RunConfig) -> Backend:
        """The (cached) model for ``config``: built on first use with the run's options."""
        key = repr((config.model, config.model_options()))
        if key not in self._backends:
            self._backends[key] = load_model(self.model_spec(config.model), config.model_options())
        return self._backends[key]

    def close(self) -> None:
        """Release every model the probe loaded."""
        for backend in self._backends.values():
            backend.close()
        self._backends.clear()

    def __enter__(self) -> ProbeRun:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def seed(self) -> int:
        """The run seed (also the bootstrap seed)."""
        return self.config.seed


def condition_dir(out: Path, condition: Condition) -> Path:
    """The run directory of ``condition`` under ``out``."""
    return out / condition.name


# Run settings that run.json stores verbatim from the RunConfig, so a stored condition can be
# compared with the new one before any data or model loading (the engine's full identity check,
# which needs the loaded model, still runs afterwards).
_CHEAP_IDENTITY = (
    "benchmark",
    "split",
    "limit",
    "transform",
    "strategy",
    "seed",
    "model",
    "protocol",
    "no_image",
)


def check_condition_dir(config: RunConfig, run_dir: Path) -> None:
    """Refuse early when ``run_dir`` holds a run of a different model or settings.

    The engine makes the same check, but only after loading the model (seconds to minutes of
    weights): this one reads ``run.json`` alone.

    Args:
        config: The condition's run configuration.
        run_dir: The condition's run directory.

    Raises:
        ConfigMismatchError: When the stored run differs in one of the settings compared.
    """
    cfg_path = run_dir / CONFIG_FILE
    if not cfg_path.is_file():
        return
    try:
        old = json.loads(cfg_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return  # unreadable: the engine's own check reports it
    new = {k: getattr(config, k) for k in _CHEAP_IDENTITY}
    if config.mode is not None:
        new["mode"] = config.mode
    diffs = [
        f"  {k}: stored {old.get(k)!r}, now {v!r}"
        for k, v in new.items()
        if json.dumps(old.get(k), sort_keys=True) != json.dumps(v, sort_keys=True)
    ]
    if diffs:
        raise ConfigMismatchError(
            f"the run directory {run_dir} holds results of a different configuration:\n"
            + "\n".join(diffs)
            + "\nProbes share a folder's `clean` condition only for the same model and settings: "
            "use a separate --out per model (e.g. probes/demo-frequent, probes/demo-embed), "
            "or pass --fresh to discard the stored results."
        )


def run_condition(probe: ProbeRun, condition: Condition) -> RunData:
    """Run (or resume) ``condition`` into ``OUT/<condition.name>/`` and read it back.

    Raises:
        ConfigMismatchError: When the condition's folder holds a run of another model or other
            settings (and not ``probe.fresh``), before the model is loaded.
    """
    config = replace(
        probe.config,
        transform=condition.transform,
        no_image=condition.no_image or probe.config.no_image,
    )
    if not probe.fresh:
        check_condition_dir(config, condition_dir(probe.out, condition))
    result = run_benchmark(
        config,
        condition_dir(probe.out, condition),
        fresh=probe.fresh,
        retry_errors=probe.retry_errors,
        backend=probe.backend_for(config),
        item_hook=transform_hook(config.transform, config.seed),
    )
    return load_run(result.run_dir)


def read_records(run_dir: Path) -> list[Record]:
    """The multiple-choice records of a run directory (from the store)."""
    return [r for r in load_run(run_dir).records if r.kind == "mcq"]


def accuracy_summary(records: Sequence[Record], *, seed: int, resamples: int) -> dict[str, Any]:
    """``n``, ``correct``, ``accuracy`` and its 95% interval, with unparsed/error counts."""
    row = accuracy_row("", records, "wrong", seed=seed, resamples=resamples)
    return {
        "n": row.n,
        "correct": row.correct,
        "accuracy": row.accuracy,
        "ci_low": row.ci_low,
        "ci_high": row.ci_high,
        "ci_method": row.ci_method,
        "unparsed": row.unparsed,
        "errors": row.errors + row.missing_image + row.missing_response,
    }


def drop_summary(
    reference: Sequence[Record], changed: Sequence[Record], *, seed: int, resamples: int
) -> dict[str, Any]:
    """Accuracy drop ``reference − changed`` over the items both hold, with a paired 95% interval.

    The point estimate is over the common items (normally every item: conditions of a probe run
    the same items).
    """
    ref = {r.item_id: bool(r.correct) for r in reference}
    chg = {r.item_id: bool(r.correct) for r in changed}
    common = sorted(ref.keys() & chg.keys())
    a = [ref[i] for i in common]
    b = [chg[i] for i in common]
    iv = paired_diff_ci(a, b, seed=seed, resamples=resamples)
    drop = (sum(a) - sum(b)) / len(common) if common else float("nan")
    return {"n_common": len(common), "drop": drop, "drop_ci_low": iv.low, "drop_ci_high": iv.high}


def by_group(records: Iterable[Record]) -> dict[tuple[str, str], list[Record]]:
    """Records by ``(split, subset)`` (task where there is no subset), plus ``(split, "overall")``.

    With several splits, ``("all", "overall")`` pools them.
    """
    out: dict[tuple[str, str], list[Record]] = defaultdict(list)
    recs = list(records)
    for r in recs:
        out[(r.split, r.subset or r.task)].append(r)
        out[(r.split, "overall")].append(r)
    if len({r.split for r in recs}) > 1:
        out[("all", "overall")] = recs
    return dict(sorted(out.items(), key=lambda kv: (kv[0][0], kv[0][1] == "overall", kv[0][1])))


def fmt_pct(x: Any) -> str:
    """``0.4567`` → ``"45.7"``; blank for missing values."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    return f"{100 * float(x):.1f}"


def fmt_acc(row: Mapping[str, Any], key: str = "accuracy") -> str:
    """``"45.7 [40.1, 51.0]"`` from a row's accuracy and interval."""
    acc = fmt_pct(row.get(key))
    lo, hi = (
        fmt_pct(row.get(f"{key}_ci_low", row.get("ci_low"))),
        fmt_pct(row.get(f"{key}_ci_high", row.get("ci_high"))),
    )
    return f"{acc} [{lo}, {hi}]" if acc and lo and hi else acc


def published_rows(
    benchmark: str,
    source: str,
    *,
    splits: Iterable[str] | None = None,
    model_filter: Callable[[str], bool] | None = None,
) -> list[dict[str, Any]]:
    """Published rows of ``benchmark`` whose source table contains ``source`` (percent values).

    Args:
        benchmark: Benchmark name (only PathMMU's analyses are published).
        source: A substring of ``source_table`` (``"Table 2"``, ``"Table 3"``, ``"Fig. 5"``…).
        splits: Keep only these ``split_or_group`` values, when given.
        model_filter: Keep only models it accepts, when given.

    Returns:
        Rows with ``model``, ``source_table``, ``split_or_group``, ``subset_or_task``, ``value``
        (percent), ``ci_halfwidth`` and ``note`` = :data:`PUBLISHED_NOTE`.
    """
    wanted = set(splits) if splits is not None else None
    out = []
    for r in load_published(benchmark):
        if source not in r["source_table"] or r["value"] is None:
            continue
        if wanted is not None and r["split_or_group"] not in wanted:
            continue
        if model_filter is not None and not model_filter(r["model"]):
            continue
        out.append({**r, "note": PUBLISHED_NOTE})
    return out


def markdown_table(head: Sequence[str], body: Sequence[Sequence[Any]]) -> str:
    """A GitHub Markdown table."""
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |" for row in body]
    return "\n".join(lines) + "\n"


def _csv(columns: Sequence[str], rows: Sequence[Mapping[str, Any]]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    for r in rows:
        w.writerow(["" if r.get(c) is None else r.get(c) for c in columns])
    return buf.getvalue()


def _published_markdown(published: Sequence[Mapping[str, Any]]) -> str:
    if not published:
        return ""
    cols: list[str] = []
    models: dict[tuple[str, str], dict[str, str]] = {}
    for p in published:
        col = f"{p['split_or_group']}/{p['subset_or_task']}"
        if col not in cols:
            cols.append(col)
        models.setdefault((p["model"], p["source_table"]), {})[col] = f"{p['value']:.1f}"
    body = [[m, src, *(cells.get(c, "") for c in cols)] for (m, src), cells in models.items()]
    return f"\n### Published ({PUBLISHED_NOTE}; percent)\n\n" + markdown_table(
        ["model", "source", *cols], body
    )


def write_report(
    out: Path,
    stem: str,
    report: Mapping[str, Any],
    *,
    columns: Sequence[str],
    rows: Sequence[Mapping[str, Any]],
    display: tuple[Sequence[str], Sequence[Sequence[Any]]],
    title: str,
    notes: Sequence[str] = (),
) -> list[Path]:
    """Write ``stem.json`` (the whole report), ``stem.csv`` (``rows``) and ``stem.md``.

    Args:
        out: The probe's output folder.
        stem: File stem (the probe's name).
        report: Everything the probe computed (NaN becomes ``null``).
        columns: CSV columns, in order.
        rows: CSV rows (raw numbers: fractions, not percent).
        display: Header and cells of the Markdown table (formatted strings).
        title: Markdown heading.
        notes: Lines added under the table (what was measured, caveats).
    """
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{stem}.json", out / f"{stem}.csv", out / f"{stem}.md"]
    paths[0].write_text(json.dumps(json_safe(dict(report)), indent=2, ensure_ascii=False), encoding="utf-8")
    paths[1].write_text(_csv(columns, json_safe(list(rows))), encoding="utf-8")
    md = f"# {title}\n\n" + markdown_table(*display)
    if notes:
        md += "\n" + "\n".join(f"- {n}" for n in notes) + "\n"
    md += _published_markdown(report.get("published", []))
    paths[2].write_text(md, encoding="utf-8")
    return paths


def plot_grouped_bars(
    groups: Sequence[str],
    series: Mapping[str, Sequence[Mapping[str, Any]]],
    stem: Path,
    *,
    title: str,
    reference: Mapping[str, float] | None = None,
    group_reference: Mapping[str, Sequence[float]] | None = None,
) -> list[Path]:
    """Grouped bars of accuracy (%) with 95% CI whiskers, one bar per series in each group.

    The legend sits to the right of the axes, so it never hides a bar (a 100% bar included).

    Args:
        groups: Group labels on the x axis.
        series: Series name → one row per group (``accuracy``, ``ci_low``, ``ci_high``).
        stem: Output path without suffix (``.png`` and ``.svg`` are written).
        title: Plot title.
        reference: Optional dashed horizontal lines across the whole plot (label → accuracy
            fraction), for a value shared by every group.
        group_reference: Optional per-group values (label → one accuracy fraction per group,
            NaN for none), each drawn as a short black dashed line across its group's bars, e.g.
            chance where groups have different numbers of options.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from scopebench.report.plots import save_figure

    x = np.arange(len(groups))
    width = 0.8 / max(1, len(series))
    fig, ax = plt.subplots(figsize=(max(4.5, 1.1 * len(groups) + 2) + 1.8, 3.6))  # + legend
    for k, (name, rows) in enumerate(series.items()):
        acc = np.array([100 * float(r["accuracy"]) for r in rows])
        lo = np.array([100 * float(r["ci_low"]) for r in rows])
        hi = np.array([100 * float(r["ci_high"]) for r in rows])
        err = np.nan_to_num(np.vstack([np.clip(acc - lo, 0, None), np.clip(hi - acc, 0, None)]))
        ax.bar(x + (k - (len(series) - 1) / 2) * width, acc, width, yerr=err, capsize=3, label=name)
    for label, value in (reference or {}).items():
        ax.axhline(100 * value, ls="--", lw=1, color="grey")
        ax.text(-0.45, 100 * value, label, va="bottom", ha="left", fontsize=8, color="grey")
    for label, values in (group_reference or {}).items():
        first = True
        for i, value in enumerate(values):
            if value is None or math.isnan(value):
                continue
            # Only the first segment is labelled, so the legend lists the reference once.
            ax.hlines(100 * value, i - 0.45, i + 0.45, colors="k", linestyles="--", lw=1.2,
                      label=label if first else "_nolegend_")  # fmt: skip
            first = False
    ax.set_xticks(x, list(groups), rotation=30, ha="right")
    ax.set_ylabel("accuracy (%) with 95% CI")
    ax.set_ylim(0, 100)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    fig.tight_layout()
    return save_figure(fig, stem)


#: The benchmark whose paper publishes the probes' analyses (its tables are cited only for it).
PAPER_BENCHMARK = "pathmmu"


def paper_source(benchmark: str, source: str) -> str:
    """`` (PathMMU <source>)`` for PathMMU, else ``""``: a title cites the paper's table only there.

    Args:
        benchmark: The probe's benchmark name.
        source: The paper's table or figure (``"Table 1"``, ``"§4.2"``, ``"Fig. 5"``…).
    """
    return f" (PathMMU {source})" if benchmark.lower() == PAPER_BENCHMARK else ""


def n_options(run: RunData, item_id: str) -> int:
    """How many options item ``item_id`` had in ``run`` (0 when unknown)."""
    return len(run.items.get(item_id, {}).get("choices") or [])


def compare_conditions(
    reference: Sequence[Record],
    changed: Sequence[Record],
    *,
    seed: int,
    resamples: int,
    labels: tuple[str, str],
    chance: Callable[[Sequence[Record]], float] | None = None,
) -> list[dict[str, Any]]:
    """One row per ``(split, subset)`` group: both accuracies with CIs and the paired drop.

    Args:
        reference: Records of the reference condition (clean, with image).
        changed: Records of the changed condition (noise, no image, swapped).
        seed: Bootstrap seed.
        resamples: Bootstrap resamples.
        labels: Names of the two conditions; row keys are ``<label>_accuracy``,
            ``<label>_ci_low``… ``drop`` is reference minus changed.
        chance: Optional function giving the chance accuracy of a group's records.
    """
    ref_groups = by_group(reference)
    chg_groups = by_group(changed)
    rows = []
    for (split, group), ref in ref_groups.items():
        chg = chg_groups.get((split, group), [])
        row: dict[str, Any] = {"split": split, "group": group}
        for label, recs in zip(labels, (ref, chg), strict=True):
            s = accuracy_summary(recs, seed=seed, resamples=resamples)
            row.update({f"{label}_{k}": v for k, v in s.items() if k != "ci_method"})
        row.update(drop_summary(ref, chg, seed=seed, resamples=resamples))
        if chance is not None:
            row["chance"] = chance(ref)
        rows.append(row)
    return rows


def report_header(probe: ProbeRun, name: str, conditions: Sequence[Condition]) -> dict[str, Any]:
    """The common head of a probe report: what ran, with which settings, and where."""
    cfg = probe.config
    return {
        "probe": name,
        "benchmark": cfg.benchmark,
        "model": cfg.model,
        "split": cfg.split,
        "limit": cfg.limit,
        "seed": cfg.seed,
        "intervals": {"accuracy": "wilson", "difference": "paired-bootstrap-percentile"},
        "bootstrap": {
            "method": "bootstrap-percentile",
            "confidence": 0.95,
            "resamples": probe.resamples,
            "seed": cfg.seed,
        },
        "policy": "unscorable records count as wrong",
        "conditions": {
            c.name: {"run_dir": str(probe.out / c.name), "transform": c.transform, "no_image": c.no_image}
            for c in conditions
        },
    }

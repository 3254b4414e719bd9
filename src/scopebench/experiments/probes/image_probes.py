"""Image probes: ``corruptions`` (PathMMU Table 2, Fig. 4), ``noise`` (Table 3), ``no-image`` (Table 1).

Each runs its conditions through the engine into ``OUT/<condition>/`` (``clean`` is shared by all
of them, so pointing several probes at one ``--out`` evaluates the clean benchmark once) and writes
``OUT/<probe>.json|csv|md`` and plots. See ``docs/probes.md``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from scopebench.engine import load_items
from scopebench.errors import ImageLoadError, ScopebenchError
from scopebench.experiments.probes.base import (
    PAPER_BENCHMARK,
    Condition,
    ProbeRun,
    accuracy_summary,
    compare_conditions,
    drop_summary,
    fmt_acc,
    fmt_pct,
    paper_source,
    plot_grouped_bars,
    published_rows,
    report_header,
    run_condition,
    write_report,
)
from scopebench.items import Item, Record
from scopebench.transforms.image import NOISE_MEAN, NOISE_STD, canonical_corruption, corrupt_items

__all__ = [
    "corruptions_probe",
    "gallery",
    "levels_label",
    "no_image_probe",
    "noise_probe",
    "parse_levels",
]

log = logging.getLogger(__name__)

CLEAN = Condition("clean")
# Backend modes that never read pixels (baselines, text matching, replayed answers).
_IMAGE_BLIND_MODES = ("baseline", "text-matching", "replay")
# Model schemes that score an image against captions and cannot run without the image.
_CONTRASTIVE_SCHEMES = ("clip", "openclip")


def _mcq(records: Sequence[Record]) -> list[Record]:
    return [r for r in records if r.kind == "mcq"]


def _splits(records: Sequence[Record]) -> list[str]:
    return sorted({r.split for r in records})


# Corruptions -------------------------------------------------------------------------------------


def parse_levels(text: str) -> list[int]:
    """``"1,3,5"`` → ``[1, 3, 5]`` (level 0, the clean run, is always evaluated).

    Raises:
        ScopebenchError: For levels outside 0..5 or a malformed list.
    """
    try:
        levels = sorted({int(t) for t in text.split(",") if t.strip()})
    except ValueError:
        raise ScopebenchError(f"--levels takes comma-separated integers 0..5, got {text!r}") from None
    if not levels or any(lv not in range(6) for lv in levels):
        raise ScopebenchError(f"--levels takes comma-separated integers 0..5, got {text!r}")
    return [lv for lv in levels if lv != 0]


def corruptions_probe(
    probe: ProbeRun, corruptions: Sequence[str], levels: Sequence[int], gallery_item: str | None = None
) -> dict[str, Any]:
    """Accuracy per corruption × level with CIs and the paired drop from the clean run.

    Args:
        probe: The base configuration and output folder.
        corruptions: Corruption names (see :data:`~scopebench.transforms.image.CORRUPTIONS`).
        levels: Severity levels 1..5 to run (level 0 is the clean run).
        gallery_item: Item id shown in the gallery (default: the first item with a readable image).

    Returns:
        The report dict (also written to ``OUT/corruptions.json``).
    """
    names = [canonical_corruption(c) for c in corruptions]
    conditions = [CLEAN] + [Condition(f"{n}-{lv}", f"corrupt:{n}:{lv}") for n in names for lv in levels]
    shown = _gallery_items(probe, gallery_item)  # before any model work: a typo fails fast
    clean = _mcq(run_condition(probe, CLEAN).records)
    clean_summary = accuracy_summary(clean, seed=probe.seed, resamples=probe.resamples)
    rows: list[dict[str, Any]] = []
    per_corruption: list[dict[str, Any]] = []
    for name in names:
        corruption_rows = _corruption_rows(probe, name, levels, clean, clean_summary)
        rows += corruption_rows
        accs = [r["accuracy"] for r in corruption_rows[1:]]
        mean = sum(accs) / len(accs) if accs else float("nan")
        per_corruption.append(
            {
                "corruption": name,
                "levels": list(levels),
                "mean_accuracy": mean,
                "mean_drop": clean_summary["accuracy"] - mean,
            }
        )
    report = report_header(probe, "corruptions", conditions)
    overall_mean = (
        sum(p["mean_accuracy"] for p in per_corruption) / len(per_corruption)
        if per_corruption
        else float("nan")
    )
    report.update(
        clean=clean_summary,
        rows=rows,
        per_corruption=per_corruption,
        mean_over_corruptions=overall_mean,
        published=published_rows(probe.config.benchmark, "Table 2", splits=_splits(clean)),
    )
    _write_corruption_report(probe, report, levels, names)
    if shown:
        try:
            path = gallery(shown[0], names, [0, *levels], probe.out / "corruptions_gallery.png", probe.seed)
            report["files"].append(str(path))
        except ImageLoadError as exc:  # the numbers stand; only the illustration is missing
            log.warning("no corruption gallery: %s", exc)
    else:
        log.warning("no corruption gallery: no item has a readable image")
    return report


def _corruption_rows(
    probe: ProbeRun, name: str, levels: Sequence[int], clean: list[Record], clean_summary: dict[str, Any]
) -> list[dict[str, Any]]:
    """One corruption's rows: the clean run (level 0), then each level's run with its paired drop."""
    kw = {"seed": probe.seed, "resamples": probe.resamples}
    rows = [
        {"corruption": name, "level": 0, "condition": "clean", **clean_summary}
        | {"drop": 0.0, "drop_ci_low": 0.0, "drop_ci_high": 0.0, "n_common": len(clean)}
    ]
    for lv in levels:
        cond = Condition(f"{name}-{lv}", f"corrupt:{name}:{lv}")
        recs = _mcq(run_condition(probe, cond).records)
        rows.append(
            {"corruption": name, "level": lv, "condition": cond.name, **accuracy_summary(recs, **kw)}
            | drop_summary(clean, recs, **kw)
        )
    return rows


def _write_corruption_report(
    probe: ProbeRun, report: dict[str, Any], levels: Sequence[int], names: Sequence[str]
) -> None:
    """The display table (accuracy per level, mean, drop), notes, report files and curves."""
    rows, per_corruption, clean_summary = report["rows"], report["per_corruption"], report["clean"]
    overall_mean = report["mean_over_corruptions"]
    cols = ["corruption", "level", "condition", "n", "correct", "accuracy", "ci_low", "ci_high", "drop",
            "drop_ci_low", "drop_ci_high", "unparsed", "errors"]  # fmt: skip
    mean_head = f"mean {levels_label(levels)}"
    on_paper_benchmark = probe.config.benchmark.lower() == PAPER_BENCHMARK
    head = ["corruption", *[f"L{lv}" for lv in [0, *levels]], mean_head, "drop of mean"]
    body = []
    for pc in per_corruption:
        by_level = {r["level"]: r for r in rows if r["corruption"] == pc["corruption"]}
        body.append(
            [
                pc["corruption"],
                *[fmt_acc(by_level[lv]) for lv in [0, *levels]],
                fmt_pct(pc["mean_accuracy"]),
                fmt_pct(pc["mean_drop"]),
            ]
        )
    body.append(
        [
            "mean over corruptions",
            *[""] * (len(levels) + 1),
            fmt_pct(overall_mean),
            fmt_pct(clean_summary["accuracy"] - overall_mean),
        ]
    )
    report["table"] = {"head": head, "body": body}
    notes = [
        f"{probe.config.model} on {probe.config.benchmark}: accuracy % [95% CI] per level; "
        f"n = {clean_summary['n']} items; level 0 is the clean run.",
        f"'{mean_head}' averages the levels run ({', '.join(map(str, levels))})"
        + (", as PathMMU Table 2 averages its five levels 1–5." if on_paper_benchmark else "."),
        "bubble_blur uses a procedurally generated bubble texture (the original is not public): not "
        "comparable with the paper's bubble column.",
    ]
    title = "Image corruptions" + paper_source(probe.config.benchmark, "§4.2")
    files = write_report(probe.out, "corruptions", report, columns=cols, rows=rows, display=(head, body),
                         title=title, notes=notes)  # fmt: skip
    report["files"] = [str(p) for p in files]
    report["files"] += [str(p) for p in plot_curves(rows, names, probe.out / "corruptions")]


#: Marker and dash pattern of each corruption's curve (by position), so equal curves stay apart.
CURVE_MARKERS = ("o", "s", "^", "v", "D", "P", "X", "*")
CURVE_LINESTYLES = ("-", "--", ":", "-.")


def levels_label(levels: Sequence[int]) -> str:
    """The levels a mean runs over: ``L1–5`` for a contiguous range, ``L1,5`` otherwise."""
    lv = sorted(levels)
    if not lv:
        return "L–"
    if len(lv) > 1 and lv == list(range(lv[0], lv[-1] + 1)):
        return f"L{lv[0]}–{lv[-1]}"
    return "L" + ",".join(map(str, lv))


def plot_curves(rows: Sequence[dict[str, Any]], names: Sequence[str], stem: Path) -> list[Path]:
    """Accuracy vs level, one line per corruption with its 95% CI band (PNG and SVG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from scopebench.report.plots import save_figure

    fig, ax = plt.subplots(figsize=(7.6, 4))
    # Corruptions often give identical accuracies (a model that ignores the image, small runs):
    # each line gets its own marker and dash pattern, hollow markers, and a small sideways offset,
    # so coinciding curves stay visible instead of hiding each other.
    spread = 0.24 if len(names) > 1 else 0.0
    for i, name in enumerate(names):
        pts = sorted((r for r in rows if r["corruption"] == name), key=lambda r: r["level"])
        dx = (i / (len(names) - 1) - 0.5) * spread if len(names) > 1 else 0.0
        x = [r["level"] + dx for r in pts]
        ax.plot(
            x,
            [100 * r["accuracy"] for r in pts],
            marker=CURVE_MARKERS[i % len(CURVE_MARKERS)],
            linestyle=CURVE_LINESTYLES[i % len(CURVE_LINESTYLES)],
            markerfacecolor="none",
            label=name,
        )
        ax.fill_between(x, [100 * r["ci_low"] for r in pts], [100 * r["ci_high"] for r in pts], alpha=0.12)
    offset_note = "; curves offset sideways so equal values stay visible" if spread else ""
    ax.set_xlabel("severity level (0 = clean)" + offset_note)
    ax.set_ylabel("accuracy (%) with 95% CI")
    ax.set_ylim(-3, 103)  # markers at 0% and 100% stay whole
    ax.set_xticks(range(6))
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    ax.set_title("Accuracy under image corruptions", fontsize=10)
    fig.tight_layout()
    return save_figure(fig, stem)


def _gallery_items(probe: ProbeRun, item_id: str | None) -> list[Item]:

    _, items = load_items(probe.config)
    if item_id is not None:
        chosen = [it for it in items if it.id == item_id]
        if not chosen or not chosen[0].images:
            raise ScopebenchError(
                f"--gallery-item {item_id!r} is not an item with an image in this run; "
                "give the id of an evaluated item (see a condition's records.jsonl)"
            )
        return chosen
    return [it for it in items if it.images and "missing_image" not in it.problems and it.images[0].exists()]


def gallery(item: Item, names: Sequence[str], levels: Sequence[int], path: Path, seed: int) -> Path:
    """A grid of ``item``'s first image: one row per corruption, one column per level."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(
        len(names), len(levels), figsize=(1.6 * len(levels), 1.6 * len(names)), squeeze=False
    )
    for i, name in enumerate(names):
        for j, lv in enumerate(levels):
            img = corrupt_items([item], name, lv, seed)[0].images[0].load()
            ax = axes[i][j]
            ax.imshow(img)
            ax.set_xticks([])
            ax.set_yticks([])
            if i == 0:
                ax.set_title(f"level {lv}", fontsize=8)
            if j == 0:
                ax.set_ylabel(name, fontsize=8)
    fig.suptitle(item.id, fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


# Noise and no-image ------------------------------------------------------------------------------


def _two_condition_probe(
    probe: ProbeRun,
    name: str,
    changed: Condition,
    labels: tuple[str, str],
    published: list[dict[str, Any]],
    title: str,
    notes: list[str],
) -> dict[str, Any]:
    clean = _mcq(run_condition(probe, CLEAN).records)
    other = _mcq(run_condition(probe, changed).records)
    rows = compare_conditions(clean, other, seed=probe.seed, resamples=probe.resamples, labels=labels)
    report = report_header(probe, name, [CLEAN, changed])
    report.update(rows=rows, published=published)
    a, b = labels
    cols = [
        "split",
        "group",
        f"{a}_n",
        f"{a}_correct",
        f"{a}_accuracy",
        f"{a}_ci_low",
        f"{a}_ci_high",
        f"{b}_n",
        f"{b}_correct",
        f"{b}_accuracy",
        f"{b}_ci_low",
        f"{b}_ci_high",
        "n_common",
        "drop",
        "drop_ci_low",
        "drop_ci_high",
    ]
    head = ["split", "group", "n", a, b, f"drop ({a} − {b})"]
    body = [
        [
            r["split"],
            r["group"],
            r[f"{a}_n"],
            _acc_cell(r, a),
            _acc_cell(r, b),
            f"{fmt_pct(r['drop'])} [{fmt_pct(r['drop_ci_low'])}, {fmt_pct(r['drop_ci_high'])}]",
        ]
        for r in rows
    ]
    report["table"] = {"head": head, "body": body}
    report["files"] = [
        str(p)
        for p in write_report(
            probe.out, name, report, columns=cols, rows=rows, display=(head, body), title=title, notes=notes
        )
    ]
    groups = [f"{r['split']}/{r['group']}" for r in rows]
    series = {
        lab: [
            {"accuracy": r[f"{lab}_accuracy"], "ci_low": r[f"{lab}_ci_low"], "ci_high": r[f"{lab}_ci_high"]}
            for r in rows
        ]
        for lab in labels
    }
    report["files"] += [str(p) for p in plot_grouped_bars(groups, series, probe.out / name, title=title)]
    return report


def _acc_cell(row: dict[str, Any], label: str) -> str:
    acc, lo, hi = (fmt_pct(row[f"{label}_{k}"]) for k in ("accuracy", "ci_low", "ci_high"))
    return f"{acc} [{lo}, {hi}]" if lo and hi else acc


def noise_probe(probe: ProbeRun) -> dict[str, Any]:
    """Clean vs every image replaced by Gaussian noise: accuracy and drop per subset (Table 3)."""
    clean_splits = _splits(_mcq(run_condition(probe, CLEAN).records))
    table3 = published_rows(probe.config.benchmark, "Table 3", splits=clean_splits)
    models = {r["model"] for r in table3}
    table1 = published_rows(
        probe.config.benchmark, "Table 1", splits=clean_splits, model_filter=models.__contains__
    )
    return _two_condition_probe(
        probe,
        "noise",
        Condition("noise", "noise"),
        ("clean", "noise"),
        table3 + table1,
        "Images replaced by Gaussian noise" + paper_source(probe.config.benchmark, "Table 3"),
        [
            f"noise pixels i.i.d. N({NOISE_MEAN}, {NOISE_STD}²) in [0, 1] units, clipped; same size as "
            "each image; seeded by (seed, image).",
            *(["published: Table 3 (noise) and Table 1 (clean) rows of the same models."] if table3 else []),
        ],
    )


def no_image_probe(probe: ProbeRun) -> dict[str, Any]:
    """The same prompts with and without images (PathMMU Table 1's text-only rows).

    Raises:
        ScopebenchError: For a contrastive model, which always scores the image against captions
            and has no text-only mode (the ``noise`` probe takes the image's information away).
    """
    if probe.model_spec(probe.config.model).scheme in _CONTRASTIVE_SCHEMES:  # refuse before any model work
        raise ScopebenchError(
            f"{probe.config.model} is a contrastive model: it always compares the image with one caption "
            "per option and has no text-only mode, so a no-image run would silently equal the clean one. "
            "Use `scopebench probe noise` to take the image's information away instead."
        )
    clean_run = run_condition(probe, CLEAN)
    mode = (clean_run.config.get("model_identity") or {}).get("mode") or clean_run.config.get("mode")
    clean_splits = _splits(_mcq(clean_run.records))
    text_only = published_rows(
        probe.config.benchmark,
        "Table 1",
        splits=clean_splits,
        model_filter=lambda m: "text only" in m or m in ("Random Choice", "Frequent Choice"),
    )
    return _two_condition_probe(
        probe,
        "no-image",
        Condition("no-image", no_image=True),
        ("image", "no_image"),
        text_only,
        "With vs without the image" + paper_source(probe.config.benchmark, "Table 1, text-only rows"),
        [
            "no_image sends the same prompts without any image (RunConfig.no_image); models that "
            "cannot answer without an image record errors, counted as wrong.",
            *(
                ["published: PathMMU Table 1 text-only LLM rows and the random/frequent baselines."]
                if text_only
                else []
            ),
            *(
                [f"{probe.config.model} ({mode}) never looks at images: both columns agree by construction."]
                if mode in _IMAGE_BLIND_MODES
                else []
            ),
        ],
    )

"""The single-file HTML report: summary tables, plots and an item browser.

``scopebench report RUN… --html FILE`` writes one self-contained page: CSS and JavaScript inline,
plots and image thumbnails as ``data:`` URIs, and a Content-Security-Policy that forbids any other
source, so the file opens from disk with no server and makes no network request.

The item browser shows every item of the runs (union of their item ids) with its thumbnail(s),
question, options, correct answer, and each run's answer, outcome and raw response. Thumbnails are
made with Pillow from the item's images: an image summary that is a file path is read directly;
otherwise (images inside a dataset) the benchmark is reloaded from the run's provenance
(``run.json``: benchmark, data, split). An image that cannot be found gets a placeholder.

Outcomes per record: ``correct``, ``wrong`` (answered, not correct), ``unparsed``, ``error``,
``missing`` (missing image or missing response), ``detection`` (localization items) and ``absent``
(the run has no record of the item). Under the default policy the number of ``correct`` items of
a task equals that task's ``correct`` in the metrics JSON.
"""

from __future__ import annotations

import base64
import dataclasses
import html
import io
import json
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from scopebench.benchmarks import get_benchmark
from scopebench.config import ReportConfig
from scopebench.display import progress
from scopebench.errors import ConfigMismatchError, DataNotFoundError, ScopebenchError
from scopebench.items import LETTERS, Item, Record, open_image
from scopebench.report import json_safe
from scopebench.report.labels import relabel_comparison, run_display_names, scrub_home, shown_path
from scopebench.report.published import PUBLISHED_NOTE, published_leaderboard, published_rows
from scopebench.report.tables import (
    format_interval,
    format_judge_free,
    format_percent,
    format_score,
    format_score_interval,
    interval_note,
    judge_note,
    judge_used,
    leaderboard_table,
    localization_rows,
    metrics_rows,
    pairwise_rows,
    truncated_note,
)
from scopebench.scoring.compare import compare_runs
from scopebench.scoring.metrics import METADATA_FIELDS, compute_metrics
from scopebench.store.rundir import RunData, load_run

__all__ = [
    "OUTCOMES",
    "PAGE_SIZE",
    "THUMB_PX",
    "HtmlReport",
    "build_html_report",
    "heatmap_values",
    "item_groups",
    "items_dir_for",
    "outcome",
    "write_html_report",
]

log = logging.getLogger(__name__)

#: Longest side of a thumbnail, in pixels.
THUMB_PX = 160
#: Items per page of the item browser, and per item file beside the page.
PAGE_SIZE = 50
#: At most this many thumbnails per item (the rest are counted).
_MAX_THUMBS = 4
#: Outcomes the correctness filter offers, in order.
OUTCOMES: tuple[str, ...] = ("correct", "wrong", "unparsed", "error", "missing", "detection", "absent")

# Scripts: inline, plus the item files beside the page ('self' when served, file: when opened
# from disk, where Chromium gives the page an opaque origin that 'self' does not match).
_CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline' 'self' file:"
_PLACEHOLDER = "data:image/svg+xml;base64," + base64.b64encode(
    b'<svg xmlns="http://www.w3.org/2000/svg" width="160" height="120">'
    b'<rect width="160" height="120" fill="#eee" stroke="#bbb"/>'
    b'<text x="80" y="65" font-size="14" text-anchor="middle" fill="#777">image not found</text></svg>'
).decode("ascii")


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _template(name: str) -> str:
    return resources.files("scopebench.report").joinpath(f"templates/{name}").read_text(encoding="utf-8")


def _script_json(obj: Any) -> str:
    """JSON safe inside ``<script>``: ``<``, ``>`` and ``&`` become JSON unicode escapes."""
    text = json.dumps(obj, ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def outcome(rec: Record | None) -> str:
    """The item browser's outcome of one record (see the module docstring)."""
    if rec is None:
        return "absent"
    if rec.kind != "mcq":
        return "detection"
    if rec.status == "ok":
        return "correct" if rec.correct else "wrong"
    if rec.status in ("missing_image", "missing_response"):
        return "missing"
    return rec.status


def item_groups(summary: Mapping[str, Any]) -> list[str]:
    """Group labels of an item, spelled like the metrics rows: ``subset=…``, ``split=…``, ``modality=…``."""
    out = []
    if summary.get("subset"):
        out.append(f"subset={summary['subset']}")
    if summary.get("split"):
        out.append(f"split={summary['split']}")
    meta = summary.get("metadata") or {}
    for fld in METADATA_FIELDS:
        v = meta.get(fld)
        if v is not None and v != "":
            out.append(f"{fld}={v}")
    return out


# Thumbnails -------------------------------------------------------------------------------------


class _Thumbnails:
    """Thumbnails by image location, each made once and shared by the items that show it."""

    def __init__(self, runs: Sequence[RunData], px: int) -> None:
        self._runs = runs
        self._px = px
        self._ids: dict[str, str] = {}
        self.uris: dict[str, str] = {"missing": _PLACEHOLDER}
        self._items: dict[str, Item] | None = None
        self.missing = 0

    def _reloaded(self) -> dict[str, Item]:
        """Items of the benchmark reloaded from the first run's provenance (for dataset images)."""
        if self._items is None:
            self._items = {}
            for run in self._runs:
                cfg = run.config
                if not cfg.get("data"):
                    continue
                try:
                    loaded = get_benchmark(str(cfg["benchmark"])).load(
                        cfg.get("data") or "", split=cfg.get("split")
                    )
                except Exception as exc:  # any loader failure only costs thumbnails, not the report
                    log.warning(
                        "cannot reload %s from %s for thumbnails (placeholders shown): %s",
                        cfg.get("benchmark"),
                        cfg.get("data"),
                        exc,
                    )
                    continue
                self._items = {it.id: it for it in loaded.items}
                break
        return self._items

    def _make(self, item_id: str, index: int, location: str) -> str | None:
        path = Path(location)
        try:
            if path.is_absolute():
                if not path.is_file():
                    return None
                img = open_image(path, what=location)
            else:
                item = self._reloaded().get(item_id)
                if item is None or index >= len(item.images):
                    return None
                img = item.images[index].load()
        except ScopebenchError as exc:
            log.info("no thumbnail for %s: %s", item_id, exc)
            return None
        img.thumbnail((self._px, self._px))
        buf = io.BytesIO()
        img.convert("RGB").save(buf, format="JPEG", quality=80)
        return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode("ascii")

    def key(self, item_id: str, index: int, location: str) -> str:
        """The thumbnail id of an item's ``index``-th image (``"missing"`` when it cannot be read)."""
        if location in self._ids:
            return self._ids[location]
        uri = self._make(item_id, index, location)
        if uri is None:
            self.missing += 1
            key = "missing"
        else:
            key = f"t{len(self.uris)}"
            self.uris[key] = uri
        self._ids[location] = key
        return key


# Sections ---------------------------------------------------------------------------------------


def _table(head: Sequence[str], body: Sequence[Sequence[str]], row_attrs: Sequence[str] | None = None) -> str:
    parts = ["<table>", "<tr>" + "".join(f'<th class="l">{_e(h)}</th>' for h in head) + "</tr>"]
    for i, row in enumerate(body):
        attrs = row_attrs[i] if row_attrs else ""
        cells = "".join(
            f'<td class="l">{_e(c)}</td>' if j < 2 else f"<td>{_e(c)}</td>" for j, c in enumerate(row)
        )
        parts.append(f"<tr{attrs}>{cells}</tr>")
    parts.append("</table>")
    return "\n".join(parts)


_METRIC_HEAD = [
    "section",
    "group",
    "n",
    "correct",
    "accuracy",
    "95% CI",
    "unparsed",
    "errors",
    "no image",
    "no response",
]


def _metrics_section(index: int, label: str, run: RunData, metrics: Mapping[str, Any]) -> str:
    rows = metrics_rows(metrics)
    judge = judge_used(metrics)
    body = [
        [
            r["section"],
            r["group"],
            str(r["n"]),
            str(r["correct"]),
            format_percent(r),
            format_interval(r),
            str(r["unparsed"]),
            str(r["errors"]),
            str(r["missing_image"]),
            str(r["missing_response"]),
            *([str(r.get("n_judge", 0)), format_judge_free(r)] if judge else []),
        ]
        for r in rows
    ]
    attrs = [
        f' class="{"baseline" if r["section"].startswith("baseline") else "m"}"'
        f' data-section="{_e(r["section"])}" data-group="{_e(r["group"])}"'
        f' data-n="{r["n"]}" data-correct="{r["correct"]}"'
        for r in rows
    ]
    cfg = run.config
    parts = [
        f'<section class="run" id="run-{index}"><h3>{_e(label)}</h3>',
        f'<p class="note">run <code>{_e(shown_path(run.path))}</code> · '
        f"data fingerprint {_e(cfg.get('data_fingerprint'))} · "
        f"protocol {_e(cfg.get('protocol'))} · parser {_e(cfg.get('parser_version'))} · "
        f"policy for unscorable answers: <b>{_e(metrics.get('policy'))}</b> · "
        f"{_e(interval_note(metrics))}</p>",
        _table(_METRIC_HEAD + (["judge", "judge-free"] if judge else []), body, attrs),
    ]
    if judge:
        parts.append(f'<p class="note">{_e(judge_note(metrics))}</p>')
    cut = truncated_note(metrics.get("overall") or {})
    if cut:
        parts.append(f'<p class="note">{_e(cut)}</p>')
    loc = localization_rows(metrics)
    if loc:
        parts.append("<h4>Localization (detection items): mean GRIT score per class, 0–1</h4>")
        parts.append(
            _table(
                ["section", "group", "n", "GRIT score", "95% CI"],
                [
                    [
                        r["section"],
                        r["group"],
                        str(r["n"]),
                        format_score(r).removeprefix("GRIT "),
                        format_score_interval(r),
                    ]
                    for r in loc
                ],
            )
        )
    cal = metrics.get("calibration")
    if cal:
        parts.append(
            f"<p>calibration on {cal['n']} scored items: Brier {cal['brier']:.4f}, "
            f"ECE {cal['ece']:.4f} ({cal['n_bins']} bins)</p>"
        )
    owner = metrics.get("owner")
    if owner:
        parts.append(f'<p class="note">owner aggregation: {_e(owner["description"])}</p>')
    parts.append("</section>")
    return "\n".join(parts)


def _leaderboard_section(result: Mapping[str, Any]) -> str:
    head, body = leaderboard_table(result)
    n_runs, n_base = len(result["leaderboard"]), len(result.get("baselines", []))
    attrs = (
        [' class="run"'] * n_runs
        + [' class="baseline"'] * n_base
        + [' class="published"'] * (len(body) - n_runs - n_base)
    )
    parts = ["<h2>Leaderboard</h2>", _table(head, body, attrs)]
    if result.get("published"):
        parts.append(
            f'<p class="note">Grey italic rows: {_e(PUBLISHED_NOTE)} (values in percent as printed; '
            "each names its source table). Only the papers' clean zero-shot tables are listed "
            "here; rows measured under corruptions, Gaussian noise or text-only conditions are in "
            "each run's published table, labelled by their table.</p>"
        )
    if result["pairs"]:
        parts.append("<h3>Pairwise: paired bootstrap of the accuracy difference, McNemar exact test</h3>")
        phead = ["A", "B", "shared items", "A − B (pp)", "95% CI", "b (A right, B wrong)", "c", "McNemar p"]
        parts.append(_table(phead, pairwise_rows(result["pairs"])))
    for w in result["warnings"]:
        parts.append(f'<p class="warn">warning: {_e(w)}</p>')
    return "\n".join(parts)


def _published_section(metrics: Mapping[str, Any]) -> str:
    head, body = published_rows(metrics)
    if not body:
        return ""
    return f"<h2>Published numbers ({_e(PUBLISHED_NOTE)})</h2>" + _table(
        head, body, [' class="published"'] * len(body)
    )


def _plots_section(labels: Sequence[str], metrics: Sequence[Mapping[str, Any]], models: Sequence[str]) -> str:
    from scopebench.report.plots import (
        chance_level,
        figure_data_uri,
        has_accuracy,
        heatmap_figure,
        localization_figure,
        models_accuracy_figure,
        reliability_drawn,
        reliability_figure,
    )

    imgs = []
    series = [(lab, m["by_task"] or [m["overall"]]) for lab, m in zip(labels, metrics, strict=True)]
    if any(has_accuracy(rows) for _, rows in series):
        chance = next((c for m in metrics if (c := chance_level(m)) is not None), None)
        uri = figure_data_uri(models_accuracy_figure(series, "accuracy per task, all models", chance))
        imgs.append(f'<img class="plot" alt="accuracy per task, all models" src="{uri}">')
    for label, m in zip(labels, metrics, strict=True):
        if m.get("localization"):
            uri = figure_data_uri(localization_figure(m["localization"], label))
            imgs.append(f'<img class="plot" alt="GRIT localization per class: {_e(label)}" src="{uri}">')
    groups, values = heatmap_values(metrics)
    if groups:
        uri = figure_data_uri(
            heatmap_figure(groups, list(labels), values, "accuracy (%) per group and model")
        )
        imgs.append(f'<img class="plot" alt="group by model heatmap" src="{uri}">')
    for label, m, model in zip(labels, metrics, models, strict=True):
        cal = m.get("calibration")
        if cal and reliability_drawn(model):  # the spec, not the display name
            uri = figure_data_uri(reliability_figure(cal["bins"], f"reliability: {label}"))
            imgs.append(f'<img class="plot" alt="reliability diagram: {_e(label)}" src="{uri}">')
    return '<h2>Plots</h2><div class="plots">' + "\n".join(imgs) + "</div>"


def heatmap_values(
    metrics: Sequence[Mapping[str, Any]], sections: Sequence[str] = ("by_task", "by_subset")
) -> tuple[list[str], list[list[float]]]:
    """Rows (groups) and accuracy values of the group × model heatmap.

    Args:
        metrics: One metrics dict per model (column).
        sections: Which per-group lists of the metrics dicts become rows.

    Returns:
        ``(groups, values)`` with ``values[g][m]`` the accuracy (NaN where a model lacks the group).
    """
    groups: list[str] = []
    for sec in sections:
        for m in metrics:
            for r in m.get(sec, []):
                if r["group"] not in groups:
                    groups.append(r["group"])
    lookup = [{r["group"]: r["accuracy"] for sec in sections for r in m.get(sec, [])} for m in metrics]
    values = [[float(lk.get(g, float("nan"))) for lk in lookup] for g in groups]
    return groups, values


def _option_html(summary: Mapping[str, Any]) -> str:
    choices = summary.get("choices") or []
    ans = summary.get("answer_index")
    lis = "".join(f"<li{' class=answer' if i == ans else ''}>{_e(c)}</li>" for i, c in enumerate(choices))
    return f'<ol class="options" type="A">{lis}</ol>' if choices else ""


def _answer_text(summary: Mapping[str, Any], index: int | None) -> str:
    choices = summary.get("choices") or []
    if index is None:
        return "—"
    if 0 <= index < len(choices):
        return f"{LETTERS[index]}. {choices[index]}"
    return f"option {index}"


def _image_name(loc: Any) -> str:
    """An image's location as the page shows it: never an absolute path (a home folder)."""
    text = str(loc)
    return "/".join(Path(text).parts[-2:]) if Path(text).is_absolute() else text


def _record_data(summary: Mapping[str, Any], rec: Record | None) -> dict[str, Any] | None:
    """One run's part of an item in the browser: outcome, answer, raw response and notes."""
    if rec is None:
        return None
    notes = [rec.error] if rec.error else []
    verdict = rec.extra.get("judge")
    if isinstance(verdict, dict):
        # The judge's part stays visible: what it replied and whether its answer was used.
        used = "answer used" if rec.extra.get("answer_method") == "judge" else "answer not used"
        notes.append(
            f"judge {verdict.get('spec')} replied {json.dumps(verdict.get('reply'))} ({used}"
            + (f"; {verdict['error']}" if verdict.get("error") else "")
            + f"); parser: {verdict.get('parser_error')}"
        )
    if rec.scores:
        notes.append("scores: " + ", ".join(f"{s:.3f}" for s in rec.scores))
    sample = rec.sample
    return {
        "outcome": outcome(rec),
        "answer": _answer_text(summary, rec.choice),
        "response": rec.response or "",
        "notes": notes,
        # What the model was shown: runs stored without samples (older runs, --log-samples
        # false) have none, and the page then shows only the item.
        "prompt": sample.prompt if sample is not None and sample.prompt is not None else "",
        "system": sample.system or "" if sample is not None else "",
        "sent_images": list(sample.images) if sample is not None else [],
    }


def _item_data(
    summary: Mapping[str, Any], records: Sequence[Record | None], thumbs: _Thumbnails
) -> dict[str, Any]:
    """What the browser's JavaScript renders for one item (as DOM text, so nothing is markup)."""
    item_id = str(summary["id"])
    images = list(summary.get("images") or [])
    meta_bits = [f"task {summary.get('task')}"] + [g.replace("=", " ", 1) for g in item_groups(summary)]
    ans = summary.get("answer_index")
    return {
        "id": item_id,
        "meta": " · ".join(meta_bits),
        "problems": ", ".join(summary.get("problems") or []),
        "context": summary.get("context") or "",
        "question": summary.get("question", ""),
        "choices": list(summary.get("choices") or []),
        "answer_index": ans,
        "truth": _answer_text(summary, ans) if ans is not None else None,
        "images": [
            [thumbs.key(item_id, i, str(loc)), _image_name(loc)] for i, loc in enumerate(images[:_MAX_THUMBS])
        ],
        "more_images": max(0, len(images) - _MAX_THUMBS),
        "runs": [_record_data(summary, r) for r in records],
    }


def _natural_key(item_id: str) -> list[Any]:
    """Sort ``test_tiny/2`` before ``test_tiny/10``: digit runs compare as numbers."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", item_id)]


@dataclass
class HtmlReport:
    """The page and its item files, before they are written.

    Attributes:
        page: The HTML page (summary, plots, item browser shell with the item index).
        files: Item pages by file name, written into the folder ``items_dir`` beside the page;
            each is a script ``sbPage(n, {...});`` the browser loads when page ``n`` is shown.
        items_dir: Name of that folder (relative to the page).
    """

    page: str
    files: dict[str, str]
    items_dir: str


def _summaries(
    runs: Sequence[RunData], by_run: Sequence[Mapping[str, Record]]
) -> dict[str, Mapping[str, Any]]:
    """Every item's summary (union of the runs), in natural id order; a stub where a run lacks it."""
    summaries: dict[str, Mapping[str, Any]] = {}
    for run in runs:
        for iid, s in run.items.items():
            summaries.setdefault(iid, s)
    for iid in {i for recs in by_run for i in recs} - set(summaries):
        # A record whose item summary is missing (older run store): show what the record has.
        first = next(m[iid] for m in by_run if iid in m)
        summaries[iid] = {
            "id": iid,
            "task": first.task,
            "subset": first.subset,
            "split": first.split,
            "question": "(item text not stored in this run)",
            "choices": [],
            "answer_index": first.answer_index,
            "images": [],
            "metadata": {},
        }
    return {iid: summaries[iid] for iid in sorted(summaries, key=_natural_key)}


def _browser(
    runs: Sequence[RunData], labels: Sequence[str], thumbs: _Thumbnails, items_dir: str, page_size: int
) -> tuple[dict[str, Any], dict[str, str]]:
    """The item index embedded in the page (for filtering) and the item pages written beside it.

    The index holds, per item, only its id, task, groups and one outcome code per run, so the page
    grows by ~50 bytes per item; questions, responses and thumbnails live in the item pages.
    """
    by_run = [{r.item_id: r for r in run.records} for run in runs]
    summaries = _summaries(runs, by_run)
    tasks = sorted({str(s.get("task", "")) for s in summaries.values()})
    prefix_order = {p: i for i, p in enumerate(("subset", "split", *METADATA_FIELDS))}
    groups = sorted(
        {g for s in summaries.values() for g in item_groups(s)},
        key=lambda g: (prefix_order.get(g.split("=", 1)[0], 99), g),
    )
    task_ix = {t: i for i, t in enumerate(tasks)}
    group_ix = {g: i for i, g in enumerate(groups)}
    code = {o: str(i) for i, o in enumerate(OUTCOMES)}
    rows: list[list[Any]] = []
    files: dict[str, str] = {}
    page: list[dict[str, Any]] = []
    with progress(len(summaries), "HTML item browser") as bar:
        for n, (iid, summary) in enumerate(summaries.items()):
            recs = [m.get(iid) for m in by_run]
            rows.append(
                [
                    iid,
                    task_ix[str(summary.get("task", ""))],
                    [group_ix[g] for g in item_groups(summary)],
                    "".join(code[outcome(r)] for r in recs),
                ]
            )
            page.append(_item_data(summary, recs, thumbs))
            if len(page) == page_size or n == len(summaries) - 1:
                number = n // page_size + 1
                keys = {key for it in page for key, _ in it["images"]} - {"missing"}
                payload = {"items": page, "thumbs": {k: thumbs.uris[k] for k in sorted(keys)}}
                files[_page_file(number)] = f"sbPage({number}, {_script_json(payload)});\n"
                page = []
            bar.update(1)
    index = {
        "items_dir": items_dir,
        "page_size": page_size,
        "outcomes": list(OUTCOMES),
        "labels": list(labels),
        "tasks": tasks,
        "groups": groups,
        "rows": rows,
    }
    return index, files


def _page_file(number: int) -> str:
    return f"items-{number:05d}.js"


# Entry points ------------------------------------------------------------------------------------


def _labels(runs: Sequence[RunData]) -> list[str]:
    # Path-free display names, told apart by folder (report/labels.py): never a home folder.
    return run_display_names(runs)


def build_html_report(
    run_dirs: Sequence[str | Path],
    report: ReportConfig | None = None,
    *,
    thumb_px: int = THUMB_PX,
    items_dir: str = "report_items",
    page_size: int = PAGE_SIZE,
) -> HtmlReport:
    """The report page of one or several runs of one benchmark, and its item pages.

    Args:
        run_dirs: Run directories.
        report: The bootstrap seed (``None``: 0) and resamples, what unscorable answers count as
            (``wrong`` or ``exclude``), and whether to add the benchmark's published numbers
            (marked as not reproduced here).
        thumb_px: Longest side of the item thumbnails.
        items_dir: Folder (relative to the page) the item pages are loaded from.
        page_size: Items per page of the item browser (and per item file).

    Raises:
        DataNotFoundError: When no run is given.
        ConfigMismatchError: When the runs are of different benchmarks.
    """
    if not run_dirs:
        raise DataNotFoundError("the HTML report needs at least one run directory")
    report = report or ReportConfig()
    seed = 0 if report.seed is None else report.seed
    resamples, policy = report.resamples, report.policy
    runs = [load_run(p) for p in run_dirs]
    benches = sorted({r.benchmark for r in runs})
    if len(benches) > 1:
        raise ConfigMismatchError(
            f"runs are of different benchmarks ({', '.join(benches)}); write one HTML report per benchmark"
        )
    bench = benches[0]
    labels = _labels(runs)
    metrics = []
    for run, label in zip(runs, labels, strict=True):
        m = compute_metrics(
            run.records, benchmark=bench, policy=policy, items=run.items, seed=seed, resamples=resamples,
            protocol=str(run.config.get("protocol") or "default"),
        )  # fmt: skip
        m["model"] = label  # the display name: a spec may hold a local (home) path
        metrics.append(m)
    sections = _sections(run_dirs, runs, labels, metrics, dataclasses.replace(report, seed=seed))
    thumbs = _Thumbnails(runs, thumb_px)
    index, files = _browser(runs, labels, thumbs, items_dir, page_size)
    page = (
        _environment()
        .get_template("report.html.j2")
        .render(
            csp=_CSP,
            bench=bench,
            labels=labels,
            policy=policy,
            css=_template("report.css"),
            js=_template("report.js"),
            sections=sections,
            page_size=page_size,
            items_dir=items_dir,
            missing_thumbs=thumbs.missing,
            tasks=[(t, t) for t in index["tasks"]],
            groups=[(g, g.replace("=", ": ", 1)) for g in index["groups"]],
            outcomes=[(o, o) for o in OUTCOMES],
            models=[(str(i), lab) for i, lab in enumerate(labels)],
            n_items=len(index["rows"]),
            index_json=_script_json(index),
            placeholder_json=_script_json(_PLACEHOLDER),
            metrics_json=_script_json(_json_safe(metrics)),
        )
    )
    return HtmlReport(page=page, files=files, items_dir=items_dir)


def _sections(
    run_dirs: Sequence[str | Path],
    runs: Sequence[RunData],
    labels: Sequence[str],
    metrics: Sequence[dict[str, Any]],
    report: ReportConfig,
) -> list[str]:
    """The page's sections: the leaderboard (several runs) or published numbers, metrics, plots."""
    sections = []
    if len(runs) > 1:
        result = compare_runs(run_dirs, report)
        relabel_comparison(result, {str(run.path): lab for run, lab in zip(runs, labels, strict=True)})
        if report.published:
            cols = []
            for entry in result["leaderboard"]:
                cols += [f"{r['split_or_group']}/{r['subset_or_task']}" for r in entry["owner"]]
            result["published"] = published_leaderboard(runs[0].benchmark, list(dict.fromkeys(cols)))
        sections.append(_leaderboard_section(result))
    elif report.published:
        sections.append(_published_section(metrics[0]))
    sections.append("<h2>Metrics per run</h2>")
    sections += [
        _metrics_section(i, lab, run, m)
        for i, (lab, run, m) in enumerate(zip(labels, runs, metrics, strict=True))
    ]
    sections.append(_plots_section(list(labels), list(metrics), [run.model for run in runs]))
    return sections


def _environment() -> Any:
    import jinja2

    # Autoescape on: every value is text unless a template marks it ``| safe`` (the sections
    # built by the functions above, which escape themselves, and the script-safe JSON).
    return jinja2.Environment(
        loader=jinja2.PackageLoader("scopebench.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )


def _json_safe(obj: Any) -> Any:
    return json_safe(obj)


def items_dir_for(path: str | Path) -> str:
    """The folder name of a page's item files: ``report.html`` → ``report_items``."""
    return f"{Path(path).stem}_items"


def write_html_report(
    run_dirs: Sequence[str | Path], path: str | Path, report: ReportConfig | None = None, **kwargs: Any
) -> Path:
    """Write :func:`build_html_report` to ``path`` and its item files beside it; return ``path``.

    Parent folders are created. The item folder (``<stem>_items``) is replaced whole, so no page
    of an earlier, larger report is left behind.
    """
    import shutil

    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    html = build_html_report(run_dirs, report, items_dir=items_dir_for(out), **kwargs)
    folder = out.parent / html.items_dir
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir()
    # Error texts of records may quote a file under the home folder (a replay file, a cache).
    for name, text in html.files.items():
        (folder / name).write_text(scrub_home(text), encoding="utf-8")
    out.write_text(scrub_home(html.page), encoding="utf-8")
    return out

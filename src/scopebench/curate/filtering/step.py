"""``build filter``: the quality gates, in order, on a questions output.

1. **figures** (SPUR's figure gate, :mod:`scopebench.curate.filtering.panels`): images with fewer than
   ``min_panels`` panels are dropped with all their questions (reason ``too_few_panels``);
2. **refine** (RefineBot, :mod:`scopebench.curate.filtering.refine`): questions answerable without the image
   are rewritten; ``gave_up`` ones go to ``OUT/review_queue`` (reason ``refine_gave_up``),
   ``meaning_drifted`` ones are dropped;
3. **shortcut** (:mod:`scopebench.curate.filtering.shortcut`): questions still answerable without the
   image are dropped (``shortcut``; ``choices_only`` when asked); both blind accuracies are measured;
   **caption** (:mod:`scopebench.curate.filtering.caption`): questions a text-only model answers from
   the figure's caption are dropped (``caption_answers``); blind accuracy with and without it;
   **categories** (:mod:`scopebench.curate.filtering.categories`): one SPUR panel category per
   image (nothing dropped), counted in the card and carried to the exported items;
4. **quotas** (:mod:`scopebench.curate.filtering.quotas`): questions beyond their cell's target are dropped
   (``quota``), a seeded choice.

Every gate writes what it kept and dropped, and why, one JSON line per image or question, to
``OUT/gates/<gate>.jsonl``. The statistics a dataset card publishes (blind accuracies, quota table,
RefineBot codes, panel counts) are written to ``OUT/benchmark_stats.json``, which later steps carry
to the exported card. ``items_in`` and ``kept`` count questions.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from scopebench.curate.card import filter_sections
from scopebench.curate.filtering.caption import (
    CaptionGateConfig,
    CaptionSection,
    read_captions,
    run_caption_gate,
)
from scopebench.curate.filtering.categories import CategorySection, categorise
from scopebench.curate.filtering.panels import PanelConfig, count_panels_bytes
from scopebench.curate.filtering.quotas import QuotaConfig, apply_quotas
from scopebench.curate.filtering.refine import RefineConfig, run_refine
from scopebench.curate.filtering.shortcut import (
    Answerer,
    GateItem,
    ShortcutGateConfig,
    default_answerer,
    run_shortcut_gate,
)
from scopebench.curate.llm import DEFAULT_MAX_CONSECUTIVE_FAILURES
from scopebench.curate.output import (
    STATS_FILE,
    copy_sources,
    local_items,
    prepare_out,
    read_rows,
    save_dataset,
    write_step_card,
    write_summary,
)
from scopebench.curate.report import BuildProblem, StepResult
from scopebench.errors import DataFormatError, ImageLoadError, NoItemsError, RunAbortedError

__all__ = ["FilterConfig", "FilterSection", "filter_questions"]

STEP = "filter"


class ModelBlock(BaseModel):
    """A gate's model, as ``generate:`` names its own: ``model`` and ``model_args``."""

    model_config = ConfigDict(extra="forbid")
    model: str
    model_args: dict[str, Any] = Field(default_factory=dict)


#: A gate model: a bare spec, or a ``{model, model_args}`` block (base URL, key variable, any
#: backend argument).
Entry = str | ModelBlock


def _spec(e: Entry) -> str:
    return e if isinstance(e, str) else e.model


class _Shortcut(BaseModel):
    model_config = ConfigDict(extra="forbid")
    models: list[Entry]
    tries: int = 1
    min_models: int = 1
    min_tries: int = 1
    choices_only: bool = True
    drop_choices_only: bool = False


class _Refine(BaseModel):
    model_config = ConfigDict(extra="forbid")
    rewriters: list[Entry]
    testers: list[Entry]
    judges: list[Entry]
    rounds: int = 3
    seeds: list[int] = Field(default_factory=lambda: [0, 1, 2])
    min_models: int = 1
    min_tries: int = 2


class _Quotas(BaseModel):
    model_config = ConfigDict(extra="forbid")
    default: int | None = None
    cells: dict[str, int] = Field(default_factory=dict)


class FilterSection(BaseModel):
    """The ``filter:`` section of ``build.yaml`` (each gate is off when its key is absent)."""

    model_config = ConfigDict(extra="forbid")
    figures: PanelConfig | None = None
    refine: _Refine | None = None
    shortcut: _Shortcut | None = None
    caption: CaptionSection | None = None
    categories: CategorySection | None = None
    quotas: _Quotas | None = None
    max_fail_fraction: float = Field(default=0.5, ge=0.0, le=1.0)
    max_consecutive_failures: int = Field(default=DEFAULT_MAX_CONSECUTIVE_FAILURES, ge=0)
    #: The build's seed (``build.yaml``'s top-level ``seed``, ``--seed``).
    seed: int = 0

    def entries(self) -> list[Entry]:
        """Every gate model entry (shortcut models, rewriters, testers, judges)."""
        out: list[Entry] = list(self.shortcut.models) if self.shortcut else []
        out += self.caption.models if self.caption else []
        if self.refine:
            out += [*self.refine.rewriters, *self.refine.testers, *self.refine.judges]
        return out

    def models(self) -> dict[str, dict[str, Any]]:
        """Spec → backend arguments of every gate model.

        Raises:
            DataFormatError: When one spec is given two different ``model_args``.
        """
        out: dict[str, dict[str, Any]] = {}
        for e in self.entries():
            args = {} if isinstance(e, str) else dict(e.model_args)
            if out.setdefault(_spec(e), args) != args:
                raise DataFormatError(
                    f"filter: {_spec(e)!r} is given two different model_args; a spec names one model "
                    "(write the same block everywhere it is used)"
                )
        return out

    def resolved(self, root: Path) -> FilterSection:
        """A copy whose ``replay:FILE`` specs are relative to ``root`` (the YAML file's folder)."""

        def one(s: str) -> str:
            if s.startswith("replay:"):
                p = Path(s[7:]).expanduser()
                s = f"replay:{p if p.is_absolute() else root / p}"
            return s

        def fix(entries: list[Entry]) -> list[Entry]:
            return [
                one(e) if isinstance(e, str) else e.model_copy(update={"model": one(e.model)})
                for e in entries
            ]

        section = self.model_copy(deep=True)
        if section.shortcut:
            section.shortcut.models = fix(section.shortcut.models)
        if section.refine:
            r = section.refine
            r.rewriters, r.testers, r.judges = fix(r.rewriters), fix(r.testers), fix(r.judges)
        section.caption = section.caption.resolved(root) if section.caption else None
        section.categories = section.categories.resolved(root) if section.categories else None
        return section

    def to_config(self, seed: int | None = None) -> FilterConfig:
        """The library configuration (each gate's own checks run here); ``seed`` overrides ``self.seed``."""
        return FilterConfig(
            seed=self.seed if seed is None else seed,
            models=self.models(),
            max_fail_fraction=self.max_fail_fraction,
            max_consecutive_failures=self.max_consecutive_failures,
            figures=self.figures,
            refine=_refine_config(self.refine) if self.refine else None,
            shortcut=_shortcut_config(self.shortcut) if self.shortcut else None,
            caption=self.caption.to_config() if self.caption else None,
            categories=self.categories,
            quotas=QuotaConfig(**self.quotas.model_dump()) if self.quotas else None,
        )


def _refine_config(r: _Refine) -> RefineConfig:
    lists = {k: tuple(_spec(e) for e in getattr(r, k)) for k in ("rewriters", "testers", "judges")}
    return RefineConfig(**{**r.model_dump(), **lists, "seeds": tuple(r.seeds)})


def _shortcut_config(s: _Shortcut) -> ShortcutGateConfig:
    return ShortcutGateConfig(**{**s.model_dump(), "models": tuple(_spec(e) for e in s.models)})


def load_filter_section(path: str | Path) -> FilterSection:
    """Read a filter configuration: a YAML file holding the gates, at top level or under ``filter:``.

    ``replay:FILE`` specs are read relative to the YAML file's folder, as in ``build.yaml``.

    Raises:
        DataFormatError: When it is not valid (every violation listed).
    """
    import yaml

    p = Path(path)
    if not p.is_file():
        raise DataFormatError(f"filter configuration not found: {p}")
    raw = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
    if isinstance(raw, dict) and "filter" in raw:
        raw = raw["filter"] or {}
    try:
        return FilterSection.model_validate(raw).resolved(p.parent)
    except ValidationError as exc:
        lines = [f"  {'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()]
        raise DataFormatError(f"{p} is not a valid filter configuration:\n" + "\n".join(lines)) from exc


@dataclass(frozen=True)
class FilterConfig:
    """Which gates run, and how (``None``: the gate is off).

    Attributes:
        seed: Seed of the shortcut tries (``seed + t``) and the quota choice (recorded).
        figures: The figure gate.
        refine: RefineBot.
        shortcut: The shortcut gate.
        quotas: Coverage quotas.
        caption: The caption gate (:mod:`scopebench.curate.filtering.caption`).
        categories: SPUR's panel categories (:mod:`scopebench.curate.filtering.categories`).
        models: Backend arguments (``model_args``) per gate model spec.
        max_fail_fraction: The step fails (non-zero exit, after writing its output) when more of
            its model calls failed with an error.
        max_consecutive_failures: Calls failing in a row that stop the step at once (0: never).
    """

    seed: int = 0
    figures: PanelConfig | None = None
    refine: RefineConfig | None = None
    shortcut: ShortcutGateConfig | None = None
    quotas: QuotaConfig | None = None
    caption: CaptionGateConfig | None = None
    categories: CategorySection | None = None
    models: dict[str, dict[str, Any]] = field(default_factory=dict)
    max_fail_fraction: float = 0.5
    max_consecutive_failures: int = DEFAULT_MAX_CONSECUTIVE_FAILURES


def gate_items(row: dict[str, Any]) -> list[GateItem]:
    """The questions of one dataset row as the gates see them, ids as exported.

    The metadata questions (``<image_id>-<task>``) and the LLM-written multiple-choice items of
    ``build generate`` (their own ids).
    """
    common = {"image_id": row["image_id"], "modality": row.get("modality"), "domain": row.get("domain"),
              "subset": row.get("dataset")}  # fmt: skip
    out = []
    for task, q in (row.get("questions") or {}).items():
        if q:
            qid, opts, answer = f"{row['image_id']}-{task}", tuple(q["options"]), int(q["answer_idx"])
            out.append(
                GateItem(id=qid, task=task, question=q["question"], options=opts, answer=answer, **common)
            )
    for g in row.get("generated") or []:
        if g.get("kind") == "mcq":
            opts, answer, q_text = tuple(g["options"]), int(g["answer_idx"]), g["question"]
            item = GateItem(
                id=g["id"], task=g["task"], question=q_text, options=opts, answer=answer, **common
            )
            out.append(replace(item, generated=True))
    return out


def _write_jsonl(path: Path, records: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in records)
    path.write_text(text, encoding="utf-8")


def _figure_gate(
    rows: list[dict[str, Any]], cfg: PanelConfig, result: StepResult, progress: bool
) -> tuple[set[str], list[dict[str, Any]]]:
    """Image ids dropped by the figure gate, and one record per image."""
    from tqdm import tqdm

    dropped: set[str] = set()
    records = []
    for r in tqdm(rows, desc="filter: panels", unit="img", disable=not progress):
        try:
            pc = count_panels_bytes(r["image"]["bytes"], cfg)
        except ImageLoadError as exc:
            # An unreadable figure cannot be counted: kept out, and said so.
            result.problems.append(
                BuildProblem(
                    STEP,
                    r.get("dataset") or "",
                    r["image_id"],
                    "image",
                    "bad_image",
                    f"cannot count panels: {exc}",
                )
            )
            dropped.add(r["image_id"])
            records.append(
                {
                    "gate": "figures",
                    "image_id": r["image_id"],
                    "decision": "dropped",
                    "reason": "bad_image",
                    "panels": None,
                }
            )
            continue
        keep = pc.count >= cfg.min_panels
        if not keep:
            dropped.add(r["image_id"])
        records.append(
            {
                "gate": "figures",
                "image_id": r["image_id"],
                "decision": "kept" if keep else "dropped",
                "reason": None if keep else "too_few_panels",
                "panels": pc.count,
                "boxes": pc.boxes,
                "rejected_candidates": pc.rejected,
                "method": pc.method,
            }
        )
    return dropped, records


def _review_queue(
    out: Path, rows: dict[str, dict[str, Any]], items: list[GateItem], codes: dict[str, str]
) -> None:
    """Write gave-up questions as a ``local``-format folder the review app imports."""
    queue = out / "review_queue"
    (queue / "images").mkdir(parents=True, exist_ok=True)
    lines = []
    for it in items:
        row = rows[it.image_id]
        (queue / "images" / f"{it.image_id}.png").write_bytes(row["image"]["bytes"])
        if it.generated:
            one = {**row, "questions": {}, "captions": None,
                   "generated": [g for g in row["generated"] if g["id"] == it.id]}  # fmt: skip
        else:
            one = {
                **row,
                "questions": {it.task: row["questions"][it.task]},
                "captions": None,
                "generated": [],
            }
        for item in local_items(one):
            item.update(
                refine_code=codes[it.id],
                review_reason="RefineBot gave up: still answerable "
                "without the image after every round (see gates/refine.jsonl)",
            )
            lines.append(item)
    _write_jsonl(queue / "data.jsonl", lines)


@dataclass
class _Tally:
    """What the gates have decided so far: final versions, drops with reasons, statistics."""

    final: dict[str, GateItem]
    dropped: dict[str, str]
    stats: dict[str, Any]
    #: image_id → caption and context, for the caption gate.
    captions: dict[str, dict[str, str]] = field(default_factory=dict)


def _model_gates(
    items: list[GateItem],
    cfg: FilterConfig,
    tally: _Tally,
    by_image: dict[str, dict[str, Any]],
    out: Path,
    who: Answerer,
) -> None:
    """RefineBot, the shortcut gate, then the caption gate, on the questions still in; the cost ledger."""
    final, dropped, stats = tally.final, tally.dropped, tally.stats
    if cfg.refine is not None:
        todo = [it for it in items if it.id not in dropped]
        ref = run_refine(todo, cfg.refine, who)
        _write_jsonl(out / "gates" / "refine.jsonl", ref.records)
        final.update(ref.final)
        reasons = {"gave_up": "refine_gave_up", "meaning_drifted": "meaning_drifted"}
        dropped.update({i: reasons[c] for i, c in ref.codes.items() if c in reasons})
        _review_queue(out, by_image, [it for it in todo if ref.codes[it.id] == "gave_up"], ref.codes)
        stats["refine"] = ref.stats
    if cfg.shortcut is not None:
        todo = [final[it.id] for it in items if it.id not in dropped]
        sc = run_shortcut_gate(todo, cfg.shortcut, cfg.seed, who)
        _write_jsonl(out / "gates" / "shortcut.jsonl", sc.records)
        dropped.update(sc.dropped)
        stats["shortcut"] = sc.stats
    if cfg.caption is not None:
        todo = [final[it.id] for it in items if it.id not in dropped]
        cg = run_caption_gate(todo, tally.captions, cfg.caption, cfg.seed, who)
        _write_jsonl(out / "gates" / "caption.jsonl", cg.records)
        dropped.update(cg.dropped)
        stats["caption"] = cg.stats
    if getattr(who, "errors", 0):
        # A call failed (network, server): its try counted as not correct. The step is not
        # reused by `build run`, so the next run asks the failed calls again (they are not cached).
        stats["incomplete"] = True
    ledger = getattr(who, "ledger", None)
    if ledger is not None:
        stats["ledger"] = ledger.to_json()
        ledger.write(out / "ledger.json")


def _quota_gate(items: list[GateItem], quotas: QuotaConfig, seed: int, tally: _Tally, out: Path) -> None:
    """Coverage quotas on the questions still in (one record per question, the table in stats)."""
    todo = [it for it in items if it.id not in tally.dropped]
    qo = apply_quotas([it.cell() for it in todo], quotas, seed)
    over = set(qo.dropped)
    tally.dropped.update(dict.fromkeys(qo.dropped, "quota"))
    records = [
        {"gate": "quotas", "id": i, "decision": "dropped" if i in over else "kept",
         "reason": "quota" if i in over else None}
        for i in sorted(it.id for it in todo)
    ]  # fmt: skip
    _write_jsonl(out / "gates" / "quotas.jsonl", records)
    tally.stats["quotas"] = {"default": quotas.default, "cells": dict(quotas.cells), "table": qo.table}


def _with_models(
    items: list[GateItem],
    cfg: FilterConfig,
    tally: _Tally,
    by_image: dict[str, dict[str, Any]],
    out: Path,
    answerer: Answerer | None,
    cache: str | Path,
    progress: bool,
) -> None:
    """The model gates with their answerer and a bar ticking once per model call."""
    from tqdm import tqdm

    # One tick per call (from the cache or sent); RefineBot's rounds are not known ahead.
    with (
        tqdm(desc="filter: model calls", unit="call", disable=not progress) as bar,
        default_answerer(
            answerer, cache, models=cfg.models, max_consecutive_failures=cfg.max_consecutive_failures,
            progress=bar,
        ) as who,
    ):  # fmt: skip
        _model_gates(items, cfg, tally, by_image, out, who)


def _figures(
    rows: list[dict[str, Any]],
    items: list[GateItem],
    cfg: PanelConfig,
    result: StepResult,
    tally: _Tally,
    out: Path,
    progress: bool,
) -> set[str]:
    """The figure gate: its records, the questions of dropped figures, its statistics; dropped ids."""
    bad_images, records = _figure_gate(rows, cfg, result, progress)
    _write_jsonl(out / "gates" / "figures.jsonl", records)
    tally.dropped.update({it.id: "too_few_panels" for it in items if it.image_id in bad_images})
    panels = [r["panels"] for r in records if r["panels"] is not None]
    tally.stats["figures"] = {
        "images": len(rows),
        "dropped_images": len(bad_images),
        "min_panels": cfg.min_panels,
        "method": cfg.method,
        "panels_histogram": dict(sorted(Counter(panels).items())),
    }
    return bad_images


def _per_image_inputs(
    rows: list[dict[str, Any]], cfg: FilterConfig, result: StepResult, stats: dict[str, Any], out: Path
) -> dict[str, dict[str, str]]:
    """The panel categories (written, counted; no image dropped) and the captions the caption gate reads."""
    if cfg.categories is not None:
        records, stats["categories"] = categorise(rows, cfg.categories, cfg.seed, result.problems)
        _write_jsonl(out / "gates" / "categories.jsonl", records)
    return read_captions(cfg.caption.texts, rows, result.problems) if cfg.caption else {}


def filter_questions(
    data: str | Path,
    out: str | Path,
    config: FilterConfig | None = None,
    *,
    progress: bool = False,
    answerer: Answerer | None = None,
    cache: str | Path | None = None,
) -> StepResult:
    """Run the configured gates on a questions output (module docstring) and write what is kept.

    Args:
        data: A questions (or generate) output folder.
        out: The output folder.
        config: The gates (none: everything is kept, and said so).
        progress: Show a progress bar (panel counting; one tick per model gate).
        answerer: Who answers text-only and rewrites (default: scopebench backends from the specs,
            cached by content in ``cache``, costs in ``ledger.json`` and ``stats["ledger"]``).
        cache: The LLM call cache file (default: ``.cache/llm.sqlite`` beside ``out``, the file
            ``build generate`` uses too).

    Returns:
        Questions in, kept and dropped by reason; ``stats`` holds each gate's statistics.
    """
    cfg = config or FilterConfig()
    data, out = Path(data), Path(out)
    splits, labels = read_rows(data)
    rows = [r for rs in splits.values() for r in rs if r.get("split") != "test_tiny"]
    by_image = {r["image_id"]: r for r in rows}
    items = [it for r in rows for it in gate_items(r)]
    result = StepResult(STEP, items_in=len(items), out=str(out))
    prepare_out(out)
    dropped: dict[str, str] = {}
    bad_images: set[str] = set()
    stats: dict[str, Any] = {"seed": cfg.seed}
    if cfg.figures is not None:
        bad_images = _figures(rows, items, cfg.figures, result, _Tally({}, dropped, stats), out, progress)
    final = {it.id: it for it in items}
    captions = _per_image_inputs(rows, cfg, result, stats, out)
    if cfg.refine is not None or cfg.shortcut is not None or cfg.caption is not None:
        cache = cache or out.parent / ".cache" / "llm.sqlite"
        tally = _Tally(final, dropped, stats, captions)
        _with_models(items, cfg, tally, by_image, out, answerer, cache, progress)
    if cfg.quotas is not None:
        _quota_gate(items, cfg.quotas, cfg.seed, _Tally(final, dropped, stats), out)
    result.dropped = Counter(dropped.values())
    result.kept = result.items_in - len(dropped)
    _write_rows(rows, final, dropped)
    # The figure gate drops whole images; the other gates drop questions and keep the image.
    kept_rows = [r for r in rows if r["image_id"] not in bad_images]
    stats["dropped_questions"] = [{"id": i, "reason": why} for i, why in sorted(dropped.items())]
    (out / STATS_FILE).write_text(json.dumps(stats, indent=2, default=str), encoding="utf-8")
    result.stats = {k: v for k, v in stats.items() if k != "dropped_questions"}
    if not kept_rows:
        # datasets cannot load a saved dataset of zero rows back: stop here, saying why.
        write_summary(out, result)
        where = out / "gates" / "figures.jsonl"
        raise NoItemsError(
            f"the figure gate dropped all {len(rows)} images (too few panels each; every count is in "
            f"{where}); lower figures.min_panels or check the figures"
        )
    save_dataset({"test": kept_rows}, labels, out)
    copy_sources(data, out)
    write_summary(out, result)
    write_step_card(
        data, out, result, title=f"{data.name} filtered", rows=kept_rows, extra=filter_sections(stats)
    )
    _check_failures(stats.get("ledger"), cfg.max_fail_fraction, out)
    return result


def _check_failures(ledger: dict[str, Any] | None, limit: float, out: Path) -> None:
    """Stop (a non-zero exit) when more than ``limit`` of the gates' model calls failed.

    Raises:
        RunAbortedError: Naming the count and where every try's error is recorded.
    """
    total = (ledger or {}).get("total") or {}
    calls = int(total.get("requests", 0)) + int(total.get("cached", 0))
    failed = int(total.get("failed", 0))
    if calls and failed / calls > limit:
        raise RunAbortedError(
            f"filter: {failed} of {calls} model calls failed, more than max_fail_fraction {limit:.0%}; "
            f"every try's error is in {out / 'gates'}. Fix the model or server and run again (answered "
            "calls come from the cache)"
        )


def _write_rows(rows: list[dict[str, Any]], final: dict[str, GateItem], dropped: dict[str, str]) -> None:
    """Put rewrites in place and take dropped questions out (in the rows, in place)."""

    def updated(entry: dict[str, Any], qid: str) -> dict[str, Any]:
        new = final[qid]
        if new.question == entry["question"] and tuple(new.options) == tuple(entry["options"]):
            return entry
        return {
            **entry,
            "question": new.question,
            "options": list(new.options),
            "answer_idx": str(new.answer),
        }

    for r in rows:
        qs = dict(r.get("questions") or {})
        for task, q in qs.items():
            if q:
                qid = f"{r['image_id']}-{task}"
                qs[task] = None if qid in dropped else updated(q, qid)
        r["questions"] = qs
        if r.get("generated"):
            r["generated"] = [
                g if g.get("kind") != "mcq" else updated(g, g["id"])
                for g in r["generated"]
                if g.get("kind") != "mcq" or g["id"] not in dropped
            ]
        r["split"] = "test"

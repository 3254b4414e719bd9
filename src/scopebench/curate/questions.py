"""``build questions``: multiple-choice questions and captions from metadata and the concept tree.

For each image and task (μ-Bench's coarse ``modality``, ``submodality``, ``domain``, ``subdomain``,
``stain`` and fine-grained ``classification``):

* the answer is the image's own value (``label_name`` for classification);
* distractors are *hard* (sibling concepts: same parent in the tree, stains of the same modality,
  the other classes of the same source) or *easy* (concepts across the tree: another parent), the
  other kind filling in when one runs short (``build.json`` counts those questions per task
  under ``filled``);
* options are distinct (case-insensitively), with the answer exactly once;
* correct positions are balanced per task (:mod:`scopebench.curate.balance`): for the ``n``
  questions of a task with ``k`` options each letter is the answer ``⌊n/k⌋`` or ``⌈n/k⌉`` times,
  shuffled by the seed; the letter counts, their chi-square against uniform and the most frequent
  letter's share are reported per task;
* "none of the above" is optionally appended last; it is never the answer (as in μ-Bench);
* question text and caption sentences come from the templates (μ-Bench's Table 16 by default;
  ``curate/question_templates.py``).

Everything random derives from ``seed`` and the image id, so a question does not change when other
images are added or removed (the position sequence of a task does). That is what lets each image's
question of a task be kept by content (``OUT/.cache/questions.sqlite``): a re-run draws only the
questions whose inputs changed and places every task's answer positions afresh, which gives the
output a cold run would.
"""

from __future__ import annotations

import hashlib
import uuid
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from scopebench.curate.balance import Layout, assign_positions, position_stats, rng_for, stats_markdown
from scopebench.curate.card import coverage_lines
from scopebench.curate.memo import ContentCache, content_key
from scopebench.curate.output import (
    copy_sources,
    prepare_out,
    read_rows,
    save_dataset,
    write_step_card,
    write_summary,
)
from scopebench.curate.report import BuildProblem, StepResult
from scopebench.curate.settings import QuestionConfig
from scopebench.curate.taxonomy import Taxonomy, load_taxonomy

__all__ = ["NONE_OF_THE_ABOVE", "QuestionConfig", "QuestionResult", "make_questions"]

STEP = "questions"
#: The text of the optional last option (μ-Bench's spelling).
NONE_OF_THE_ABOVE = "none of the above"


def _pool(tax: Taxonomy, task: str, value: str, classes: list[str]) -> tuple[list[str], list[str]]:
    """(hard, easy) distractor candidates for ``value``: siblings, and concepts across the tree."""
    if task == "classification":
        return [c for c in classes if c != value], []
    hard = tax.siblings(task, value)
    everything = [n for n in tax.names(task) if n != value and n not in hard]
    return hard, everything


def _distinct(values: list[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for v in values:
        if v.casefold() not in seen:
            seen.add(v.casefold())
            out.append(v)
    return out


def _pick(
    rng: np.random.Generator, first: list[str], second: list[str], n: int, answer: str
) -> tuple[list[str], bool]:
    """``n`` distinct distractors, ``first`` preferred; whether ``second`` had to fill in."""
    a = _distinct([x for x in first if x.casefold() != answer.casefold()])
    b = _distinct(
        [
            x
            for x in second
            if x.casefold() != answer.casefold() and x.casefold() not in {y.casefold() for y in a}
        ]
    )
    take = [a[i] for i in rng.permutation(len(a))[:n]]
    filled = len(take) < n and bool(b)
    take += [b[i] for i in rng.permutation(len(b))[: n - len(take)]]
    return take, filled


def _entry(qid: str, task: str, text: str, options: list[str], answer: int) -> dict[str, Any]:
    return {"id": qid, "name": task, "question": text, "answer_idx": str(answer), "options": options}


@dataclass
class QuestionResult(StepResult):
    """:class:`StepResult` plus what this run drew and what it took from the question cache.

    The counts stay out of ``build.json``, which must not depend on what an earlier run cached.

    Attributes:
        made: Questions (image × task) drawn in this run.
        reused: Questions taken from the cache.
    """

    made: int = 0
    reused: int = 0


#: Part of every cache key: bumped whenever drawing a question changes, so no older entry is reused.
_DRAW_VERSION = 1
#: (row, the answer, the cached question: distractors, filled, question text, caption template).
_Draft = tuple[dict[str, Any], str, dict[str, Any]]


def make_questions(
    data: str | Path,
    out: str | Path,
    config: QuestionConfig | None = None,
    *,
    progress: bool = False,
    cache: str | Path | None = None,
) -> QuestionResult:
    """Add questions and captions to every image of an ingest output.

    Each image's question of a task is drawn once per content (:func:`_wanted` says what the key
    covers) and kept in ``cache``; the answer positions, balanced over each task, are placed afresh
    every run, so a cached question gives the output a cold run would.

    Args:
        data: An ingest (or earlier questions) output folder.
        out: The output folder (same format, ``questions``/``captions`` filled).
        config: How to make them (defaults: 4 hard options, seed 0).
        progress: Show a progress bar.
        cache: The question cache file (default: ``.cache/questions.sqlite`` beside ``out``).

    Returns:
        Images in and out; ``stats`` holds questions per task, questions skipped by reason,
        and per task the correct-letter counts with their chi-square statistic.
    """
    cfg = config or QuestionConfig()
    tax = load_taxonomy(cfg.taxonomy)
    splits, labels = read_rows(Path(data))
    rows = [r for split_rows in splits.values() for r in split_rows]
    result = QuestionResult(STEP, items_in=len(rows), out=str(out))
    store = ContentCache(
        Path(cache) if cache is not None else Path(out).parent / ".cache" / "questions.sqlite"
    )
    try:
        drafts = _draw_all(rows, cfg, tax, store, result, progress)
    finally:
        store.close()
    balance: dict[str, dict[str, Any]] = {}
    for task, items in drafts.items():
        # Every option count of the task is balanced on its own (positions 0…k-1 equally often).
        layouts = [
            Layout(len(q["distractors"]) + 1, 0, tuple(range(len(q["distractors"]) + 1))) for *_, q in items
        ]
        positions = assign_positions(layouts, rng_for(cfg.seed, "positions", task))
        for draft, pos in zip(items, positions, strict=True):
            _place(draft, task, pos, cfg, tax)
        balance[task] = position_stats(positions, [lay.width for lay in layouts])
    result.kept = len(rows)
    result.stats = {
        "seed": cfg.seed,
        "config": asdict(cfg),
        "taxonomy_sha256": tax.fingerprint(),
        "questions": {t: len(v) for t, v in sorted(drafts.items())},
        **result.stats,  # skipped and filled, counted while drawing
        "answer_positions": balance,
    }
    _write(Path(out), splits, labels, result, Path(data))
    return result


def _wanted(
    rows: list[dict[str, Any]], cfg: QuestionConfig, tax: Taxonomy, skipped: Counter[str], progress: bool
) -> list[tuple[dict[str, Any], str, str, str, list[str], list[str]]]:
    """Every (row, task) that has a value: ``(row, task, value, cache key, first, second)``.

    The key covers everything the drawn question depends on: the seed, the option count, the image
    id (which seeds its generator), the task and the answer, both distractor pools (from the
    taxonomy and the source's classes) in the order the difficulty puts them, and the task's
    question and caption templates for the image's source; so a changed row, taxonomy branch or
    template misses exactly the questions it changes.
    """
    from tqdm import tqdm

    classes: dict[str, list[str]] = defaultdict(list)
    for r in rows:
        if r.get("label_name") and r["label_name"] not in classes[r["dataset"]]:
            classes[r["dataset"]].append(r["label_name"])
    wanted = []
    for r in tqdm(rows, desc="questions", unit="img", disable=not progress):
        r["questions"], r["captions"] = {}, {}
        for task in cfg.tasks:
            value = r.get("label_name" if task == "classification" else task)
            if not value:
                skipped[f"{task}: no value"] += 1
                continue
            hard, easy = _pool(tax, task, value, sorted(classes[r["dataset"]]))
            first, second = (hard, easy) if cfg.difficulty == "hard" else (easy, hard)
            text, cap = (
                tax.templates.question(task, r.get("dataset")),
                tax.templates.caption(task, r.get("dataset")),
            )
            key = content_key(
                _DRAW_VERSION, cfg.seed, cfg.options, task, r["image_id"], value, first, second, text, cap
            )
            wanted.append((r, task, value, key, first, second))
    return wanted


def _valid(entry: Any, value: str, options: int) -> bool:
    """Whether a cached entry is one :func:`_draw_all` could have stored for ``value``.

    Anything else (a damaged or edited cache) is drawn again rather than trusted: at most
    ``options - 1`` distinct distractors, none of them the answer, and the texts as strings.
    """
    if not isinstance(entry, dict) or not isinstance(entry.get("distractors"), list):
        return False
    drawn = entry["distractors"]
    if not all(isinstance(d, str) for d in drawn) or len(drawn) > options - 1:
        return False
    folded = {d.casefold() for d in drawn}
    return (
        len(folded) == len(drawn)
        and value.casefold() not in folded
        and isinstance(entry.get("filled"), bool)
        and isinstance(entry.get("question"), str)
        and isinstance(entry.get("caption"), str)
    )


def _draw_all(
    rows: list[dict[str, Any]],
    cfg: QuestionConfig,
    tax: Taxonomy,
    store: ContentCache,
    result: QuestionResult,
    progress: bool,
) -> dict[str, list[_Draft]]:
    """Each task's drafts: every (row, task) question, from the cache or drawn (and stored)."""
    skipped: Counter[str] = Counter()
    filled_in: Counter[str] = Counter()
    wanted = _wanted(rows, cfg, tax, skipped, progress)
    found = store.get_many(key for _, _, _, key, _, _ in wanted)
    new: dict[str, Any] = {}
    drafts: dict[str, list[_Draft]] = defaultdict(list)
    for r, task, value, key, first, second in wanted:
        entry = found.get(key)
        if _valid(entry, value, cfg.options):
            result.reused += 1
        else:
            distractors, filled = _pick(
                rng_for(cfg.seed, r["image_id"], task), first, second, cfg.options - 1, value
            )
            ds = r.get("dataset")
            text, cap = tax.templates.question(task, ds), tax.templates.caption(task, ds)
            entry = {"distractors": distractors, "filled": filled, "question": text, "caption": cap}
            new[key] = entry
            result.made += 1
        assert entry is not None
        if not entry["distractors"]:
            skipped[f"{task}: no distractor"] += 1
            result.problems.append(_no_distractor(r, task, value))
            continue
        filled_in[task] += int(entry["filled"])
        drafts[task].append((r, value, entry))
    store.put_many(new)
    result.stats.update(skipped=dict(sorted(skipped.items())), filled=dict(sorted(filled_in.items())))
    return drafts


def _no_distractor(row: dict[str, Any], task: str, value: str) -> BuildProblem:
    return BuildProblem(
        STEP,
        row["dataset"],
        row["image_id"],
        task,
        "no_distractor",
        f"no other {task} to offer as a distractor for {value!r}; no {task} question "
        "(add concepts to the taxonomy, or classes to the source)",
        severity="warning",
    )


def _place(draft: _Draft, task: str, pos: int, cfg: QuestionConfig, tax: Taxonomy) -> None:
    """Put the answer at ``pos`` among the distractors and write the question and caption entries."""
    row, value, drawn = draft
    distractors = drawn["distractors"]
    options = [*distractors[:pos], value, *distractors[pos:]]
    if cfg.none_of_the_above:
        options.append(NONE_OF_THE_ABOVE)
    assert len({o.casefold() for o in options}) == len(options) and options.count(value) == 1
    qid = str(
        uuid.UUID(bytes=hashlib.sha256(f"{cfg.seed}\0{row['image_id']}\0{task}".encode()).digest()[:16])
    )
    row["questions"][task] = _entry(qid, task, drawn["question"], options, pos)
    cap = drawn["caption"]
    sentences = [o if o == NONE_OF_THE_ABOVE else tax.templates.render(cap, o) for o in options]
    row["captions"][f"{task}_0"] = _entry(qid, task, cap, sentences, pos)


def _write(
    out: Path, splits: dict[str, list[dict[str, Any]]], labels: list[str], result: StepResult, data: Path
) -> None:
    for split_rows in splits.values():
        for r in split_rows:
            for col in ("questions", "captions"):
                r[col] = r[col] or None
    prepare_out(out)
    save_dataset(splits, labels, out)
    copy_sources(data, out)
    write_summary(out, result)
    q = result.stats["questions"]
    extra = stats_markdown(result.stats["answer_positions"])
    extra += [f"Seed {result.stats['seed']}; {sum(q.values())} questions.", ""]
    cells: Counter[tuple[str, str]] = Counter(
        (f"{r.get('modality')} × {r.get('domain')}", task)
        for rows in splits.values()
        for r in rows
        for task, q in (r.get("questions") or {}).items()
        if q
    )
    extra += coverage_lines(cells)
    write_step_card(
        data,
        out,
        result,
        title=f"{data.name} questions",
        rows=[r for rs in splits.values() for r in rs],
        extra=extra,
        role="ingest build.json",
    )

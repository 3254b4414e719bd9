"""``build split``: image-level splits that keep near-duplicates together, and a ``test_tiny`` sample.

The unit of splitting is a near-duplicate group (``dup_group`` from ingest; an image without
near-duplicates is its own group), so an image, every question about it and every image that looks
like it land in one split. Groups are stratified by (source, the set of tasks the image has
questions for); inside a stratum they are shuffled with the seed and each goes to the split
furthest below its target share of the stratum's images. ``test_tiny`` is a sample of ``tiny``
test images, spread over sources in proportion (largest remainder), drawn with the seed.

The split is the last step that decides which items a benchmark holds (filter drops come before
it), so it also balances answer positions (:mod:`scopebench.curate.balance`): within each split,
every task's correct letters are spread evenly (per option count), each item's options moved with
its own seeded generator; items whose option texts name other options by position keep their order
and count first. ``build.json`` reports the letter counts and chi-square per task and split.
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from scopebench.curate.balance import (
    Layout,
    assign_positions,
    layout,
    position_stats,
    relabel,
    reorder,
    rng_for,
    stats_markdown,
)
from scopebench.curate.output import (
    copy_sources,
    prepare_out,
    read_rows,
    save_dataset,
    write_step_card,
    write_summary,
)
from scopebench.curate.report import BuildProblem, StepResult
from scopebench.curate.settings import SplitConfig

__all__ = ["SplitConfig", "assign_splits", "split"]

STEP = "split"


def _rng(seed: int, key: str) -> np.random.Generator:
    return np.random.default_rng([seed, int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big")])


def _tasks_of(row: dict[str, Any]) -> str:
    questions = row.get("questions") or {}
    tasks = {k for k, v in questions.items() if v}
    tasks |= {g["task"] for g in row.get("generated") or [] if g.get("kind") == "mcq"}
    return ",".join(sorted(tasks))


def _n_questions(row: dict[str, Any]) -> int:
    """Questions of one image: from metadata (``questions``) and LLM-written (``generated``)."""
    made = len([q for q in (row.get("questions") or {}).values() if q])
    return made + len([g for g in row.get("generated") or [] if g.get("kind") == "mcq"])


def assign_splits(rows: list[dict[str, Any]], config: SplitConfig) -> dict[str, str]:
    """image_id → split name, as the module docstring describes."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        groups[r.get("dup_group") or r["image_id"]].append(r)
    strata: dict[str, list[str]] = defaultdict(list)
    for gid in sorted(groups):
        head = groups[gid][0]
        strata[f"{head['dataset']}|{_tasks_of(head)}"].append(gid)
    names = list(config.fractions)
    out: dict[str, str] = {}
    for key in sorted(strata):
        gids = strata[key]
        order = _rng(config.seed, key).permutation(len(gids))
        total = sum(len(groups[g]) for g in gids)
        have = dict.fromkeys(names, 0)
        for idx in order:
            gid = gids[int(idx)]
            # The split furthest below its target; ties go to the first split listed.
            name = max(names, key=lambda n: (config.fractions[n] * total - have[n], -names.index(n)))
            have[name] += len(groups[gid])
            for r in groups[gid]:
                out[r["image_id"]] = name
    return out


def _tiny(test: list[dict[str, Any]], n: int, seed: int) -> list[dict[str, Any]]:
    if n <= 0 or not test:
        return []
    by_source: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in sorted(test, key=lambda r: r["image_id"]):
        by_source[r["dataset"]].append(r)
    n = min(n, len(test))
    shares = {s: n * len(v) / len(test) for s, v in by_source.items()}
    take = {s: int(q) for s, q in shares.items()}
    for s in sorted(shares, key=lambda s: (-(shares[s] - take[s]), s))[: n - sum(take.values())]:
        take[s] += 1
    picked = []
    for s in sorted(by_source):
        rows = by_source[s]
        for i in sorted(_rng(seed, f"tiny|{s}").permutation(len(rows))[: take[s]]):
            picked.append(rows[int(i)])
    return picked


def _mcq_entries(row: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """``(task, entry)`` of every multiple-choice question of a row: metadata ones, then generated."""
    out = [(task, q) for task, q in (row.get("questions") or {}).items() if q]
    return out + [(g["task"], g) for g in row.get("generated") or [] if g.get("kind") == "mcq"]


def _move(row: dict[str, Any], task: str, entry: dict[str, Any], target: int, lay: Layout, seed: int) -> None:
    """Put one entry's answer at ``target`` (its caption entry follows; option references too)."""
    rng = rng_for(seed, "split-positions", row["image_id"], str(entry.get("id") or task))
    options, answer, order = reorder(entry["options"], lay, target, rng)
    entry.update(options=options, answer_idx=str(answer))
    if entry.get("kind") == "mcq":  # a generated item: its texts may name options by letter
        entry.update(
            question=relabel(entry["question"], order),
            explanation=relabel(entry.get("explanation") or "", order),
        )
        return
    cap = (row.get("captions") or {}).get(f"{task}_0")
    if cap and len(cap["options"]) == len(order):
        cap.update(options=[cap["options"][i] for i in order], answer_idx=str(answer))


def balance_answers(splits: dict[str, list[dict[str, Any]]], seed: int) -> dict[str, dict[str, Any]]:
    """Balance the correct letters of every task within every split, in place (module docstring).

    A task's letter totals carry from one split to the next, so the whole benchmark is balanced
    too. Returns the balance per split and task (:func:`~scopebench.curate.balance.position_stats`).
    """
    totals: dict[str, Counter[int]] = defaultdict(Counter)
    out: dict[str, dict[str, Any]] = {}
    for name in sorted(splits):
        by_task: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = defaultdict(list)
        for row in splits[name]:
            for task, entry in _mcq_entries(row):
                by_task[task].append((row, entry))
        out[name] = {}
        for task in sorted(by_task):
            entries = by_task[task]
            lays = [layout(e["options"], int(e["answer_idx"])) for _, e in entries]
            targets = assign_positions(lays, rng_for(seed, "split-positions", name, task), totals[task])
            for (row, entry), lay, target in zip(entries, lays, targets, strict=True):
                _move(row, task, entry, target, lay, seed)
            out[name][task] = position_stats(targets, [lay.width for lay in lays])
    return out


def _overall(splits: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """The balance of every task over all splits together (what an in-sample ``frequent`` sees)."""
    answers: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for rows in splits.values():
        for row in rows:
            for task, e in _mcq_entries(row):
                answers[task].append((int(e["answer_idx"]), len(e["options"])))
    return {t: position_stats([a for a, _ in v], [k for _, k in v]) for t, v in sorted(answers.items())}


def _left_out(
    rows: list[dict[str, Any]], splits: dict[str, list[dict[str, Any]]], cfg: SplitConfig
) -> list[BuildProblem]:
    """A warning per split that got no image of a source with enough groups to give it some.

    A source "has images to spare" when it has at least as many near-duplicate groups as there are
    splits with a share: then a split without it is a choice of the stratification (or one large
    group), and a reader of the card should know.
    """
    active = [name for name, share in cfg.fractions.items() if share > 0]
    groups: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        groups[r["dataset"]].add(r.get("dup_group") or r["image_id"])
    out = []
    for source in sorted(groups):
        have = {name for name in active if any(r["dataset"] == source for r in splits[name])}
        if len(groups[source]) < len(active):
            continue
        for name in active:
            if name not in have:
                msg = (
                    f"split {name!r} has no image of source {source!r}, although it has "
                    f"{len(groups[source])} near-duplicate groups for {len(active)} splits (a large "
                    "group or the task-set strata put them all elsewhere)"
                )
                out.append(
                    BuildProblem(STEP, source, name, "split", "source_left_out", msg, severity="warning")
                )
    return out


def _imbalance(name: str, task: str, st: dict[str, Any]) -> BuildProblem:
    share, bound = 100 * st["max_share"], 100 * (st["chance"] + st["margin"])
    msg = (
        f"the most frequent correct letter of {task} in {name} is {share:.1f}% of its {st['n']} "
        f"items, above chance + 1/n ({bound:.1f}%): too many of its items name options by position "
        "(or have 'none of the above' as the answer)"
    )
    return BuildProblem(STEP, name, task, "answer_idx", "answer_imbalance", msg, severity="warning")


def split(
    data: str | Path, out: str | Path, config: SplitConfig | None = None, *, progress: bool = False
) -> StepResult:
    """Split a questions (or ingest) output into the configured splits plus ``test_tiny``.

    Returns:
        Images in and out; ``stats`` holds images and questions per split and ``leaks``, the number
        of near-duplicate groups found in more than one split (0 by construction; checked).
    """
    cfg = config or SplitConfig()
    data = Path(data)
    splits_in, labels = read_rows(data)
    rows = [r for rs in splits_in.values() for r in rs if r.get("split") != "test_tiny"]
    result = StepResult(STEP, items_in=len(rows), kept=len(rows), out=str(out))
    where = assign_splits(rows, cfg)
    splits: dict[str, list[dict[str, Any]]] = {name: [] for name in cfg.fractions}
    from tqdm import tqdm

    for r in tqdm(rows, desc="split", unit="img", disable=not progress):
        r["split"] = where[r["image_id"]]
        splits[r["split"]].append(r)
    result.problems += _left_out(rows, splits, cfg)
    by_split = balance_answers(splits, cfg.seed)
    for name, per_task in by_split.items():
        for task, st in per_task.items():
            if not st["within_margin"]:
                result.problems.append(_imbalance(name, task, st))
    tiny = [{**r, "split": "test_tiny"} for r in _tiny(splits.get("test", []), cfg.tiny, cfg.seed)]
    if tiny:
        splits["test_tiny"] = tiny
    splits = {k: v for k, v in splits.items() if v}
    group_splits: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        group_splits[r.get("dup_group") or r["image_id"]].add(r["split"])
    result.stats = {
        "seed": cfg.seed,
        "config": {"fractions": cfg.fractions, "tiny": cfg.tiny},
        "images": {k: len(v) for k, v in splits.items()},
        "questions": {k: sum(_n_questions(r) for r in v) for k, v in splits.items()},
        "by_source": {k: dict(Counter(r["dataset"] for r in v)) for k, v in splits.items()},
        "leaks": sum(1 for s in group_splits.values() if len(s) > 1),
        "answer_positions": _overall({k: v for k, v in splits.items() if k != "test_tiny"}),
        "answer_positions_by_split": by_split,
    }
    out = Path(out)
    prepare_out(out)
    save_dataset(splits, labels, out)
    copy_sources(data, out)
    write_summary(out, result)
    extra = ["## Splits", "", "| split | images | questions |", "|---|---:|---:|"]
    extra += [f"| {k} | {n} | {result.stats['questions'][k]} |" for k, n in result.stats["images"].items()]
    extra += ["", f"Split by near-duplicate group, stratified by source and task set; seed {cfg.seed}. "
              "`test_tiny` is a sample of `test`.", ""]  # fmt: skip
    extra += stats_markdown(result.stats["answer_positions"])
    write_step_card(data, out, result, title=f"{data.name} splits", rows=rows, extra=extra)
    return result

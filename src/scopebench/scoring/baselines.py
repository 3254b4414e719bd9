"""Random and frequent-choice baselines on a run's own items, with the same CIs as the run.

A reader of a metrics table needs chance level beside the model's accuracy. The baselines are
computed here from the run's stored item summaries (options and answer), with the very backends
``scopebench run --model random`` / ``--model frequent`` use, so the numbers are those runs':

* ``random`` — uniform choice per item, seeded by the metrics seed and the item id
  (:class:`~scopebench.models.baselines.RandomBackend`); ``expected_accuracy`` is the exact
  chance level ``mean(1 / number of options)``;
* ``frequent`` — the "Frequent Choice" row of PathMMU's Table 1, defined as MMMU's: per task
  (PathMMU: subset), the answer letter most often correct on the validation split, or on the run's
  own items of that task when the run holds no validation items; ties broken by a seeded
  permutation (:class:`~scopebench.models.baselines.FrequentBackend`). ``reference`` says, per
  task, which split the letters were counted on, on how many items, and the letter counts.

Baselines always answer, so their rows have no unparsed answers or errors; an item without options
or answer is left out of the baselines (and counted in ``n_skipped``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scopebench.items import Item, Record
from scopebench.models.base import ModelOptions
from scopebench.models.baselines import FrequentBackend, RandomBackend
from scopebench.scoring.accuracy import accuracy_row, group_rows
from scopebench.scoring.aggregate import owner_aggregation
from scopebench.scoring.bootstrap import DEFAULT_RESAMPLES

__all__ = ["BASELINES", "baseline_records", "baseline_section"]

#: Baseline names, in table order.
BASELINES: tuple[str, ...] = ("random", "frequent")


def _item(summary: Mapping[str, Any]) -> Item | None:
    choices = tuple(str(c) for c in summary.get("choices") or ())
    ans = summary.get("answer_index")
    if summary.get("kind", "mcq") != "mcq" or not choices or ans is None or not 0 <= int(ans) < len(choices):
        return None
    return Item(
        id=str(summary["id"]),
        benchmark=str(summary.get("benchmark", "")),
        split=str(summary.get("split", "")),
        task=str(summary.get("task", "")),
        question=str(summary.get("question", "")),
        choices=choices,
        answer_index=int(ans),
        subset=summary.get("subset"),
        metadata=dict(summary.get("metadata") or {}),
    )


def _baseline_runs(
    items: Sequence[Mapping[str, Any]], *, seed: int
) -> tuple[dict[str, list[Record]], dict[str, dict[str, Any]]]:
    """Records of both baselines on ``items`` and the frequent baseline's reference per task."""
    usable = [it for it in (_item(s) for s in items) if it is not None]
    out: dict[str, list[Record]] = {}
    reference: dict[str, dict[str, Any]] = {}
    for name, cls in (("random", RandomBackend), ("frequent", FrequentBackend)):
        backend = cls(name, ModelOptions(seed=seed))
        backend.prepare(usable)
        if isinstance(backend, FrequentBackend):
            reference = backend.reference
        recs = []
        for it, resp in zip(usable, backend.predict(usable), strict=True):
            recs.append(
                Record(
                    item_id=it.id,
                    model=name,
                    status="ok",
                    choice=resp.choice,
                    correct=resp.choice == it.answer_index,
                    task=it.task,
                    subset=it.subset,
                    split=it.split,
                    answer_index=it.answer_index,
                )
            )
        out[name] = recs
    return out, reference


def baseline_records(items: Sequence[Mapping[str, Any]], *, seed: int) -> dict[str, list[Record]]:
    """The records the random and frequent-choice backends would produce on ``items``.

    Args:
        items: Item summaries (``RunStore.items()`` values); items without options are skipped.
        seed: Seed of the random baseline and of the frequent baseline's tie-breaks.

    Returns:
        ``{"random": [...], "frequent": [...]}``, one ``ok`` record per usable item.
    """
    return _baseline_runs(items, seed=seed)[0]


def baseline_section(
    records: Sequence[Record],
    items: Mapping[str, Mapping[str, Any]],
    *,
    benchmark: str,
    seed: int = 0,
    resamples: int = DEFAULT_RESAMPLES,
) -> dict[str, Any]:
    """The ``baselines`` section of the metrics dict for the ``mcq`` items of ``records``.

    Args:
        records: The run's records (their ``mcq`` item ids select the items).
        items: Item summaries by id.
        benchmark: Benchmark name (for the owner aggregation of each baseline).
        seed: Seed of the random baseline and of every bootstrap interval.
        resamples: Bootstrap resamples.

    Returns:
        ``{name: {"model", "seed", "n_skipped", "overall", "by_task", "owner"}}`` plus
        ``expected_accuracy`` (random) and ``reference`` (frequent: per task ``{"split", "n",
        "letter_counts"}``); empty when the run stores no item summaries.
    """
    ids = [r.item_id for r in records if r.kind == "mcq"]
    summaries = [items[i] for i in ids if i in items]
    if not summaries:
        return {}
    recs, reference = _baseline_runs(summaries, seed=seed)
    kw: dict[str, Any] = {"seed": seed, "resamples": resamples}
    out: dict[str, Any] = {}
    for name in BASELINES:
        rs = recs[name]
        owner = owner_aggregation(rs, benchmark=benchmark, items=items, **kw)
        entry: dict[str, Any] = {
            "model": name,
            "seed": seed,
            "n_skipped": len(summaries) - len(rs),
            "overall": accuracy_row("overall", rs, **kw).to_dict(),
            "by_task": [r.to_dict() for r in group_rows(rs, lambda r: r.task, "task", **kw)],
            "owner": (owner or {}).get("rows", []),
        }
        if name == "random":
            n_opts = [len(items[r.item_id].get("choices") or ()) for r in rs]
            entry["expected_accuracy"] = sum(1 / k for k in n_opts) / len(n_opts) if n_opts else float("nan")
        else:
            entry["reference"] = reference
        out[name] = entry
    return out

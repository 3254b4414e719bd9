"""SPUR's perception/reasoning decoupling: is reasoning right because perception was?

For every reasoning item (tasks ``Qual``/``Quant``) we look up the perception items (``NP``, ``MP``,
``IL``) asked about the *same figure* (item metadata ``figure_id``) in the same run and put the
reasoning item into one of three groups:

* ``perception_correct`` — every perception question on that figure was answered correctly;
* ``perception_wrong`` — at least one was answered wrongly (unparsed and failed answers count as
  wrong, as in the headline metrics);
* ``no_perception_item`` — the run has no perception question on that figure.

Reasoning accuracy is reported per group with its 95% Wilson score interval (valid at 0% and 100%,
where a bootstrap collapses) and the counts, so a reader sees both the conditional accuracies and
how many items support each.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from scopebench.items import Record
from scopebench.scoring.intervals import wilson_interval

__all__ = ["PERCEPTION_TASKS", "REASONING_TASKS", "DecouplingRow", "decoupling_table"]

PERCEPTION_TASKS = frozenset({"NP", "MP", "IL"})
REASONING_TASKS = frozenset({"Qual", "Quant"})
GROUPS = ("perception_correct", "perception_wrong", "no_perception_item")


@dataclass(frozen=True, slots=True)
class DecouplingRow:
    """Reasoning accuracy within one perception group.

    Attributes:
        group: One of ``perception_correct``, ``perception_wrong``, ``no_perception_item``.
        n: Reasoning items in the group.
        correct: Of which answered correctly.
        accuracy: ``correct / n`` (``nan`` when ``n`` is 0).
        ci_low: Lower end of the 95% Wilson score interval (``nan`` when ``n`` is 0).
        ci_high: Upper end of the 95% Wilson score interval.
        figures: Distinct figures behind the group's items.
        ci_method: ``wilson``.
    """

    group: str
    n: int
    correct: int
    accuracy: float
    ci_low: float
    ci_high: float
    figures: int
    ci_method: str = "wilson"

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict."""
        return asdict(self)


def decoupling_table(
    records: Sequence[Record],
    items: Mapping[str, Mapping[str, Any]],
    *,
    seed: int = 0,
    resamples: int = 1000,
) -> list[DecouplingRow]:
    """Reasoning accuracy split by whether the same figure's perception questions were right.

    Args:
        records: One run's records (one model, one strategy).
        items: Item summaries by id (``RunData.items``); their ``metadata["figure_id"]`` links
            items on the same figure.
        seed: Unused (the Wilson interval draws nothing; kept for callers' one set of options).
        resamples: Unused, as ``seed``.

    Returns:
        One row per group, in the order of :data:`GROUPS`.
    """

    def figure(item_id: str) -> str | None:
        meta = items.get(item_id, {}).get("metadata", {})
        fid = meta.get("figure_id")
        return str(fid) if fid is not None else None

    perception_ok: dict[str, bool] = defaultdict(lambda: True)
    for r in records:
        if r.task in PERCEPTION_TASKS and (fid := figure(r.item_id)) is not None:
            perception_ok[fid] = perception_ok[fid] and bool(r.correct)
    grouped: dict[str, list[tuple[str, bool]]] = {g: [] for g in GROUPS}
    for r in records:
        if r.task not in REASONING_TASKS:
            continue
        fid = figure(r.item_id)
        if fid is None or fid not in perception_ok:
            group = "no_perception_item"
        else:
            group = "perception_correct" if perception_ok[fid] else "perception_wrong"
        grouped[group].append((fid or r.item_id, bool(r.correct)))
    rows = []
    del seed, resamples
    for g in GROUPS:
        vals = np.array([c for _, c in grouped[g]], dtype=float)
        iv = wilson_interval(int(vals.sum()), len(vals))
        rows.append(
            DecouplingRow(
                group=g,
                n=len(vals),
                correct=int(vals.sum()),
                accuracy=float(vals.mean()) if len(vals) else float("nan"),
                ci_low=iv.low,
                ci_high=iv.high,
                figures=len({f for f, _ in grouped[g]}),
            )
        )
    return rows

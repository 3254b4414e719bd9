"""SPUR's perception/reasoning decoupling: is reasoning right because perception was?

For every reasoning item (tasks ``Qual``/``Quant``) we look up the perception items (``NP``, ``MP``,
``IL``) asked about the *same figure* (item metadata ``figure_id``) in the same run and put the
reasoning item into one of three groups:

* ``perception_correct`` — every perception question on that figure was answered correctly;
* ``perception_wrong`` — at least one was answered wrongly (unparsed and failed answers count as
  wrong, as in the headline metrics);
* ``no_perception_item`` — the run has no perception question on that figure.

Reasoning accuracy is reported per group with a seeded 95% bootstrap CI and the counts, so a reader
sees both the conditional accuracies and how many items support each.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from scopebench.items import Record

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
        ci_low: Lower end of the 95% bootstrap CI.
        ci_high: Upper end of the 95% bootstrap CI.
        figures: Distinct figures behind the group's items.
    """

    group: str
    n: int
    correct: int
    accuracy: float
    ci_low: float
    ci_high: float
    figures: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict."""
        return asdict(self)


def _ci(values: np.ndarray, seed: int, resamples: int) -> tuple[float, float]:
    if len(values) == 0:
        return float("nan"), float("nan")
    if values.min() == values.max():
        # Bootstrap of a constant sample is degenerate: every resample gives the same mean.
        return float(values[0]), float(values[0])
    from scipy import stats  # lazy, as in scoring.bootstrap

    res = stats.bootstrap(
        (values,), np.mean, n_resamples=resamples, confidence_level=0.95, method="percentile",
        random_state=np.random.default_rng(seed), vectorized=True,
    )  # fmt: skip
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


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
        seed: Bootstrap seed.
        resamples: Bootstrap resamples.

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
    for k, g in enumerate(GROUPS):
        vals = np.array([c for _, c in grouped[g]], dtype=float)
        lo, hi = _ci(vals, seed + k, resamples)
        rows.append(
            DecouplingRow(
                group=g,
                n=len(vals),
                correct=int(vals.sum()),
                accuracy=float(vals.mean()) if len(vals) else float("nan"),
                ci_low=lo,
                ci_high=hi,
                figures=len({f for f, _ in grouped[g]}),
            )
        )
    return rows

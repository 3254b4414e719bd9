"""Which items a run evaluates (``--tasks``, ``--limit N`` or a fraction), and changing ``--limit``.

Changing ``--limit`` on an existing run: raising extends it, lowering is refused. Split from the
runner's configuration check (:func:`scopebench.engine.runner.run_benchmark`): ``limit`` is the
one identity key of ``run.json`` that may change between invocations.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from scopebench.errors import ConfigMismatchError, DataFormatError
from scopebench.items import Item
from scopebench.models import Backend

__all__ = ["apply_limit", "check_limit", "select_tasks"]


def select_tasks(items: Sequence[Item], tasks: Sequence[str], benchmark: str) -> list[Item]:
    """The items of ``tasks``: those whose task or subset (PathMMU's tasks are subsets) is listed.

    Raises:
        DataFormatError: When a listed task is not in the benchmark (the message lists its tasks).
    """
    present = {it.task for it in items} | {it.subset for it in items if it.subset}
    unknown = sorted(set(tasks) - present)
    if unknown:
        raise DataFormatError(
            f"benchmark {benchmark} has no task {', '.join(unknown)}; it has: {', '.join(sorted(present))}"
        )
    wanted = set(tasks)
    return [it for it in items if it.task in wanted or it.subset in wanted]


def apply_limit(items: Sequence[Item], limit: int | float, seed: int) -> list[Item]:
    """The items a ``--limit`` keeps: the first ``limit``, or a seeded sample of a fraction.

    A fraction ``0 < limit < 1`` keeps ``ceil(limit × n)`` items drawn with ``seed`` (the run's,
    recorded in ``run.json``), in the loader's order. The draw is a prefix of one seeded
    permutation, so a larger fraction holds every item of a smaller one and raising it extends the
    run, as raising ``--limit N`` does.
    """
    if isinstance(limit, int):
        return list(items[:limit])
    k = max(1, math.ceil(limit * len(items) - 1e-9))
    keep = np.random.default_rng(seed).permutation(len(items))[:k]
    return [items[i] for i in sorted(keep.tolist())]


log = logging.getLogger(__name__)


def check_limit(old: dict[str, Any], new: dict[str, Any], backend: Backend, run_dir: Path) -> bool:
    """Allow a stored ``--limit`` to be raised or removed; refuse lowering it.

    The first N items in the loader's order are a prefix of the first M ≥ N (the data, split and
    exclusions are identity keys), so a raised limit keeps every stored record and answers only
    the new items. A lower limit is refused rather than reported on a subset: the store would hold
    results of items outside the run. Item transforms that mix items (probes: question swap…) would
    change the stored items' prompts, so their limit cannot change. Backends whose answers depend
    on the whole item set (the frequent-choice baselines count letters over it) are redone from
    scratch with a warning: they cost no model call, and their stored answers are not the larger
    run's.

    Returns:
        Whether the stored results must be discarded (an item-set-dependent baseline).

    Raises:
        ConfigMismatchError: When the limit is lowered, or changed under an item transform.
    """
    before, after = old.get("limit"), new.get("limit")
    if before == after:
        return False
    was = "none" if before is None else str(before)
    now = "none" if after is None else str(after)
    if before is not None and after is not None and isinstance(before, int) != isinstance(after, int):
        raise ConfigMismatchError(
            f"the run directory {run_dir} holds results of --limit {was}; --limit {now} selects its "
            "items another way (the first N items, or a seeded sample of a fraction), so the stored "
            f"results are not part of it. Run again with --limit {was}, use another --out, or pass "
            "--fresh to start again."
        )
    if after is not None and (before is None or after < before):
        raise ConfigMismatchError(
            f"the run directory {run_dir} holds results of --limit {was}, more items than --limit {now}: "
            "a run's limit can be raised or removed (only the new items are evaluated), never lowered. "
            f"Run again with --limit {was} (or higher, or none), use another --out, or pass --fresh to "
            "start again."
        )
    if new.get("transform"):
        raise ConfigMismatchError(
            f"the run directory {run_dir} holds results of --limit {was}; it cannot be extended to "
            f"--limit {now} because the transform {new['transform']!r} depends on the whole set of "
            "evaluated items, so the stored answers would not be those of the larger run. "
            "Pass --fresh to redo it with the new limit, or use another --out."
        )
    if backend.item_set_dependent:
        log.warning(
            "%s answers from the whole set of evaluated items, so the results stored in %s (--limit %s) "
            "are discarded and the run is redone with --limit %s",
            backend.spec,
            run_dir,
            was,
            now,
        )
        return True
    return False

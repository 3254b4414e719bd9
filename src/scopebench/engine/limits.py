"""Changing ``--limit`` on an existing run: raising extends it, lowering is refused.

Split from the runner's configuration check (:func:`scopebench.engine.runner.run_benchmark`):
``limit`` is the one identity key of ``run.json`` that may change between invocations.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from scopebench.errors import ConfigMismatchError
from scopebench.models import Backend

__all__ = ["check_limit"]

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

"""Coverage quotas per taxonomy cell (modality × domain × task): a benchmark's balance, designed.

A cell's *target* is its quota: at most that many questions are kept, the rest are dropped with
reason ``quota``. Which ones are kept is a seeded choice: the cell's question ids, sorted, are
permuted by ``numpy.random.default_rng([seed, first 8 bytes of SHA-256(cell)])`` and the first
``target`` are kept, so the choice does not depend on the order rows arrive in, and a cell's
choice does not change when another cell changes. A cell below its target keeps everything and
shows its shortfall in the table (build summary and dataset card).
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scopebench.errors import DataFormatError

__all__ = ["QuotaConfig", "QuotaOutcome", "apply_quotas", "cell_of"]

#: The attributes that make a cell, in order.
CELL_FIELDS = ("modality", "domain", "task")


def cell_of(item: Mapping[str, Any]) -> str:
    """The cell of a question: ``"modality|domain|task"`` (a missing value is ``"?"``)."""
    return "|".join(str(item.get(k) or "?") for k in CELL_FIELDS)


@dataclass(frozen=True)
class QuotaConfig:
    """Targets per cell.

    Attributes:
        default: Target of every cell not listed (``None``: such cells are not limited).
        cells: ``"modality|domain|task"`` → target (``*`` in a part matches any value).
    """

    default: int | None = None
    cells: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.default is not None and self.default < 0:
            raise DataFormatError("quotas.default must be 0 or more questions")
        for key, target in self.cells.items():
            if len(key.split("|")) != 3:
                raise DataFormatError(
                    f"quota cell {key!r} must be 'modality|domain|task' (use * for any value)"
                )
            if target < 0:
                raise DataFormatError(f"quota of cell {key!r} must be 0 or more (got {target})")

    def target(self, cell: str) -> int | None:
        """The target of ``cell``: an exact entry, else the first matching wildcard entry, else default."""
        if cell in self.cells:
            return self.cells[cell]
        parts = cell.split("|")
        for key, target in self.cells.items():
            pattern = key.split("|")
            if all(p in ("*", v) for p, v in zip(pattern, parts, strict=True)):
                return target
        return self.default


@dataclass
class QuotaOutcome:
    """What the quotas kept.

    Attributes:
        kept: Ids kept.
        dropped: Ids dropped (reason ``quota``).
        table: One row per cell: cell, modality, domain, task, target, available, kept, dropped,
            shortfall (target − kept when positive).
    """

    kept: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    table: list[dict[str, Any]] = field(default_factory=list)


def _rng(seed: int, key: str) -> np.random.Generator:
    return np.random.default_rng([seed, int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big")])


def apply_quotas(items: Sequence[Mapping[str, Any]], config: QuotaConfig, seed: int) -> QuotaOutcome:
    """Keep at most each cell's target of ``items`` (each with ``id`` and the cell fields).

    Listed cells without any question appear in the table with ``available`` 0.
    """
    by_cell: dict[str, list[str]] = defaultdict(list)
    for it in items:
        by_cell[cell_of(it)].append(str(it["id"]))
    for key in config.cells:
        if "*" not in key:
            by_cell.setdefault(key, [])
    out = QuotaOutcome()
    for cell in sorted(by_cell):
        ids = sorted(by_cell[cell])
        target = config.target(cell)
        if target is None or len(ids) <= target:
            keep = ids
        else:
            order = _rng(seed, cell).permutation(len(ids))[:target]
            keep = sorted(ids[int(i)] for i in order)
        chosen = set(keep)
        out.kept += keep
        out.dropped += [i for i in ids if i not in chosen]
        modality, domain, task = cell.split("|")
        out.table.append(
            {
                "cell": cell,
                "modality": modality,
                "domain": domain,
                "task": task,
                "target": target,
                "available": len(ids),
                "kept": len(keep),
                "dropped": len(ids) - len(keep),
                "shortfall": max(0, target - len(keep)) if target is not None else 0,
            }
        )
    return out

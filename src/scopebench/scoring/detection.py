"""Detection records → GRIT scores, at metrics time.

The engine's parse stage stores what it read from a reply (``extra["boxes"]`` in pixels, how many
boxes the parser did not read, the class); it scores nothing. This module scores a record against
its item's ground truth (``targets`` of the item summary the run stored,
:meth:`~scopebench.items.Item.to_summary`) with :func:`~scopebench.scoring.grit.grit_score`, so the
run, ``report``, ``compare`` and ``table`` all compute the same number from the same stored data.

Run directories written before scoring moved here carry the score their parse stage stored
(``extra["grit"]``); they keep it (:func:`record_grit`), so they report the numbers they always did.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scopebench.errors import DataNotFoundError
from scopebench.items import Box, Record
from scopebench.scoring.grit import grit_score

__all__ = ["LEGACY_GRIT_KEY", "record_grit", "stored_boxes", "target_boxes"]

#: The key under which the parse stage of earlier versions stored each record's GRIT score.
LEGACY_GRIT_KEY = "grit"


def stored_boxes(rows: Sequence[Sequence[float]]) -> list[Box]:
    """The predicted boxes of a record's ``extra["boxes"]`` (``[x1, y1, x2, y2]`` rows, pixels)."""
    return [Box(float(x1), float(y1), float(x2), float(y2)) for x1, y1, x2, y2 in rows]


def target_boxes(rows: Sequence[Mapping[str, Any]]) -> list[Box]:
    """The ground-truth boxes of an item summary's ``targets`` (dicts with ``x1``…``y2``)."""
    return [Box(float(t["x1"]), float(t["y1"]), float(t["x2"]), float(t["y2"])) for t in rows]


def record_grit(record: Record, item: Mapping[str, Any] | None) -> float:
    """The GRIT localization score of one detection record (its image and class).

    Args:
        record: A ``kind == "detection"`` record.
        item: The record's item summary (``load_run(...).items[record.item_id]``); its
            ``targets`` are the ground truth.

    Returns:
        The stored legacy score when the record carries one; 0 for a record without a reply
        (error, missing image: a failed detection, never dropped); else GRIT of ``boxes`` against
        the targets, with the boxes the parser did not read (``boxes_truncated``) counted as
        unmatched predictions.

    Raises:
        DataNotFoundError: When the record has boxes but the run holds no item summary with
            targets for it (nothing to score against; a score of 0 would be a wrong number).
    """
    extra = record.extra
    if LEGACY_GRIT_KEY in extra:
        # Legacy run directory: its parse stage scored the reply and stored the score. That score
        # is used as stored (a non-number counts 0, as before), so old runs report the numbers
        # they always did, with or without their item summaries.
        legacy = extra[LEGACY_GRIT_KEY]
        return float(legacy) if isinstance(legacy, int | float) else 0.0
    boxes = extra.get("boxes")
    if record.status != "ok" or not isinstance(boxes, list):
        return 0.0  # no reply was read: a failed detection
    targets = None if item is None else item.get("targets")
    if not isinstance(targets, list):
        raise DataNotFoundError(
            f"the detection record of {record.item_id} cannot be scored: the run holds no item summary "
            "with its ground-truth boxes. Run the same `scopebench run` command with --out on this "
            "folder once (nothing is asked again; it stores the items), then report again"
        )
    unread = int(extra.get("boxes_truncated") or 0)
    return grit_score(stored_boxes(boxes), target_boxes(targets), unread=unread)

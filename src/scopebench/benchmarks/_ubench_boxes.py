"""μ-Bench's box geometry: ``bbox`` and ``polygon`` entries as :class:`~scopebench.items.Box` targets.

The formats (assumed; the Hub schema does not say) are in :mod:`scopebench.benchmarks.ubench`'s
docstring; the loader there re-exports :func:`box_from_bbox` and :func:`box_from_polygon`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from scopebench.items import Box

__all__ = ["box_from_bbox", "box_from_polygon"]


def _decode(entry: Any) -> Any:
    """Geometry stored as JSON text is read as JSON (any other value is returned as is)."""
    if isinstance(entry, str):
        try:
            return json.loads(entry)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{entry[:60]!r} is not JSON") from exc
    return entry


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{value!r} is not a number")
    out = float(value)
    if not math.isfinite(out):
        raise ValueError(f"{value!r} is not finite")
    return out


def _label_of(entry: Mapping[str, Any]) -> str | None:
    for key in ("className", "class_name", "label"):
        value = entry.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _checked(x1: float, y1: float, x2: float, y2: float, label: str) -> Box:
    if x2 < x1 or y2 < y1:
        raise ValueError(f"box ({x1}, {y1}, {x2}, {y2}) needs x1 <= x2 and y1 <= y2")
    return Box(x1, y1, x2, y2, label)


def box_from_bbox(entry: Any, default_label: str) -> Box:
    """One ``bbox`` entry as a :class:`Box` (formats in the module docstring).

    Raises:
        ValueError: When the entry is in none of the accepted formats or is not a valid box.
    """
    value = _decode(entry)
    label = default_label
    if isinstance(value, Mapping):
        label = _label_of(value) or default_label
        value = _decode(value.get("points", value))  # points may be JSON text of their own
    if isinstance(value, Mapping):
        if not all(k in value for k in ("x1", "y1", "x2", "y2")):
            raise ValueError(f"box {entry!r} lacks x1/y1/x2/y2")
        return _checked(
            _number(value["x1"]), _number(value["y1"]), _number(value["x2"]), _number(value["y2"]), label
        )
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)) and len(value) == 4:
        x1, y1, x2, y2 = (_number(v) for v in value)
        return _checked(x1, y1, x2, y2, label)
    raise ValueError(f"box {entry!r} is neither {{x1, y1, x2, y2}} nor [x1, y1, x2, y2]")


def box_from_polygon(entry: Any, default_label: str) -> Box:
    """The bounding box of one ``polygon`` entry (formats in the module docstring).

    Raises:
        ValueError: When the entry is in none of the accepted formats.
    """
    value = _decode(entry)
    label = default_label
    if isinstance(value, Mapping):
        label = _label_of(value) or default_label
        value = _decode(value.get("points"))
    if not isinstance(value, Sequence) or isinstance(value, (str, bytes)) or not value:
        raise ValueError(f"polygon {entry!r} has no points")
    xs: list[float] = []
    ys: list[float] = []
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        if len(value) % 2:
            raise ValueError(f"polygon {entry!r} has an odd number of coordinates")
        xs = [_number(v) for v in value[0::2]]
        ys = [_number(v) for v in value[1::2]]
    else:
        for point in value:
            if isinstance(point, Mapping) and "x" in point and "y" in point:
                xs.append(_number(point["x"]))
                ys.append(_number(point["y"]))
            elif isinstance(point, Sequence) and not isinstance(point, (str, bytes)) and len(point) == 2:
                xs.append(_number(point[0]))
                ys.append(_number(point[1]))
            else:
                raise ValueError(f"polygon point {point!r} is neither [x, y] nor {{x, y}}")
    return Box(min(xs), min(ys), max(xs), max(ys), label)

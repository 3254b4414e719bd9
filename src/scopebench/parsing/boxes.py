"""Detection output → boxes in pixel coordinates.

Formats (all tolerant of spaces, several boxes and truncated output — an incomplete last box is
dropped, never guessed):

* **Qwen-VL** ``<box>(x1,y1),(x2,y2)</box>`` (also Qwen2-VL's ``<|box_start|>…<|box_end|>``),
  coordinates on a 0–1000 grid (``x / 1000 * width``), optionally after ``<ref>label</ref>``.
* **PaliGemma** four ``<locNNNN>`` tokens per box in the order y_min, x_min, y_max, x_max on a
  0–1024 grid (``loc / 1024 * size``), optionally followed by a label; boxes separated by ``;``.
* **JSON** ``{"x1":…, "y1":…, "x2":…, "y2":…}``, ``{"bbox_2d": [x1, y1, x2, y2]}`` (Qwen2.5-VL),
  ``{"bbox": [...]}`` or a bare ``[x1, y1, x2, y2]``, alone, in a list, or inside a Markdown code
  fence. Values all within [0, 1] are read as normalised (× width/height); otherwise as pixels.

Boxes come back with x1 ≤ x2 and y1 ≤ y2 (corners swapped if given reversed) and clipped to the image.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from scopebench.items import Box

__all__ = ["BOX_PARSER_VERSION", "BoxFormat", "BoxParse", "parse_boxes"]

BOX_PARSER_VERSION = "boxes-1"
BoxFormat = Literal["auto", "qwen", "paligemma", "json"]

_NUM = r"\s*(-?\d+(?:\.\d+)?)\s*"
_QWEN_BOX = re.compile(
    r"(?:<box>|<\|box_start\|>)\s*\(" + _NUM + "," + _NUM + r"\)\s*,\s*\(" + _NUM + "," + _NUM + r"\)",
    re.IGNORECASE,
)
_QWEN_REF = re.compile(r"<ref>(.*?)</ref>|<\|object_ref_start\|>(.*?)<\|object_ref_end\|>", re.DOTALL)
_LOC = re.compile(r"<loc(\d{4})>")
_PALI_SEG = re.compile(r"((?:<loc\d{4}>\s*)+)([^<;]*)")


@dataclass(frozen=True, slots=True)
class BoxParse:
    """Result of parsing one detection response.

    Attributes:
        boxes: Boxes in pixel coordinates of the original image.
        format: Which format was recognised (``"none"`` when no box was found).
        dropped: Incomplete boxes that were ignored (truncated output).
    """

    boxes: tuple[Box, ...]
    format: str
    dropped: int = 0


def _clip_box(x1: float, y1: float, x2: float, y2: float, w: float, h: float, label: str) -> Box:
    xa, xb = sorted((x1, x2))
    ya, yb = sorted((y1, y2))
    return Box(max(0.0, min(w, xa)), max(0.0, min(h, ya)), max(0.0, min(w, xb)), max(0.0, min(h, yb)), label)


def _parse_qwen(text: str, w: float, h: float, label: str) -> BoxParse | None:
    matches = list(_QWEN_BOX.finditer(text))
    opened = len(re.findall(r"<box>|<\|box_start\|>", text, re.IGNORECASE))
    if not matches and not opened:
        return None
    refs = [a or b for a, b in _QWEN_REF.findall(text)]
    boxes = []
    for i, m in enumerate(matches):
        x1, y1, x2, y2 = (float(g) for g in m.groups())
        name = refs[i].strip() if i < len(refs) and refs[i].strip() else label
        boxes.append(_clip_box(x1 / 1000 * w, y1 / 1000 * h, x2 / 1000 * w, y2 / 1000 * h, w, h, name))
    return BoxParse(tuple(boxes), "qwen", dropped=max(0, opened - len(matches)))


def _parse_paligemma(text: str, w: float, h: float, label: str) -> BoxParse | None:
    if not _LOC.search(text):
        return None
    boxes, dropped = [], 0
    for seg in _PALI_SEG.finditer(text):
        locs = [int(x) for x in _LOC.findall(seg.group(1))]
        name = seg.group(2).strip() or label
        # Groups of four; a trailing partial group is truncated output.
        for k in range(0, len(locs) - len(locs) % 4, 4):
            y1, x1, y2, x2 = locs[k : k + 4]
            boxes.append(_clip_box(x1 / 1024 * w, y1 / 1024 * h, x2 / 1024 * w, y2 / 1024 * h, w, h, name))
        dropped += 1 if len(locs) % 4 else 0
    return BoxParse(tuple(boxes), "paligemma", dropped=dropped)


def _json_candidates(text: str) -> Iterable[Any]:
    fence = re.findall(r"```(?:json)?\s*(.*?)```", text, re.DOTALL)
    for chunk in [*fence, text]:
        try:
            yield json.loads(chunk.strip())
            return
        except json.JSONDecodeError:
            continue
    # Fall back to every balanced-looking object or 4-number list in the text (truncated JSON).
    for m in re.finditer(r"\{[^{}]*\}|\[\s*-?\d[^\[\]]*\]", text):
        try:
            yield json.loads(m.group(0))
        except json.JSONDecodeError:
            continue


def _coords(obj: Any) -> tuple[list[float], str] | None:
    if isinstance(obj, list) and len(obj) == 4 and all(isinstance(v, int | float) for v in obj):
        return [float(v) for v in obj], ""
    if isinstance(obj, dict):
        label = str(obj.get("label", obj.get("class", "")) or "")
        if all(k in obj for k in ("x1", "y1", "x2", "y2")):
            try:
                return [float(obj[k]) for k in ("x1", "y1", "x2", "y2")], label
            except (TypeError, ValueError):
                return None
        for key in ("bbox_2d", "bbox", "box"):
            inner = _coords(obj.get(key))
            if inner is not None:
                return inner[0], label
    return None


def _flatten(obj: Any) -> Iterable[Any]:
    if _coords(obj) is not None:
        yield obj
    elif isinstance(obj, list):
        for o in obj:
            yield from _flatten(o)
    elif isinstance(obj, dict):
        for v in obj.values():
            if isinstance(v, list | dict):
                yield from _flatten(v)


def _parse_json(text: str, w: float, h: float, label: str) -> BoxParse | None:
    found: list[tuple[list[float], str]] = []
    for cand in _json_candidates(text):
        for obj in _flatten(cand):
            c = _coords(obj)
            if c is not None:
                found.append(c)
    if not found:
        return None
    normalised = all(0.0 <= v <= 1.0 for coords, _ in found for v in coords)
    sx, sy = (w, h) if normalised else (1.0, 1.0)
    boxes = tuple(
        _clip_box(c[0] * sx, c[1] * sy, c[2] * sx, c[3] * sy, w, h, lab or label) for c, lab in found
    )
    return BoxParse(boxes, "json")


def parse_boxes(
    text: str | None, width: float, height: float, *, fmt: BoxFormat = "auto", label: str = ""
) -> BoxParse:
    """Parse every box in a detection response.

    Args:
        text: The model's raw output.
        width: Width of the original image in pixels.
        height: Height of the original image in pixels.
        fmt: Force a format, or ``auto`` (Qwen tags, then PaliGemma loc tokens, then JSON).
        label: Class name given to boxes that carry none.

    Returns:
        The boxes (possibly none: an empty answer is a valid "nothing found").
    """
    if not text:
        return BoxParse((), "none")
    parsers = {"qwen": _parse_qwen, "paligemma": _parse_paligemma, "json": _parse_json}
    order = list(parsers) if fmt == "auto" else [fmt]
    for name in order:
        got = parsers[name](text, float(width), float(height), label)
        if got is not None:
            return got
    return BoxParse((), "none")

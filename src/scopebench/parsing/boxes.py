"""Detection output → boxes in pixel coordinates, exactly as the model wrote them.

Formats (all tolerant of spaces, several boxes and truncated output — an incomplete last box is
dropped, never guessed):

* **Qwen-VL** ``<box>(x1,y1),(x2,y2)</box>`` (also Qwen2-VL's ``<|box_start|>…<|box_end|>``),
  coordinates on a 0–1000 grid (``x / 1000 * width``), optionally after ``<ref>label</ref>``.
* **PaliGemma** four ``<locNNNN>`` tokens per box in the order y_min, x_min, y_max, x_max on a
  0–1024 grid (``loc / 1024 * size``), optionally followed by a label; boxes separated by ``;``.
* **JSON** ``{"x1":…, "y1":…, "x2":…, "y2":…}``, ``{"bbox_2d": [x1, y1, x2, y2]}`` (Qwen2.5-VL),
  ``{"bbox": [...]}`` or a bare ``[x1, y1, x2, y2]``, alone, in a list, or inside a Markdown code
  fence. Values all within [0, 1] are read as normalised (× width/height); otherwise as pixels.

The grids are the formats' definitions, so converting them to pixels is not a repair. Nothing
else is changed by default: a box written with reversed corners (x2 < x1) or reaching outside the
image is scored as written, which is what the official GRIT ``loc_metric``
(allenai/grit_official, ``metrics/localization.py``) and μ-Bench's copy of it
(Ale9806/eVLLM, ``src/evlm/eval/eval_detection.py``) do: a reversed box has area 0 there and so
IoU 0 with everything. Such boxes are counted in :attr:`BoxParse.irregular`. Only with
``repair=True`` are corners swapped and boxes clipped to the image (counted in
:attr:`BoxParse.repaired`); a run records which setting it used.

Replies are untrusted input: parsing never recurses on the reply's nesting depth (JSON nested
deeper than :data:`MAX_JSON_DEPTH` is not handed to :func:`json.loads`, whose recursion would raise
``RecursionError``), every pattern runs in linear time, and at most :data:`MAX_BOXES` boxes are
read (the rest are counted in :attr:`BoxParse.truncated`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from scopebench.items import Box

__all__ = ["BOX_PARSER_VERSION", "MAX_BOXES", "MAX_JSON_DEPTH", "BoxFormat", "BoxParse", "parse_boxes"]

#: boxes-2: boxes scored as written (no swap, no clip) unless ``repair``; bounded work on any reply.
BOX_PARSER_VERSION = "boxes-2"
BoxFormat = Literal["auto", "qwen", "paligemma", "json"]

#: Boxes read from one reply; more are counted as ``truncated`` (and still count as predictions).
MAX_BOXES = 1000
#: Deepest bracket nesting handed to :func:`json.loads` (real box JSON nests 2–3 levels).
MAX_JSON_DEPTH = 32

_NUM = r"\s*(-?\d+(?:\.\d+)?)\s*"
_QWEN_BOX = re.compile(
    r"(?:<box>|<\|box_start\|>)\s*\(" + _NUM + "," + _NUM + r"\)\s*,\s*\(" + _NUM + "," + _NUM + r"\)",
    re.IGNORECASE,
)
_QWEN_OPEN = re.compile(r"<box>|<\|box_start\|>", re.IGNORECASE)
# [^<]* rather than .*? so that many unclosed <ref> tags cost linear, not quadratic, time.
_QWEN_REF = re.compile(r"<ref>([^<]*)</ref>|<\|object_ref_start\|>([^<]*)<\|object_ref_end\|>")
_LOC = re.compile(r"<loc(\d{4})>")
_PALI_SEG = re.compile(r"((?:<loc\d{4}>\s*)+)([^<;]*)")
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)
# Flat objects and 4-number-looking lists: what survives of truncated or over-deep JSON.
_FLAT_JSON = re.compile(r"\{[^{}]*\}|\[\s*-?\d[^\[\]]*\]")


@dataclass(frozen=True, slots=True)
class BoxParse:
    """Result of parsing one detection response.

    Attributes:
        boxes: Boxes in pixel coordinates of the original image, as written (unless repaired).
        format: Which format was recognised (``"none"`` when no box was found).
        dropped: Incomplete or non-finite boxes that were ignored (truncated output).
        truncated: Complete boxes after the first :data:`MAX_BOXES` that were not read.
        irregular: Boxes written with reversed corners or reaching outside the image.
        repaired: Boxes changed by ``repair`` (corners swapped and/or clipped); 0 without it.
    """

    boxes: tuple[Box, ...]
    format: str
    dropped: int = 0
    truncated: int = 0
    irregular: int = 0
    repaired: int = 0


class _Collector:
    """Turns grid/pixel coordinates into boxes, counting irregular, repaired and surplus boxes."""

    def __init__(self, w: float, h: float, repair: bool, max_boxes: int) -> None:
        self.w, self.h, self.repair, self.max_boxes = w, h, repair, max_boxes
        self.boxes: list[Box] = []
        self.dropped = self.truncated = self.irregular = self.repaired = 0

    def add(self, x1: float, y1: float, x2: float, y2: float, label: str) -> None:
        if not all(math.isfinite(v) for v in (x1, y1, x2, y2)):
            self.dropped += 1  # "1e999" or NaN: no box can be drawn from it
            return
        if len(self.boxes) >= self.max_boxes:
            self.truncated += 1
            return
        w, h = self.w, self.h
        reversed_ = x2 < x1 or y2 < y1
        outside = min(x1, x2) < 0 or min(y1, y2) < 0 or max(x1, x2) > w or max(y1, y2) > h
        self.irregular += reversed_ or outside
        if self.repair and (reversed_ or outside):
            xa, xb = sorted((x1, x2))
            ya, yb = sorted((y1, y2))
            x1, x2 = max(0.0, min(w, xa)), max(0.0, min(w, xb))
            y1, y2 = max(0.0, min(h, ya)), max(0.0, min(h, yb))
            self.repaired += 1
        self.boxes.append(Box(x1, y1, x2, y2, label))

    def result(self, fmt: str, dropped: int = 0) -> BoxParse:
        return BoxParse(
            tuple(self.boxes), fmt, self.dropped + dropped, self.truncated, self.irregular, self.repaired
        )


def _parse_qwen(text: str, out: _Collector, label: str) -> BoxParse | None:
    opened = sum(1 for _ in _QWEN_OPEN.finditer(text))
    if not opened:
        return None
    refs = [a or b for a, b in _QWEN_REF.findall(text)]
    w, h = out.w, out.h
    matched = 0
    for i, m in enumerate(_QWEN_BOX.finditer(text)):
        matched += 1
        x1, y1, x2, y2 = (float(g) for g in m.groups())
        name = refs[i].strip() if i < len(refs) and refs[i].strip() else label
        out.add(x1 / 1000 * w, y1 / 1000 * h, x2 / 1000 * w, y2 / 1000 * h, name)
    return out.result("qwen", dropped=max(0, opened - matched))


def _parse_paligemma(text: str, out: _Collector, label: str) -> BoxParse | None:
    if not _LOC.search(text):
        return None
    w, h = out.w, out.h
    dropped = 0
    for seg in _PALI_SEG.finditer(text):
        locs = [int(x) for x in _LOC.findall(seg.group(1))]
        name = seg.group(2).strip() or label
        # Groups of four; a trailing partial group is truncated output.
        for k in range(0, len(locs) - len(locs) % 4, 4):
            y1, x1, y2, x2 = locs[k : k + 4]
            out.add(x1 / 1024 * w, y1 / 1024 * h, x2 / 1024 * w, y2 / 1024 * h, name)
        dropped += 1 if len(locs) % 4 else 0
    return out.result("paligemma", dropped=dropped)


def _nesting_depth(chunk: str) -> int:
    """Deepest ``[``/``{`` nesting outside JSON strings, in one linear pass (no parsing)."""
    depth = deepest = 0
    in_str = escaped = False
    for ch in chunk:
        if in_str:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth = max(0, depth - 1)
    return deepest


def _json_candidates(text: str) -> Iterator[Any]:
    for chunk in [*_FENCE.findall(text), text]:
        chunk = chunk.strip()
        if not chunk or chunk[0] not in "[{" or _nesting_depth(chunk) > MAX_JSON_DEPTH:
            continue
        try:
            yield json.loads(chunk)
            return
        except (json.JSONDecodeError, RecursionError):
            continue
    # Fall back to every flat object or 4-number list in the text (truncated or over-deep JSON).
    for m in _FLAT_JSON.finditer(text):
        try:
            yield json.loads(m.group(0))
        except (json.JSONDecodeError, RecursionError):
            continue


def _number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    return float(v)


def _coords(obj: Any) -> tuple[list[float], str] | None:
    if isinstance(obj, list) and len(obj) == 4:
        nums = [_number(v) for v in obj]
        return ([v for v in nums if v is not None], "") if None not in nums else None
    if isinstance(obj, dict):
        label = str(obj.get("label", obj.get("class", "")) or "")
        if all(k in obj for k in ("x1", "y1", "x2", "y2")):
            try:
                return [float(obj[k]) for k in ("x1", "y1", "x2", "y2")], label
            except (TypeError, ValueError, OverflowError):
                return None
        for key in ("bbox_2d", "bbox", "box"):
            value = obj.get(key)
            if isinstance(value, list) and len(value) == 4:
                nums = [_number(v) for v in value]
                if None not in nums:
                    return [v for v in nums if v is not None], label
    return None


def _flatten(obj: Any) -> Iterator[tuple[list[float], str]]:
    """Every box in a parsed JSON value, in document order, with an explicit stack (no recursion)."""
    stack = [obj]
    while stack:
        node = stack.pop()
        found = _coords(node)
        if found is not None:
            yield found
        elif isinstance(node, list):
            stack.extend(reversed(node))
        elif isinstance(node, dict):
            stack.extend(reversed([v for v in node.values() if isinstance(v, list | dict)]))


def _parse_json(text: str, out: _Collector, label: str) -> BoxParse | None:
    # At most one box per 9 characters of reply, so this list stays linear in the reply's size.
    found = [c for cand in _json_candidates(text) for c in _flatten(cand)]
    if not found:
        return None
    finite = [v for coords, _ in found for v in coords if math.isfinite(v)]
    normalised = all(0.0 <= v <= 1.0 for v in finite)
    sx, sy = (out.w, out.h) if normalised else (1.0, 1.0)
    for c, lab in found:
        out.add(c[0] * sx, c[1] * sy, c[2] * sx, c[3] * sy, lab or label)
    return out.result("json")


def parse_boxes(
    text: str | None,
    width: float,
    height: float,
    *,
    fmt: BoxFormat = "auto",
    label: str = "",
    repair: bool = False,
    max_boxes: int = MAX_BOXES,
) -> BoxParse:
    """Parse every box in a detection response.

    Args:
        text: The model's raw output.
        width: Width of the original image in pixels.
        height: Height of the original image in pixels.
        fmt: Force a format, or ``auto`` (Qwen tags, then PaliGemma loc tokens, then JSON).
        label: Class name given to boxes that carry none.
        repair: Swap reversed corners and clip boxes to the image (off by default: the official
            GRIT metric scores boxes as written). Counted in :attr:`BoxParse.repaired`.
        max_boxes: Boxes read at most; further complete boxes are counted in ``truncated``.

    Returns:
        The boxes (possibly none: an empty answer is a valid "nothing found").
    """
    if not text:
        return BoxParse((), "none")
    parsers = {"qwen": _parse_qwen, "paligemma": _parse_paligemma, "json": _parse_json}
    order = list(parsers) if fmt == "auto" else [fmt]
    for name in order:
        got = parsers[name](text, _Collector(float(width), float(height), repair, max_boxes), label)
        if got is not None:
            return got
    return BoxParse((), "none")

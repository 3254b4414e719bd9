"""SPUR's figure gate: count the panels of a figure and keep figures with enough of them.

Two classical counters need nothing beyond numpy/scipy:

* ``xycut`` (default): recursive XY-cut. A *separator line* is a row (or column) of the region
  whose pixels all lie within ``tol`` of each other (a white gutter, a black rule, a panel's thin
  border next to a gutter). A run of at least ``min_gutter`` separator lines strictly inside the
  region cuts it; rows are tried before columns and each piece is cut again, so regular grids
  (2×2, 1×3) and guillotine layouts (one tall panel beside two stacked ones) are both counted.
  Margins (separator lines at a region's edges) are trimmed first.
* ``components``: pixels further than ``tol`` from the background colour (the most common edge
  colour) are foreground; after closing small holes (3×3, twice) each 8-connected component is a
  candidate panel.

Either way a candidate counts as a panel only when its box covers at least ``min_area`` of the
figure and both sides are at least ``min_side`` pixels, so panel letters and stray marks in the
gutters are not panels. ``yolo`` runs an Ultralytics detector (the optional ``panels-yolo`` extra,
imported only when chosen) and counts boxes of confidence ``conf`` or more.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from pydantic import ConfigDict

from scopebench.errors import DataFormatError, MissingDependencyError
from scopebench.items import open_image

__all__ = ["PanelConfig", "PanelCount", "count_panels", "count_panels_bytes"]

Method = Literal["xycut", "components", "yolo"]
Box = tuple[int, int, int, int]  # y0, x0, y1, x1 (end exclusive)


@dataclass(frozen=True)
class PanelConfig:
    """How panels are counted and which figures the gate keeps.

    Attributes:
        min_panels: Figures with fewer panels are dropped (reason ``too_few_panels``).
        method: ``xycut``, ``components`` or ``yolo``.
        tol: Largest grey-level spread (0–1) of a separator line, or distance from the background.
        min_gutter: Separator lines a cut needs (``xycut``).
        min_area: Smallest panel box, as a fraction of the figure's area.
        min_side: Smallest panel side in pixels.
        weights: Detector weights (``yolo``).
        conf: Smallest detector confidence (``yolo``).
    """

    # A build.yaml section validated into this class refuses a misspelt key (pydantic reads it).
    __pydantic_config__ = ConfigDict(extra="forbid")

    min_panels: int = 2
    method: Method = "xycut"
    tol: float = 0.04
    min_gutter: int = 2
    min_area: float = 0.01
    min_side: int = 8
    weights: str | None = None
    conf: float = 0.25

    def __post_init__(self) -> None:
        if self.method not in ("xycut", "components", "yolo"):
            raise DataFormatError(f"figures.method must be xycut, components or yolo (got {self.method!r})")
        if self.method == "yolo" and not self.weights:
            raise DataFormatError("figures.method yolo needs figures.weights: a YOLO panel-detector file")
        if self.min_panels < 1 or self.min_gutter < 1 or self.min_side < 1:
            raise DataFormatError("figures.min_panels, min_gutter and min_side must be at least 1")
        if not 0 <= self.tol < 1 or not 0 <= self.min_area < 1:
            raise DataFormatError("figures.tol and figures.min_area must be in [0, 1)")


@dataclass
class PanelCount:
    """What the counter found in one figure.

    Attributes:
        count: Panels found.
        boxes: One ``(y0, x0, y1, x1)`` box per panel.
        method: The counter used.
        rejected: Candidate boxes too small to be panels (letters, marks).
    """

    count: int
    boxes: list[Box] = field(default_factory=list)
    method: str = "xycut"
    rejected: int = 0


def _grey(image: np.ndarray) -> np.ndarray:
    """Grey levels in [0, 1] (integer images scaled by their dtype's range; alpha dropped)."""
    a = np.asarray(image)
    scale = float(np.iinfo(a.dtype).max) if np.issubdtype(a.dtype, np.integer) else 1.0
    a = a.astype(np.float64) / scale
    if a.ndim == 3:
        a = a[..., :3].mean(axis=2) if a.shape[2] >= 3 else a[..., 0]
    return a


def _runs(flags: np.ndarray) -> list[tuple[int, int]]:
    """``(start, end)`` of each run of True (end exclusive)."""
    padded = np.concatenate([[False], flags, [False]]).astype(np.int8)
    d = np.diff(padded)
    return list(zip(np.flatnonzero(d == 1).tolist(), np.flatnonzero(d == -1).tolist(), strict=True))


def _separators(sub: np.ndarray, axis: int, tol: float) -> np.ndarray:
    """Per row (axis 1) or column (axis 0): whether every pixel is within ``tol`` of the others."""
    return np.asarray((sub.max(axis=axis) - sub.min(axis=axis)) <= tol)


def _xycut(g: np.ndarray, box: Box, cfg: PanelConfig, depth: int = 0) -> list[Box]:
    y0, x0, y1, x1 = box
    sub = g[y0:y1, x0:x1]
    if sub.size == 0:
        return []
    rows, cols = _separators(sub, 1, cfg.tol), _separators(sub, 0, cfg.tol)
    if rows.all() or cols.all():
        return []  # a blank region holds no panel
    # Trim margins: separator lines at the edges belong to no panel.
    keep_r, keep_c = np.flatnonzero(~rows), np.flatnonzero(~cols)
    ty0, ty1 = y0 + int(keep_r[0]), y0 + int(keep_r[-1]) + 1
    tx0, tx1 = x0 + int(keep_c[0]), x0 + int(keep_c[-1]) + 1
    if (ty0, ty1, tx0, tx1) != (y0, y1, x0, x1):
        return _xycut(g, (ty0, tx0, ty1, tx1), cfg, depth)
    if depth > 64:  # a pathological figure: stop cutting rather than recurse without end
        return [box]
    for axis_flags, horizontal in ((rows, True), (cols, False)):
        cuts = [(s, e) for s, e in _runs(axis_flags) if e - s >= cfg.min_gutter]
        if not cuts:
            continue
        pieces, start = [], 0
        for s, e in cuts:
            pieces.append((start, s))
            start = e
        pieces.append((start, len(axis_flags)))
        out: list[Box] = []
        for a, b in pieces:
            child = (y0 + a, x0, y0 + b, x1) if horizontal else (y0, x0 + a, y1, x0 + b)
            out += _xycut(g, child, cfg, depth + 1)
        return out
    return [box]


def _components(g: np.ndarray, cfg: PanelConfig) -> list[Box]:
    from scipy import ndimage

    edge = np.concatenate([g[0], g[-1], g[:, 0], g[:, -1]])
    values, counts = np.unique(np.round(edge, 2), return_counts=True)
    background = float(values[np.argmax(counts)])
    mask = np.abs(g - background) > cfg.tol
    mask = ndimage.binary_closing(mask, structure=np.ones((3, 3)), iterations=2)
    labels, _ = ndimage.label(mask, structure=np.ones((3, 3)))
    boxes: list[Box] = []
    for sl in ndimage.find_objects(labels):
        if sl is not None:
            boxes.append((sl[0].start, sl[1].start, sl[0].stop, sl[1].stop))
    return boxes


def _yolo(image: np.ndarray, cfg: PanelConfig) -> list[Box]:
    try:
        from ultralytics import YOLO  # optional extra; never required
    except ImportError as exc:
        raise MissingDependencyError(
            "ultralytics", "panels-yolo", "figures.method yolo (use xycut or components to need nothing more)"
        ) from exc
    result = YOLO(cfg.weights)(image, conf=cfg.conf, verbose=False)[0]
    return [(int(b[1]), int(b[0]), int(b[3]), int(b[2])) for b in result.boxes.xyxy.cpu().numpy().tolist()]


def count_panels(image: np.ndarray, config: PanelConfig | None = None) -> PanelCount:
    """Count the panels of one figure (an ``H×W`` or ``H×W×C`` array).

    Args:
        image: The figure's pixels (integer types are scaled by their range).
        config: The counter and its thresholds (module docstring).

    Returns:
        The panel count, the panels' boxes and how many candidates were too small.
    """
    cfg = config or PanelConfig()
    arr = np.asarray(image)
    if cfg.method == "yolo":
        candidates = _yolo(arr, cfg)
    else:
        g = _grey(arr)
        h, w = g.shape
        candidates = _xycut(g, (0, 0, h, w), cfg) if cfg.method == "xycut" else _components(g, cfg)
    area = arr.shape[0] * arr.shape[1]
    boxes = [
        b
        for b in candidates
        if (b[2] - b[0]) * (b[3] - b[1]) >= cfg.min_area * area
        and min(b[2] - b[0], b[3] - b[1]) >= cfg.min_side
    ]
    return PanelCount(len(boxes), sorted(boxes), cfg.method, len(candidates) - len(boxes))


def count_panels_bytes(data: bytes, config: PanelConfig | None = None) -> PanelCount:
    """:func:`count_panels` of an encoded image (PNG, JPEG…), decoded with the bomb guard on."""
    return count_panels(np.asarray(open_image(data, what="figure")), config)

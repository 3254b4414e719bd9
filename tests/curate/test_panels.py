"""The figure gate's panel counters on synthetic figures whose panel counts are known."""

from __future__ import annotations

import io
import sys

import numpy as np
import pytest
from PIL import Image

from scopebench.curate.filtering.panels import PanelConfig, count_panels, count_panels_bytes
from scopebench.errors import DataFormatError, MissingDependencyError

Layout = list[tuple[int, int, int, int]]

GRID_2X2: Layout = [(10, 10, 95, 145), (10, 155, 95, 290), (105, 10, 190, 145), (105, 155, 190, 290)]
ROW_1X3: Layout = [(10, 10, 190, 95), (10, 105, 190, 195), (10, 205, 190, 290)]
# One tall panel on the left; on the right one wide panel above two small ones (not a grid).
IRREGULAR: Layout = [(10, 10, 190, 140), (10, 150, 95, 290), (105, 150, 190, 220), (105, 230, 190, 290)]


def figure(layout: Layout, *, border: int = 0, background: int = 255, seed: int = 0) -> np.ndarray:
    """A 200×300 RGB figure: textured panels on a flat background, optionally with black borders."""
    rng = np.random.default_rng(seed)
    img = np.full((200, 300, 3), background, np.uint8)
    for y0, x0, y1, x1 in layout:
        img[y0:y1, x0:x1] = rng.integers(20, 200, (y1 - y0, x1 - x0, 3))
        if border:
            img[y0 : y0 + border, x0:x1] = img[y1 - border : y1, x0:x1] = 0
            img[y0:y1, x0 : x0 + border] = img[y0:y1, x1 - border : x1] = 0
    return img


@pytest.mark.parametrize("method", ["xycut", "components"])
@pytest.mark.parametrize("border", [0, 2])
@pytest.mark.parametrize(("layout", "expected"), [(GRID_2X2, 4), (ROW_1X3, 3), (IRREGULAR, 4)])
def test_known_panel_counts(layout: Layout, expected: int, border: int, method: str) -> None:
    got = count_panels(figure(layout, border=border), PanelConfig(method=method))  # type: ignore[arg-type]
    assert got.count == expected
    if method == "xycut":
        # Each box found lies inside one drawn panel (borders and gutters excluded, not merged).
        for y0, x0, y1, x1 in got.boxes:
            assert any(a <= y0 and b <= x0 and y1 <= c and x1 <= d for a, b, c, d in layout)


def test_one_panel_with_margins_is_one() -> None:
    assert count_panels(figure([(20, 30, 180, 270)])).count == 1
    assert count_panels(figure([(20, 30, 180, 270)]), PanelConfig(method="components")).count == 1


def test_panels_split_by_a_thin_black_rule_on_a_dark_background() -> None:
    # No white gutter at all: two panels on a black figure, 3 px apart (black shows between).
    img = figure([(0, 0, 200, 148), (0, 151, 200, 300)], background=0)
    assert count_panels(img).count == 2
    # A 1-px rule is narrower than min_gutter=2: read as one panel, unless min_gutter is 1.
    img = figure([(0, 0, 200, 149), (0, 150, 200, 300)], background=0)
    assert count_panels(img).count == 1
    assert count_panels(img, PanelConfig(min_gutter=1)).count == 2


def test_panel_letters_in_the_gutter_are_not_panels() -> None:
    img = figure(ROW_1X3)
    # A panel letter in the top-left margin (a textured 8×6 mark, not a flat block).
    img[0:8, 0:6] = (np.indices((8, 6)).sum(axis=0) % 2 * 255)[..., None]
    got = count_panels(img)
    assert got.count == 3 and got.rejected == 1


def test_blank_and_grey_figures() -> None:
    assert count_panels(np.full((50, 50), 255, np.uint8)).count == 0
    # 16-bit greyscale is scaled by its range like 8-bit.
    img16 = (figure(GRID_2X2)[..., 0].astype(np.uint16) * 257).astype(np.uint16)
    assert count_panels(img16).count == 4


def test_count_from_png_bytes() -> None:
    buf = io.BytesIO()
    Image.fromarray(figure(ROW_1X3)).save(buf, format="PNG")
    assert count_panels_bytes(buf.getvalue()).count == 3


def test_yolo_is_optional_and_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ultralytics", None)  # import fails as if not installed
    with pytest.raises(MissingDependencyError, match=r"scopebench\[panels-yolo\]"):
        count_panels(figure(GRID_2X2), PanelConfig(method="yolo", weights="panels.pt"))


def test_bad_settings() -> None:
    with pytest.raises(DataFormatError, match="weights"):
        PanelConfig(method="yolo")
    with pytest.raises(DataFormatError, match="xycut"):
        PanelConfig(method="hough")  # type: ignore[arg-type]
    with pytest.raises(DataFormatError, match="min_panels"):
        PanelConfig(min_panels=0)

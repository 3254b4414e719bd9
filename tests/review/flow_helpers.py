"""Builders of the viewer and reviewing-flow tests: a benchmark with a large and a two-image item."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from PIL import Image
from review_helpers import write_bench

# Just over the tiling threshold (2048 px), so the item is shown from DZI tiles.
LARGE = (2100, 1400)


def large_image() -> Image.Image:
    """A gradient with a 50 px grid: every tile differs, and a misplaced tile shows in the pixels."""
    w, h = LARGE
    x = np.arange(w, dtype=np.uint16)[None, :]
    y = np.arange(h, dtype=np.uint16)[:, None]
    rgb = np.zeros((h, w, 3), np.uint8)
    rgb[..., 0] = (x * 255 // w).astype(np.uint8)
    rgb[..., 1] = (y * 255 // h).astype(np.uint8)
    rgb[..., 2] = (((x // 50) + (y // 50)) % 2 * 200).astype(np.uint8)
    return Image.fromarray(rgb, "RGB")


def write_viewer_bench(folder: Path) -> Path:
    """write_bench's four items plus q5 (one large PNG) and q6 (two images, shown side by side)."""
    data = write_bench(folder)
    large_image().save(folder / "images" / "large.png", compress_level=1)
    rows = [
        {
            "id": "q5",
            "question": "Which pattern fills the slide?",
            "choices": ["Checkerboard", "Stripes", "Dots"],
            "answer": 0,
            "image": "images/large.png",
            "task": "pattern",
        },
        {
            "id": "q6",
            "question": "Which of the two panels is red?",
            "choices": ["Left", "Right"],
            "answer": 0,
            "images": ["images/red.png", "images/blue.png"],
            "task": "compare",
        },
    ]
    with data.open("a", encoding="utf-8") as f:
        f.write("".join(json.dumps(r) + "\n" for r in rows))
    return data

"""A labelled set of near-duplicates and look-alikes, for tests and ``bench/bench_near_duplicates.py``.

Each *field* is a synthetic micrograph: a background shared by every field of its *family* (an
illumination gradient, a fixed substrate texture and one stain colour, all from the family's seed)
plus a few cells at positions and sizes of the field's own seed. Fields of one family are
**look-alikes**: distinct images whose perceptual hashes are close because the background dominates
them. Each field also gets **true near-duplicates**, the edits a collection picks up on its way:
a JPEG re-encoding, a 16-bit copy, a rescale, a crop and a contrast change.

Every random choice comes from the seed given; the same seed gives the same images.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np

__all__ = ["EDITS", "LabelledImage", "field_image", "labelled_set", "smooth_field"]

#: The edits that make a true near-duplicate of a field.
EDITS = ("jpeg", "bit16", "rescale", "crop", "contrast")


@dataclass(frozen=True, slots=True)
class LabelledImage:
    """One image of the labelled set.

    Attributes:
        name: ``f<family>_<field>_<edit>`` (edit ``orig`` for the field itself).
        family: Fields of one family share their background (look-alikes of each other).
        field: The picture: every image with the same ``(family, field)`` is a near-duplicate.
        edit: ``orig`` or one of :data:`EDITS`.
        pixels: RGB uint8, or uint16 for ``bit16``.
    """

    name: str
    family: int
    field: int
    edit: str
    pixels: np.ndarray


def _background(rng: np.random.Generator, size: int) -> tuple[np.ndarray, np.ndarray]:
    y, x = np.mgrid[0:size, 0:size] / size
    angle = rng.uniform(0, 2 * np.pi)
    cy, cx = rng.uniform(0.3, 0.7, 2)
    vignette = 1 - 1.2 * ((x - cx) ** 2 + (y - cy) ** 2)  # brighter where the lamp is centred
    gradient = 0.3 + 0.45 * vignette + 0.15 * (np.cos(angle) * x + np.sin(angle) * y)
    from scipy.ndimage import gaussian_filter

    texture = gaussian_filter(rng.normal(0, 1, (size, size)), 2.0)
    texture = 0.05 * texture / (np.abs(texture).max() or 1.0)
    stain = rng.uniform(0.4, 1.0, 3)
    return gradient + texture, stain


def field_image(family_seed: int, field_seed: int, size: int = 256, cells: int = 6) -> np.ndarray:
    """One field: the family's background with ``cells`` dark stained cells of the field's seed.

    Returns:
        An RGB uint8 array of ``size × size``.
    """
    base, stain = _background(np.random.default_rng(family_seed), size)
    rng = np.random.default_rng([family_seed, field_seed])
    y, x = np.mgrid[0:size, 0:size]
    absorb = np.zeros((size, size))
    for _ in range(cells):
        cy, cx = rng.uniform(0.1, 0.9, 2) * size
        ry, rx = rng.uniform(0.03, 0.06, 2) * size
        absorb += 0.15 * np.exp(-((((y - cy) / ry) ** 2 + ((x - cx) / rx) ** 2) ** 2))
    light = np.clip(base * (1 - np.clip(absorb, 0, 0.9)), 0, 1)
    rgb = light[..., None] * (1 - (1 - stain) * np.clip(absorb, 0, 1)[..., None] * 2)
    return np.clip(rgb * 255, 0, 255).round().astype(np.uint8)


def _edit(pixels: np.ndarray, edit: str, rng: np.random.Generator) -> np.ndarray:
    from PIL import Image

    im = Image.fromarray(pixels)
    if edit == "jpeg":
        buf = io.BytesIO()
        im.save(buf, format="JPEG", quality=int(rng.integers(70, 95)))
        return np.asarray(Image.open(buf).convert("RGB"))
    if edit == "bit16":
        return pixels.astype(np.uint16) * 257
    if edit == "rescale":
        side = int(pixels.shape[0] * rng.uniform(0.5, 0.8))
        return np.asarray(im.resize((side, side), Image.Resampling.LANCZOS))
    if edit == "crop":
        h, w = pixels.shape[:2]
        ch, cw = int(h * rng.uniform(0.9, 0.97)), int(w * rng.uniform(0.9, 0.97))
        y0, x0 = int(rng.integers(0, h - ch + 1)), int(rng.integers(0, w - cw + 1))
        return pixels[y0 : y0 + ch, x0 : x0 + cw].copy()
    if edit == "contrast":
        gamma = float(np.exp(rng.choice([-1.0, 1.0]) * rng.uniform(0.2, 0.35)))  # never near 1: a real change
        return np.clip(255 * (pixels / 255.0) ** gamma, 0, 255).round().astype(np.uint8)
    raise ValueError(f"unknown edit {edit!r}; one of {EDITS}")


def labelled_set(families: int, fields: int, *, seed: int = 0, size: int = 256) -> list[LabelledImage]:
    """``families × fields`` fields, each with one image per edit of :data:`EDITS`.

    Args:
        families: Backgrounds; the fields of one family are look-alikes of each other.
        fields: Fields per family.
        seed: Seed of every background, cell and edit.
        size: Side of the original fields.
    """
    out: list[LabelledImage] = []
    for fam in range(families):
        for fld in range(fields):
            orig = field_image(seed * 100_003 + fam, fld, size)
            rng = np.random.default_rng([seed, fam, fld])
            out.append(LabelledImage(f"f{fam}_{fld}_orig", fam, fld, "orig", orig))
            for edit in EDITS:
                out.append(LabelledImage(f"f{fam}_{fld}_{edit}", fam, fld, edit, _edit(orig, edit, rng)))
    return out


def smooth_field(seed: int, index: int, size: int = 512) -> np.ndarray:
    """One smooth, low-frequency grey image (an illumination field, an empty background) plus noise.

    Each ``index`` draws its own sinusoidal field, so no two are near-duplicates, yet their
    difference hashes are weak and often close: the hash proposes such images in bulk.

    Returns:
        A grey uint8 array of ``size × size``.
    """
    rng = np.random.default_rng([seed, index])
    y, x = np.mgrid[0:size, 0:size] / size
    fx, fy, phase = rng.uniform(2, 12, 3)
    field = np.sin(x * fx + y * fy + phase) * 0.3 + 0.5
    grey = np.clip(field + rng.normal(0, 0.03, (size, size)), 0, 1)
    out: np.ndarray = (grey * 255).round().astype(np.uint8)
    return out

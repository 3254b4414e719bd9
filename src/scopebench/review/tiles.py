"""Deep Zoom (DZI) tiles of the store's images, made once per image and cached on disk.

The item viewer (OpenSeadragon, shipped in ``static/vendor``) shows a small image the browser can
decode as it is; a large one (longest side over :data:`TILE_ABOVE` pixels) or one the browser cannot
decode (TIFF, 16-bit) is cut into a DZI pyramid the first time it is asked for, so a reviewer pans
and zooms to full resolution while loading only the tiles on screen. The pyramid is written to a
temporary folder and renamed into ``<store>/tiles/<sha[:2]>/<sha>/``: a reader sees a whole pyramid
or none, and two processes building the same image at once both end with the same files.
"""

from __future__ import annotations

import functools
import logging
import math
import shutil
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, ImageOps

from scopebench.review.errors import NotFound

__all__ = ["TILE_ABOVE", "TILE_SIZE", "Pyramid", "TileCache", "needs_tiles", "tile_cache"]

log = logging.getLogger(__name__)

TILE_SIZE = 254  # + 2 × overlap = 256, the DZI convention
OVERLAP = 1
# Longest side above which an image is tiled: below it the whole file is a few MB at most, and the
# browser decodes it faster than it would fetch tiles.
TILE_ABOVE = 2048
# What Chromium, Firefox and Safari all decode; anything else (TIFF) is tiled whatever its size.
_ORIENTATION = 0x0112  # the EXIF tag
_BROWSER_MIMES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp", "image/bmp"})


def needs_tiles(mime: str, width: int, height: int) -> bool:
    """Whether an image is shown from DZI tiles rather than as one file."""
    return mime not in _BROWSER_MIMES or max(width, height) > TILE_ABOVE


@dataclass(frozen=True, slots=True)
class Pyramid:
    """The DZI geometry of one image.

    Attributes:
        width: Full-resolution width.
        height: Full-resolution height.
        fmt: Tile format: ``jpeg`` for JPEG sources (no second loss worth a PNG's size), else ``png``
            (lossless, so a pathologist sees the pixels the file holds).
    """

    width: int
    height: int
    fmt: str

    @property
    def max_level(self) -> int:
        """The full-resolution level (level 0 is 1×1 pixel)."""
        return math.ceil(math.log2(max(self.width, self.height, 1)))

    def level_size(self, level: int) -> tuple[int, int]:
        """Width and height of ``level``."""
        scale = 2 ** (self.max_level - level)
        return max(1, math.ceil(self.width / scale)), max(1, math.ceil(self.height / scale))

    def grid(self, level: int) -> tuple[int, int]:
        """Columns and rows of tiles at ``level``."""
        w, h = self.level_size(level)
        return math.ceil(w / TILE_SIZE), math.ceil(h / TILE_SIZE)

    def box(self, level: int, col: int, row: int) -> tuple[int, int, int, int]:
        """The pixel box of one tile at ``level``, overlap included (DZI's layout)."""
        w, h = self.level_size(level)
        x, y = col * TILE_SIZE, row * TILE_SIZE
        return (
            max(0, x - OVERLAP),
            max(0, y - OVERLAP),
            min(w, x + TILE_SIZE + OVERLAP),
            min(h, y + TILE_SIZE + OVERLAP),
        )

    def dzi(self) -> str:
        """The ``.dzi`` descriptor OpenSeadragon (and any DZI viewer) reads."""
        return (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            '<Image xmlns="http://schemas.microsoft.com/deepzoom/2008" '
            f'Format="{self.fmt}" Overlap="{OVERLAP}" TileSize="{TILE_SIZE}">'
            f'<Size Width="{self.width}" Height="{self.height}"/></Image>\n'
        )


def _displayable(img: Image.Image) -> Image.Image:
    """The image in a mode PNG/JPEG tiles hold and browsers show (8-bit L, RGB or RGBA).

    16-bit and float images (fluorescence TIFFs) are stretched linearly from their minimum to their
    maximum, as ImageJ's auto-contrast shows them: a plain cast would clip 12- or 16-bit data to
    white or leave it black.
    """
    if img.mode in ("L", "RGB", "RGBA"):
        return img
    if img.mode in ("I", "I;16", "I;16B", "I;16L", "I;16N", "F"):
        arr = np.asarray(img, dtype=np.float64)
        lo, hi = float(arr.min()), float(arr.max())
        scaled = (arr - lo) * (255.0 / (hi - lo)) if hi > lo else np.zeros_like(arr)
        return Image.fromarray(scaled.round().astype(np.uint8), mode="L")
    return img.convert("RGBA" if "A" in img.getbands() or "transparency" in img.info else "RGB")


class TileCache:
    """The DZI pyramids of one image store, built on first use.

    Args:
        root: The cache folder (``<store>/tiles``).
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._guard = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}
        self._geometry: dict[str, Pyramid] = {}
        self._background = threading.Semaphore(1)  # one prefetch at a time: the CPU serves requests
        self.built = 0  # pyramids this process has made (a cache hit makes none)

    def pyramid(self, source: Path, sha: str, mime: str) -> Pyramid:
        """The geometry of image ``sha`` as it is displayed (read once from its header, then kept).

        A photo whose EXIF orientation says "rotated" (a phone on a microscope) is tiled upright, as
        browsers show a small image, so its displayed width and height are swapped.
        """
        with self._guard:
            known = self._geometry.get(sha)
        if known is not None:
            return known
        with Image.open(source) as img:
            width, height = img.size
            if img.getexif().get(_ORIENTATION, 1) in (5, 6, 7, 8):  # a quarter turn
                width, height = height, width
        pyr = Pyramid(width, height, "jpeg" if mime == "image/jpeg" else "png")
        with self._guard:
            self._geometry[sha] = pyr
        return pyr

    def folder(self, sha: str) -> Path:
        """Where the pyramid of image ``sha`` lives once built."""
        return self.root / sha[:2] / sha

    def tile(self, source: Path, sha: str, pyr: Pyramid, level: int, col: int, row: int) -> Path:
        """The file of one tile, building the image's pyramid first if it is not cached.

        Raises:
            NotFound: For a level, column or row outside the pyramid.
        """
        if not 0 <= level <= pyr.max_level:
            raise NotFound(f"no tile level {level}; levels run from 0 to {pyr.max_level}")
        cols, rows = pyr.grid(level)
        if not (0 <= col < cols and 0 <= row < rows):
            raise NotFound(f"no tile {col}_{row} at level {level} (the level is {cols}×{rows} tiles)")
        self.ensure(source, sha, pyr)
        return self.folder(sha) / str(level) / f"{col}_{row}.{pyr.fmt}"

    def prefetch(self, source: Path, sha: str, pyr: Pyramid) -> bool:
        """Build the pyramid of ``sha`` in a background thread unless it is cached or a prefetch runs.

        The pages call it for the reviewer's next item, so its tiles are ready when it opens instead
        of being cut (seconds for tens of megapixels) while the reviewer waits. A failed prefetch is
        logged; the item's own tile requests then build again and report the error.

        Returns:
            Whether a build was started.
        """
        if self.folder(sha).is_dir() or not self._background.acquire(blocking=False):
            return False

        def run() -> None:
            try:
                self.ensure(source, sha, pyr)
            except Exception:  # a background thread has no caller to raise to
                log.warning("prefetching the tiles of image %s failed", sha, exc_info=True)
            finally:
                self._background.release()

        threading.Thread(target=run, name=f"tiles-{sha[:8]}", daemon=True).start()
        return True

    def ensure(self, source: Path, sha: str, pyr: Pyramid) -> None:
        """Build the pyramid of ``sha`` unless it is cached (one build per image, however many ask)."""
        final = self.folder(sha)
        if final.is_dir():
            return
        with self._guard:
            lock = self._locks.setdefault(sha, threading.Lock())
        with lock:
            if final.is_dir():  # built while this request waited
                return
            final.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=f".{sha}-", dir=final.parent))
            try:
                with Image.open(source) as img:
                    upright = ImageOps.exif_transpose(img)
                    _write_levels(_displayable(upright), pyr, tmp)
                try:
                    tmp.rename(final)
                except OSError:
                    if not final.is_dir():  # another process won the rename: its files are the same
                        raise
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
            self.built += 1


def _write_levels(img: Image.Image, pyr: Pyramid, out: Path) -> None:
    """Write every level's tiles, halving the image from full resolution down to 1×1."""
    level_img = img
    for level in range(pyr.max_level, -1, -1):
        size = pyr.level_size(level)
        if level_img.size != size:
            level_img = level_img.resize(size, Image.Resampling.LANCZOS)
        folder = out / str(level)
        folder.mkdir()
        cols, rows = pyr.grid(level)
        for col in range(cols):
            for row in range(rows):
                tile = level_img.crop(pyr.box(level, col, row))
                if pyr.fmt == "jpeg":
                    tile.convert("RGB").save(folder / f"{col}_{row}.jpeg", quality=90)
                else:
                    tile.save(folder / f"{col}_{row}.png", compress_level=1)


@functools.cache
def tile_cache(store_root: Path) -> TileCache:
    """The process's one tile cache of an image store (its locks must be shared by every request)."""
    return TileCache(Path(store_root) / "tiles")

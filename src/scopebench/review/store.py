"""The project image store: files named by their SHA-256, never by a user-supplied path.

Images are copied in at ``review init`` (and on upload); the web layer asks for an image by its
hash, checked to be 64 hex digits, so no request can name a file outside the store.
"""

from __future__ import annotations

import hashlib
import io
import re
import warnings
from dataclasses import dataclass
from pathlib import Path

from PIL import Image, UnidentifiedImageError

from scopebench.review.errors import Invalid, NotFound, TooLarge

__all__ = ["ImageStore", "StoredImage"]

_SHA = re.compile(r"[0-9a-f]{64}")
_MIME = {
    "PNG": "image/png",
    "JPEG": "image/jpeg",
    "TIFF": "image/tiff",
    "GIF": "image/gif",
    "WEBP": "image/webp",
    "BMP": "image/bmp",
}


@dataclass(frozen=True, slots=True)
class StoredImage:
    """What the store knows of one image."""

    sha256: str
    mime: str
    width: int
    height: int
    nbytes: int


class ImageStore:
    """A content-addressed folder of images.

    Args:
        root: The store folder (created if missing).
        max_bytes: Largest accepted file.
        max_pixels: Largest accepted width × height (a guard against decompression bombs).
    """

    def __init__(self, root: Path, *, max_bytes: int = 20 * 2**20, max_pixels: int = 40_000_000) -> None:
        self.root = Path(root)
        self.max_bytes = max_bytes
        self.max_pixels = max_pixels
        self.root.mkdir(parents=True, exist_ok=True)

    def check(self, data: bytes, what: str) -> StoredImage:
        """Validate ``data`` as an image within the limits, decoding it fully.

        Raises:
            TooLarge: Over the byte or pixel limit.
            Invalid: Not an image Pillow can decode.
        """
        if len(data) > self.max_bytes:
            raise TooLarge(
                f"{what} is {len(data):,} bytes; the limit is {self.max_bytes:,} bytes — "
                "downscale or compress it"
            )
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", Image.DecompressionBombWarning)
                with Image.open(io.BytesIO(data)) as img:
                    width, height, fmt = img.width, img.height, img.format or ""
                    if width * height > self.max_pixels:
                        raise TooLarge(
                            f"{what} is {width}×{height} pixels; the limit is {self.max_pixels:,} pixels"
                        )
                    img.load()
        except TooLarge:
            raise
        except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
            raise TooLarge(f"{what} exceeds the decompression-bomb limit: {exc}") from exc
        except UnidentifiedImageError as exc:
            # Pillow's own message names the in-memory buffer ("<_io.BytesIO object at 0x…>"):
            # noise to a reviewer, so it is left out.
            raise Invalid(
                f"{what} is not an image (PNG, JPEG, TIFF, GIF, WebP or BMP expected); choose an image file"
            ) from exc
        except (OSError, ValueError, SyntaxError) as exc:
            raise Invalid(
                f"{what} is not an image Pillow can read (PNG, JPEG, TIFF, GIF, WebP, BMP): {exc}"
            ) from exc
        mime = _MIME.get(fmt)
        if mime is None:
            raise Invalid(f"{what} is a {fmt or 'unknown'} image; upload PNG, JPEG, TIFF, GIF, WebP or BMP")
        sha = hashlib.sha256(data).hexdigest()
        return StoredImage(sha, mime, width, height, len(data))

    def put(self, data: bytes, what: str) -> StoredImage:
        """Check and store ``data`` (idempotent: the same bytes land in the same file)."""
        info = self.check(data, what)
        path = self._path(info.sha256)
        if not path.is_file():
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            tmp.write_bytes(data)
            tmp.replace(path)
        return info

    def _path(self, sha: str) -> Path:
        return self.root / sha[:2] / sha

    def path(self, sha: str) -> Path:
        """The file of image ``sha``.

        Raises:
            Invalid: When ``sha`` is not 64 lowercase hex digits (e.g. a path).
            NotFound: When the store has no such image.
        """
        if not _SHA.fullmatch(sha):
            raise Invalid(
                f"image id {sha[:80]!r} is not an image id (64 hex digits); images are requested by "
                "their id, never by a path"
            )
        path = self._path(sha)
        if not path.is_file():
            # No folder in the message: it reaches web clients, who must not learn server paths.
            raise NotFound(
                f"no image {sha} in the image store; pass the --store the project was created with"
            )
        return path

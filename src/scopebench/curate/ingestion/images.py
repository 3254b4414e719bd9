"""Image standardisation: decode any microscopy image, store it as lossless PNG, hash it.

Definitions (the dataset card repeats them):

* ``pixel_md5``: MD5 of the stored pixel array — the ASCII header ``"<dtype>:<shape>|"`` (NumPy
  dtype string such as ``<u2``, shape such as ``(512, 512, 3)``) followed by the array's C-order
  bytes. It depends on the pixels only, not on the PNG encoder, so it survives re-encoding.
* ``image_id``: the first 128 bits of SHA-256 over ``source``, the image's path relative to the
  source folder and ``pixel_md5`` (NUL separated), written as a UUID string (36 characters, like
  μ-Bench's ids). The same file in the same place always gets the same id.
* ``dhash``: a 64-bit difference hash (the image as 8-bit grey, resized to 9×8 with Lanczos, one
  bit per horizontally adjacent pair: left brighter than right), as 16 hex digits. Two images
  whose hashes differ in at most ``threshold`` bits are near-duplicates.

PNG holds 1 (grey), 3 (RGB) or 4 (RGBA) channels of 8 or 16 bits. Two-channel images gain an
all-zero third channel (recorded); more than four channels, z-stacks and floating-point data cannot
be stored losslessly as one PNG and are reported, not converted.
"""

from __future__ import annotations

import hashlib
import importlib.util
import struct
import uuid
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from scopebench.errors import ImageLoadError

__all__ = [
    "StandardImage",
    "dhash",
    "encode_png",
    "hamming",
    "image_id",
    "pixel_md5",
    "read_image",
    "write_png",
]

_TIFF = {".tif", ".tiff"}


@dataclass(slots=True)
class StandardImage:
    """A decoded image ready to store.

    Attributes:
        pixels: H×W (grey) or H×W×C (C = 3 or 4), uint8 or uint16.
        conversion: What was done to the source pixels, in words (``"none"`` when nothing).
        source_format: The source file's format (``TIFF``, ``PNG``, ``JPEG``…).
    """

    pixels: np.ndarray
    conversion: str
    source_format: str


def _decode(path: Path) -> tuple[np.ndarray, str]:
    if path.suffix.lower() in _TIFF and importlib.util.find_spec("tifffile") is not None:
        import tifffile  # 16-bit, multi-channel and multi-page TIFF, which Pillow only partly reads

        try:
            return np.asarray(tifffile.imread(path)), "TIFF"
        except Exception as exc:  # tifffile raises many types for damaged files
            raise ImageLoadError(f"cannot decode TIFF {path.name}: {exc}") from exc
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as opened:
            opened.load()  # truncated files fail here, not at open
            fmt = opened.format or path.suffix.lstrip(".").upper()
            im: Image.Image = opened
            if im.mode == "P":
                im = im.convert("RGBA" if "transparency" in im.info else "RGB")
            elif im.mode in ("1", "CMYK", "YCbCr", "LAB", "HSV"):
                im = im.convert("RGB" if im.mode != "1" else "L")
            arr = np.asarray(im)
            if (
                im.mode in ("I", "I;16", "I;16B", "I;16L")
                and arr.size
                and arr.min() >= 0
                and arr.max() < 65536
            ):
                arr = arr.astype(np.uint16)
            return arr, fmt
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        raise ImageLoadError(f"cannot decode {path.name}: {exc}") from exc


def read_image(path: str | Path) -> StandardImage:
    """Decode ``path`` into a PNG-storable array, at its original resolution.

    Raises:
        ImageLoadError: When the file cannot be decoded (unreadable, truncated) or its pixels cannot
            be stored losslessly as PNG (float data, z-stacks, more than 4 channels).
    """
    path = Path(path)
    arr, fmt = _decode(path)
    steps: list[str] = []
    if arr.dtype == bool:
        arr = arr.astype(np.uint8) * 255
        steps.append("boolean → 0/255 uint8")
    if arr.dtype.kind == "f":
        raise ImageLoadError(
            f"{path.name} has floating-point pixels ({arr.dtype}), which PNG cannot store losslessly; "
            "convert it to 8- or 16-bit integers first"
        )
    if arr.dtype.kind in "iu" and arr.dtype not in (np.uint8, np.uint16):
        if arr.size and arr.min() >= 0 and arr.max() <= 65535:
            steps.append(f"{arr.dtype} → uint16 (values fit, no rescaling)")
            arr = arr.astype(np.uint16)
        else:
            raise ImageLoadError(f"{path.name} has {arr.dtype} values outside 0–65535; PNG cannot store them")
    if arr.ndim == 3 and arr.shape[0] <= 4 < arr.shape[-1]:
        arr = np.moveaxis(arr, 0, -1)
        steps.append("channels-first → channels-last")
    if arr.ndim == 3 and arr.shape[-1] == 1:
        arr = arr[..., 0]
    if arr.ndim == 3 and arr.shape[-1] == 2:
        arr = np.concatenate([arr, np.zeros_like(arr[..., :1])], axis=-1)
        steps.append("2 channels → RGB with an all-zero blue channel")
    if arr.ndim not in (2, 3) or (arr.ndim == 3 and arr.shape[-1] not in (3, 4)):
        raise ImageLoadError(
            f"{path.name} has shape {arr.shape}: a z-stack, time series or more than 4 channels cannot be "
            "one lossless PNG; export the plane or channels you want as separate files"
        )
    if arr.dtype == np.uint16:
        steps.append("16-bit kept as 16-bit PNG")
    return StandardImage(np.ascontiguousarray(arr), "; ".join(steps) or "none", fmt)


def pixel_md5(pixels: np.ndarray) -> str:
    """MD5 of ``pixels`` as defined in the module docstring."""
    arr = np.ascontiguousarray(pixels)
    header = f"{arr.dtype.str}:{tuple(arr.shape)}|".encode("ascii")
    return hashlib.md5(header + arr.tobytes(), usedforsecurity=False).hexdigest()


def image_id(source: str, relpath: str, md5: str) -> str:
    """The stable 128-bit id of an image, as a UUID string (see the module docstring)."""
    digest = hashlib.sha256(f"{source}\0{relpath}\0{md5}".encode()).digest()
    return str(uuid.UUID(bytes=digest[:16]))


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return (
        struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    )


def write_png(pixels: np.ndarray, path: str | Path) -> None:
    """Write ``pixels`` to ``path`` as :func:`encode_png` encodes them."""
    Path(path).write_bytes(encode_png(pixels))


def encode_png(pixels: np.ndarray) -> bytes:
    """``pixels`` (grey, RGB or RGBA; 8 or 16 bit) as lossless PNG bytes.

    Our own small encoder, because Pillow cannot write 16-bit RGB(A): filter type 0 on every row,
    zlib level 6, big-endian samples as the PNG specification requires.
    """
    arr = np.ascontiguousarray(pixels)
    depth = 16 if arr.dtype == np.uint16 else 8
    channels = 1 if arr.ndim == 2 else arr.shape[-1]
    colour = {1: 0, 3: 2, 4: 6}[channels]
    h, w = arr.shape[:2]
    data = arr.astype(">u2") if depth == 16 else arr.astype(np.uint8)
    rows = data.reshape(h, -1).view(np.uint8).reshape(h, -1)
    raw = np.concatenate([np.zeros((h, 1), np.uint8), rows], axis=1).tobytes()
    return (
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, colour, 0, 0, 0))
        + _png_chunk(b"IDAT", zlib.compress(raw, 6))
        + _png_chunk(b"IEND", b"")
    )


def dhash(pixels: np.ndarray) -> str:
    """64-bit difference hash of ``pixels`` (see the module docstring), as 16 hex digits."""
    from PIL import Image

    arr = pixels.astype(np.float64)
    if arr.ndim == 3:
        arr = arr[..., :3].mean(axis=-1)
    top = 65535.0 if pixels.dtype == np.uint16 else 255.0
    grey = Image.fromarray(np.clip(arr / top * 255.0, 0, 255).astype(np.uint8), mode="L")
    small = np.asarray(grey.resize((9, 8), Image.Resampling.LANCZOS), dtype=np.int16)
    bits = (small[:, :-1] > small[:, 1:]).flatten()
    return f"{int(''.join('1' if b else '0' for b in bits), 2):016x}"


def hamming(a: str, b: str) -> int:
    """Number of differing bits between two hex hashes."""
    return (int(a, 16) ^ int(b, 16)).bit_count()

"""Image standardisation: decode any microscopy image, store it as lossless PNG, hash it.

Definitions (the dataset card repeats them):

* ``pixel_md5``: MD5 of the stored pixel array — the ASCII header ``"<dtype>:<shape>|"`` (NumPy
  dtype string such as ``<u2``, shape such as ``(512, 512, 3)``) followed by the array's C-order
  bytes. It depends on the pixels only, not on the PNG encoder, so it survives re-encoding.
* ``image_id``: the first 128 bits of SHA-256 over ``source``, the image's path relative to the
  source folder and ``pixel_md5`` (NUL separated), written as a UUID string (36 characters, like
  μ-Bench's ids). The same file in the same place always gets the same id.
* ``dhash``: ``imagehash``'s 64-bit difference hash of the image as 8-bit grey (16-bit scaled by
  1/257, colour averaged), as 16 hex digits. Hashes only propose near-duplicate pairs;
  :mod:`.near_duplicates` confirms them on the pixels.

An image with more than ``max_pixels`` pixels (width × height × planes, read from the file's header
before anything is decoded) is refused with :class:`OversizedImageError`, so a decompression bomb
(a small file that declares a huge image) costs nothing.

PNG holds 1 (grey), 3 (RGB) or 4 (RGBA) channels of 8 or 16 bits. Two-channel images gain an
all-zero third channel (recorded); more than four channels, z-stacks and floating-point data cannot
be stored losslessly as one PNG and are reported, not converted.
"""

from __future__ import annotations

import hashlib
import importlib.util
import math
import struct
import uuid
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from scopebench.curate.settings import DEFAULT_MAX_PIXELS
from scopebench.errors import ImageLoadError

__all__ = [
    "DEFAULT_MAX_PIXELS",
    "OversizedImageError",
    "StandardImage",
    "dhash",
    "encode_png",
    "grey8",
    "grey_float",
    "hamming",
    "image_id",
    "pixel_md5",
    "read_image",
    "write_png",
]

_TIFF = {".tif", ".tiff"}
_BLOCK_BYTES = 1 << 20  # raw PNG bytes filtered and compressed at a time (bounds encoder memory)


class OversizedImageError(ImageLoadError):
    """An image declares more pixels than the ``max_pixels`` limit (a decompression bomb, or too big)."""


def _check_size(path: Path, pixels: int, max_pixels: int | None) -> None:
    if max_pixels is not None and pixels > max_pixels:
        raise OversizedImageError(
            f"{path.name} declares {pixels:,} pixels, more than the limit of {max_pixels:,}; it was not "
            "decoded (a decompression bomb, or an image too large for one PNG row): crop or tile it, "
            "or raise --max-pixels if it is genuine and memory allows"
        )


@contextmanager
def _no_pillow_limit() -> Iterator[None]:
    """Pillow's own bomb check raises at open; ours (``max_pixels``) runs instead, as a problem row."""
    from PIL import Image

    saved = Image.MAX_IMAGE_PIXELS
    Image.MAX_IMAGE_PIXELS = None
    try:
        yield
    finally:
        Image.MAX_IMAGE_PIXELS = saved


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


def _decode_tiff(path: Path, max_pixels: int | None) -> np.ndarray:
    import tifffile  # 16-bit, multi-channel and multi-page TIFF, which Pillow only partly reads

    try:
        with tifffile.TiffFile(path) as tif:
            series = tif.series[0]
            shape = tuple(int(n) for n in series.shape)
            # Colour samples ("S") are not pixels; every other axis (planes, channels) multiplies.
            samples = shape[series.axes.index("S")] if "S" in series.axes else 1
            _check_size(path, math.prod(shape) // max(samples, 1), max_pixels)
            return np.asarray(series.asarray())
    except ImageLoadError:
        raise
    except Exception as exc:  # tifffile raises many types for damaged files
        raise ImageLoadError(f"cannot decode TIFF {path.name}: {exc}") from exc


def _decode(path: Path, max_pixels: int | None) -> tuple[np.ndarray, str]:
    if path.suffix.lower() in _TIFF and importlib.util.find_spec("tifffile") is not None:
        return _decode_tiff(path, max_pixels), "TIFF"
    from PIL import Image, UnidentifiedImageError

    try:
        with _no_pillow_limit(), Image.open(path) as opened:
            width, height = opened.size
            _check_size(path, width * height, max_pixels)  # from the header, before decoding
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


def read_image(path: str | Path, max_pixels: int | None = DEFAULT_MAX_PIXELS) -> StandardImage:
    """Decode ``path`` into a PNG-storable array, at its original resolution.

    Args:
        path: The image file.
        max_pixels: Refuse images declaring more pixels than this (``None``: no limit).

    Raises:
        OversizedImageError: When the header declares more than ``max_pixels`` pixels.
        ImageLoadError: When the file cannot be decoded (unreadable, truncated) or its pixels cannot
            be stored losslessly as PNG (float data, z-stacks, more than 4 channels).
    """
    path = Path(path)
    arr, fmt = _decode(path, max_pixels)
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
    digest = hashlib.md5(f"{arr.dtype.str}:{tuple(arr.shape)}|".encode("ascii"), usedforsecurity=False)
    digest.update(arr.data)  # the array's bytes without a copy (C-contiguous: same order as tobytes)
    return digest.hexdigest()


def image_id(source: str, relpath: str, md5: str) -> str:
    """The stable 128-bit id of an image, as a UUID string (see the module docstring)."""
    digest = hashlib.sha256(f"{source}\0{relpath}\0{md5}".encode()).digest()
    return str(uuid.UUID(bytes=digest[:16]))


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return (
        struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    )


def write_png(pixels: np.ndarray, path: str | Path) -> int:
    """Write ``pixels`` to ``path`` as :func:`encode_png` encodes them, block by block.

    Returns:
        The file's size in bytes.
    """
    with Path(path).open("wb") as fh:
        for piece in _png_pieces(pixels):
            fh.write(piece)
        return fh.tell()


def encode_png(pixels: np.ndarray) -> bytes:
    """``pixels`` (grey, RGB or RGBA; 8 or 16 bit) as lossless PNG bytes.

    Our own small encoder, because Pillow cannot write 16-bit RGB(A): big-endian samples as the PNG
    specification requires, each row filtered with None, Sub or Up — whichever has the smallest sum
    of absolute signed bytes (libpng's heuristic; microscopy compresses far better than unfiltered)
    — and zlib level 6, fed about :data:`_BLOCK_BYTES` of rows at a time, each block's output its
    own ``IDAT`` chunk, so :func:`write_png` holds a few times one block, never the whole file.
    """
    return b"".join(_png_pieces(pixels))


def _png_pieces(pixels: np.ndarray) -> Iterator[bytes]:
    arr = np.ascontiguousarray(pixels)
    depth = 16 if arr.dtype == np.uint16 else 8
    channels = 1 if arr.ndim == 2 else arr.shape[-1]
    colour = {1: 0, 3: 2, 4: 6}[channels]
    h, w = arr.shape[:2]
    bpp = channels * depth // 8  # bytes per pixel: Sub's distance
    yield b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, colour, 0, 0, 0))
    packer = zlib.compressobj(6)
    previous = np.zeros((1, w * bpp), np.uint8)
    step = max(1, _BLOCK_BYTES // (w * bpp))
    for start in range(0, h, step):
        block = arr[start : start + step]
        data = block.astype(">u2") if depth == 16 else block.astype(np.uint8)
        rows = data.reshape(len(block), -1).view(np.uint8)
        packed = packer.compress(_filter_rows(rows, previous, bpp).tobytes())
        if packed:  # zlib may hold a block back; an empty IDAT chunk is legal but says nothing
            yield _png_chunk(b"IDAT", packed)
        previous = rows[-1:]
    yield _png_chunk(b"IDAT", packer.flush()) + _png_chunk(b"IEND", b"")


def _filter_rows(rows: np.ndarray, previous: np.ndarray, bpp: int) -> np.ndarray:
    """Rows of bytes, each prefixed with its filter type (0 None, 1 Sub, 2 Up) and filtered."""
    above = np.concatenate([previous, rows[:-1]], axis=0)
    left = np.zeros_like(rows)
    left[:, bpp:] = rows[:, :-bpp]
    candidates = np.stack([rows, rows - left, rows - above])  # uint8 arithmetic wraps, as PNG's does
    cost = np.abs(candidates.view(np.int8).astype(np.int16)).sum(axis=2, dtype=np.int64)
    choice = cost.argmin(axis=0)
    chosen = candidates[choice, np.arange(len(rows))]
    return np.concatenate([choice.astype(np.uint8)[:, None], chosen], axis=1)


def grey8(pixels: np.ndarray) -> np.ndarray:
    """``pixels`` as 8-bit grey: colour channels averaged (alpha ignored), 16-bit scaled by 1/257."""
    # float32 and in place: a few bytes per pixel, whatever the image's size
    arr = pixels[..., :3].mean(axis=-1, dtype=np.float32) if pixels.ndim == 3 else pixels.astype(np.float32)
    arr *= 255.0 / (65535.0 if pixels.dtype == np.uint16 else 255.0)
    np.rint(arr, out=arr)
    np.clip(arr, 0, 255, out=arr)
    return arr.astype(np.uint8)


def grey_float(pixels: np.ndarray) -> np.ndarray:
    """``pixels`` as float32 grey, exactly as Pillow gives the stored PNG read back (``L`` or ``F``).

    Grey stays as it is (8 or 16 bit); colour goes through Pillow's own ``L`` conversion (ITU-R
    601-2 in integer arithmetic), after 16-bit samples are cut to their high byte as Pillow's PNG
    decoder does. So a grid computed from the decoded array in a worker equals one computed from
    the PNG later, bit for bit, without decoding it again.
    """
    from PIL import Image

    if pixels.ndim == 2:
        return pixels.astype(np.float32)
    arr = (pixels >> 8).astype(np.uint8) if pixels.dtype == np.uint16 else np.ascontiguousarray(pixels)
    mode = "RGBA" if arr.shape[-1] == 4 else "RGB"
    return np.asarray(Image.fromarray(arr, mode=mode).convert("L"), dtype=np.float32)


def dhash(pixels: np.ndarray) -> str:
    """``imagehash``'s 64-bit difference hash of ``pixels`` as 8-bit grey, as 16 hex digits."""
    import imagehash
    from PIL import Image

    return str(imagehash.dhash(Image.fromarray(grey8(pixels)), hash_size=8))


def hamming(a: str, b: str) -> int:
    """Number of differing bits between two hex hashes."""
    return (int(a, 16) ^ int(b, 16)).bit_count()

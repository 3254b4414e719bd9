from __future__ import annotations

import hashlib
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
import tifffile
from PIL import Image

from scopebench.curate.ingestion import images
from scopebench.curate.ingestion.images import dhash, encode_png, hamming, image_id, pixel_md5, read_image
from scopebench.errors import ImageLoadError


def _unfilter(raw: bytes, h: int, bpp: int) -> tuple[list[int], np.ndarray]:
    """Undo PNG filters None (0), Sub (1) and Up (2), row by row, as the specification defines them."""
    rows = np.frombuffer(raw, np.uint8).reshape(h, -1)
    kinds, out = [int(k) for k in rows[:, 0]], np.zeros((h, rows.shape[1] - 1), np.uint8)
    for y, kind in enumerate(kinds):
        line = rows[y, 1:].astype(np.int64)
        if kind == 1:
            for x in range(bpp, len(line)):
                line[x] = (line[x] + line[x - bpp]) % 256
        elif kind == 2 and y:
            line = (line + out[y - 1]) % 256
        out[y] = line
    return kinds, out


def _decode_png(data: bytes) -> tuple[dict[str, int], bytes]:
    """A minimal independent PNG reader (chunks and zlib only), to check our encoder without Pillow."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, head = 8, b"", {}
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + n]
        assert struct.unpack(">I", data[pos + 8 + n : pos + 12 + n])[0] == zlib.crc32(kind + body)
        if kind == b"IHDR":
            w, h, depth, colour = struct.unpack(">IIBB", body[:10])
            head = {"w": w, "h": h, "depth": depth, "colour": colour}
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    return head, zlib.decompress(idat)


@pytest.mark.parametrize(
    ("shape", "dtype", "colour"),
    [((5, 7), np.uint8, 0), ((5, 7), np.uint16, 0), ((5, 7, 3), np.uint16, 2), ((5, 7, 4), np.uint8, 6)],
)
def test_png_is_lossless_for_8_and_16_bit_grey_rgb_rgba(
    shape: tuple[int, ...], dtype: type, colour: int
) -> None:
    arr = np.random.default_rng(0).integers(0, np.iinfo(dtype).max, shape, dtype=dtype)
    head, raw = _decode_png(encode_png(arr))
    assert head == {"w": 7, "h": 5, "depth": 8 * np.dtype(dtype).itemsize, "colour": colour}
    bpp = (1 if len(shape) == 2 else shape[-1]) * np.dtype(dtype).itemsize
    kinds, rows = _unfilter(raw, 5, bpp)
    assert set(kinds) <= {0, 1, 2}  # None, Sub, Up: the filters the encoder may choose
    back = np.frombuffer(rows.tobytes(), ">u2" if dtype is np.uint16 else np.uint8).reshape(shape)
    assert np.array_equal(back, arr)


def test_png_filters_are_chosen_per_row_and_undo_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    """Catches a wrong Sub/Up formula (or a wrong bytes-per-pixel for Sub): smooth images would decode
    wrongly; an Up filter that forgets the row above at a block boundary; and an encoder that never
    filters, which stores microscopy several times larger."""
    monkeypatch.setattr(images, "_BLOCK_BYTES", 256 * 260 * 6)  # blocks of 256 rows of this image
    columns = np.random.default_rng(0).integers(0, 60000, (1, 260, 3))
    arr = (columns + np.arange(300)[:, None, None] * 3).astype(np.uint16)  # 16-bit RGB, rows alike
    data = encode_png(arr)
    _, raw = _decode_png(data)
    kinds, rows = _unfilter(raw, 300, 6)
    # Every row but the first repeats the one above: Up, also across the encoder's 256-row blocks.
    assert kinds[0] in (0, 1) and set(kinds[1:]) == {2}
    assert np.array_equal(np.frombuffer(rows.tobytes(), ">u2").reshape(arr.shape), arr)
    assert len(data) < arr.nbytes / 20
    ramp = np.tile(np.arange(260, dtype=np.uint8), (4, 1))
    assert _unfilter(_decode_png(encode_png(ramp))[1], 4, 1)[0] == [1, 2, 2, 2]  # a ramp: Sub, then Up


def test_pillow_reads_our_16_bit_grey_png_exactly(tmp_path: Path) -> None:
    arr = np.array([[0, 1, 256], [65535, 4096, 7]], dtype=np.uint16)
    (tmp_path / "x.png").write_bytes(encode_png(arr))
    assert np.array_equal(np.asarray(Image.open(tmp_path / "x.png")).astype(np.uint16), arr)


def test_pixel_md5_is_the_documented_header_plus_bytes() -> None:
    arr = np.array([[1, 2]], dtype=np.uint8)
    assert pixel_md5(arr) == hashlib.md5(b"|u1:(1, 2)|\x01\x02").hexdigest()
    # Same bytes, other shape or dtype: another hash.
    assert pixel_md5(arr.reshape(2, 1)) != pixel_md5(arr)


def test_image_id_is_128_bits_of_sha256_as_uuid() -> None:
    digest = hashlib.sha256(b"src\x00a/b.png\x00abc").hexdigest()
    iid = image_id("src", "a/b.png", "abc")
    assert iid.replace("-", "") == digest[:32]
    assert len(iid) == 36


def test_dhash_of_gradients_and_hamming() -> None:
    rising = np.tile(np.linspace(0, 255, 90), (80, 1)).astype(np.uint8)
    assert dhash(rising) == "ffffffffffffffff"  # imagehash: one bit per pair, right brighter than left
    assert dhash(rising[:, ::-1].copy()) == "0000000000000000"
    assert dhash(rising.astype(np.uint16) * 257) == "ffffffffffffffff"  # 16-bit scaled, same hash
    assert hamming("ff", "0f") == 4


def test_tiff_16_bit_and_channels_first_are_recorded(tmp_path: Path) -> None:
    arr = np.arange(2 * 6 * 5, dtype=np.uint16).reshape(2, 6, 5) * 500
    tifffile.imwrite(tmp_path / "c.tif", arr)
    std = read_image(tmp_path / "c.tif")
    assert std.pixels.shape == (6, 5, 3) and std.pixels.dtype == np.uint16
    assert np.array_equal(std.pixels[..., 0], arr[0]) and np.array_equal(std.pixels[..., 1], arr[1])
    assert not std.pixels[..., 2].any()
    assert (
        "channels-first" in std.conversion
        and "all-zero blue" in std.conversion
        and "16-bit" in std.conversion
    )


@pytest.mark.parametrize(
    ("arr", "needle"),
    [
        (np.zeros((4, 4), np.float32), "floating-point"),
        (np.zeros((5, 8, 8), np.uint8), "z-stack"),
    ],
)
def test_unstorable_pixels_are_refused(tmp_path: Path, arr: np.ndarray, needle: str) -> None:
    tifffile.imwrite(tmp_path / "x.tif", arr)
    with pytest.raises(ImageLoadError, match=needle):
        read_image(tmp_path / "x.tif")


def test_truncated_png_is_an_image_load_error(tmp_path: Path) -> None:
    Image.fromarray(np.random.default_rng(0).integers(0, 255, (64, 64, 3), dtype=np.uint8)).save(
        tmp_path / "a.png"
    )
    data = (tmp_path / "a.png").read_bytes()
    (tmp_path / "t.png").write_bytes(data[: len(data) // 2])
    with pytest.raises(ImageLoadError, match=r"t\.png"):
        read_image(tmp_path / "t.png")

"""Near-duplicate grids made where images are converted: equal to the PNG's, read instead of decoding."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from curate_helpers import tree_bytes, write_lab_manifest
from PIL import Image

from scopebench.curate.ingestion import near_duplicates
from scopebench.curate.ingestion import step as ingest_step
from scopebench.curate.ingestion.cache import ConversionStore, grid_bytes
from scopebench.curate.ingestion.images import dhash, grey8, grey_float, write_png
from scopebench.curate.ingestion.near_duplicates import find_near_duplicates, stretched_grid
from scopebench.curate.ingestion.step import IngestResult, ingest
from scopebench.testing.near_duplicate_set import labelled_set, smooth_field


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
@pytest.mark.parametrize("channels", [0, 3, 4])
def test_grey_of_the_pixels_is_the_grey_of_their_png(tmp_path: Path, dtype: type, channels: int) -> None:
    """Catches a worker grey that differs from the PNG read back (colour averaged instead of
    Pillow's L weights, 16-bit colour scaled by 1/257 instead of cut to its high byte, alpha mixed
    in): grids made in workers would then score pairs differently from decoded ones."""
    rng = np.random.default_rng(channels)
    shape = (37, 29) if channels == 0 else (37, 29, channels)
    pixels = rng.integers(0, np.iinfo(dtype).max + 1, shape).astype(dtype)
    write_png(pixels, tmp_path / "a.png")
    decoded = ingest_step._grey(tmp_path / "a.png")
    assert decoded.dtype == grey_float(pixels).dtype == np.float32
    assert np.array_equal(grey_float(pixels), decoded)


def test_stored_grids_score_exactly_as_decoding() -> None:
    """Catches given grids that change any score or group on a set with every kind of edit (a grid
    not made as the decode path makes it, or one used for a pair of different sizes, whose crop
    search needs thumbnails)."""
    images = labelled_set(2, 2, seed=3, size=128)
    hashes = [dhash(im.pixels) for im in images]
    greys = [grey8(im.pixels) for im in images]
    decoded = find_near_duplicates(hashes, 12, lambda i: greys[i])
    loads: list[int] = []
    given = find_near_duplicates(
        hashes,
        12,
        lambda i: loads.append(i) or greys[i],
        grids=lambda i: (greys[i].shape, stretched_grid(greys[i])),
    )
    assert given == decoded and decoded.joined and decoded.refused
    assert loads  # the crop search still decodes: it runs on thumbnails, not on grids


def test_same_size_images_with_stored_grids_load_nothing() -> None:
    """Catches a pass that decodes an image although its grid was given (the bench's smooth
    fields, all the same size, would be decoded one after the other in the main process)."""
    greys = [smooth_field(4, i, 80) for i in range(10)]
    greys.append(greys[6].copy())

    def no_load(i: int) -> np.ndarray:
        raise AssertionError(f"image {i} decoded although its grid was given")

    found = find_near_duplicates(
        ["0" * 16] * 11, 64, no_load, grids=lambda i: (greys[i].shape, stretched_grid(greys[i]))
    )
    assert found == find_near_duplicates(["0" * 16] * 11, 64, lambda i: greys[i])
    assert found.roots[10] == 6 and len(found.refused) == 11 * 10 // 2 - 1


def _smooth_lab(root: Path) -> Path:
    """One source of same-size smooth fields (colour, so the grey conversion matters) and a copy."""
    images = root / "images"
    images.mkdir(parents=True)
    names = []
    for i in range(8):
        grey = smooth_field(11, i, 96)
        rgb = np.stack([grey, np.roll(grey, 3, axis=1), 255 - grey], axis=-1).astype(np.uint8)
        Image.fromarray(rgb).save(images / f"s{i}.png")
        names.append(f"s{i}.png")
    Image.open(images / "s2.png").save(images / "s2_copy.jpg", quality=95)
    names.append("s2_copy.jpg")
    return write_lab_manifest(root, names, near_duplicate_bits=64)


def test_ingest_confirms_on_stored_grids_without_decoding_a_png(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Catches an ingest that does not store the grid beside the PNG (or does not read it back),
    so the main process decodes every PNG of a proposed pair; and a cache entry without a grid
    (converted before grids were kept) that is refused or scored differently instead of decoded."""
    manifest = _smooth_lab(tmp_path / "lab")
    cache = tmp_path / "cache"
    loads: list[Path] = []
    real_grey = ingest_step._grey
    monkeypatch.setattr(ingest_step, "_grey", lambda png: loads.append(png) or real_grey(png))
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    monkeypatch.chdir(tmp_path / "a")
    cold = ingest(manifest, "out", cache_dir=cache, workers=1)
    assert isinstance(cold, IngestResult) and cold.converted == 9
    assert cold.stats["near_duplicates"]["grouped"] == 1  # the JPEG copy joins its original
    assert cold.stats["near_duplicates"]["refused_pairs"] == 9 * 8 // 2 - 1  # every pair proposed
    assert loads == []  # every image is in a pair, and none was decoded to confirm it
    store = ConversionStore(cache)
    grids = sorted(store.root.rglob("*.grid.npy"))
    assert len(grids) == 9 and all(p.stat().st_size == len(grid_bytes(np.zeros((64, 64)))) for p in grids)
    # An entry without a grid (an older cache) or with a damaged one is decoded, with the same result.
    for k, path in enumerate(grids):
        path.unlink() if k % 2 else path.write_bytes(b"not a grid")
    (store.root / "similarity.json").unlink()
    monkeypatch.chdir(tmp_path / "b")  # the same relative output folder: build.json names it
    again = ingest(manifest, "out", cache_dir=cache, workers=1)
    assert (again.converted, len(loads)) == (0, 9)
    assert tree_bytes(tmp_path / "b" / "out") == tree_bytes(tmp_path / "a" / "out")


def test_a_stored_grid_of_the_wrong_shape_or_type_is_not_used(tmp_path: Path) -> None:
    """Catches a store that trusts any ``.npy`` beside a PNG (a pickle, a wrong shape or dtype,
    NaNs): a hostile or damaged cache must cost a decode, never a wrong score or code execution."""
    store = ConversionStore(tmp_path)
    sha = "ab" * 32
    store.grid_path(sha).parent.mkdir(parents=True)
    good = stretched_grid(np.arange(40 * 30, dtype=np.float32).reshape(40, 30))
    store.grid_path(sha).write_bytes(grid_bytes(good))
    found = store.grid(sha, near_duplicates.GRID_SIDE)
    assert found is not None and found.dtype == np.float64 and np.array_equal(found, good)
    bad = [
        np.zeros((32, 32), np.float32),
        np.zeros((64, 64), np.float32),
        np.full((64, 64), np.nan, np.float32),
        np.array([{"x": 1}], dtype=object),
    ]
    for arr in bad:
        np.save(store.grid_path(sha), arr, allow_pickle=True)
        assert store.grid(sha, near_duplicates.GRID_SIDE) is None
    assert near_duplicates.GRID_SIDE == 64

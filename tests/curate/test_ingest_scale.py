"""Ingest at scale: bombs are problem rows, any worker count writes the same bytes, re-runs reuse work."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
import tifffile
from curate_helpers import ROW, tree_bytes, write_lab_manifest
from PIL import Image

from scopebench.cli import main
from scopebench.cli.build import DEFAULT_MAX_PIXELS as CLI_DEFAULT
from scopebench.curate.ingestion import convert
from scopebench.curate.ingestion.cache import FileHashes
from scopebench.curate.ingestion.images import DEFAULT_MAX_PIXELS, OversizedImageError, read_image
from scopebench.curate.ingestion.step import IngestResult, ingest
from scopebench.testing.near_duplicate_set import labelled_set


def _chunk(kind: bytes, data: bytes) -> bytes:
    return (
        struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    )


def bomb_png(path: Path, side: int = 100_000) -> None:
    """A few hundred bytes declaring ``side``² grey pixels: decoding it would need ``side``² bytes."""
    zeros = zlib.compress(b"\0" * (side + 1) * 64, 9)  # 64 valid rows of zeros; the rest is missing
    header = struct.pack(">IIBBBBB", side, side, 8, 0, 0, 0, 0)
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + _chunk(b"IDAT", zeros) + _chunk(b"IEND", b"")
    )


def make_lab(root: Path) -> Path:
    """One source: two look-alike fields with their near-duplicates (PNG, JPEG, 16-bit TIFF), a bomb."""
    images = root / "images"
    images.mkdir(parents=True)
    names = []
    for im in labelled_set(1, 2, seed=1, size=160):
        if im.edit == "bit16":
            name = f"{im.name}.tif"
            tifffile.imwrite(images / name, im.pixels)
        else:
            name = f"{im.name}.{'jpg' if im.edit == 'jpeg' else 'png'}"
            Image.fromarray(im.pixels).save(images / name, quality=90)
        names.append(name)
    bomb_png(images / "bomb.png")
    names.append("bomb.png")
    return write_lab_manifest(root, names, near_duplicate_bits=12)


def test_bomb_is_a_problem_row_and_fields_group_exactly(tmp_path: Path) -> None:
    """Catches a decompression bomb that is decoded (or escapes as Pillow's DecompressionBombError)
    instead of becoming a row-level problem, and near-duplicate groups that are not exactly the
    fields (look-alikes merged by their close hashes, or an edit left out), and stats that report
    another pair's hash distance as the ``near_duplicate_bits`` setting."""
    r = ingest(make_lab(tmp_path), tmp_path / "out", workers=1)
    assert r.items_in == 13 and r.kept == 12 and dict(r.dropped) == {"oversized_image": 1}
    bomb = next(p for p in r.problems if p.kind == "oversized_image")
    assert (bomb.row, bomb.field) == ("12", "image") and "10,000,000,000 pixels" in bomb.message
    from datasets import load_from_disk

    rows = list(load_from_disk(str(tmp_path / "out"))["test"].remove_columns("image"))
    groups: dict[str, set[str]] = {}
    for row in rows:
        groups.setdefault(row["dup_group"], set()).add(row["source_path"].split("_")[1])
    assert sorted(map(sorted, groups.values())) == [["0"], ["1"]]
    assert [len([r for r in rows if r["dup_group"] == g]) for g in sorted(groups)] == [6, 6]
    stats = json.loads((tmp_path / "out" / "build.json").read_text())["stats"]["near_duplicates"]
    assert stats["grouped"] == 10 and stats["refused_pairs"] > 0  # look-alikes were proposed, then refused
    assert stats["max_bits"] == 12  # the setting, not the distance of the last pair reported
    assert len([p for p in r.problems if p.kind == "near_duplicate"]) == 10


def test_bomb_through_the_cli_is_a_message_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Catches the CLI path (its own --max-pixels default) letting the bomb through or crashing."""
    bomb_png(tmp_path / "images.png")
    with pytest.raises(OversizedImageError, match="declares 10,000,000,000 pixels"):
        read_image(tmp_path / "images.png")
    make_lab(tmp_path / "lab")
    code = main(
        [
            "build",
            "ingest",
            str(tmp_path / "lab" / "manifest.yaml"),
            "--out",
            str(tmp_path / "o"),
            "--workers",
            "1",
        ]
    )
    out = capsys.readouterr()
    assert code == 0 and "Traceback" not in out.out + out.err
    assert "bomb.png declares 10,000,000,000 pixels" in out.out.replace("\n", "")
    assert CLI_DEFAULT == DEFAULT_MAX_PIXELS  # --help shows the library's default without importing it


def test_tiff_over_the_limit_is_refused_before_decoding(tmp_path: Path) -> None:
    """Catches a pixel limit checked only for Pillow formats (TIFF is read by tifffile)."""
    tifffile.imwrite(tmp_path / "stack.tif", np.zeros((5, 40, 50), np.uint16), photometric="minisblack")
    with pytest.raises(OversizedImageError, match="10,000 pixels"):  # 5 planes of 40 × 50
        read_image(tmp_path / "stack.tif", max_pixels=9_999)
    tifffile.imwrite(tmp_path / "rgb.tif", np.zeros((40, 50, 3), np.uint8), photometric="rgb")
    assert read_image(tmp_path / "rgb.tif", max_pixels=2_000).pixels.shape == (
        40,
        50,
        3,
    )  # colour is not pixels


def test_one_and_two_workers_write_identical_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Catches results taken in completion order (the rows, groups or problems would follow the
    workers' timing) and anything run-specific in the files (a temporary path in the fingerprint)."""
    monkeypatch.setattr(convert, "MIN_JOBS_PER_WORKER", 1)  # 13 files: a real pool of 2 all the same
    manifest = make_lab(tmp_path / "lab")
    outputs = []
    for workers in (1, 2):
        (tmp_path / str(workers)).mkdir()
        monkeypatch.chdir(tmp_path / str(workers))
        ingest(manifest, "out", workers=workers)
        outputs.append(tree_bytes(tmp_path / str(workers) / "out"))
    assert outputs[0].keys() == outputs[1].keys() and "test/state.json" in outputs[0]
    assert [k for k in outputs[0] if outputs[0][k] != outputs[1][k]] == []


def test_rerun_with_the_cache_converts_nothing_and_writes_the_same(tmp_path: Path) -> None:
    """Catches a cache that is not used (every image converted again), one whose reuse changes the
    output, and a file hash trusted after the file changed."""
    manifest = make_lab(tmp_path)
    cache = tmp_path / "cache"
    cold = ingest(manifest, tmp_path / "out", cache_dir=cache, workers=1)
    first = tree_bytes(tmp_path / "out")
    warm = ingest(manifest, tmp_path / "out", cache_dir=cache, workers=1)
    assert isinstance(cold, IngestResult) and (cold.converted, warm.converted, warm.reused) == (12, 0, 12)
    assert tree_bytes(tmp_path / "out") == first
    # A changed metadata row converts no image; a changed image file is converted again.
    meta = tmp_path / "meta.csv"
    meta.write_text(
        meta.read_text().replace("f0_0_orig.png,light microscopy", "f0_0_orig.png,Light Microscopy")
    )
    assert ingest(manifest, tmp_path / "out", cache_dir=cache, workers=1).converted == 0
    target = tmp_path / "images" / "f0_1_orig.png"
    Image.fromarray(np.zeros((20, 20), np.uint8)).save(target)
    hashes = FileHashes(cache / "file_sha256.sqlite")
    assert hashes.known(target) is None  # its stat changed: the recorded hash is not trusted
    hashes.close()
    assert ingest(manifest, tmp_path / "out", cache_dir=cache, workers=1).converted == 1


def test_a_cached_failure_names_the_file_of_its_row(tmp_path: Path) -> None:
    """Catches a decoding failure reused from the store (same bytes under another name) that names
    the file it was first seen as, which would send the user to the wrong file."""
    images = tmp_path / "images"
    images.mkdir()
    Image.fromarray(np.full((16, 16), 7, np.uint8)).save(images / "good.png")
    truncated = (images / "good.png").read_bytes()[:40]
    (images / "first.png").write_bytes(truncated)
    (images / "second.png").write_bytes(truncated)
    header = "image,modality,submodality,domain,subdomain,stain,organism\n"
    (tmp_path / "meta.csv").write_text(
        header + "".join(f"{n},{ROW}\n" for n in ("good.png", "first.png", "second.png"))
    )
    (tmp_path / "m.yaml").write_text(
        "name: x\nsources:\n  - name: s\n    images: images\n    metadata: meta.csv\n    license: CC0-1.0\n"
    )
    for _ in range(2):  # the second run reuses both failures from the cache
        r = ingest(tmp_path / "m.yaml", tmp_path / "out", cache_dir=tmp_path / "cache", workers=1)
        bad = {p.row: p.message for p in r.problems if p.kind == "bad_image"}
        assert set(bad) == {"1", "2"} and "first.png" in bad["1"] and "second.png" in bad["2"]
        assert "first.png" not in bad["2"]


def test_several_shards_hold_every_row_once_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Catches shard boundaries that drop, repeat or reorder rows when a split is written in one
    pass to several Arrow and Parquet shards (and state.json naming other files than were written)."""
    from datasets import load_dataset, load_from_disk

    from scopebench.curate import output

    monkeypatch.setattr(output, "_SHARD_BYTES", 60_000)  # 12 images of ≈ 30–60 kB: several shards
    ingest(make_lab(tmp_path), tmp_path / "out", workers=1)
    arrow = sorted((tmp_path / "out" / "test").glob("data-*.arrow"))
    parquet = sorted((tmp_path / "out" / "data").glob("test-*.parquet"))
    assert len(arrow) == len(parquet) > 2
    state = json.loads((tmp_path / "out" / "test" / "state.json").read_text())
    assert [f["filename"] for f in state["_data_files"]] == [p.name for p in arrow]
    saved = load_from_disk(str(tmp_path / "out"))["test"]["source_path"]
    shards = load_dataset("parquet", data_files=[str(p) for p in parquet], split="train")["source_path"]
    expected = [line.split(",")[0] for line in (tmp_path / "meta.csv").read_text().splitlines()[1:-1]]
    assert saved == shards == expected  # every kept row once, in manifest order (the bomb is row 12)

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from curate_helpers import make_sources

from scopebench.benchmarks.registry import get_benchmark
from scopebench.curate import ingest
from scopebench.curate.ingestion.images import image_id, pixel_md5, read_image
from scopebench.errors import DataFormatError, NoItemsError


def _rows(folder: Path) -> list[dict]:
    from datasets import load_from_disk

    return list(load_from_disk(str(folder))["test"])


def test_every_row_is_kept_or_reported(built: dict) -> None:
    r = built["ingest"]
    assert r.items_in == 11
    assert r.kept == 6  # a: rows 0, 1, 3; b: t16, mc, dup
    assert dict(r.dropped) == {
        "unknown_vocabulary": 1, "duplicate_id": 1, "bad_image": 1, "unsafe_path": 1, "missing_image": 1,
    }  # fmt: skip
    assert r.kept + sum(r.dropped.values()) == r.items_in
    where = {(p.source, p.row, p.field, p.kind) for p in r.problems if p.severity == "error"}
    assert where == {
        ("src_a", "2", "modality", "unknown_vocabulary"),
        ("src_a", "4", "image", "duplicate_id"),
        ("src_b", "2", "image", "bad_image"),
        ("src_b", "4", "image", "unsafe_path"),
        ("src_b", "5", "image", "missing_image"),
    }
    typo = next(p for p in r.problems if p.kind == "unknown_vocabulary")
    assert typo.suggestion == "light microscopy"
    # The same problems are in problems.jsonl.
    lines = (built["root"] / "ingest" / "problems.jsonl").read_text().splitlines()
    assert len(lines) == len(r.problems)


def test_rows_are_normalised_with_hashes_and_ids(built: dict) -> None:
    root = built["root"]
    rows = {(r["dataset"], r["source_path"]): r for r in _rows(root / "ingest")}
    img3 = rows[("src_a", "img3.png")]
    assert img3["modality"] == "light microscopy"  # "Light Microscopy" in the CSV
    assert img3["ncbitaxon_id"] == "NCBITaxon_9606" and img3["ncbitaxon_name"] == "Homo sapiens"
    assert img3["license"] == "CC-BY-4.0" and img3["submodality_id"] == "FBbi:00000243"
    assert img3["microns_per_pixel"] == pytest.approx(0.1)
    md5 = pixel_md5(read_image(root / "a" / "img3.png").pixels)
    assert img3["pixel_md5"] == md5 and img3["image_id"] == image_id("src_a", "img3.png", md5)
    assert img3["file_sha256"] == hashlib.sha256((root / "a" / "img3.png").read_bytes()).hexdigest()
    t16 = rows[("src_b", "t16.tif")]
    assert (t16["bit_depth"], t16["channels"], t16["source_format"]) == (16, 1, "TIFF")
    assert t16["license"] == "CC0-1.0" and t16["ncbitaxon_id"] == "NCBITaxon_10090"
    assert "channels-first" in rows[("src_b", "mc.tif")]["conversion"]


def test_cross_source_copy_is_a_reported_near_duplicate(built: dict) -> None:
    rows = {(r["dataset"], r["source_path"]): r for r in _rows(built["root"] / "ingest")}
    a, b = rows[("src_a", "img1.png")], rows[("src_b", "dup.png")]
    assert a["dup_group"] == b["dup_group"] == a["image_id"] != b["image_id"]
    groups = {r["dup_group"] for r in rows.values()}
    assert len(groups) == 5
    dup = [p for p in built["ingest"].problems if p.kind == "near_duplicate"]
    assert len(dup) == 1 and (dup[0].source, dup[0].row) == ("src_b", "3") and "src_a row 1" in dup[0].message


def test_ubench_loader_reads_the_output_and_card_lists_counts_and_checksums(built: dict) -> None:
    root = built["root"]
    loaded = get_benchmark("ubench").load(root / "ingest")
    assert loaded.items == []  # no questions yet
    assert not [p for p in loaded.problems if p.severity == "error"]
    card = (root / "ingest" / "README.md").read_text()
    assert "6 images kept of 11 read" in card
    assert "| src_a | 3 |" in card and "| fluorescence microscopy | 3 |" in card
    assert "| src_a | CC-BY-4.0 (3) | Doe 2024 |" in card  # licence as the rows give it (images)
    manifest_sha = hashlib.sha256((root / "manifest.yaml").read_bytes()).hexdigest()
    assert f"| input manifest: manifest.yaml | {manifest_sha} |" in card
    shard = next((root / "ingest" / "data").glob("test-*.parquet"))
    assert hashlib.sha256(shard.read_bytes()).hexdigest() in card
    assert json.loads((root / "ingest" / "build.json").read_text())["kept"] == 6


def test_missing_licence_keeps_rows_out(tmp_path: Path) -> None:
    r = ingest(make_sources(tmp_path, licence_b=None), tmp_path / "out")
    missing = [p for p in r.problems if p.kind == "missing_licence"]
    assert {(p.source, p.row, p.field) for p in missing} == {("src_b", str(i), "license") for i in range(6)}
    assert r.dropped["missing_licence"] == 6 and r.kept == 3


def test_refuses_to_overwrite_a_foreign_folder(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "precious.txt").write_text("x")
    with pytest.raises(DataFormatError, match="not a scopebench build output"):
        ingest(make_sources(tmp_path / "s"), tmp_path / "out")
    assert (tmp_path / "out" / "precious.txt").is_file()


def test_bad_manifest_lists_violations(tmp_path: Path) -> None:
    (tmp_path / "m.yaml").write_text("sources:\n  - name: a b\n    images: x\n")
    with pytest.raises(DataFormatError) as exc:
        ingest(tmp_path / "m.yaml", tmp_path / "out")
    assert "sources.0.name" in str(exc.value) and "sources.0.metadata" in str(exc.value)


def test_nothing_kept_is_an_error_with_the_problems(tmp_path: Path) -> None:
    (tmp_path / "im").mkdir()
    (tmp_path / "m.csv").write_text("image,modality,domain\nnope.png,light microscopy,pathology\n")
    (tmp_path / "m.yaml").write_text("sources:\n  - name: s\n    images: im\n    metadata: m.csv\n")
    with pytest.raises(NoItemsError, match=r"(?s)missing_licence 1.*s row 0 field license"):
        ingest(tmp_path / "m.yaml", tmp_path / "out")
    assert len((tmp_path / "out" / "problems.jsonl").read_text().splitlines()) == 1


def test_parquet_table_with_renamed_columns(tmp_path: Path) -> None:
    import numpy as np
    import pandas as pd
    from PIL import Image

    (tmp_path / "im").mkdir()
    falling = np.tile(np.linspace(255, 0, 16), (16, 1)).astype(np.uint8)
    for name, img in (("a.png", falling), ("b.png", falling[:, ::-1])):  # dHashes 64 bits apart
        Image.fromarray(np.ascontiguousarray(img)).save(tmp_path / "im" / name)
    frame = pd.DataFrame(
        [{"file": "a.png", "mod": "light microscopy", "domain": "pathology", "pmid": 123, "notes": "x"},
         {"file": "b.png", "mod": "electron microscopy", "domain": "pathology", "pmid": None, "notes": "y"}]
    )  # fmt: skip
    frame.to_parquet(tmp_path / "m.parquet")  # pmid becomes a float column with a null
    (tmp_path / "m.yaml").write_text(
        "sources:\n  - name: s\n    images: im\n    metadata: m.parquet\n    licence: CC0-1.0\n"
        "    columns: {file: image, mod: modality}\n"
    )
    r = ingest(tmp_path / "m.yaml", tmp_path / "out")
    assert r.kept == 2
    assert [(p.source, p.field, p.kind, p.severity) for p in r.problems] == [
        ("s", "notes", "ignored_column", "warning")
    ]
    rows = sorted(_rows(tmp_path / "out"), key=lambda x: x["source_path"])
    assert [(x["modality"], x["pmid"], x["label"]) for x in rows] == [
        ("light microscopy", "123", -1),
        ("electron microscopy", None, -1),
    ]

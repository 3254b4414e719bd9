"""Small hand-made sources for the build tests (a few tiny images, written in milliseconds)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import tifffile
from PIL import Image

A_CSV = """image,modality,submodality,domain,subdomain,stain,organism,label_name,microns_per_pixel
img0.png,light microscopy,brightfield microscopy,pathology,hematopathology,Giemsa,Homo sapiens,basophil,0.1
img1.png,light microscopy,brightfield microscopy,pathology,hematopathology,Giemsa,Homo sapiens,lymphocyte,0.1
img2.png,light microscpy,brightfield microscopy,pathology,hematopathology,Giemsa,Homo sapiens,lymphocyte,0.1
img3.png,Light Microscopy,brightfield microscopy,pathology,hematopathology,Giemsa,homo sapiens,basophil,0.1
img0.png,light microscopy,brightfield microscopy,pathology,hematopathology,Giemsa,Homo sapiens,basophil,0.1
"""


def _noise(seed: int, shape: tuple[int, ...], dtype: type = np.uint8) -> np.ndarray:
    top = 65535 if dtype is np.uint16 else 255
    return np.random.default_rng(seed).integers(0, top, shape, dtype=dtype)


def make_sources(root: Path, *, licence_b: str | None = "CC0-1.0") -> Path:
    """Two sources with every kind of problem; returns the manifest path.

    Source ``src_a`` (CSV, 5 rows): rows 0, 1, 3 good (row 3 in other letter case); row 2 misspells
    the modality; row 4 lists img0.png again. Source ``src_b`` (JSON, 6 rows): a 16-bit TIFF, a
    2-channel channels-first TIFF, a truncated PNG, a copy of src_a's img1.png, a path leaving the
    folder, and a file that does not exist.
    """
    (root / "a").mkdir(parents=True)
    (root / "b").mkdir()
    for i in range(4):
        Image.fromarray(_noise(i, (32, 40, 3))).save(root / "a" / f"img{i}.png")
    tifffile.imwrite(root / "b" / "t16.tif", _noise(10, (30, 20), np.uint16))
    tifffile.imwrite(root / "b" / "mc.tif", _noise(11, (2, 30, 20), np.uint16))
    good = (root / "a" / "img0.png").read_bytes()
    (root / "b" / "bad.png").write_bytes(good[: len(good) // 2])
    shutil.copy(root / "a" / "img1.png", root / "b" / "dup.png")
    (root / "a.csv").write_text(A_CSV)
    rows = [{"image": n} for n in ("t16.tif", "mc.tif", "bad.png", "dup.png", "../a/img0.png", "nope.png")]
    (root / "b.json").write_text(json.dumps(rows))
    licence = f"    licence: {licence_b}\n" if licence_b else ""
    (root / "manifest.yaml").write_text(
        "name: tiny\nsources:\n"
        "  - name: src_a\n    images: a\n    metadata: a.csv\n    license: CC-BY-4.0\n    citation: Doe 2024\n"
        f"  - name: src_b\n    images: b\n    metadata: b.json\n{licence}"
        "    defaults: {modality: fluorescence microscopy, domain: biology, stain: DAPI, "
        "organism: Mus musculus, label_name: nucleus}\n"
    )
    return root / "manifest.yaml"


#: One metadata row in μ-Bench's vocabulary, for sources whose rows differ only by image.
ROW = "light microscopy,brightfield microscopy,pathology,hematopathology,Giemsa,Homo sapiens"


def write_lab_manifest(root: Path, names: list[str], *, near_duplicate_bits: int) -> Path:
    """``root/meta.csv`` (one :data:`ROW` per image of ``names``) and a one-source manifest over ``root/images``."""
    (root / "meta.csv").write_text(
        "image,modality,submodality,domain,subdomain,stain,organism\n"
        + "".join(f"{n},{ROW}\n" for n in names)
    )
    (root / "manifest.yaml").write_text(
        f"name: lab\nnear_duplicate_bits: {near_duplicate_bits}\nsources:\n"
        "  - name: lab\n    images: images\n    metadata: meta.csv\n    license: CC-BY-4.0\n"
    )
    return root / "manifest.yaml"


def tree_bytes(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` by its relative path: what byte-identity checks compare."""
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }

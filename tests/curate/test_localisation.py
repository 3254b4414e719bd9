"""`build localise`: detection items from instance masks (TIFF/PNG), COCO or CSV boxes, and
docs/build.md's example run as written through `scopebench run` (GRIT)."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from scopebench.cli import main
from scopebench.curate.localisation import boxes_from_mask, localise
from scopebench.errors import DataFormatError
from scopebench.items import Box

DOC = Path(__file__).resolve().parents[2] / "docs" / "build.md"
_BLOCK = re.compile(r"<!-- localise: (?P<name>[\w.]+) -->\n```\w*\n(?P<body>.*?)```", re.S)


def test_docs_example_boxes_match_the_label_image_and_run_scores_grit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Catches boxes off by one (x2 inclusive), stray pixels stretching a box, a tiny instance kept,
    a mask not kept, and items that `run` does not score as detection (GRIT 0.5: one of two found)."""
    files = {m["name"]: m["body"] for m in _BLOCK.finditer(DOC.read_text(encoding="utf-8"))}
    assert set(files) == {"make_masks.py", "run.sh"}
    monkeypatch.chdir(tmp_path)
    (tmp_path / "make_masks.py").write_text(files["make_masks.py"], encoding="utf-8")
    lines = files["run.sh"].splitlines()
    assert lines[0] == "python make_masks.py"
    subprocess.run([sys.executable, "make_masks.py"], check=True)
    for line in lines[1:]:
        argv = shlex.split(line)
        assert argv[0] == "scopebench" and main(argv[1:]) == 0, argv
    (item,) = [json.loads(x) for x in (tmp_path / "cells-detection/data.jsonl").read_text().splitlines()]
    assert item["boxes"] == [
        {"x1": 6, "y1": 4, "x2": 30, "y2": 20, "label": "nucleus"},
        {"x1": 40, "y1": 30, "x2": 70, "y2": 60, "label": "nucleus"},
    ]
    assert (item["class_name"], item["task"], item["question"]) == (
        "nucleus", "detection", "Locate every nucleus in the image."
    )  # fmt: skip
    assert (tmp_path / "cells-detection" / item["mask"]).read_bytes() == (
        tmp_path / "cells/masks/field1.tif"
    ).read_bytes()
    summary = json.loads((tmp_path / "cells-detection/build.json").read_text())
    assert summary["stats"]["instances_below_min_area"] == 1 and summary["stats"]["boxes"] == {"nucleus": 2}
    metrics = json.loads((tmp_path / "runs/cells-detection/metrics.json").read_text())
    overall = next(r for r in metrics["localization"] if r["group"] == "overall")
    assert (overall["n"], overall["score"]) == (1, pytest.approx(0.5))
    # The μ-Bench copy: the ubench loader reads the same boxes and the run scores the same.
    metrics = json.loads((tmp_path / "runs/cells-ubench/metrics.json").read_text())
    overall = next(r for r in metrics["localization"] if r["group"] == "overall")
    assert (overall["n"], overall["score"]) == (1, pytest.approx(0.5))
    # The doc's JSON line is the file's line.
    doc = DOC.read_text(encoding="utf-8")
    assert json.dumps(item) in doc


def test_binary_mask_components_are_instances_and_min_area_is_a_threshold() -> None:
    """Catches a binary mask read as one instance, and an area test off by one (< vs <=)."""
    mask = np.zeros((20, 20), dtype=np.uint8)
    mask[1:5, 1:5] = 255  # 16 pixels: kept at min_area 16
    mask[10:13, 10:15] = 255  # 15 pixels: dropped at 16
    mask[15:16, 0:1] = 255  # 1 pixel
    boxes, dropped = boxes_from_mask(mask, "cell", min_area=16)
    assert (boxes, dropped) == ([Box(1, 1, 5, 5, "cell")], 2)
    boxes, dropped = boxes_from_mask(mask, "cell", min_area=1)
    assert boxes == [Box(1, 1, 5, 5, "cell"), Box(10, 10, 15, 13, "cell"), Box(0, 15, 1, 16, "cell")]
    assert dropped == 0


def _folder(tmp: Path, names: tuple[str, ...]) -> Path:
    (tmp / "img").mkdir()
    for name in names:
        Image.new("RGB", (40, 30)).save(tmp / "img" / name)
    return tmp / "img"


def test_bad_input_is_problem_rows_naming_file_and_row(tmp_path: Path) -> None:
    """Catches a missing mask, a wrong-size mask or an RGB mask silently dropped (or crashing),
    and a bad annotation row not named; every image is counted in or dropped."""
    images = _folder(tmp_path, ("a.png", "b.png", "c.png", "d.png"))
    (tmp_path / "m").mkdir()
    lab = np.zeros((30, 40), dtype=np.uint16)
    lab[2:10, 3:20] = 7
    Image.fromarray(lab).save(tmp_path / "m" / "a.png")
    Image.fromarray(np.zeros((10, 10), dtype=np.uint8)).save(tmp_path / "m" / "b.png")  # wrong size
    Image.new("RGB", (40, 30), (1, 2, 3)).save(tmp_path / "m" / "c.png")  # colour, not labels
    result = localise(images, tmp_path / "out", masks=tmp_path / "m", label="gland")
    kinds = {(p.row, p.kind) for p in result.problems}
    assert kinds == {("b.png", "mask_size"), ("c.png", "bad_file"), ("d.png", "no_annotation")}
    assert all(p.source == str(images) for p in result.problems)
    assert (result.items_in, result.kept) == (4, 1)
    (row,) = [json.loads(x) for x in (tmp_path / "out/data.jsonl").read_text().splitlines()]
    assert row["boxes"] == [{"x1": 3, "y1": 2, "x2": 20, "y2": 10, "label": "gland"}]

    csv_path = tmp_path / "boxes.csv"
    csv_path.write_text(
        "image,x1,y1,x2,y2,label\na.png,1,2,11,12,cell\na.png,5,5,2,2,cell\nzz.png,0,0,1,1,\n"
    )
    result = localise(images, tmp_path / "csv", boxes=csv_path)
    kinds = {(p.source, p.row, p.kind) for p in result.problems}
    assert ("boxes.csv", "1", "bad_annotation") in kinds and (
        str(csv_path),
        "zz.png",
        "unknown_image",
    ) in kinds
    assert result.kept == 1 and result.dropped["no_annotation"] == 3
    with pytest.raises(DataFormatError, match="exactly one"):
        localise(images, tmp_path / "x", boxes=csv_path, masks=tmp_path / "m")


def test_coco_boxes_are_xywh_with_category_names(tmp_path: Path) -> None:
    """Catches COCO's [x, y, width, height] read as corners, and classes not split into items."""
    images = _folder(tmp_path, ("a.png",))
    coco = {
        "images": [{"id": 1, "file_name": "a.png"}],
        "categories": [{"id": 1, "name": "nucleus"}, {"id": 2, "name": "mitochondrion"}],
        "annotations": [
            {"image_id": 1, "category_id": 1, "bbox": [2, 3, 10, 5]},
            {"image_id": 1, "category_id": 2, "bbox": [20, 10, 4, 4]},
            {"image_id": 9, "category_id": 1, "bbox": [0, 0, 1, 1]},
        ],
    }
    (tmp_path / "coco.json").write_text(json.dumps(coco))
    result = localise(images, tmp_path / "out", coco=tmp_path / "coco.json")
    assert [(p.row, p.kind) for p in result.problems] == [("annotation 2", "bad_annotation")]
    rows = {
        r["class_name"]: r for r in map(json.loads, (tmp_path / "out/data.jsonl").read_text().splitlines())
    }
    assert rows["nucleus"]["boxes"] == [{"x1": 2, "y1": 3, "x2": 12, "y2": 8, "label": "nucleus"}]
    assert rows["mitochondrion"]["id"] == "a-detection-mitochondrion"
    assert main(["build", "localise", str(images), "--out", str(tmp_path / "y")]) == 2


def test_boxes_agree_with_scikit_image_regionprops_on_a_real_micrograph() -> None:
    """An independent oracle on real pixels (scikit-image's coins, thresholded and labelled): catches
    a connectivity or box convention that differs from regionprops' (exclusive max row/col)."""
    from skimage import data, filters, measure

    im = data.coins()
    lab = measure.label(im > filters.threshold_otsu(im), connectivity=2)
    boxes, dropped = boxes_from_mask(lab, "coin", min_area=16)
    expected = [r.bbox for r in measure.regionprops(lab) if r.area >= 16]
    assert [(b.y1, b.x1, b.y2, b.x2) for b in boxes] == expected
    assert dropped == lab.max() - len(expected) > 0

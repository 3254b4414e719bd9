"""``build localise``: detection items from instance masks or boxes (μ-Bench's localisation tasks).

μ-Bench builds its detection tasks from segmentation datasets (cells, nuclei, mitochondria,
glands). A source here is a folder of images with one of

* **instance masks** (``--masks DIR``): one label image per image, same file stem, PNG or TIFF,
  background 0. A mask with a single foreground value is a binary mask: each connected component is
  an instance. Otherwise each value is an instance, and its box is the extent of its connected
  components of at least ``min_area`` pixels (8-connectivity), so a stray pixel of a label does not
  stretch its box; an instance with no component that large is dropped and counted;
* **COCO boxes** (``--coco FILE``): ``images`` (``id``, ``file_name``), ``categories`` (``id``,
  ``name``) and ``annotations`` (``image_id``, ``category_id``, ``bbox`` as ``[x, y, width, height]``);
* **a box table** (``--boxes FILE.csv``): columns ``image``, ``x1``, ``y1``, ``x2``, ``y2`` and
  optionally ``label``.

The output is a ``local``-format benchmark (docs/local-format.md): ``OUT/data.jsonl`` with one
detection item per (image, class) — μ-Bench's question ``Locate every {class} in the image.``,
``class_name`` and ``boxes`` in pixels of the original image (``x2``/``y2`` exclusive) — the
images in ``OUT/images/`` and the masks, kept for a segmentation metric, in ``OUT/masks/`` (each
item's ``mask`` column). ``scopebench run --bench local --data OUT`` scores the items with GRIT.
``OUT/ubench/`` holds the same boxes as μ-Bench rows (one per image, ``bbox`` entries
``{"x1", "y1", "x2", "y2", "className"}``, the layout μ-Bench's detection evaluation reads), so
``scopebench run --bench ubench --data OUT/ubench`` asks the same questions.
Every image without annotations, unreadable file, mask of the wrong size and bad annotation row is a
problem row in ``OUT/problems.jsonl`` naming the file and the row.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import shutil
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from scopebench.curate.output import prepare_out, write_summary
from scopebench.curate.report import BuildProblem, StepResult
from scopebench.errors import DataFormatError
from scopebench.items import Box

__all__ = [
    "DEFAULT_MIN_AREA",
    "boxes_from_coco",
    "boxes_from_csv",
    "boxes_from_mask",
    "localise",
    "read_mask",
]

STEP = "localise"
#: Components smaller than this many pixels are noise (a 4 × 4 patch), not an object.
DEFAULT_MIN_AREA = 16
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".tif", ".tiff")
MASK_SUFFIXES = (".png", ".tif", ".tiff")
_EIGHT = np.ones((3, 3), dtype=bool)


def read_mask(path: Path) -> np.ndarray:
    """A label image as a 2-D integer array (TIFF through tifffile when installed, else Pillow).

    Raises:
        DataFormatError: When the file is not a single-channel integer image.
    """
    try:
        # tifffile (the build extra) reads every TIFF layout; Pillow reads the common 8/16-bit ones.
        if path.suffix.lower() in (".tif", ".tiff") and importlib.util.find_spec("tifffile") is not None:
            import tifffile

            arr = np.asarray(tifffile.imread(path))
        else:
            from PIL import Image

            with Image.open(path) as im:
                arr = np.asarray(im)
    except Exception as exc:  # any decoder failure means the same thing: not a readable mask
        raise DataFormatError(f"cannot read mask {path}: {exc}") from exc
    if arr.ndim == 3 and arr.shape[-1] in (3, 4) and (arr[..., :3] == arr[..., :1]).all():
        arr = arr[..., 0]  # a grey label image saved as RGB
    if arr.ndim != 2 or (not np.issubdtype(arr.dtype, np.integer) and arr.dtype != bool):
        raise DataFormatError(
            f"{path} is not a label image (shape {arr.shape}, {arr.dtype}); save one integer channel, "
            "0 for background and one value per instance"
        )
    return arr.astype(np.int64)


def boxes_from_mask(mask: np.ndarray, label: str, min_area: int = DEFAULT_MIN_AREA) -> tuple[list[Box], int]:
    """Boxes of the instances of a label image.

    Args:
        mask: 2-D integer array, 0 = background.
        label: Class of every instance.
        min_area: Connected components under this many pixels are left out of a box.

    Returns:
        The boxes (``x2``/``y2`` exclusive, row-major instance order) and the number of instances
        dropped because none of their components reached ``min_area``.
    """
    from scipy import ndimage

    values = np.unique(mask[mask > 0])
    if len(values) == 1:  # binary mask: the instances are its connected components
        mask, _ = ndimage.label(mask > 0, structure=_EIGHT)
    boxes, dropped = [], 0
    for value, where in enumerate(ndimage.find_objects(mask), start=1):
        if where is None:
            continue
        comps, n = ndimage.label(mask[where] == value, structure=_EIGHT)
        areas = np.bincount(comps.ravel(), minlength=n + 1)[1:]
        keep = np.isin(comps, np.flatnonzero(areas >= min_area) + 1)
        if not keep.any():
            dropped += 1
            continue
        rows, cols = np.nonzero(keep)
        y0, x0 = where[0].start, where[1].start
        boxes.append(
            Box(
                x0 + int(cols.min()),
                y0 + int(rows.min()),
                x0 + int(cols.max()) + 1,
                y0 + int(rows.max()) + 1,
                label,
            )
        )
    return boxes, dropped


def _problem(source: str, row: str, kind: str, message: str, field: str = "") -> BuildProblem:
    return BuildProblem(step=STEP, source=source, row=row, field=field, kind=kind, message=message)


def boxes_from_coco(path: Path) -> tuple[dict[str, list[Box]], list[BuildProblem]]:
    """Boxes per image file name from a COCO instances file; bad annotations are problems.

    Raises:
        DataFormatError: When the file is not JSON with ``images``, ``categories``, ``annotations``.
    """
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        images = {int(im["id"]): str(im["file_name"]) for im in raw["images"]}
        names = {int(c["id"]): str(c["name"]) for c in raw["categories"]}
        annotations = list(raw["annotations"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise DataFormatError(
            f"{path} is not a COCO instances file ({exc}); it needs images (id, file_name), "
            "categories (id, name) and annotations (image_id, category_id, bbox)"
        ) from exc
    out: dict[str, list[Box]] = defaultdict(list)
    problems = []
    for i, ann in enumerate(annotations):
        try:
            x, y, w, h = (float(v) for v in ann["bbox"])
            name = images[int(ann["image_id"])]
            label = names[int(ann["category_id"])]
            if w <= 0 or h <= 0:
                raise ValueError(f"width and height must be positive (got {w} × {h})")
        except (KeyError, TypeError, ValueError) as exc:
            problems.append(_problem(path.name, f"annotation {i}", "bad_annotation", f"skipped: {exc!r}"))
            continue
        out[name].append(Box(x, y, x + w, y + h, label))
    return dict(out), problems


def boxes_from_csv(path: Path, default_label: str) -> tuple[dict[str, list[Box]], list[BuildProblem]]:
    """Boxes per image file name from a table with ``image, x1, y1, x2, y2[, label]``."""
    out: dict[str, list[Box]] = defaultdict(list)
    problems = []
    with path.open(encoding="utf-8", newline="") as fh:
        for i, row in enumerate(csv.DictReader(fh)):
            try:
                x1, y1, x2, y2 = (float(row[k]) for k in ("x1", "y1", "x2", "y2"))
                if not (x2 > x1 and y2 > y1):
                    raise ValueError(f"x2 > x1 and y2 > y1 are required (got {x1},{y1},{x2},{y2})")
                out[str(row["image"])].append(
                    Box(x1, y1, x2, y2, (row.get("label") or default_label).strip())
                )
            except (KeyError, TypeError, ValueError) as exc:
                problems.append(_problem(path.name, str(i), "bad_annotation", f"skipped: {exc!r}"))
    return dict(out), problems


class _Unusable(DataFormatError):
    """An image left out of the output, with the problem kind it is counted under."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def _find_mask(masks: Path, image: Path) -> Path | None:
    found = [masks / f"{image.stem}{s}" for s in MASK_SUFFIXES if (masks / f"{image.stem}{s}").is_file()]
    return found[0] if found else None


def _image_size(path: Path) -> tuple[int, int]:
    from PIL import Image

    try:
        with Image.open(path) as im:
            return im.size
    except Exception as exc:  # any decoder failure: the file is not an image we can use
        raise _Unusable("bad_file", f"cannot read image {path.name}: {exc}") from exc


def _annotate(
    image: Path, masks: Path | None, table: dict[str, list[Box]] | None, label: str, min_area: int
) -> tuple[list[Box], int, Path | None]:
    """``(boxes, tiny instances dropped, mask file)`` of one image.

    Raises:
        DataFormatError: For an unreadable image or mask, a mask of another size, no annotation.
    """
    width, height = _image_size(image)
    if masks is None:
        boxes = (table or {}).get(image.name)
        if boxes is None:
            raise _Unusable("no_annotation", f"no box names {image.name}; add its boxes or remove the image")
        return boxes, 0, None
    mask_path = _find_mask(masks, image)
    if mask_path is None:
        raise _Unusable(
            "no_annotation", f"no mask {image.stem}.png/.tif in {masks}; add it or remove the image"
        )
    try:
        mask = read_mask(mask_path)
    except DataFormatError as exc:
        raise _Unusable("bad_file", str(exc)) from exc
    if mask.shape != (height, width):
        raise _Unusable(
            "mask_size",
            f"mask {mask_path.name} is {mask.shape[1]}×{mask.shape[0]} but the image is {width}×{height}",
        )
    boxes, dropped = boxes_from_mask(mask, label, min_area)
    return boxes, dropped, mask_path


def _items(image: Path, boxes: list[Box], mask: Path | None, subset: str) -> list[dict[str, Any]]:
    by_class: dict[str, list[Box]] = defaultdict(list)
    for b in boxes:
        by_class[b.label].append(b)
    out = []
    for cls, targets in sorted(by_class.items()):
        item: dict[str, Any] = {
            "id": f"{image.stem}-detection" + ("" if len(by_class) == 1 else f"-{cls}"),
            "question": f"Locate every {cls} in the image.",
            "image": f"images/{image.name}",
            "task": "detection",
            "subset": subset,
            "class_name": cls,
            "boxes": [{"x1": b.x1, "y1": b.y1, "x2": b.x2, "y2": b.y2, "label": b.label} for b in targets],
        }
        if mask is not None:
            item["mask"] = f"masks/{mask.name}"
        out.append(item)
    return out


def _write_ubench(rows: list[dict[str, Any]], dst: Path) -> None:
    """``OUT/ubench/``: one μ-Bench row per image, its boxes in ``bbox`` (SuperAnnotate layout)."""
    from datasets import Dataset, Features, Image, Value

    per_image: dict[str, dict[str, Any]] = {}
    for item in rows:
        row = per_image.setdefault(item["image"], {
            "image": {"bytes": (dst / item["image"]).read_bytes(), "path": item["image"]},
            "image_id": Path(item["image"]).stem, "dataset": item["subset"], "label_name": item["class_name"],
            "bbox": [], "questions": None, "split": "test", "mask": item.get("mask"),
        })  # fmt: skip
        row["bbox"] += [{**{k: float(b[k]) for k in ("x1", "y1", "x2", "y2")}, "className": b["label"]}
                        for b in item["boxes"]]  # fmt: skip
    number, text = Value("float64"), Value("string")
    features = Features({
        "image": Image(), "image_id": text, "dataset": text, "label_name": text,
        "bbox": [{"x1": number, "y1": number, "x2": number, "y2": number, "className": text}],
        "questions": {"modality": {"question": text}}, "split": text, "mask": text,
    })  # fmt: skip
    (dst / "ubench").mkdir()
    Dataset.from_list(list(per_image.values()), features=features).to_parquet(
        str(dst / "ubench" / "test-00000-of-00001.parquet")
    )


def localise(
    images: str | Path,
    out: str | Path,
    *,
    masks: str | Path | None = None,
    coco: str | Path | None = None,
    boxes: str | Path | None = None,
    label: str = "object",
    min_area: int = DEFAULT_MIN_AREA,
    subset: str | None = None,
) -> StepResult:
    """Write a ``local`` detection benchmark from images and their masks or boxes (module docstring).

    Args:
        images: Folder of images.
        out: Output folder (an earlier build output there is replaced).
        masks: Folder of label images, one per image by file stem.
        coco: COCO instances JSON.
        boxes: CSV of boxes.
        label: Class of mask instances and of CSV rows without a ``label``.
        min_area: Smallest connected component kept, in pixels.
        subset: The items' ``subset`` (default: the images folder's name).

    Raises:
        DataFormatError: Unless exactly one of ``masks``, ``coco``, ``boxes`` is given, or when
            ``min_area`` is below 1.
    """
    src, dst = Path(images), Path(out)
    if sum(x is not None for x in (masks, coco, boxes)) != 1:
        raise DataFormatError("give exactly one of --masks DIR, --coco FILE or --boxes FILE.csv")
    if min_area < 1:
        raise DataFormatError(f"--min-area must be at least 1 pixel (got {min_area})")
    if not src.is_dir():
        raise DataFormatError(f"{src} is not a folder of images")
    result = StepResult(step=STEP, out=str(dst))
    table: dict[str, list[Box]] | None = None
    if coco is not None:
        table, result.problems = boxes_from_coco(Path(coco))
    elif boxes is not None:
        table, result.problems = boxes_from_csv(Path(boxes), label)
    files = sorted(p for p in src.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
    for name in sorted(set(table or {}) - {p.name for p in files}):
        result.problems.append(
            _problem(str(coco or boxes), name, "unknown_image", f"no image {name} in {src}")
        )
    prepare_out(dst)
    (dst / "images").mkdir()
    rows, tiny, per_class = [], 0, Counter[str]()
    for image in files:
        result.items_in += 1
        try:
            found, dropped, mask = _annotate(image, Path(masks) if masks else None, table, label, min_area)
        except _Unusable as exc:
            result.problems.append(_problem(str(src), image.name, exc.kind, str(exc)))
            result.dropped[exc.kind] += 1
            continue
        tiny += dropped
        shutil.copyfile(image, dst / "images" / image.name)
        if mask is not None:
            (dst / "masks").mkdir(exist_ok=True)
            shutil.copyfile(mask, dst / "masks" / mask.name)
        made = _items(image, found, mask, subset or src.name)
        per_class.update({it["class_name"]: len(it["boxes"]) for it in made})
        rows.extend(made)
        result.kept += 1
    (dst / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    if rows:
        _write_ubench(rows, dst)
    result.stats = {
        "items": len(rows),
        "boxes": dict(sorted(per_class.items())),
        "min_area": min_area,
        "instances_below_min_area": tiny,
        "source": "masks" if masks else "coco" if coco else "csv",
    }
    write_summary(dst, result)
    return result

"""``build figures``: PathMMU's data step — sub-figures cropped from captioned compound figures.

PathMMU collects figures with their captions (PubMed articles, educational material) and works on
the sub-figures of compound figures, each keeping its figure's caption. A source here is a folder
of figures with their captions — a table (``--captions``: ``figure`` = the file name, ``caption``)
or one ``<stem>.txt`` beside each figure. Each figure goes through the figure gate's panel splitter
(:mod:`scopebench.curate.filtering.panels`, the same methods and thresholds):

* a figure with at least two panels is cropped into one PNG per panel, ``<stem>-panel<k>.png``
  (``k`` from 1, top to bottom then left to right), and each crop keeps the whole caption;
* a figure with fewer is kept whole, as ``<stem>.png``.

The output is an ingest source: ``OUT/images/``, ``OUT/metadata.csv`` (``image``; add the manifest's
``license`` and ``defaults``), ``OUT/texts.csv`` (``source``, ``image``, ``caption``: the table
``build generate`` and the caption gate read) and ``OUT/crops.csv``, the crop-and-keep report: one
row per written image naming its figure, panel and box. Near-duplicates (the same sub-figure in two
articles) are found by ``build ingest``, which compares every image it reads. A figure without a
caption, an unreadable figure and a caption row naming no figure are problem rows naming the file
and the row; nothing is dropped silently.
"""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from scopebench.curate.filtering.panels import PanelConfig, count_panels
from scopebench.curate.manifest import read_table
from scopebench.curate.output import prepare_out, write_summary
from scopebench.curate.report import BuildProblem, StepResult
from scopebench.errors import DataFormatError, ImageLoadError
from scopebench.items import open_image

__all__ = ["read_figure_captions", "split_figures"]

STEP = "figures"
FIGURE_SUFFIXES = (".png", ".jpg", ".jpeg", ".tif", ".tiff", ".gif", ".bmp", ".webp")


def read_figure_captions(
    folder: Path, figures: list[Path], table: Path | None, problems: list[BuildProblem]
) -> dict[str, str]:
    """Figure file name → caption, from ``table`` or from ``<stem>.txt`` sidecars."""
    names = {f.name for f in figures}
    out: dict[str, str] = {}
    if table is None:
        for f in figures:
            side = folder / f"{f.stem}.txt"
            if side.is_file() and side.read_text(encoding="utf-8").strip():
                out[f.name] = " ".join(side.read_text(encoding="utf-8").split())
        return out
    for i, rec in enumerate(read_table(table)):
        name, caption = str(rec.get("figure") or ""), " ".join(str(rec.get("caption") or "").split())
        if name not in names:
            msg = f"figure {name!r} is not in {folder}; the caption is not used"
            problems.append(BuildProblem(STEP, table.name, str(i), "figure", "unknown_image", msg))
        elif name in out:
            msg = "a second caption for the same figure; the first is used"
            problems.append(BuildProblem(STEP, table.name, str(i), "figure", "duplicate_input", msg))
        elif caption:
            out[name] = caption
    return out


def _crop_figure(figure: Path, images: Path, cfg: PanelConfig) -> list[dict[str, Any]]:
    """Write the crops (or the whole figure) of one figure; one report row per written image.

    Raises:
        ImageLoadError: When the figure cannot be read.
    """
    pixels = np.asarray(open_image(figure, what=str(figure)))
    found = count_panels(pixels, cfg)
    from PIL import Image

    if found.count < 2:
        h, w = pixels.shape[:2]
        Image.fromarray(pixels).save(images / f"{figure.stem}.png")
        whole = {"image": f"{figure.stem}.png", "figure": figure.name, "panel": 0}
        return [{**whole, "panels_found": found.count, "y0": 0, "x0": 0, "y1": h, "x1": w}]
    rows = []
    for k, (y0, x0, y1, x1) in enumerate(found.boxes, start=1):
        name = f"{figure.stem}-panel{k}.png"
        Image.fromarray(pixels[y0:y1, x0:x1]).save(images / name)
        rows.append({"image": name, "figure": figure.name, "panel": k, "panels_found": found.count,
                     "y0": y0, "x0": x0, "y1": y1, "x1": x1})  # fmt: skip
    return rows


def _write_csv(path: Path, rows: list[dict[str, Any]], columns: list[str]) -> None:
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


def split_figures(
    folder: str | Path,
    out: str | Path,
    *,
    captions: str | Path | None = None,
    source: str | None = None,
    config: PanelConfig | None = None,
) -> StepResult:
    """Crop the sub-figures of captioned figures into an ingest source (module docstring).

    Args:
        folder: The figures.
        out: Output folder (an earlier build output there is replaced).
        captions: A table with ``figure`` and ``caption`` (default: ``<stem>.txt`` sidecars).
        source: The manifest source name written to ``texts.csv`` (default: the folder's name).
        config: The panel splitter's method and thresholds.

    Returns:
        Figures in, kept (cropped or whole) and dropped by reason; ``stats`` counts compound and
        single figures, crops and panels per figure.
    """
    src, dst = Path(folder), Path(out)
    if not src.is_dir():
        raise DataFormatError(f"{src} is not a folder of figures")
    cfg = config or PanelConfig()
    figures = sorted(p for p in src.iterdir() if p.suffix.lower() in FIGURE_SUFFIXES)
    result = StepResult(step=STEP, items_in=len(figures), out=str(dst))
    texts = read_figure_captions(src, figures, Path(captions) if captions else None, result.problems)
    prepare_out(dst)
    (dst / "images").mkdir()
    report: list[dict[str, Any]] = []
    panels = Counter[int]()
    for figure in figures:
        where = str(captions) if captions else str(src)
        if figure.name not in texts:
            msg = "no caption (a row in the captions table or a non-empty <stem>.txt); add one or remove it"
            result.problems.append(BuildProblem(STEP, where, figure.name, "caption", "missing_caption", msg))
            result.dropped["missing_caption"] += 1
            continue
        try:
            rows = _crop_figure(figure, dst / "images", cfg)
        except ImageLoadError as exc:
            result.problems.append(BuildProblem(STEP, str(src), figure.name, "image", "bad_image", str(exc)))
            result.dropped["bad_image"] += 1
            continue
        panels[rows[0]["panels_found"]] += 1
        report += [{**r, "caption": texts[figure.name]} for r in rows]
        result.kept += 1
    name = source or src.name
    _write_csv(dst / "metadata.csv", report, ["image"])
    _write_csv(dst / "texts.csv", [{**r, "source": name} for r in report], ["source", "image", "caption"])
    _write_csv(
        dst / "crops.csv", report, ["image", "figure", "panel", "panels_found", "y0", "x0", "y1", "x1"]
    )
    result.stats = {
        "source": name,
        "compound_figures": len({r["figure"] for r in report if r["panel"] > 0}),
        "single_figures": sum(r["panel"] == 0 for r in report),
        "crops": sum(r["panel"] > 0 for r in report),
        "images": len(report),
        "panels_per_figure": dict(sorted(panels.items())),
        "method": cfg.method,
    }
    write_summary(dst, result)
    return result

"""The offline demo benchmark: a small synthetic microscopy suite generated from a seed.

``scopebench demo`` (and ``--bench demo``) generates it into the cache on first use. It is modelled
on μ-Bench's synthetic tasks and needs no download:

* **cell shape** — single fluorescence-like cells (dark background, a bright cytoplasm with a
  nucleus, blurred, with shot noise) whose class is the answer: contour irregularity
  (``contour``), eccentricity (``eccentricity``) and cytoplasm texture (``texture``);
* **colocalization** — two-channel images whose red/green Pearson correlation is set to a known
  level (``colocalization``);
* **figures** — two-panel figures with a bar chart of known values (``bar_max``, ``bar_value``);
* **coarse** — modality and stain questions on scikit-image's bundled ``cell`` (light microscopy)
  and ``immunohistochemistry`` (IHC, DAB + hematoxylin) images and on synthetic fluorescence cells
  (``modality``, ``stain``; balanced so no answer is a frequency shortcut), with μ-Bench-style
  captions for contrastive models;
* **cognition** — a small synthetic stand-in for μ-Bench Cognition, which is not public
  (``cognition``): six questions that combine two perceptions of a synthetic cell (contour and
  shape) in μ-Bench's cognition format — six options, the last "none of the above", the correct
  answer once at each position A–F — with question + option captions as μ-Bench scores cognition.
  It exercises the format and the pipeline; it is not μ-Bench's reasoning content.

A separate training split (``train.jsonl``) of the cell-shape tasks serves the linear-probe
baseline, and a ``detection`` split (``detection.jsonl``) holds fields of 2–5 cells with their
known ``cell`` (easy) and ``nucleus`` (hard) boxes for the GRIT localization score. Everything is
deterministic for a seed; the folder is written atomically.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from scopebench.benchmarks.base import Benchmark, LoadedBenchmark
from scopebench.benchmarks.local import LocalBenchmark
from scopebench.benchmarks.registry import register_benchmark
from scopebench.errors import DataFormatError

__all__ = ["DEMO_VERSION", "DemoBenchmark", "default_cache_dir", "generate_demo"]

log = logging.getLogger(__name__)

DEMO_VERSION = "4"
NONE = "none of the above"
SIZE = 128


def default_cache_dir(seed: int = 0) -> Path:
    """``$SCOPEBENCH_CACHE`` (or ``~/.cache/scopebench``) ``/demo/v{DEMO_VERSION}-seed{seed}``."""
    root = Path(os.environ.get("SCOPEBENCH_CACHE", Path.home() / ".cache" / "scopebench"))
    return root / "demo" / f"v{DEMO_VERSION}-seed{seed}"


# Image synthesis -----------------------------------------------------------------------------------


def _blur(img: np.ndarray, sigma: float) -> np.ndarray:
    from scipy.ndimage import gaussian_filter

    blurred: np.ndarray = gaussian_filter(img, sigma)
    return blurred


def _cell(rng: np.random.Generator, *, irregular: bool, elongated: bool, coarse: bool) -> np.ndarray:
    """One fluorescence-like cell as an RGB uint8 array."""
    yy, xx = np.mgrid[0:SIZE, 0:SIZE].astype(float)
    cx, cy = SIZE / 2 + rng.uniform(-6, 6, 2)
    angle = rng.uniform(0, np.pi)
    # Elongation: axis ratio 1 (round) vs ~2.2 (elongated).
    ratio = rng.uniform(2.0, 2.5) if elongated else rng.uniform(1.0, 1.12)
    radius = rng.uniform(26, 32)
    dx, dy = xx - cx, yy - cy
    u = dx * np.cos(angle) + dy * np.sin(angle)
    v = -dx * np.sin(angle) + dy * np.cos(angle)
    r = np.hypot(u / np.sqrt(ratio), v * np.sqrt(ratio))
    theta = np.arctan2(v, u)
    # Contour: a few low harmonics (smooth) vs strong high harmonics (irregular).
    harmonics = [(k, rng.uniform(0, 2 * np.pi)) for k in ((5, 7, 9, 11) if irregular else (2, 3))]
    amp = 0.16 if irregular else 0.03
    bound = radius * (1 + sum(amp * np.cos(k * theta + ph) for k, ph in harmonics))
    mask = (r <= bound).astype(float)
    # Texture: fine (small-scale) vs coarse (large-scale) modulation of the cytoplasm.
    noise = rng.standard_normal((SIZE, SIZE))
    tex = _blur(noise, 3.5 if coarse else 0.7)
    tex = (tex - tex.min()) / (np.ptp(tex) + 1e-9)
    cyto = mask * (0.45 + 0.55 * tex)
    nucleus = (np.hypot(dx, dy) <= radius * 0.35).astype(float)
    green = _blur(cyto, 1.0)
    blue = _blur(nucleus * mask, 1.0)
    img = np.stack([0.05 * green, green, 0.3 * green + blue], axis=-1)
    img = rng.poisson(img * 200) / 200 + rng.normal(0, 0.02, img.shape)
    return (np.clip(img, 0, 1) * 255).astype(np.uint8)


def _cell_field(
    rng: np.random.Generator, n_cells: int
) -> tuple[np.ndarray, list[list[float]], list[list[float]]]:
    """A field of ``n_cells`` non-overlapping fluorescence cells and their cell and nucleus boxes.

    Boxes are ``[x1, y1, x2, y2]`` in pixels, measured from the drawn masks (not from the
    parameters), so they are exactly the objects' extents.
    """
    from scipy.ndimage import find_objects

    yy, xx = np.mgrid[0:SIZE, 0:SIZE].astype(float)
    cyto = np.zeros((SIZE, SIZE))
    nuc = np.zeros((SIZE, SIZE))
    labels = np.zeros((SIZE, SIZE), dtype=int)
    nuc_labels = np.zeros((SIZE, SIZE), dtype=int)
    centres: list[tuple[float, float, float]] = []
    while len(centres) < n_cells:
        r = rng.uniform(12, 18)
        cx, cy = rng.uniform(r + 2, SIZE - r - 2, 2)
        if any(np.hypot(cx - x, cy - y) < r + rr + 4 for x, y, rr in centres):
            continue  # rejection sampling keeps cells apart, so every box is one cell
        centres.append((cx, cy, r))
        ratio = rng.uniform(1.0, 1.6)
        angle = rng.uniform(0, np.pi)
        dx, dy = xx - cx, yy - cy
        u = dx * np.cos(angle) + dy * np.sin(angle)
        v = -dx * np.sin(angle) + dy * np.cos(angle)
        mask = np.hypot(u / np.sqrt(ratio), v * np.sqrt(ratio)) <= r
        nmask = np.hypot(dx, dy) <= r * 0.4
        k = len(centres)
        labels[mask] = k
        nuc_labels[nmask & mask] = k
        cyto[mask] = rng.uniform(0.5, 0.9)
        nuc[nmask & mask] = 1.0

    def boxes(lab: np.ndarray) -> list[list[float]]:
        return [[float(sl[1].start), float(sl[0].start), float(sl[1].stop), float(sl[0].stop)]
                for sl in find_objects(lab) if sl is not None]  # fmt: skip

    green = _blur(cyto, 0.8)
    blue = _blur(nuc, 0.8)
    img = np.stack([0.05 * green, green, 0.3 * green + blue], axis=-1)
    img = rng.poisson(img * 200) / 200 + rng.normal(0, 0.02, img.shape)
    return (np.clip(img, 0, 1) * 255).astype(np.uint8), boxes(labels), boxes(nuc_labels)


def _coloc(rng: np.random.Generator, target_r: float) -> np.ndarray:
    """Two-channel speckle image whose red/green Pearson correlation is about ``target_r``."""
    a = _blur(rng.standard_normal((SIZE, SIZE)), 2.0)
    b = _blur(rng.standard_normal((SIZE, SIZE)), 2.0)
    a, b = (a - a.mean()) / a.std(), (b - b.mean()) / b.std()
    green = target_r * a + np.sqrt(1 - target_r**2) * b
    red, green = np.clip(0.5 + 0.18 * a, 0, 1), np.clip(0.5 + 0.18 * green, 0, 1)
    return (np.stack([red, green, np.zeros_like(red)], axis=-1) * 255).astype(np.uint8)


def _figure(rng: np.random.Generator, labels: list[str], values: list[float]) -> np.ndarray:
    """A two-panel figure: (A) a cell image, (B) a bar chart of ``values``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_a, ax_b) = plt.subplots(1, 2, figsize=(4.0, 2.0), dpi=64)
    ax_a.imshow(_cell(rng, irregular=False, elongated=False, coarse=False))
    ax_a.set_title("A", loc="left", fontsize=9)
    ax_a.axis("off")
    ax_b.bar(labels, values, color=["#4c72b0", "#dd8452", "#55a868", "#c44e52"][: len(values)])
    for i, v in enumerate(values):
        ax_b.text(i, v, f"{v:.0f}", ha="center", va="bottom", fontsize=7)
    ax_b.set_title("B", loc="left", fontsize=9)
    ax_b.set_ylim(0, max(values) * 1.25)
    ax_b.tick_params(labelsize=7)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    buf.seek(0)
    return np.asarray(Image.open(buf).convert("RGB"))


def _skimage_crops(rng: np.random.Generator, name: str, n: int) -> list[np.ndarray]:
    from skimage import data

    base = getattr(data, name)()
    if base.ndim == 2:
        base = np.stack([base] * 3, axis=-1)
    out = []
    for _ in range(n):
        h, w = base.shape[:2]
        s = int(min(h, w) * rng.uniform(0.55, 0.8))
        y, x = rng.integers(0, h - s + 1), rng.integers(0, w - s + 1)
        crop = base[y : y + s, x : x + s]
        if rng.random() < 0.5:
            crop = crop[:, ::-1]
        img = Image.fromarray(np.ascontiguousarray(crop)).resize((SIZE, SIZE), Image.Resampling.BILINEAR)
        out.append(np.asarray(img))
    return out


# Question building ---------------------------------------------------------------------------------


def _options(rng: np.random.Generator, correct: str, others: list[str]) -> tuple[list[str], int]:
    """Shuffle ``[correct, *others]``, keep "none of the above" last (as μ-Bench does)."""
    opts = [correct, *others]
    order = list(rng.permutation(len(opts)))
    shuffled = [opts[i] for i in order] + [NONE]
    return shuffled, shuffled.index(correct)


_COGNITION_QUESTION = (
    "Considering both the outline and the overall shape of this cell, which description fits it?"
)
_COGNITION_DISTRACTORS = ("a dividing cell with two separate nuclei", "a cell without a nucleus")


def _cognition_rows(rng: np.random.Generator, save: Callable[[np.ndarray, str], str]) -> list[dict[str, Any]]:
    """Six μ-Bench-Cognition-format questions; item ``k`` has its answer at option ``k`` (A–F)."""
    rows = []
    for k in range(6):
        irregular, elongated = bool(rng.random() < 0.5), bool(rng.random() < 0.5)
        img = _cell(rng, irregular=irregular, elongated=elongated, coarse=bool(rng.random() < 0.5))
        name = save(img, f"test-cognition-{k:03d}")
        combos = [f"{c} contour, {s} shape" for c in ("smooth", "irregular") for s in ("round", "elongated")]
        true = combos[2 * irregular + elongated]
        wrong = [c for c in combos if c != true] + list(_COGNITION_DISTRACTORS)
        picked = [wrong[i] for i in rng.permutation(len(wrong))]
        if k < 5:  # the true description at position k, four distractors around it
            choices = [*picked[:4]]
            choices.insert(k, true)
        else:  # the true description is absent: "none of the above" (F) is correct
            choices = picked[:5]
        choices.append(NONE)
        rows.append(
            {
                "id": f"test-cognition-{k:03d}",
                "question": _COGNITION_QUESTION,
                "choices": choices,
                "answer": k,
                "image": name,
                "task": "cognition",
                "subset": "cognition",
                "split": "test",
                # μ-Bench App. D: a cognition caption is the question followed by the option.
                "captions": [f"{_COGNITION_QUESTION} {c}" for c in choices],
                "cell": {"irregular": irregular, "elongated": elongated},
                "synthetic_stand_in": "mu-Bench cognition (not public)",
            }
        )
    return rows


_SHAPE_TASKS: dict[str, tuple[str, str, str, str]] = {
    # task: (question, class False, class True, cell keyword)
    "contour": (
        "What best describes the contour of the cell?",
        "smooth contours",
        "irregular contours",
        "irregular",
    ),
    "eccentricity": (
        "What best describes the shape of the cell?",
        "round shape",
        "elongated shape",
        "elongated",
    ),
    "texture": (
        "What best describes the texture of the cytoplasm?",
        "fine texture",
        "coarse texture",
        "coarse",
    ),
}


def _shape_rows(
    rng: np.random.Generator, n_per_class: int, split: str, save: Callable[[np.ndarray, str], str]
) -> list[dict[str, Any]]:
    rows = []
    for task, (question, cls0, cls1, key) in _SHAPE_TASKS.items():
        for k in range(2 * n_per_class):
            positive = k % 2 == 1
            kwargs = {"irregular": False, "elongated": False, "coarse": False}
            kwargs[key] = positive
            # Nuisance factors vary at random so only the asked-about property predicts the answer.
            for other in kwargs:
                if other != key:
                    kwargs[other] = bool(rng.random() < 0.5)
            img = _cell(rng, **kwargs)
            name = save(img, f"{split}-{task}-{k:03d}")
            correct = cls1 if positive else cls0
            choices, answer = _options(rng, correct, [cls0 if positive else cls1])
            rows.append(
                {
                    "id": f"{split}-{task}-{k:03d}",
                    "question": question,
                    "choices": choices,
                    "answer": answer,
                    "image": name,
                    "task": task,
                    "subset": "synthetic-cells",
                    "split": split,
                    "label": correct,
                    "modality": "fluorescence microscopy",
                    "domain": "cell biology",
                }
            )
    return rows


def generate_demo(
    out_dir: Path | None = None, *, seed: int = 0, n_per_class: int = 6, force: bool = False
) -> Path:
    """Generate the demo benchmark (or reuse an identical earlier generation).

    Safe when several processes generate the same folder at once (parallel test workers, two
    demos): each writes a temporary folder, the first to finish puts it in place, and the others
    keep that identical copy instead of deleting it under a reader.

    Args:
        out_dir: Target folder (default :func:`default_cache_dir`).
        seed: Seed of every random choice.
        n_per_class: Test items per class of each cell-shape task (training: 5×).
        force: Regenerate even if the folder holds this version and seed.

    Returns:
        The folder holding ``data.jsonl``, ``train.jsonl``, ``detection.jsonl``, ``images/`` and
        ``manifest.json``.
    """
    target = Path(out_dir) if out_dir is not None else default_cache_dir(seed)
    manifest_path = target / "manifest.json"
    if target.exists() and not manifest_path.is_file() and (not target.is_dir() or any(target.iterdir())):
        # Regenerating replaces the folder wholesale: never do that to one the demo did not write.
        raise DataFormatError(
            f"{target} exists and is not a demo folder (no manifest.json); the demo replaces the "
            "folder it generates into, so give an empty or new folder (or leave --data out)"
        )
    if not force and _is_current(target, seed, n_per_class):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".demo-", dir=target.parent))
    try:
        _write_demo(tmp, seed, n_per_class)
        _put_in_place(tmp, target, replace=force or not _is_current(target, seed, n_per_class))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    log.info("demo benchmark written to %s", target)
    return target


def _is_current(target: Path, seed: int, n_per_class: int) -> bool:
    """Whether ``target`` holds a complete demo of this version, seed and size."""
    try:
        manifest = json.loads((target / "manifest.json").read_text())
    except (OSError, ValueError):
        return False
    wanted = {"version": DEMO_VERSION, "seed": seed, "n_per_class": n_per_class}
    return all(manifest.get(k) == v for k, v in wanted.items())


def _put_in_place(tmp: Path, target: Path, *, replace: bool) -> None:
    """Rename the finished ``tmp`` to ``target``; keep a complete copy another process put first."""
    if target.exists():
        if not replace:
            return
        shutil.rmtree(target, ignore_errors=True)
    try:
        tmp.rename(target)
    except OSError:
        # Another generator renamed its folder there between our check and our rename; the
        # manifest (written last, before its rename) says it is complete.
        if not (target / "manifest.json").is_file():
            raise


#: Saves one generated image under ``images/`` of the folder being written; returns its path there.
SaveImage = Callable[[np.ndarray, str], str]


def _write_demo(tmp: Path, seed: int, n_per_class: int) -> None:
    """Write every image, the three JSONL files and ``manifest.json`` (last) into ``tmp``."""
    (tmp / "images").mkdir()
    rng = np.random.default_rng(seed)

    def save(img: np.ndarray, stem: str) -> str:
        rel = f"images/{stem}.png"
        Image.fromarray(img).save(tmp / rel, optimize=False)
        return rel

    # The order of the draws from ``rng`` is the data: each helper continues the same stream.
    rows = _shape_rows(rng, n_per_class, "test", save)
    rows += _coloc_rows(rng, n_per_class, save)
    rows += _figure_rows(rng, n_per_class, save)
    rows += _coarse_rows(rng, n_per_class, save)
    # Cognition draws from its own stream too, so the rows above are unchanged by it.
    rows += _cognition_rows(np.random.default_rng([seed, 4]), save)
    train = _shape_rows(rng, 5 * n_per_class, "train", save)
    # Detection fields draw from their own stream, so the test and train data above are the
    # same as before this split existed.
    detection = _detection_rows(np.random.default_rng([seed, 3]), n_per_class, save)
    for name, data in (("data.jsonl", rows), ("train.jsonl", train), ("detection.jsonl", detection)):
        (tmp / name).write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in data), encoding="utf-8")
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["task"]] = counts.get(r["task"], 0) + 1
    manifest = {
        "version": DEMO_VERSION,
        "seed": seed,
        "n_per_class": n_per_class,
        "items": len(rows),
        "train_items": len(train),
        "detection_items": len(detection),
        "tasks": counts,
        "data_sha256": hashlib.sha256((tmp / "data.jsonl").read_bytes()).hexdigest(),
    }
    (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True))


def _coloc_rows(rng: np.random.Generator, n_per_class: int, save: SaveImage) -> list[dict[str, Any]]:
    """The colocalization questions (two-channel images at three target correlations)."""
    rows: list[dict[str, Any]] = []
    for k in range(3 * n_per_class):
        level = ["no colocalization", "partial colocalization", "strong colocalization"][k % 3]
        r_target = [0.0, 0.5, 0.9][k % 3]
        name = save(_coloc(rng, r_target), f"test-coloc-{k:03d}")
        choices, answer = _options(
            rng,
            level,
            [
                c
                for c in ("no colocalization", "partial colocalization", "strong colocalization")
                if c != level
            ],
        )
        rows.append(
            {
                "id": f"test-coloc-{k:03d}",
                "question": "How strongly do the red and green channels colocalize?",
                "choices": choices,
                "answer": answer,
                "image": name,
                "task": "colocalization",
                "subset": "colocalization",
                "split": "test",
                "target_pearson_r": r_target,
                "modality": "fluorescence microscopy",
            }
        )
    return rows


def _figure_rows(rng: np.random.Generator, n_per_class: int, save: SaveImage) -> list[dict[str, Any]]:
    """The bar-chart questions: the highest condition, and one bar's value."""
    rows: list[dict[str, Any]] = []
    conditions = ["ctrl", "drugA", "drugB", "drugC"]
    for k in range(2 * n_per_class):
        values = [float(v) for v in rng.choice(np.arange(10, 100, 5), size=4, replace=False)]
        name = save(_figure(rng, conditions, values), f"test-figure-{k:03d}")
        best = conditions[int(np.argmax(values))]
        choices, answer = _options(rng, best, [c for c in conditions if c != best][:3])
        rows.append(
            {
                "id": f"test-barmax-{k:03d}",
                "question": "In panel B, which condition has the highest value?",
                "choices": choices,
                "answer": answer,
                "image": name,
                "task": "bar_max",
                "subset": "figures",
                "split": "test",
                "bar_values": dict(zip(conditions, values, strict=True)),
            }
        )
        j = int(rng.integers(4))
        true = f"{values[j]:.0f}"
        wrong = [
            f"{v:.0f}" for v in sorted({values[j] + d for d in (-20, -10, 10, 20)} - {values[j]}) if v > 0
        ][:3]
        choices, answer = _options(rng, true, wrong)
        rows.append(
            {
                "id": f"test-barval-{k:03d}",
                "question": f"In panel B, what is the value of {conditions[j]}?",
                "choices": choices,
                "answer": answer,
                "image": name,
                "task": "bar_value",
                "subset": "figures",
                "split": "test",
                "bar_values": dict(zip(conditions, values, strict=True)),
            }
        )
    return rows


def _coarse_rows(rng: np.random.Generator, n_per_class: int, save: SaveImage) -> list[dict[str, Any]]:
    """The coarse questions: imaging modality and stain of real and synthetic micrographs."""
    rows: list[dict[str, Any]] = []
    modality_opts = ["light microscopy", "fluorescence microscopy", "electron microscopy"]
    stain_opts = ["H&E", "DAB / immunohistochemistry", "Giemsa", "fluorescent dyes (DAPI + GFP)"]
    # Half the coarse questions are about scikit-image's light micrographs, half about synthetic
    # fluorescence cells, so neither answer is a frequency shortcut.
    sources: list[tuple[str, str, str | None, list[np.ndarray]]] = [
        ("cell", "light microscopy", None, _skimage_crops(rng, "cell", n_per_class)),
        ("immunohistochemistry", "light microscopy", "DAB / immunohistochemistry",
         _skimage_crops(rng, "immunohistochemistry", n_per_class)),
        ("fluorescence", "fluorescence microscopy", "fluorescent dyes (DAPI + GFP)",
         [_cell(rng, irregular=bool(rng.random() < 0.5), elongated=bool(rng.random() < 0.5),
                coarse=bool(rng.random() < 0.5)) for _ in range(2 * n_per_class)]),
    ]  # fmt: skip
    for src, modality, stain, images in sources:
        for k, img in enumerate(images):
            name = save(img, f"test-{src}-{k:03d}")
            origin = f"skimage.data.{src}" if src != "fluorescence" else "synthetic"
            choices, answer = _options(rng, modality, [m for m in modality_opts if m != modality])
            rows.append(
                {
                    "id": f"test-{src}-modality-{k:03d}",
                    "question": "Which imaging modality was used to acquire this image?",
                    "choices": choices,
                    "answer": answer,
                    "image": name,
                    "task": "modality",
                    "subset": "coarse",
                    "split": "test",
                    "captions": [
                        f"A micrograph acquired through {c}." if c != NONE else NONE for c in choices
                    ],
                    "source_image": origin,
                }
            )
            if stain is not None and k < n_per_class:
                choices, answer = _options(rng, stain, [s for s in stain_opts if s != stain])
                rows.append(
                    {
                        "id": f"test-{src}-stain-{k:03d}",
                        "question": "Which stain was used?",
                        "choices": choices,
                        "answer": answer,
                        "image": name,
                        "task": "stain",
                        "subset": "coarse",
                        "split": "test",
                        "captions": [
                            f"A micrograph of a sample stained with {c}." if c != NONE else NONE
                            for c in choices
                        ],
                        "source_image": origin,
                    }
                )
    return rows


def _detection_rows(rng: np.random.Generator, n_per_class: int, save: SaveImage) -> list[dict[str, Any]]:
    """The detection items: every cell (easy) and every nucleus (hard) of synthetic fields."""
    detection: list[dict[str, Any]] = []
    for k in range(2 * n_per_class):
        img, cell_boxes, nuc_boxes = _cell_field(rng, int(rng.integers(2, 6)))
        name = save(img, f"detection-{k:03d}")
        for cls, bxs, split in (("cell", cell_boxes, "easy"), ("nucleus", nuc_boxes, "hard")):
            detection.append(
                {
                    "id": f"detection-{cls}-{k:03d}",
                    "question": f"Locate every {cls} in the image.",
                    "image": name,
                    "boxes": [dict(zip(("x1", "y1", "x2", "y2"), b, strict=True)) for b in bxs],
                    "class_name": cls,
                    "task": "detection",
                    "subset": f"detection-{cls}",
                    "split": "detection",
                    "grit_split": split,
                    "modality": "fluorescence microscopy",
                }
            )
    return detection


@register_benchmark("demo")
class DemoBenchmark(Benchmark):
    """The offline synthetic demo benchmark (generated on first use)."""

    title = "Offline synthetic microscopy demo"
    splits = ("test", "train", "detection")
    tasks = (
        "contour",
        "eccentricity",
        "texture",
        "colocalization",
        "bar_max",
        "bar_value",
        "modality",
        "stain",
        "cognition",
        "detection",
    )
    default_split = "test"
    data_help = (
        "Nothing to download: generated offline (seed 0) into the cache on first use, or by "
        "`scopebench demo`; --data may name a folder it generated."
    )

    def load(self, data: str | Path, split: str | None = None) -> LoadedBenchmark:
        """Load (generating first if needed) the demo's test, train or detection split."""
        chosen = self.check_split(split)
        folder = Path(data) if data else generate_demo()
        if data and not (folder / "manifest.json").is_file():
            folder = generate_demo(folder)
        name = {"train": "train.jsonl", "detection": "detection.jsonl"}.get(chosen or "test", "data.jsonl")
        return LocalBenchmark().load_file(folder / name, "demo", chosen)

"""μ-Bench-shaped synthetic data shared by the bench scripts.

N unique images, one question per coarse task (5 per image, as μ-Bench asks about each image), 4
templated caption options per task: the captions repeat across every image, as in μ-Bench. Written
in the ``local`` benchmark format.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from PIL import Image

TASKS = {
    "modality": ["light microscopy", "fluorescence microscopy", "electron microscopy", "none of the above"],
    "submodality": ["brightfield", "phase contrast", "confocal", "none of the above"],
    "domain": ["pathology", "cell biology", "neuroscience", "none of the above"],
    "subdomain": ["hematopathology", "cytology", "histology", "none of the above"],
    "stain": ["H&E", "Giemsa", "DAPI", "none of the above"],
}


def make_data(root: Path, n_images: int, *, size: tuple[int, int] = (256, 320), jpeg: bool = False) -> Path:
    """Write ``n_images`` random images and a ``data.jsonl`` with 5 questions each; returns its path.

    PNGs of full random noise by default (the contrastive bench: decoding cost like a real image);
    ``jpeg=True`` writes small smooth JPEGs (the memory bench: thousands of files, little disk).
    """
    rng = np.random.default_rng(0)
    (root / "images").mkdir(parents=True, exist_ok=True)
    rows = []
    h, w = size
    for i in range(n_images):
        if jpeg:
            name = f"images/{i:05d}.jpg"
            small = rng.integers(0, 255, (14, 14, 3), dtype=np.uint8)
            Image.fromarray(small).resize((w, h), Image.Resampling.BILINEAR).save(root / name, quality=85)
        else:
            name = f"images/{i:05d}.png"
            Image.fromarray(rng.integers(0, 255, (h, w, 3), dtype=np.uint8)).save(root / name)
        for task, opts in TASKS.items():
            rows.append({"id": f"{i:05d}-{task}", "question": f"What is the {task}?", "choices": opts,
                         "answer": int(rng.integers(4)), "image": name, "task": task,
                         "captions": [f"A micrograph showing {o}." for o in opts]})  # fmt: skip
    (root / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root / "data.jsonl"

"""The offline demo benchmark: deterministic, counted, and its classes really separable."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from scopebench.benchmarks import get_benchmark
from scopebench.benchmarks.demo import DEMO_VERSION, default_cache_dir, generate_demo


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generate_demo(tmp_path_factory.mktemp("demo") / "d", seed=0, n_per_class=4)


def test_counts_and_answers(demo_dir: Path) -> None:
    manifest = json.loads((demo_dir / "manifest.json").read_text())
    assert manifest["tasks"] == {
        "contour": 8, "eccentricity": 8, "texture": 8, "colocalization": 12,
        "bar_max": 8, "bar_value": 8, "modality": 16, "stain": 8, "cognition": 6,
    }  # fmt: skip
    assert manifest["items"] == 82 and manifest["train_items"] == 120 and manifest["version"] == DEMO_VERSION
    loaded = get_benchmark("demo").load(str(demo_dir))
    assert len(loaded.items) == 82 and loaded.problems == []
    for it in loaded.items:
        assert it.answer_index is not None and 0 <= it.answer_index < len(it.choices)
        assert it.choices[-1] == "none of the above"  # kept last, as in μ-Bench
        assert it.images[0].exists()
    train = get_benchmark("demo").load(str(demo_dir), split="train")
    assert len(train.items) == 120 and {it.split for it in train.items} == {"train"}
    coarse = [it for it in loaded.items if it.task in {"modality", "stain"}]
    assert all(it.captions is not None and len(it.captions) == len(it.choices) for it in coarse)
    # No frequency shortcut: the two modalities are equally often correct.
    answers = [it.choices[it.answer_index or 0] for it in loaded.items if it.task == "modality"]
    assert answers.count("light microscopy") == answers.count("fluorescence microscopy") == 8


def test_deterministic_for_a_seed(tmp_path: Path, demo_dir: Path) -> None:
    again = generate_demo(tmp_path / "again", seed=0, n_per_class=4)
    other = generate_demo(tmp_path / "other", seed=1, n_per_class=4)
    assert (again / "data.jsonl").read_bytes() == (demo_dir / "data.jsonl").read_bytes()
    name = "images/test-texture-003.png"
    assert (again / name).read_bytes() == (demo_dir / name).read_bytes()
    assert (other / name).read_bytes() != (demo_dir / name).read_bytes()


def test_reuse_and_force(tmp_path: Path) -> None:
    d = generate_demo(tmp_path / "d", seed=0, n_per_class=1)
    marker = d / "images" / "marker"
    marker.write_text("x")
    assert generate_demo(tmp_path / "d", seed=0, n_per_class=1) == d and marker.exists()  # reused
    generate_demo(tmp_path / "d", seed=0, n_per_class=1, force=True)
    assert not marker.exists()  # regenerated atomically
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".demo-")]  # no temp folder left


def test_default_cache_dir_honours_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SCOPEBENCH_CACHE", str(tmp_path))
    assert default_cache_dir(3) == tmp_path / "demo" / f"v{DEMO_VERSION}-seed3"


def _rows(demo_dir: Path, task: str) -> list[dict]:  # type: ignore[type-arg]
    rows = [json.loads(x) for x in (demo_dir / "train.jsonl").read_text().splitlines()]
    return [r for r in rows if r["task"] == task]


def _mask(path: Path) -> np.ndarray:
    g = np.asarray(Image.open(path))[..., 1].astype(float)
    return g > 0.25 * g.max()


def test_eccentricity_classes_separate(demo_dir: Path) -> None:
    from skimage.measure import label, regionprops

    ecc = {"round shape": [], "elongated shape": []}  # type: ignore[var-annotated]
    for r in _rows(demo_dir, "eccentricity"):
        props = max(regionprops(label(_mask(demo_dir / r["image"]))), key=lambda p: p.area)
        ecc[r["label"]].append(props.eccentricity)
    assert np.mean(ecc["elongated shape"]) > np.mean(ecc["round shape"]) + 0.3


def test_contour_classes_separate(demo_dir: Path) -> None:
    from skimage.measure import label, regionprops

    solidity = {"smooth contours": [], "irregular contours": []}  # type: ignore[var-annotated]
    for r in _rows(demo_dir, "contour"):
        props = max(regionprops(label(_mask(demo_dir / r["image"]))), key=lambda p: p.area)
        solidity[r["label"]].append(props.solidity)
    assert np.mean(solidity["smooth contours"]) > np.mean(solidity["irregular contours"]) + 0.05


def test_colocalization_pearson_bands(demo_dir: Path) -> None:
    rows = [json.loads(x) for x in (demo_dir / "data.jsonl").read_text().splitlines()]
    for r in (r for r in rows if r["task"] == "colocalization"):
        img = np.asarray(Image.open(demo_dir / r["image"])).astype(float)
        pearson = np.corrcoef(img[..., 0].ravel(), img[..., 1].ravel())[0, 1]
        assert abs(pearson - r["target_pearson_r"]) < 0.15, (r["id"], pearson)


def test_bar_answers_match_recorded_values(demo_dir: Path) -> None:
    rows = [json.loads(x) for x in (demo_dir / "data.jsonl").read_text().splitlines()]
    for r in rows:
        if r["task"] == "bar_max":
            vals = r["bar_values"]
            assert r["choices"][r["answer"]] == max(vals, key=vals.get)
        if r["task"] == "bar_value":
            cond = r["question"].rsplit(" of ", 1)[1].rstrip("?")
            assert r["choices"][r["answer"]] == f"{r['bar_values'][cond]:.0f}"


def test_detection_split_boxes_are_the_objects(demo_dir: Path) -> None:
    manifest = json.loads((demo_dir / "manifest.json").read_text())
    det = get_benchmark("demo").load(str(demo_dir), split="detection")
    assert manifest["detection_items"] == len(det.items) == 16 and det.problems == []
    assert {it.kind for it in det.items} == {"detection"}
    by_class = {c: [it for it in det.items if it.metadata["class_name"] == c] for c in ("cell", "nucleus")}
    assert len(by_class["cell"]) == len(by_class["nucleus"]) == 8
    assert {it.metadata["grit_split"] for it in by_class["cell"]} == {"easy"}
    for cell, nuc in zip(by_class["cell"], by_class["nucleus"], strict=True):
        assert 2 <= len(cell.targets) <= 5 and len(nuc.targets) == len(cell.targets)
        img = np.asarray(Image.open(cell.images[0].path))
        for c, n in zip(cell.targets, nuc.targets, strict=True):
            assert c.x1 <= n.x1 < n.x2 <= c.x2 and c.y1 <= n.y1 < n.y2 <= c.y2  # nucleus inside its cell
            inside = img[int(c.y1) : int(c.y2), int(c.x1) : int(c.x2), 1].mean()
            assert inside > 3 * img[..., 1].mean() / 2  # the box holds a bright cell, not background
    # The test and train data do not depend on the detection split.
    assert manifest["items"] == 82 and manifest["train_items"] == 120


def test_never_replaces_a_folder_it_did_not_write(tmp_path: Path) -> None:
    from scopebench.errors import DataFormatError

    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "notes.txt").write_text("precious")
    with pytest.raises(DataFormatError, match="not a demo folder"):
        generate_demo(victim, seed=0, n_per_class=1)
    with pytest.raises(DataFormatError, match="not a demo folder"):
        get_benchmark("demo").load(str(victim))
    assert (victim / "notes.txt").read_text() == "precious" and sorted(p.name for p in victim.iterdir()) == [
        "notes.txt"
    ]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert (
        generate_demo(empty, seed=0, n_per_class=1) / "manifest.json"
    ).is_file()  # an empty folder is fine


def test_cognition_stand_in_has_mu_bench_cognition_format(demo_dir: Path) -> None:
    loaded = get_benchmark("demo").load(str(demo_dir))
    cog = [it for it in loaded.items if it.task == "cognition"]
    # Six options, "none of the above" last, the answer once at each of A–F (μ-Bench §3).
    assert [it.answer_index for it in cog] == [0, 1, 2, 3, 4, 5]
    assert all(len(it.choices) == 6 and it.choices[-1] == "none of the above" for it in cog)
    for it in cog:
        cell = it.metadata["cell"]
        true = f"{'irregular' if cell['irregular'] else 'smooth'} contour, " + (
            "elongated shape" if cell["elongated"] else "round shape"
        )
        # The generated cell's own description is the answer, or absent when F is correct.
        assert (it.answer_text == true) if it.answer_index < 5 else (true not in it.choices)
        assert it.captions is not None and it.captions[it.answer_index] == f"{it.question} {it.answer_text}"
    # The other tasks keep their counts (the stand-in draws from its own random stream).
    assert sum(1 for it in loaded.items if it.task != "cognition") == 76

"""The linear-probe baseline: handcrafted features on the demo, CLIP vision tower, Optuna, accounting."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from helpers import FIXTURES
from scopebench.benchmarks import get_benchmark
from scopebench.benchmarks.demo import generate_demo
from scopebench.cli import main
from scopebench.errors import DataFormatError, MissingDependencyError, ModelSpecError
from scopebench.experiments import linear_probe as LP
from scopebench.items import ImageRef, Item
from scopebench.models import parse_spec

# One worker: the demo benchmark and the probe on it (module fixtures, ~10 s) are built once.
pytestmark = pytest.mark.xdist_group("linear_probe")


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # The demo's own size (6 test / 30 train items per class and cell-shape task).
    return generate_demo(tmp_path_factory.mktemp("demo") / "d", seed=0)


@pytest.fixture(scope="module")
def demo_result(demo: Path) -> LP.ProbeResult:
    b = get_benchmark("demo")
    return LP.run_linear_probe(b.load(str(demo), "train").items, b.load(str(demo), "test").items, seed=0)


def _blob(path: Path, rng: np.random.Generator, ratio: float) -> ImageRef:
    """A bright ellipse (axis ratio ``ratio``) at a random angle on a dark noisy background."""
    from skimage.draw import ellipse

    img = rng.normal(0.05, 0.02, (64, 64))
    r = rng.uniform(12, 16)
    rr, cc = ellipse(32, 32, r, r / ratio, shape=img.shape, rotation=rng.uniform(0, np.pi))
    img[rr, cc] += 0.8
    Image.fromarray((np.clip(img, 0, 1) * 255).astype(np.uint8)).convert("RGB").save(path)
    return ImageRef(key=path.name, path=path)


def _item(i: str, ref: ImageRef | None, label: str, task: str = "shape") -> Item:
    choices = ("round", "elongated")
    return Item(id=i, benchmark="t", split="test", task=task, question="Shape?", choices=choices,
                answer_index=choices.index(label), images=(ref,) if ref else ())  # fmt: skip


def test_handcrafted_features_are_deterministic_and_measure_shape(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    disc, long = _blob(tmp_path / "d.png", rng, 1.0), _blob(tmp_path / "e.png", rng, 3.0)
    names = LP.HANDCRAFTED_FEATURES
    assert len(names) == 3 * 16 + 6 + 6 * 4 + 10 + 18 + 6 == 112 and len(set(names)) == 112
    fd = LP.handcrafted_features(disc.load())
    assert fd.shape == (112,) and np.array_equal(fd, LP.handcrafted_features(disc.load()))
    fe = LP.handcrafted_features(long.load())
    ecc = names.index("shape_eccentricity")
    assert fd[ecc] < 0.3 and fe[ecc] > 0.9  # a 3:1 ellipse has eccentricity sqrt(1 - 1/9) = 0.943
    circ = names.index("shape_perimeter2_over_4pi_area")
    assert 0.8 < fd[circ] < 1.2 < fe[circ]
    for c in "rgb":  # each channel's histogram is a distribution
        assert sum(fd[names.index(f"hist_{c}_{b}")] for b in range(16)) == pytest.approx(1.0)
    flat = LP.handcrafted_features(Image.new("RGB", (20, 20), (9, 9, 9)))
    assert np.isfinite(flat).all() and not flat[-6:].any()  # constant image: no foreground, no NaN


def test_probe_beats_chance_on_the_demo_cell_shape_tasks(demo_result: LP.ProbeResult) -> None:
    by = {t.task: t for t in demo_result.tasks}
    for task in ("contour", "eccentricity", "texture"):
        t = by[task]
        assert t.status == "evaluated" and t.n_train == 60 and t.n_test == 12 and t.chance == 0.5
        assert t.n_errors == 0 and t.n_unseen_label == 0 and 2 <= (t.pca_components or 0) < 112
    # Measured: contour 12/12, eccentricity 11/12, texture 12/12 (chance: 50 % balanced accuracy).
    assert by["contour"].balanced_accuracy >= 0.9 and by["eccentricity"].balanced_accuracy >= 0.8
    assert by["contour"].macro_f1 >= 0.9 and by["texture"].balanced_accuracy >= 0.8
    # Tasks without training data are reported, with their item counts, not dropped.
    untrained = {t.task: t.n_test for t in demo_result.tasks if t.status == "no_training_data"}
    assert untrained == {"bar_max": 12, "bar_value": 12, "colocalization": 18, "modality": 24, "stain": 12,
                         "cognition": 6}  # fmt: skip
    assert demo_result.skipped == {"no_training_data": 84} and len(demo_result.predictions) == 120
    o = demo_result.overall
    assert (
        o["n"] == 36 and o["accuracy"] == o["correct"] / 36 and o["ci_low"] <= o["accuracy"] <= o["ci_high"]
    )


def test_probe_is_deterministic_for_a_seed(demo: Path, demo_result: LP.ProbeResult) -> None:
    b = get_benchmark("demo")
    train = [it for it in b.load(str(demo), "train").items if it.task == "eccentricity"]
    test = [it for it in b.load(str(demo), "test").items if it.task == "eccentricity"]
    again = LP.run_linear_probe(train, test, seed=0)
    (row,) = again.tasks
    assert row == next(t for t in demo_result.tasks if t.task == "eccentricity")
    first = [p for p in demo_result.predictions if p["task"] == "eccentricity"]
    assert again.predictions == first


def test_metrics_and_accounting_by_hand(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    train = [_item(f"tr{k}", _blob(tmp_path / f"tr{k}.png", rng, 1.0 if k % 2 else 3.0),
                   "round" if k % 2 else "elongated") for k in range(20)]  # fmt: skip
    train.append(_item("lonely", _blob(tmp_path / "l.png", rng, 1.0), "round", task="one-class"))
    test = [_item(f"te{k}", _blob(tmp_path / f"te{k}.png", rng, 1.0 if k % 2 else 3.0),
                  "round" if k % 2 else "elongated") for k in range(4)]  # fmt: skip
    test.append(_item("noimg", None, "round"))  # no image: an error, counted as wrong
    test.append(_item("other", _blob(tmp_path / "o.png", rng, 1.0), "round", task="unknown"))
    test.append(_item("solo", _blob(tmp_path / "s.png", rng, 1.0), "elongated", task="one-class"))
    test.append(
        Item(id="det", benchmark="t", split="test", task="shape", question="Detect", kind="detection")
    )
    res = LP.run_linear_probe(train, test, seed=0)
    t = {r.task: r for r in res.tasks}
    shape = t["shape"]
    assert (shape.n_test, shape.correct, shape.n_errors, shape.n_train) == (5, 4, 1, 20)
    assert shape.accuracy == pytest.approx(4 / 5)
    # recall: round 2/3 (one missed for lack of an image), elongated 2/2
    assert shape.balanced_accuracy == pytest.approx((2 / 3 + 1) / 2)
    # F1: round P=1, R=2/3 → 0.8; elongated 1.0
    assert shape.macro_f1 == pytest.approx(0.9)
    assert t["unknown"].status == "no_training_data" and t["one-class"].status == "single_class_training"
    assert res.skipped == {"detection": 1, "no_training_data": 1, "single_class_training": 1}
    status = {p["item_id"]: p["status"] for p in res.predictions}
    assert status["noimg"] == "error" and status["det"] == "detection" and status["te0"] == "ok"
    assert len(res.predictions) == len(test)
    with pytest.raises(DataFormatError, match="no multiple-choice item"):
        LP.run_linear_probe([], test)


def test_clip_vision_tower_features(demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip(
        "transformers", reason="the CLIP feature path needs transformers (extra scopebench[hf])"
    )
    from scopebench.testing.tiny import build_tiny_clip

    folder = build_tiny_clip(tmp_path / "clip", kind="clip", seed=0)
    b = get_benchmark("demo")
    train = [it for it in b.load(str(demo), "train").items if it.task == "eccentricity"][:16]
    test = [it for it in b.load(str(demo), "test").items if it.task == "eccentricity"]
    feats = LP.extract_features(f"clip:{folder}", [it.images[0] for it in test], device="cpu")
    assert feats.matrix.shape == (12, 16) and feats.ok.all()  # tiny CLIP projection dim 16
    assert np.allclose(np.linalg.norm(feats.matrix, axis=1), 1.0, atol=1e-3)  # L2-normalised embeddings
    assert feats.identity["model_identity"]["spec"] == f"clip:{folder}"
    res = LP.run_linear_probe(train, test, f"clip:{folder}", seed=0, device="cpu")
    (row,) = res.tasks
    assert row.status == "evaluated" and row.n_train == 16 and row.n_test == 12
    assert 0.0 <= row.balanced_accuracy <= 1.0 and res.config["features"]["features"] == f"clip:{folder}"
    with pytest.raises(Exception, match="not a contrastive model"):
        LP.extract_features("random", [])
    # The spec is resolved like --model (scopebench.models.parse_spec): a bare model folder works,
    # and so does a folder under the home directory written with ~.
    assert LP.check_features(str(folder)) == parse_spec(str(folder))
    monkeypatch.setenv("HOME", str(tmp_path))
    home = LP.check_features("~/clip")
    assert home is not None and (home.scheme, home.target) == ("clip", str(folder))
    calls: list[str] = []
    real_parse = LP.parse_spec  # the module's own import of scopebench.models.parse_spec
    monkeypatch.setattr(LP, "parse_spec", lambda spec: (calls.append(spec), real_parse(spec))[1])
    LP.check_features(f"clip:{folder}")
    assert calls == [f"clip:{folder}"]


def test_feature_values_are_named_for_a_bad_features_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for bad in ("bogus", "random", "replay:answers.jsonl", "embed:default", "qwen2-vl-7b"):
        with pytest.raises(ModelSpecError) as info:
            LP.check_features(bad)
        msg = str(info.value)
        assert msg.startswith(f"--features {bad!r}")
        assert "valid values: handcrafted, dinov2:<folder or hub id>, vision:<folder or hub id>, " in msg
        assert "clip:<folder or hub id>, openclip:<model>" in msg
        assert "frequent" not in msg and "nsp:" not in msg  # not the list of every model scheme
    with pytest.raises(ModelSpecError, match="needs an argument after 'clip:'"):
        LP.check_features("clip:")
    LP.check_features("handcrafted")
    LP.check_features("clip:openai/clip-vit-base-patch32")  # checked without loading anything
    out = tmp_path / "lp"
    assert main(["linear-probe", "--bench", "demo", "--features", "bogus", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--features 'bogus' is not a feature set; valid values: handcrafted" in err
    assert "random" not in err and "replay" not in err
    assert not out.exists()  # refused before reading data or writing anything


def test_optuna_search_runs_three_seeded_trials(tmp_path: Path) -> None:
    pytest.importorskip("optuna", reason="the search needs optuna (extra scopebench[probe])")
    rng = np.random.default_rng(2)
    train = [_item(f"tr{k}", _blob(tmp_path / f"tr{k}.png", rng, 1.0 if k % 2 else 3.0),
                   "round" if k % 2 else "elongated") for k in range(16)]  # fmt: skip
    test = [_item(f"te{k}", _blob(tmp_path / f"te{k}.png", rng, 1.0 if k % 2 else 3.0),
                  "round" if k % 2 else "elongated") for k in range(4)]  # fmt: skip
    a = LP.run_linear_probe(train, test, seed=3, optuna_trials=3)
    b = LP.run_linear_probe(train, test, seed=3, optuna_trials=3)
    (row,) = a.tasks
    assert row.C is not None and 1e-4 <= row.C <= 1e4 and row.C != 1.0
    assert row.cv_balanced_accuracy is not None and 0 <= row.cv_balanced_accuracy <= 1
    assert a.to_dict() == b.to_dict() and a.config["optuna_trials"] == 3
    # The Markdown (not only the JSON) names the search and gives the best C and CV score per task.
    LP.write_probe_outputs(a, tmp_path / "out")
    md = (tmp_path / "out" / "linear_probe.md").read_text()
    assert "Optuna (3 trials" in md and "| PCA comp. | C | CV bal. acc. |" in md
    cv = f"{100 * row.cv_balanced_accuracy:.1f}%"
    assert f"| {row.pca_components} | {row.C:.4g} | {cv} |" in md
    (csv_row,) = csv.DictReader((tmp_path / "out" / "linear_probe.csv").open())
    assert float(csv_row["C"]) == pytest.approx(row.C)
    assert float(csv_row["cv_balanced_accuracy"]) == pytest.approx(row.cv_balanced_accuracy)


def test_missing_optuna_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "optuna", None)  # makes `import optuna` fail
    rng = np.random.default_rng(0)
    train = [_item(f"tr{k}", _blob(tmp_path / f"{k}.png", rng, 1.0 + 2 * (k % 2)),
                   "elongated" if k % 2 else "round") for k in range(4)]  # fmt: skip
    with pytest.raises(MissingDependencyError, match=r"scopebench\[probe\]"):
        LP.run_linear_probe(train, train, optuna_trials=2)


def test_cli_linear_probe(demo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "lp"
    assert (
        main(["linear-probe", "--bench", "demo", "--data", str(demo), "--out", str(out), "--limit", "14"])
        == 0
    )
    text = capsys.readouterr().out
    assert "contour" in text and "eccentricity" in text and "overall:" in text
    data = json.loads((out / "linear_probe.json").read_text())
    assert data["config"]["features"]["features"] == "handcrafted" and data["config"]["seed"] == 0
    assert data["config"]["train"] == "the demo benchmark's train split"
    rows = {r["task"]: r for r in csv.DictReader((out / "linear_probe.csv").open())}
    assert rows["contour"]["n_test"] == "12" and rows["contour"]["status"] == "evaluated"
    assert len((out / "predictions.jsonl").read_text().splitlines()) == 14  # 12 contour + 2 eccentricity
    md = (out / "linear_probe.md").read_text()
    assert "| contour | evaluated | 60 | 12 |" in md
    # PCA components and C per task (no search: the same C everywhere, no CV column).
    contour = next(t for t in data["tasks"] if t["task"] == "contour")
    assert contour["pca_components"] >= 1 and contour["C"] == 1.0
    assert "| PCA comp. | C |" in md and "CV bal. acc." not in md and "`C` = 1 for every task" in md
    line = next(x for x in md.splitlines() if x.startswith("| contour |"))
    assert line.endswith(f"| {contour['pca_components']} | 1 |")
    assert rows["contour"]["pca_components"] == str(contour["pca_components"])
    local = str(FIXTURES / "local" / "items.jsonl")
    assert main(["-q", "linear-probe", "--bench", "local", "--data", local, "--out", str(out)]) == 2
    assert "has no training split; pass --train" in capsys.readouterr().err
    # --train: the demo's training file in the local format, evaluated on the demo.
    out2 = tmp_path / "lp2"
    assert main(["-q", "linear-probe", "--bench", "demo", "--data", str(demo), "--train", str(demo / "train.jsonl"),
                 "--out", str(out2), "--limit", "14"]) == 0  # fmt: skip
    again = {r["task"]: r for r in csv.DictReader((out2 / "linear_probe.csv").open())}
    assert again["contour"] == rows["contour"]  # same training data, same classifier


def test_markdown_shows_the_published_mu_bench_probe_for_ubench(tmp_path: Path) -> None:
    # μ-Bench §C.7: DINOv2-S14 + logistic regression, 86.71 % weighted average accuracy.
    result = LP.ProbeResult(tasks=[], overall={"n": 0, "correct": 0, "accuracy": float("nan"),
                            "ci_low": float("nan"), "ci_high": float("nan")}, skipped={}, predictions=[],
                            config={"seed": 0, "features": {"features": "handcrafted"}, "C": 1.0,
                                    "pipeline": "p", "benchmarks": ["ubench"]})  # fmt: skip
    LP.write_probe_outputs(result, tmp_path / "u")
    md = (tmp_path / "u" / "linear_probe.md").read_text(encoding="utf-8")
    assert "DINOv2-S14 linear probe (mu-Bench §C.7" in md and "weighted accuracy (all tasks): 86.71%" in md
    result.config["benchmarks"] = ["demo"]
    LP.write_probe_outputs(result, tmp_path / "d")
    assert "Published" not in (tmp_path / "d" / "linear_probe.md").read_text(encoding="utf-8")

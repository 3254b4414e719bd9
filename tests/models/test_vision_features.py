"""``dinov2:`` / ``vision:`` features: a tiny random-weight DINOv2 saved to a folder, loaded for real."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from scopebench.errors import ModelSpecError
from scopebench.experiments import linear_probe as LP
from scopebench.models.vision_features import VisionEncoder, VisionSpec, parse_vision_spec

pytest.importorskip("transformers", reason="vision features need transformers (extra scopebench[hf])")


def _save_dinov2(folder: Path, *, registers: int = 0) -> Path:
    """A 2-layer, 32-wide DINOv2 (patch 8, 32 px crops) with its image processor, seeded weights."""
    import torch
    from transformers import (
        BitImageProcessor,
        Dinov2Config,
        Dinov2Model,
        Dinov2WithRegistersConfig,
        Dinov2WithRegistersModel,
    )

    torch.manual_seed(0)
    kwargs = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                  patch_size=8, image_size=32)  # fmt: skip
    if registers:
        model: torch.nn.Module = Dinov2WithRegistersModel(Dinov2WithRegistersConfig(num_register_tokens=registers,
                                                                                      **kwargs))  # fmt: skip
    else:
        model = Dinov2Model(Dinov2Config(**kwargs))
    model.save_pretrained(folder)
    # DINOv2's preprocessing (resize shortest side, centre crop, ImageNet mean/std), scaled down.
    BitImageProcessor(size={"shortest_edge": 36}, crop_size={"height": 32, "width": 32},
                      image_mean=[0.485, 0.456, 0.406], image_std=[0.229, 0.224, 0.225],
                      do_convert_rgb=True).save_pretrained(folder)  # fmt: skip
    return folder


@pytest.fixture(scope="module")
def dinov2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _save_dinov2(tmp_path_factory.mktemp("dinov2") / "tiny")


def _images(n: int) -> list[Image.Image]:
    rng = np.random.default_rng(0)
    return [Image.fromarray(rng.integers(0, 255, (40, 48, 3), dtype=np.uint8)) for _ in range(n)]


def _reference(folder: Path, images: list[Image.Image]) -> tuple[np.ndarray, np.ndarray]:
    """(pooler_output, last_hidden_state) computed here, straight from transformers."""
    import torch
    from transformers import AutoImageProcessor, AutoModel

    model = AutoModel.from_pretrained(folder).eval()
    pixels = AutoImageProcessor.from_pretrained(folder)(images=images, return_tensors="pt")["pixel_values"]
    with torch.inference_mode():
        out = model(pixel_values=pixels)
    return out.pooler_output.numpy(), out.last_hidden_state.numpy()


@pytest.mark.parametrize(
    ("spec", "parsed"),
    [
        ("dinov2:facebook/dinov2-small", VisionSpec("dinov2", "facebook/dinov2-small", "cls")),
        ("dinov2:facebook/dinov2-small?pool=mean", VisionSpec("dinov2", "facebook/dinov2-small", "mean")),
        ("vision:some/model", VisionSpec("vision", "some/model", "pooler")),
        ("vision:some/model?pool=cls", VisionSpec("vision", "some/model", "cls")),
        ("clip:openai/clip-vit-base-patch32", None),
        ("handcrafted", None),
    ],
)
def test_parse_vision_spec(spec: str, parsed: VisionSpec | None) -> None:
    assert parse_vision_spec(spec) == parsed


@pytest.mark.parametrize("bad", ["dinov2:", "dinov2:x?pool=pooler", "vision:x?pooling=mean", "vision: "])
def test_malformed_specs_are_user_errors(bad: str) -> None:
    with pytest.raises(ModelSpecError, match="--features"):
        LP.check_features(bad)  # refused before anything loads


def test_cls_features_are_dinov2_pooler_output(dinov2: Path) -> None:
    images = _images(3)
    pooled, hidden = _reference(dinov2, images)
    enc = VisionEncoder(parse_vision_spec(f"dinov2:{dinov2}"), device="cpu", batch_size=2)  # type: ignore[arg-type]
    feats = enc.encode_images(images)
    assert feats.shape == (3, 32) and feats.dtype == np.float64  # hidden_size, one row per image
    # Two batches (2 + 1) give the same rows as one pass; CLS = the layer-normed token 0.
    np.testing.assert_allclose(feats, pooled, atol=1e-5)
    np.testing.assert_allclose(feats, hidden[:, 0], atol=1e-5)
    ident = enc.identity()
    assert ident["pooling"] == "cls" and ident["model_type"] == "dinov2" and ident["weights_sha256"]


def test_mean_pooling_leaves_out_cls_and_registers(tmp_path: Path) -> None:
    folder = _save_dinov2(tmp_path / "reg", registers=2)
    images = _images(2)
    _, hidden = _reference(folder, images)
    assert hidden.shape[1] == 1 + 2 + 16  # CLS, 2 registers, (32 / 8)² patches
    enc = VisionEncoder(parse_vision_spec(f"dinov2:{folder}?pool=mean"), device="cpu")  # type: ignore[arg-type]
    np.testing.assert_allclose(enc.encode_images(images), hidden[:, 3:].mean(axis=1), atol=1e-5)
    generic = VisionEncoder(parse_vision_spec(f"vision:{folder}?pool=mean"), device="cpu")  # type: ignore[arg-type]
    np.testing.assert_allclose(generic.encode_images(images), hidden.mean(axis=1), atol=1e-5)


def test_dinov2_scheme_refuses_another_model(tmp_path: Path) -> None:
    from scopebench.testing.tiny import build_tiny_clip

    folder = build_tiny_clip(tmp_path / "clip", kind="clip", seed=0)
    with pytest.raises(ModelSpecError, match="not DINOv2; use vision:"):
        VisionEncoder(VisionSpec("dinov2", str(folder), "cls"), device="cpu")
    with pytest.raises(ModelSpecError, match="cannot load a vision model"):
        VisionEncoder(VisionSpec("dinov2", str(tmp_path / "nothing-here"), "cls"), device="cpu")


def test_linear_probe_on_dinov2_features(dinov2: Path, tmp_path: Path) -> None:
    from scopebench.benchmarks import get_benchmark
    from scopebench.benchmarks.demo import generate_demo

    demo = generate_demo(tmp_path / "demo", seed=0, n_per_class=2)
    b = get_benchmark("demo")
    train = [it for it in b.load(str(demo), "train").items if it.task == "eccentricity"]
    test = [it for it in b.load(str(demo), "test").items if it.task == "eccentricity"]
    res = LP.run_linear_probe(train, test, f"dinov2:{dinov2}", seed=0, device="cpu")
    (row,) = res.tasks
    assert row.status == "evaluated" and (row.n_train, row.n_test) == (len(train), len(test))
    assert row.n_errors == 0 and 0 <= row.correct <= row.n_test
    ident = res.config["features"]
    assert ident["features"] == f"dinov2:{dinov2}"
    assert ident["model_identity"]["pooling"] == "cls" and ident["model_identity"]["hidden_size"] == 32

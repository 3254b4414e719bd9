"""open_clip backend on a tiny random-weight model saved in the Hub layout (runs where open_clip imports).

open_clip needs torchvision, which is never installed in the default environment (PyPI's
torchvision breaks the CPU build of torch on our machines), so here these tests skip with that
reason; they run wherever ``pip install 'scopebench[openclip]'`` works.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from scopebench.engine import RunConfig, run_benchmark
from scopebench.store import load_run

open_clip = pytest.importorskip(
    "open_clip", reason="open_clip (the openclip extra, which needs torchvision) is not installed"
)
torch = pytest.importorskip("torch")

FIXTURES = Path(__file__).parents[1] / "fixtures" / "local"

_TINY = {
    "embed_dim": 16,
    "vision_cfg": {"image_size": 32, "layers": 1, "width": 32, "patch_size": 16, "head_width": 16},
    "text_cfg": {"context_length": 24, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1},
}


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("openclip")
    (root / "tiny-arch.json").write_text(json.dumps(_TINY))
    open_clip.add_model_config(root / "tiny-arch.json")
    torch.manual_seed(0)
    model = open_clip.create_model("tiny-arch")
    folder = root / "model"
    folder.mkdir()
    torch.save(model.state_dict(), folder / "open_clip_pytorch_model.bin")
    pp = {"mean": [0.5, 0.5, 0.5], "std": [0.25, 0.25, 0.25]}
    (folder / "open_clip_config.json").write_text(json.dumps({"model_cfg": _TINY, "preprocess_cfg": pp}))
    return folder


# On a GPU the engine's probabilities differ from the CPU reference by float rounding (TF32 and
# CUDA kernels: 5e-4 seen on an H100), so the exact check is on the CPU and the GPU gets a tolerance.
_DEVICES = [("cpu", 1e-5)] + ([("cuda", 2e-3)] if torch.cuda.is_available() else [])


@pytest.mark.parametrize(("device", "atol"), _DEVICES)
def test_local_folder_runs_end_to_end_and_matches_open_clip(
    tiny_folder: Path, tmp_path: Path, device: str, atol: float
) -> None:
    from PIL import Image

    from scopebench.models.registry import split_spec
    from scopebench.protocols import caption_texts

    assert split_spec(str(tiny_folder))[0] == "openclip"  # a bare folder resolves to this backend
    cfg = RunConfig(
        benchmark="local", data=str(FIXTURES / "items.jsonl"), model=str(tiny_folder), device=device
    )
    result = run_benchmark(cfg, tmp_path / "run")
    run = load_run(tmp_path / "run")
    scored = [r for r in run.records if r.scores is not None]
    assert result.n_new == len(run.records) and scored
    # The stored probabilities equal open_clip's own computation with the same weights.
    model, _, preprocess = open_clip.create_model_and_transforms(
        "tiny-arch", pretrained=str(tiny_folder / "open_clip_pytorch_model.bin"),
        image_mean=(0.5, 0.5, 0.5), image_std=(0.25, 0.25, 0.25),
    )  # fmt: skip
    tok = open_clip.get_tokenizer("tiny-arch")
    from scopebench.benchmarks import get_benchmark

    items = {it.id: it for it in get_benchmark("local").load(str(FIXTURES / "items.jsonl")).items}
    rec = scored[0]
    item = items[rec.item_id]
    with torch.no_grad():
        img = preprocess(Image.open(item.images[0].path).convert("RGB")).unsqueeze(0)
        fi = model.encode_image(img)
        ft = model.encode_text(tok(caption_texts(item)))
        fi, ft = fi / fi.norm(dim=-1, keepdim=True), ft / ft.norm(dim=-1, keepdim=True)
        probs = (model.logit_scale.exp() * fi @ ft.T).softmax(-1)[0].numpy()
    np.testing.assert_allclose(rec.scores, probs, atol=atol)
    ident = json.loads((tmp_path / "run" / "run.json").read_text())["model_identity"]
    assert ident["weights_sha256"] and ident["model"].startswith("scopebench-local-")


def test_folder_without_weights_is_a_clear_error(tiny_folder: Path, tmp_path: Path) -> None:
    from scopebench.errors import ModelError
    from scopebench.models import load_model

    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "open_clip_config.json").write_text((tiny_folder / "open_clip_config.json").read_text())
    with pytest.raises(ModelError, match="holds no weights file"):
        load_model(f"openclip:{bare}")

"""Weight merging on tiny random CLIP models (real save_pretrained → clip:<folder> path)."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from helpers import FIXTURES
from scopebench.cli import main
from scopebench.errors import ModelError
from scopebench.items import ImageRef, Item
from scopebench.models import ModelOptions, load_model

torch = pytest.importorskip("torch", reason="weight merging needs torch (extra scopebench[hf])")
pytest.importorskip("transformers", reason="tiny CLIP models need transformers (extra scopebench[hf])")

from safetensors.torch import load_file, save_file  # noqa: E402

from scopebench.experiments import merge as M  # noqa: E402


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from scopebench.testing.tiny import build_tiny_clip

    root = tmp_path_factory.mktemp("merge")
    return {
        "base": build_tiny_clip(root / "base", kind="clip", seed=0),
        "tuned": build_tiny_clip(root / "tuned", kind="clip", seed=1),
        "siglip": build_tiny_clip(root / "siglip", kind="siglip", seed=0),
    }


def _items(tmp: Path) -> list[Item]:
    rng = np.random.default_rng(0)
    items = []
    for i in range(4):
        p = tmp / f"img{i}.png"
        Image.fromarray(rng.integers(0, 255, (40, 40, 3), dtype=np.uint8)).save(p)
        items.append(
            Item(id=f"t/{i}", benchmark="local", split="test", task="shape", question="Which shape?",
                 choices=("round cells", "elongated cells", "irregular cells"), answer_index=i % 3,
                 images=(ImageRef(key=p.name, path=p),))
        )  # fmt: skip
    return items


def _scores(folder: Path, items: list[Item]) -> list[list[float]]:
    backend = load_model(f"clip:{folder}", ModelOptions(device="cpu"))
    try:
        return [r.scores or [] for r in backend.predict(items)]
    finally:
        backend.close()


def test_alpha_one_and_zero_reproduce_each_model_exactly(tiny: dict[str, Path], tmp_path: Path) -> None:
    items = _items(tmp_path)
    base_scores, tuned_scores = _scores(tiny["base"], items), _scores(tiny["tuned"], items)
    assert base_scores != tuned_scores  # the two models really differ
    one = M.merge_models(tiny["base"], tiny["tuned"], 1.0, tmp_path / "a1")
    zero = M.merge_models(tiny["base"], tiny["tuned"], 0.0, tmp_path / "a0")
    assert _scores(one.out_dir, items) == base_scores  # exact, not approx
    assert _scores(zero.out_dir, items) == tuned_scores
    base_sd, merged_sd = load_file(tiny["base"] / "model.safetensors"), load_file(one.weights_file)
    assert list(merged_sd) == list(load_file(tiny["tuned"] / "model.safetensors"))
    assert all(torch.equal(merged_sd[k], base_sd[k]) for k in base_sd)


def test_alpha_half_is_the_elementwise_mean(tiny: dict[str, Path], tmp_path: Path) -> None:
    res = M.merge_models(tiny["base"], tiny["tuned"], 0.5, tmp_path / "half")
    a, b = load_file(tiny["base"] / "model.safetensors"), load_file(tiny["tuned"] / "model.safetensors")
    merged = load_file(res.weights_file)
    assert len(merged) == len(a) == 78 and res.interpolated == 78
    for k in a:
        assert merged[k].dtype == a[k].dtype
        assert torch.equal(merged[k], (a[k] + b[k]) / 2), k
    assert res.parameters == sum(v.numel() for v in a.values())


def test_provenance_and_files_copied_from_the_tuned_model(tiny: dict[str, Path], tmp_path: Path) -> None:
    res = M.merge_models(tiny["base"], tiny["tuned"], 0.25, tmp_path / "m")
    prov = json.loads((tmp_path / "m" / M.MERGE_FILE).read_text())
    assert prov["alpha"] == 0.25 and prov["base"] == str(tiny["base"].resolve())
    assert prov["tuned"] == str(tiny["tuned"].resolve()) and prov["layout"] == "transformers"
    from scopebench.models.contrastive import weights_digest

    assert prov["base_digest"] == weights_digest(tiny["base"])
    assert prov["tuned_digest"] == weights_digest(tiny["tuned"])
    assert prov["merged_digest"] == weights_digest(tmp_path / "m") != prov["base_digest"]
    assert sorted(prov["files_copied"]) == [
        "config.json", "processor_config.json", "tokenizer.json", "tokenizer_config.json"
    ]  # fmt: skip
    for name in prov["files_copied"]:
        assert (tmp_path / "m" / name).read_bytes() == (tiny["tuned"] / name).read_bytes()
    assert "alpha * theta_base" in prov["formula"] and res.model_spec == f"clip:{tmp_path / 'm'}"


def test_non_float_tensors_are_copied_from_tuned_and_half_precision_kept() -> None:
    base = {
        "w": torch.tensor([1.0, 2.0], dtype=torch.float16),
        "ids": torch.arange(3),
        "mask": torch.ones(2).bool(),
    }
    tuned = {
        "w": torch.tensor([3.0, 5.0], dtype=torch.float16),
        "ids": torch.arange(3) + 1,
        "mask": torch.ones(2).bool(),
    }
    merged, copied, differing = M.interpolate_state_dicts(base, tuned, 0.25)
    assert merged["w"].dtype == torch.float16 and merged["w"].tolist() == [2.5, 4.25]  # .25·b + .75·t
    assert torch.equal(merged["ids"], tuned["ids"]) and copied == ["ids", "mask"] and differing == ["ids"]
    exact, _, _ = M.interpolate_state_dicts(base, tuned, 1.0)
    assert torch.equal(exact["w"], base["w"])


def _edit_copy(src: Path, dst: Path, edit: Any) -> Path:
    shutil.copytree(src, dst)
    sd = load_file(dst / "model.safetensors")
    edit(sd)
    save_file(sd, str(dst / "model.safetensors"), metadata={"format": "pt"})
    return dst


def test_mismatched_architectures_list_the_differences(tiny: dict[str, Path], tmp_path: Path) -> None:
    def edit(sd: dict[str, Any]) -> None:
        del sd["logit_scale"], sd["text_projection.weight"]
        sd["extra.head.weight"] = torch.zeros(2)
        sd["visual_projection.weight"] = torch.zeros(3, 3)

    odd = _edit_copy(tiny["tuned"], tmp_path / "odd", edit)
    with pytest.raises(ModelError) as err:
        M.merge_models(tiny["base"], odd, 0.5, tmp_path / "out")
    msg = str(err.value)
    assert (
        "2 key(s) of the base model missing from the tuned model: logit_scale, text_projection.weight" in msg
    )
    assert "1 key(s) only in the tuned model: extra.head.weight" in msg
    assert "1 shape mismatch(es) (base vs tuned): visual_projection.weight (16, 32) vs (3, 3)" in msg
    assert not (tmp_path / "out").exists()  # nothing written

    many = _edit_copy(tiny["tuned"], tmp_path / "many", lambda sd: [sd.pop(k) for k in sorted(sd)[:8]])
    with pytest.raises(ModelError, match=r"8 key\(s\) of the base model missing .*\(3 more\)"):
        M.merge_models(tiny["base"], many, 0.5, tmp_path / "out")
    with pytest.raises(ModelError, match="'clip' model and the tuned one a 'siglip' model"):
        M.merge_models(tiny["base"], tiny["siglip"], 0.5, tmp_path / "out")
    with pytest.raises(ModelError, match=r"must lie in \[0, 1\]"):
        M.merge_models(tiny["base"], tiny["tuned"], 1.5, tmp_path / "out")


@pytest.mark.parametrize("suffix", [".pt", ".safetensors"])
def test_open_clip_checkpoint_files(tmp_path: Path, suffix: str) -> None:
    # Only the tensor path is tested: loading the result through open_clip needs torchvision.
    a = {"visual.proj": torch.tensor([[1.0, 2.0]]), "logit_scale": torch.tensor(4.0)}
    b = {"visual.proj": torch.tensor([[3.0, 6.0]]), "logit_scale": torch.tensor(2.0)}
    pa, pb = tmp_path / f"a{suffix}", tmp_path / f"b{suffix}"
    if suffix == ".pt":  # a DDP-trained checkpoint wrapped in {"state_dict": …} vs a raw state dict
        torch.save({"state_dict": {f"module.{k}": v for k, v in a.items()}, "epoch": 3}, pa)
        torch.save(b, pb)
    else:
        save_file(a, str(pa))
        save_file(b, str(pb))
    res = M.merge_models(pa, pb, 0.5, tmp_path / "out")
    assert res.layout == "open_clip" and res.weights_file.name == f"open_clip_merged{suffix}"
    got = M.load_state_dict(res.weights_file)
    assert got["visual.proj"].tolist() == [[2.0, 4.0]] and got["logit_scale"].item() == 3.0
    with pytest.raises(ModelError, match="both must be transformers folders or both open_clip"):
        M.merge_models(pa, tmp_path / "out", 0.5, tmp_path / "x")


def test_parse_alphas_and_labels() -> None:
    assert M.parse_alphas(None) == [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    assert M.parse_alphas("1, 0,0.5,0.5") == [0.0, 0.5, 1.0]
    assert [M.alpha_label(a) for a in (0.0, 0.1, 1.0, 0.125)] == [
        "alpha-0.00",
        "alpha-0.10",
        "alpha-1.00",
        "alpha-0.125",
    ]
    with pytest.raises(ModelError, match="in \\[0, 1\\]"):
        M.parse_alphas("0,2")
    with pytest.raises(ModelError, match="comma-separated numbers"):
        M.parse_alphas("0;1")


def test_cli_merge_and_three_point_sweep(
    tiny: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "merged"
    assert main(["merge", str(tiny["base"]), str(tiny["tuned"]), "--alpha", "0.5", "--out", str(out)]) == 0
    assert "merged 78 tensors" in capsys.readouterr().out
    assert (out / "model.safetensors").is_file() and load_model(f"clip:{out}").spec == f"clip:{out}"
    assert (
        main(
            ["-q", "merge", str(tiny["base"]), str(tiny["tuned"]), "--alpha", "0.5", "--sweep", "--out", "x"]
        )
        == 2
    )
    assert (
        main(["-q", "merge", str(tiny["base"]), str(tiny["tuned"]), "--sweep", "--out", "x"]) == 2
    )  # no --bench
    assert "add --bench" in capsys.readouterr().err

    sweep, data = tmp_path / "sweep", str(FIXTURES / "local" / "items.jsonl")
    args = ["-q", "merge", str(tiny["base"]), str(tiny["tuned"]), "--sweep", "0,0.5,1", "--bench", "local",
            "--data", data, "--limit", "4", "--device", "cpu", "--out", str(sweep)]  # fmt: skip
    assert main(args) == 0
    rows = list(csv.DictReader((sweep / "sweep.csv").open()))
    assert [r["alpha"] for r in rows] == ["0.0", "0.5", "1.0"] and all(r["n"] == "4" for r in rows)
    for name in ("sweep.json", "sweep.md", "sweep.png", "sweep.svg"):
        assert (sweep / name).stat().st_size > 0
    # α = 1 is the base model: same per-item scores as an ordinary run of the base model.
    from scopebench.engine import RunConfig, run_benchmark
    from scopebench.store import load_run

    ref = run_benchmark(RunConfig(benchmark="local", data=data, model=f"clip:{tiny['base']}", limit=4,
                                  device="cpu"), tmp_path / "ref")  # fmt: skip
    by_id = {r.item_id: r.scores for r in load_run(ref.run_dir).records}
    a1 = load_run(sweep / "alpha-1.00" / "run").records
    assert {r.item_id: r.scores for r in a1} == by_id
    assert float(rows[2]["accuracy"]) == pytest.approx(sum(bool(r.correct) for r in a1) / 4)

    # A second sweep reuses the merged folders and resumes the finished runs.
    weights = sweep / "alpha-0.50" / "model" / "model.safetensors"
    before = weights.stat().st_mtime_ns
    monkeypatch.setattr(M, "merge_models", lambda *a, **k: pytest.fail("merged again"))
    assert main(args) == 0
    assert weights.stat().st_mtime_ns == before
    assert list(csv.DictReader((sweep / "sweep.csv").open())) == rows

"""``--batch-size auto``: calls that run out of accelerator memory are retried with half the items."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

import scopebench.engine.runner as runner_mod
from scopebench.engine import RunConfig, run_benchmark
from scopebench.errors import ModelSpecError
from scopebench.items import Item
from scopebench.models import Backend, ModelOptions, ModelSpec, Response
from scopebench.store import load_run


class _Fits(Backend):
    """Answers option 0 in calls of at most ``fits`` items; a larger call raises ``error``."""

    mode = "baseline"
    needs_images = False

    def __init__(self, fits: int, error: Exception) -> None:
        super().__init__("scripted", ModelOptions(batch_size=None))
        self.fits = fits
        self.error = error
        self.calls: list[int] = []

    def predict(self, items: Sequence[Item]) -> list[Response]:
        self.calls.append(len(items))
        if len(items) > self.fits:
            raise self.error
        return [Response(it.id, choice=0) for it in items]


@pytest.fixture(autouse=True)
def _accept_scripted_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    real = runner_mod.parse_spec
    scripted = ModelSpec("scripted", "scripted", "")
    monkeypatch.setattr(runner_mod, "parse_spec", lambda s: scripted if s == "scripted" else real(s))


def _oom_errors() -> list[Exception]:
    import torch

    return [torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"),
            RuntimeError("CUDA error: out of memory")]  # fmt: skip


@pytest.mark.parametrize("error", _oom_errors(), ids=["OutOfMemoryError", "RuntimeError"])
def test_auto_halves_on_out_of_memory_and_records_the_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: Exception
) -> None:
    # Catches: an OOM recorded as 64 error records instead of a retry; a size that grows back
    # (or is not halved) after a failure; a retry that skips or repeats items; no size in run.json.
    fake = _Fits(fits=10, error=error)
    monkeypatch.setattr(runner_mod, "load_model", lambda spec, opts: fake)
    res = run_benchmark(RunConfig.from_options("unit", "100", "scripted", batch_size="auto"), tmp_path / "r")
    # 64 and 32 and 16 fail; 8 fits and stays: 100 items in 13 calls of 8 (the last of 4).
    assert fake.calls == [64, 32, 16] + [8] * 12 + [4]
    assert res.metrics["overall"]["errors"] == 0
    records = load_run(tmp_path / "r").records
    assert sorted(r.item_id for r in records) == sorted({r.item_id for r in records}) and len(records) == 100
    provenance = json.loads((tmp_path / "r" / "run.json").read_text())
    assert provenance["batch_size"] == "auto"
    assert provenance["batch_size_used"] == 8
    assert provenance["batch_size_backoffs"] == [64, 32, 16]


def test_auto_at_one_item_records_the_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Catches: an endless retry loop when not even one item fits.
    fake = _Fits(fits=0, error=RuntimeError("CUDA out of memory"))
    monkeypatch.setattr(runner_mod, "load_model", lambda spec, opts: fake)
    cfg = RunConfig.from_options("unit", "3", "scripted", batch_size="auto", max_fail_fraction=1.0)
    res = run_benchmark(cfg, tmp_path / "r")
    assert res.metrics["overall"]["errors"] == 3
    assert fake.calls == [3, 1, 1, 1]  # 64 → 3 items in one call; then 1 each, recorded as errors


def test_a_fixed_size_does_not_back_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Catches: a fixed --batch-size silently changed; the used size not recorded for it either.
    fake = _Fits(fits=2, error=RuntimeError("CUDA out of memory"))
    monkeypatch.setattr(runner_mod, "load_model", lambda spec, opts: fake)
    cfg = RunConfig.from_options("unit", "6", "scripted", batch_size=3, max_fail_fraction=1.0)
    res = run_benchmark(cfg, tmp_path / "r")
    assert fake.calls == [3, 3] and res.metrics["overall"]["errors"] == 6
    assert json.loads((tmp_path / "r" / "run.json").read_text())["batch_size_used"] == 3


@pytest.mark.parametrize("size", [0, "big", True])
def test_bad_sizes_and_auto_on_ray_are_refused(size: object) -> None:
    with pytest.raises(ModelSpecError, match="batch-size"):
        runner_mod.check_config(RunConfig.from_options("unit", "3", "random", batch_size=size))
    with pytest.raises(ModelSpecError, match="auto"):
        runner_mod.check_config(
            RunConfig.from_options("unit", "3", "random", batch_size="auto", executor="ray")
        )


def test_cli_takes_auto(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Catches: --batch-size typed int on `run` (click refuses "auto").
    from scopebench.cli import main

    out = tmp_path / "run"
    base = ["-q", "run", "--bench", "unit", "--data", "5", "--model", "random", "--out", str(out)]
    assert main([*base, "--batch-size", "auto"]) == 0
    assert json.loads((out / "run.json").read_text())["batch_size_used"] == 64
    assert main([*base, "--batch-size", "0"]) == 2
    assert "auto" in capsys.readouterr().err

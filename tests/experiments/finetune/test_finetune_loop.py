"""The shared training loop: seeded batches, exact resume after a crash, the contrastive loss."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("accelerate")

from scopebench.errors import UsageError  # noqa: E402
from scopebench.experiments.finetune import LoopConfig, TrainingInterrupted, batch_indices  # noqa: E402
from scopebench.experiments.finetune.contrastive import clip_loss  # noqa: E402
from scopebench.experiments.finetune.loop import train_loop  # noqa: E402


def test_batches_cover_each_epoch_once_and_depend_only_on_their_step() -> None:
    n, bs = 12, 4
    epoch0 = [i for s in range(3) for i in batch_indices(n, bs, seed=5, step=s)]
    assert sorted(epoch0) == list(range(n))  # a permutation: every example once per epoch
    epoch1 = [i for s in range(3, 6) for i in batch_indices(n, bs, seed=5, step=s)]
    assert sorted(epoch1) == list(range(n)) and epoch1 != epoch0  # reshuffled each epoch
    assert batch_indices(n, bs, seed=5, step=4) == batch_indices(n, bs, seed=5, step=4)
    assert batch_indices(n, bs, seed=6, step=0) != batch_indices(n, bs, seed=5, step=0)
    assert sorted(batch_indices(3, 8, seed=0, step=0)) == [0, 1, 2]  # batch larger than the data


def test_grouped_batches_hold_one_group_and_cover_every_example() -> None:
    groups = ["a"] * 8 + ["b"] * 4 + ["c"] * 2
    seen: list[int] = []
    for step in range(5):  # a: 2 batches of 4, b: 1, c: 1 batch of 2 → 4 per epoch
        idx = batch_indices(len(groups), 4, seed=1, step=step, groups=groups)
        assert len({groups[i] for i in idx}) == 1
        if step < 4:
            seen += idx
    assert sorted(seen) == list(range(len(groups)))


def test_clip_loss_matches_hand_computed_values() -> None:
    eye = torch.eye(2)
    zero = torch.tensor(0.0)  # logit scale exp(0) = 1: logits are the cosines
    # Distinct captions: CLIP's loss, each row −log(e / (e + 1)) = log(1 + e⁻¹).
    assert float(clip_loss(eye, eye, zero, ["a", "b"])) == pytest.approx(math.log(1 + math.exp(-1)), abs=1e-6)
    # The same caption twice: the target is ½/½ over both columns: log(e + 1) − ½.
    assert float(clip_loss(eye, eye, zero, ["a", "a"])) == pytest.approx(math.log(math.e + 1) - 0.5, abs=1e-6)
    # Unnormalised inputs are normalised first.
    assert float(clip_loss(3 * eye, 0.5 * eye, zero, ["a", "b"])) == pytest.approx(
        math.log(1 + math.exp(-1)), abs=1e-6
    )


def _linear_setup(seed: int = 0) -> tuple[torch.nn.Module, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(99)
    x, y = torch.randn(20, 3, generator=g), torch.randn(20, 1, generator=g)
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.Dropout(0.3), torch.nn.Linear(8, 1))
    return model, x, y


def _run(out: Path, steps: int, interrupt_at: int | None = None) -> torch.nn.Module:
    model, x, y = _linear_setup()

    def loss_fn(m: torch.nn.Module, idx: list[int]) -> torch.Tensor:
        return torch.nn.functional.mse_loss(m(x[idx]), y[idx])

    def on_step(step: int, loss: float) -> None:
        if step == interrupt_at:
            raise TrainingInterrupted

    cfg = LoopConfig(steps=steps, batch_size=4, lr=1e-2, seed=3, checkpoint_every=4, device="cpu")
    train_loop(model, len(x), loss_fn, out, cfg, on_step=on_step)
    return model


def test_a_crashed_run_resumes_from_its_checkpoint_to_the_same_weights(tmp_path: Path) -> None:
    straight = _run(tmp_path / "a", steps=12)
    with pytest.raises(TrainingInterrupted):
        _run(tmp_path / "b", steps=12, interrupt_at=6)  # checkpoint at 4; steps 5-6 are lost
    assert [p.name for p in (tmp_path / "b" / "checkpoints").iterdir()] == ["step-00000004"]
    resumed = _run(tmp_path / "b", steps=12)
    for a, b in zip(straight.state_dict().values(), resumed.state_dict().values(), strict=True):
        assert torch.equal(a, b)  # dropout RNG, optimizer moments and batch order all restored
    log = [json.loads(line) for line in (tmp_path / "b" / "train_log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in log] == list(range(1, 13))  # steps 5-6 logged once, not twice
    # A run resumed from no checkpoint would differ: the check above can fail.
    other = _run(tmp_path / "c", steps=13)
    assert not torch.equal(
        next(iter(other.state_dict().values())), next(iter(straight.state_dict().values()))
    )


def test_keeps_only_the_newest_checkpoints(tmp_path: Path) -> None:
    _run(tmp_path, steps=12)
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == ["step-00000008", "step-00000012"]


def test_refuses_unusable_settings(tmp_path: Path) -> None:
    model, _, _ = _linear_setup()
    with pytest.raises(UsageError, match="--steps"):
        train_loop(model, 4, lambda m, i: m, tmp_path, LoopConfig(steps=0, device="cpu"))

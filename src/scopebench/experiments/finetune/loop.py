"""The training loop both fine-tuning recipes share: seeded order, accelerate, checkpoints, resume.

Determinism is what makes resuming exact. The examples of epoch ``e`` are visited in the order of
``numpy.random.default_rng([seed, e]).permutation(n)`` and step ``s`` takes batch ``s % steps_per_epoch``
of epoch ``s // steps_per_epoch``, so the batch of a step does not depend on what ran before it. A
checkpoint holds the trainable weights, the optimizer's state, the step and torch's RNG state; a
resumed run loads the newest one and continues from its step, giving the same final weights as an
uninterrupted run with the same seed (tests/experiments/finetune checks it bit for bit on CPU).

Multi-GPU: an :class:`accelerate.Accelerator` wraps the model and optimizer (``accelerate launch``
starts one process per GPU); each process takes its share of every batch (``rank::world``) and
gradients are averaged by accelerate. Only the main process writes checkpoints and logs.
"""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from scopebench.errors import ConfigMismatchError, MissingDependencyError, UsageError

__all__ = ["LoopConfig", "LoopResult", "TrainingInterrupted", "batch_indices", "train_loop"]

log = logging.getLogger(__name__)

CHECKPOINTS = "checkpoints"
LOG_FILE = "train_log.jsonl"


class TrainingInterrupted(Exception):
    """Raised by an ``on_step`` hook to stop training as a crash would (used by the resume tests)."""


@dataclass(frozen=True)
class LoopConfig:
    """The optimisation hyper-parameters shared by both recipes (all recorded in finetune.json).

    Attributes:
        steps: Optimizer steps to run in total.
        batch_size: Examples per step (summed over processes).
        lr: Peak learning rate of AdamW.
        weight_decay: AdamW weight decay.
        warmup_steps: Linear warm-up steps, then a constant rate.
        seed: Seed of the example order, the initialisation of new weights and dropout.
        checkpoint_every: Save a checkpoint every N steps (0: only at the end).
        keep_checkpoints: How many checkpoints to keep (older ones are deleted).
        eval_every: Evaluate the held-out split every N steps (0: only before and after).
        max_grad_norm: Gradient-norm clipping (0: none).
        device: ``cpu`` forces the CPU; ``auto`` lets accelerate choose.
    """

    steps: int = 100
    batch_size: int = 16
    lr: float = 1e-5
    weight_decay: float = 0.0
    warmup_steps: int = 0
    seed: int = 0
    checkpoint_every: int = 50
    keep_checkpoints: int = 2
    eval_every: int = 0
    max_grad_norm: float = 1.0
    device: str = "auto"

    def check(self) -> None:
        """Refuse values no run can use.

        Raises:
            UsageError: For a non-positive step count, batch size or learning rate.
        """
        if self.steps < 1 or self.batch_size < 1 or not self.lr > 0:
            raise UsageError("fine-tuning needs --steps ≥ 1, --batch-size ≥ 1 and --lr > 0")
        if self.checkpoint_every < 0 or self.eval_every < 0 or self.keep_checkpoints < 1:
            raise UsageError("--checkpoint-every and --eval-every are ≥ 0 and --keep-checkpoints ≥ 1")


@dataclass
class LoopResult:
    """What a finished loop reports.

    Attributes:
        steps: Steps completed (equal to the configured steps).
        resumed_from: The step the run resumed from (``None`` for a fresh run).
        losses: ``(step, loss)`` of every step this process ran or read back from the log.
        world_size: Processes that trained.
    """

    steps: int
    resumed_from: int | None
    losses: list[tuple[int, float]] = field(default_factory=list)
    world_size: int = 1


def batch_indices(
    n: int, batch_size: int, seed: int, step: int, groups: Sequence[str] | None = None
) -> list[int]:
    """The example indices of ``step`` (see the module docstring); a pure function of its arguments.

    Every step takes a full batch: an epoch has ``max(1, n // batch_size)`` steps, and when
    ``batch_size > n`` a step takes all ``n`` examples. With ``groups`` (one label per example,
    e.g. the task), every batch holds examples of one group: each group is shuffled and cut into
    full batches (a group smaller than a batch is one batch), and the batches are shuffled.
    """
    bs = min(batch_size, n)
    if groups is None:
        per_epoch = max(1, n // bs)
        epoch, k = divmod(step, per_epoch)
        order = np.random.default_rng([seed, epoch]).permutation(n)
        return [int(i) for i in order[k * bs : (k + 1) * bs]]
    members: dict[str, list[int]] = {}
    for i, g in enumerate(groups):
        members.setdefault(g, []).append(i)
    per_epoch = sum(max(1, len(m) // bs) for m in members.values())
    epoch, k = divmod(step, per_epoch)
    rng = np.random.default_rng([seed, epoch])
    batches = []
    for g in sorted(members):
        m = np.asarray(members[g])[rng.permutation(len(members[g]))]
        size = min(bs, len(m))
        batches += [m[j * size : (j + 1) * size] for j in range(max(1, len(m) // size))]
    return [int(i) for i in batches[int(rng.permutation(len(batches))[k])]]


def _accelerator(device: str) -> Any:
    try:
        from accelerate import Accelerator
    except ImportError as exc:
        raise MissingDependencyError("accelerate", "finetune", "scopebench finetune") from exc
    return Accelerator(cpu=device == "cpu")


def _latest_checkpoint(out: Path) -> Path | None:
    folder = out / CHECKPOINTS
    if not folder.is_dir():
        return None
    done = sorted(p for p in folder.glob("step-*") if (p / "state.pt").is_file())
    return done[-1] if done else None


def _save_checkpoint(
    out: Path, step: int, model: Any, optimizer: Any, trainable: Sequence[str], keep: int
) -> None:
    import torch

    folder = out / CHECKPOINTS
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"step-{step:08d}"
    tmp = folder / f".tmp-step-{step:08d}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    state = model.state_dict()
    payload = {
        "step": step,
        "weights": {k: state[k].detach().cpu().clone() for k in trainable},
        "optimizer": optimizer.state_dict(),
        "torch_rng": torch.get_rng_state(),
    }
    torch.save(payload, tmp / "state.pt")
    shutil.rmtree(target, ignore_errors=True)
    # A crash mid-write leaves only the .tmp folder, which resuming ignores.
    os.replace(tmp, target)
    for old in sorted(p for p in folder.glob("step-*") if p.is_dir())[:-keep]:
        shutil.rmtree(old, ignore_errors=True)


def _load_checkpoint(path: Path, model: Any, optimizer: Any) -> int:
    import torch

    payload = torch.load(path / "state.pt", map_location="cpu", weights_only=False)
    missing = [k for k in payload["weights"] if k not in model.state_dict()]
    if missing:
        raise ConfigMismatchError(
            f"checkpoint {path} holds weights this model has not ({missing[:3]}); it was written by "
            "another model or recipe: give a new --out or delete the folder"
        )
    model.load_state_dict(payload["weights"], strict=False)
    optimizer.load_state_dict(payload["optimizer"])
    torch.set_rng_state(payload["torch_rng"])
    return int(payload["step"])


def _read_log(out: Path, upto: int) -> list[tuple[int, float]]:
    """The logged losses of steps ``1 … upto`` (those a resumed run keeps)."""
    path = out / LOG_FILE
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            if row["step"] <= upto:
                rows.append((int(row["step"]), float(row["loss"])))
    return rows


def train_loop(
    model: Any,
    n_examples: int,
    loss_fn: Callable[[Any, list[int]], Any],
    out: Path,
    config: LoopConfig,
    *,
    on_step: Callable[[int, float], None] | None = None,
    on_eval: Callable[[int, Any], None] | None = None,
    groups: Sequence[str] | None = None,
) -> LoopResult:
    """Train ``model`` for ``config.steps`` steps, resuming from ``out``'s newest checkpoint.

    Args:
        model: A torch module; its parameters with ``requires_grad`` are trained and checkpointed.
        n_examples: How many examples there are (indices ``0 … n-1`` reach ``loss_fn``).
        loss_fn: ``loss_fn(model, indices) -> scalar tensor`` for this process's share of a batch.
        out: The output folder (checkpoints and ``train_log.jsonl`` go there).
        config: Hyper-parameters.
        on_step: Called after every step with ``(step, loss)`` (1-based step), after its checkpoint.
        on_eval: Called every ``config.eval_every`` steps with ``(step, unwrapped model)``.
        groups: One group label per example: batches hold one group each (:func:`batch_indices`).

    Returns:
        The steps run, the step resumed from and the loss curve.
    """
    import torch

    config.check()
    out.mkdir(parents=True, exist_ok=True)
    accelerator = _accelerator(config.device)
    torch.manual_seed(config.seed)
    trainable = [n for n, p in model.named_parameters() if p.requires_grad]
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=config.lr, weight_decay=config.weight_decay)
    start = _resume(out, model, optimizer, config.steps)
    warmup = config.warmup_steps

    def rate(step: int) -> float:
        return min(1.0, (step + 1) / warmup) if warmup else 1.0

    model, optimizer = accelerator.prepare(model, optimizer)
    model.train()
    losses = _read_log(out, start)
    main = accelerator.is_main_process
    if main:
        # Steps logged after the checkpoint we resume from are run again: drop their lines.
        (out / LOG_FILE).write_text(
            "".join(json.dumps({"step": s, "loss": round(v, 6)}) + "\n" for s, v in losses), encoding="utf-8"
        )
    rank, world = accelerator.process_index, accelerator.num_processes
    for step in range(start, config.steps):
        idx = batch_indices(n_examples, config.batch_size, config.seed, step, groups)[rank::world]
        value = _step(accelerator, model, optimizer, params, loss_fn, idx, config.lr * rate(step), config)
        if not math.isfinite(value):
            raise FloatingPointError(f"the loss is {value} at step {step + 1}; lower --lr")
        done = step + 1
        losses.append((done, value))
        if main:
            _log_step(out, done, value, config.lr * rate(step))
            if (config.checkpoint_every and done % config.checkpoint_every == 0) or done == config.steps:
                unwrapped = accelerator.unwrap_model(model)
                _save_checkpoint(out, done, unwrapped, optimizer, trainable, config.keep_checkpoints)
        if on_step is not None:
            on_step(done, value)
        if (
            on_eval is not None
            and config.eval_every
            and done % config.eval_every == 0
            and done < config.steps
        ):
            model.eval()
            on_eval(done, accelerator.unwrap_model(model))
            model.train()
    accelerator.wait_for_everyone()
    model = accelerator.unwrap_model(model)
    model.eval()
    return LoopResult(steps=config.steps, resumed_from=start or None, losses=losses, world_size=world)


def _step(
    accelerator: Any,
    model: Any,
    optimizer: Any,
    params: list[Any],
    loss_fn: Callable[[Any, list[int]], Any],
    idx: list[int],
    lr: float,
    config: LoopConfig,
) -> float:
    """One optimisation step at learning rate ``lr``; the loss averaged over the processes."""
    for group in optimizer.param_groups:
        group["lr"] = lr
    loss = loss_fn(model, idx)
    accelerator.backward(loss)
    if config.max_grad_norm:
        accelerator.clip_grad_norm_(params, config.max_grad_norm)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return float(accelerator.gather(loss.detach().reshape(1)).mean().item())


def _resume(out: Path, model: Any, optimizer: Any, steps: int) -> int:
    """Load ``out``'s newest checkpoint into ``model`` and ``optimizer``; its step (0: none)."""
    latest = _latest_checkpoint(out)
    if latest is None:
        return 0
    start = _load_checkpoint(latest, model, optimizer)
    log.info("resuming from %s (step %d of %d)", latest, start, steps)
    return start


def _log_step(out: Path, step: int, loss: float, lr: float) -> None:
    """Append one step's loss and learning rate to ``train_log.jsonl``."""
    with open(out / LOG_FILE, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"step": step, "loss": round(loss, 6), "lr": lr}) + "\n")


def is_main_process() -> bool:
    """Whether this is the main process of an ``accelerate launch`` (always true without one)."""
    return os.environ.get("RANK", "0") == "0"

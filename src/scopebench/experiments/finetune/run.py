"""``scopebench finetune``: the two recipes end to end, with their record (finetune.json).

Output folder ``OUT``::

    finetune.json        every hyper-parameter, the seed, the data (source, size, fingerprint, items
                         left out by reason), versions, the loss curve's ends, before/after metrics
    train_log.jsonl      the loss of every step
    checkpoints/step-N/  the newest checkpoints (resuming continues from the newest)
    model/               the fine-tuned model (clip:OUT/model or hf:OUT/model)
    adapter/             the LoRA adapter (generative)
    eval/before, eval/after, eval/step-N/   ordinary run directories of the held-out evaluation
    report.md            the before/after table

Running the same command again resumes: a finished fine-tune is reported again, an interrupted one
continues from its newest checkpoint. A folder that holds another fine-tune (other settings, seed or
data) is refused rather than mixed.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from scopebench.errors import ConfigMismatchError, UsageError
from scopebench.experiments.finetune import contrastive as clip_recipe
from scopebench.experiments.finetune import generative as sft
from scopebench.experiments.finetune.data import (
    CaptionPair,
    DataSource,
    Skipped,
    caption_pairs,
    fingerprint,
    load_split,
    read_pairs_file,
    refuse_empty,
)
from scopebench.experiments.finetune.evaluate import EvalSpec, evaluate_model
from scopebench.experiments.finetune.loop import LoopConfig, train_loop
from scopebench.models.contrastive import weights_digest
from scopebench.models.registry import parse_spec

__all__ = ["FINETUNE_FILE", "FinetuneResult", "finetune_contrastive", "finetune_generative"]

log = logging.getLogger(__name__)

FINETUNE_FILE = "finetune.json"
_SCHEMA = 1


@dataclass
class FinetuneResult:
    """What a fine-tune produced.

    Attributes:
        out: The output folder.
        model_dir: The fine-tuned model folder.
        spec: Its model spec (``clip:…`` or ``hf:…``).
        record: The content of finetune.json.
    """

    out: Path
    model_dir: Path
    spec: str
    record: dict[str, Any] = field(default_factory=dict)


def _versions() -> dict[str, str]:
    out = {}
    for name in ("scopebench", "torch", "transformers", "peft", "accelerate"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def _identity(record: dict[str, Any]) -> dict[str, Any]:
    """The fields that must match for a folder to be resumed (not outputs, not versions)."""
    return {
        k: record[k] for k in ("schema", "kind", "base", "hyperparameters", "seed", "data", "evaluation_plan")
    }


def _start(out: Path, record: dict[str, Any], fresh: bool) -> dict[str, Any]:
    """Refuse a folder holding another fine-tune; write the record of this one and return it.

    A resumed fine-tune keeps the evaluations its earlier attempt recorded.
    """
    path = out / FINETUNE_FILE
    if fresh and out.exists():
        shutil.rmtree(out)
    if path.is_file():
        old = json.loads(path.read_text(encoding="utf-8"))
        # Compared as JSON (tuples read back as lists).
        record = json.loads(json.dumps(record, default=str))
        if _identity(old) != _identity(record):
            diff = sorted(k for k in _identity(record) if old.get(k) != record.get(k))
            raise ConfigMismatchError(
                f"{out} holds another fine-tune (different {', '.join(diff)}); give a new --out, or "
                "--fresh to replace it"
            )
        if old.get("evaluation"):
            record["evaluation"] = old["evaluation"]
    elif out.exists() and any(out.iterdir()):
        raise ConfigMismatchError(
            f"{out} is not empty and holds no {FINETUNE_FILE}; give a new or empty --out"
        )
    out.mkdir(parents=True, exist_ok=True)
    record["status"] = "running"
    _write(out, record)
    return record


def _write(out: Path, record: dict[str, Any]) -> None:
    tmp = out / f".{FINETUNE_FILE}.tmp"
    tmp.write_text(json.dumps(record, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")
    tmp.replace(out / FINETUNE_FILE)


def _base_record(kind: str, base: str, loop: LoopConfig, extra_hp: dict[str, Any]) -> dict[str, Any]:
    local = Path(base)
    return {
        "schema": _SCHEMA,
        "kind": kind,
        "base": {"model": base, "weights_sha256": weights_digest(local) if local.is_dir() else None},
        "hyperparameters": {**{k: v for k, v in asdict(loop).items() if k != "seed"}, **extra_hp},
        "seed": loop.seed,
    }


def _evaluations(
    out: Path,
    record: dict[str, Any],
    evaluation: EvalSpec | None,
    spec: str,
    *,
    name: str,
    seed: int,
    device: str,
) -> None:
    if evaluation is None:
        return
    summary = evaluate_model(spec, evaluation, out / "eval" / name, seed=seed, device=device)
    record.setdefault("evaluation", {})[name] = summary
    _write(out, record)


def _finish(out: Path, record: dict[str, Any], result: Any) -> None:
    record["training"] = {
        "steps": result.steps,
        "resumed_from": result.resumed_from,
        "first_loss": result.losses[0][1] if result.losses else None,
        "last_loss": result.losses[-1][1] if result.losses else None,
        "world_size": result.world_size,
    }
    record["status"] = "done"
    _write(out, record)
    (out / "report.md").write_text(render_report(record), encoding="utf-8")


def finetune_contrastive(
    base: str,
    out: Path,
    loop: LoopConfig,
    *,
    source: DataSource | None = None,
    pairs_file: Path | None = None,
    evaluation: EvalSpec | None = None,
    group_batches: bool = False,
    freeze_temperature: bool = False,
    fresh: bool = False,
    on_step: Callable[[int, float], None] | None = None,
) -> FinetuneResult:
    """Fine-tune a CLIP-family model on image–caption pairs (see :mod:`.contrastive`).

    Args:
        base: The base model (``clip:DIR``, a folder or a hub id).
        out: The output folder (resumed when it holds this fine-tune).
        loop: Optimisation settings and seed.
        source: A benchmark split whose items give the pairs (image, correct option's caption).
        pairs_file: Or a user's JSON Lines pairs file.
        evaluation: The held-out split to evaluate before, after (and every ``loop.eval_every``).
        freeze_temperature: Keep the logit scale fixed (it is trained by default, as in CLIP,
            clamped at 100).
        group_batches: Batches of one task (pairs file: one ``group``) each, so captions of other
            tasks, which may also describe an image, are never its negatives.
        fresh: Delete ``out`` first.
        on_step: Called after every step (tests use it to interrupt a run).

    Returns:
        The output folder, the model folder (``clip:`` loads it) and the record.
    """
    model_id = parse_spec(base).target if base.startswith("clip:") else base
    skipped = Skipped()
    pairs: list[CaptionPair]
    data: dict[str, str | None]
    if pairs_file is not None:
        pairs, data = read_pairs_file(pairs_file), {"pairs_file": str(pairs_file)}
    elif source is not None:
        pairs, data = caption_pairs(load_split(source), skipped), source.describe()
    else:
        raise UsageError("give the training data: --bench (and --split/--data) or --pairs FILE")
    refuse_empty(len(pairs), str(pairs_file or source), skipped)
    hp = {
        "loss": "symmetric-infonce (equal captions share)",
        "group_batches": group_batches,
        "freeze_temperature": freeze_temperature,
    }
    keys = [(p.id, p.image.key, p.caption) for p in pairs]
    record = _open_record(
        out, _base_record("contrastive", model_id, loop, hp), data, keys, skipped, evaluation, fresh
    )
    model_dir = out / "model"
    device = loop.device
    _evaluations(out, record, evaluation, f"clip:{model_id}", name="before", seed=loop.seed, device=device)
    model, processor = clip_recipe.load_clip(model_id)
    model.logit_scale.requires_grad_(not freeze_temperature)
    max_len = int(getattr(model.config.text_config, "max_position_embeddings", 77) or 77)
    loss_fn = clip_recipe.make_clip_loss_fn(pairs, processor, max_len)

    def on_eval(step: int, current: Any) -> None:
        snap = clip_recipe.save_clip(current, processor, out / "snapshots" / f"step-{step}")
        _evaluations(
            out, record, evaluation, f"clip:{snap}", name=f"step-{step}", seed=loop.seed, device=device
        )

    groups = [p.group for p in pairs] if group_batches else None
    result = train_loop(
        model, len(pairs), loss_fn, out, loop, on_step=on_step, on_eval=on_eval, groups=groups
    )
    clip_recipe.save_clip(model, processor, model_dir)
    spec = f"clip:{model_dir}"
    record["output"] = {"model": spec, "weights_sha256": weights_digest(model_dir)}
    _evaluations(out, record, evaluation, spec, name="after", seed=loop.seed, device=device)
    _finish(out, record, result)
    return FinetuneResult(out, model_dir, spec, record)


def finetune_generative(
    base: str,
    out: Path,
    loop: LoopConfig,
    source: DataSource,
    *,
    target: sft.Target = "answer",
    lora: sft.LoraSettings | None = None,
    protocol: str = "default",
    evaluation: EvalSpec | None = None,
    fresh: bool = False,
    on_step: Callable[[int, float], None] | None = None,
) -> FinetuneResult:
    """LoRA-fine-tune a generative VLM on a benchmark split (see :mod:`.generative`).

    Args:
        base: The base model (``hf:DIR``, a folder or a hub id).
        out: The output folder (resumed when it holds this fine-tune).
        loop: Optimisation settings and seed.
        source: The training split (a benchmark, or ``local`` with a ``scopebench build`` output).
        target: ``answer`` or ``explanation+answer``.
        lora: LoRA settings.
        protocol: The prompt protocol, the same at training and evaluation.
        evaluation: The held-out split (its protocol is forced to ``protocol``).
        fresh: Delete ``out`` first.
        on_step: Called after every step.

    Returns:
        The output folder, the merged model folder (``hf:`` loads it) and the record.
    """
    lora = lora or sft.LoraSettings()
    model_id = parse_spec(base).target if base.startswith("hf:") else base
    if evaluation is not None and evaluation.protocol != protocol:
        evaluation = dataclasses.replace(evaluation, protocol=protocol)
    backend = sft.load_backend(model_id, protocol, loop.device)
    skipped = Skipped()
    examples = sft.sft_examples(backend, load_split(source), target, skipped)
    refuse_empty(len(examples), str(source), skipped)
    hp = {**asdict(lora), "target": target, "protocol": protocol}
    keys = [(e.id, "|".join(r.key for r in e.images), e.prompt + "\u241e" + e.target) for e in examples]
    record = _base_record("generative", model_id, loop, hp)
    record = _open_record(out, record, source.describe(), keys, skipped, evaluation, fresh)
    device = loop.device
    _evaluations(out, record, evaluation, f"hf:{model_id}", name="before", seed=loop.seed, device=device)
    model = sft.apply_lora(backend, lora, loop.seed)
    loss_fn = sft.make_sft_loss_fn(backend, examples)

    def on_eval(step: int, current: Any) -> None:
        snap = out / "snapshots" / f"step-{step}"
        current.save_pretrained(snap / "adapter")
        sft.save_merged(snap / "adapter", backend, snap / "model")
        snap_spec = f"hf:{snap / 'model'}"
        _evaluations(out, record, evaluation, snap_spec, name=f"step-{step}", seed=loop.seed, device=device)

    result = train_loop(model, len(examples), loss_fn, out, loop, on_step=on_step, on_eval=on_eval)
    model.save_pretrained(out / "adapter")
    backend.close()
    model_dir = sft.save_merged(out / "adapter", backend, out / "model")
    spec = f"hf:{model_dir}"
    record["output"] = {
        "model": spec,
        "adapter": str(out / "adapter"),
        "weights_sha256": weights_digest(model_dir),
    }
    _evaluations(out, record, evaluation, spec, name="after", seed=loop.seed, device=device)
    _finish(out, record, result)
    return FinetuneResult(out, model_dir, spec, record)


def _open_record(
    out: Path,
    record: dict[str, Any],
    data: Mapping[str, Any],
    keys: Sequence[tuple[str, str, str]],
    skipped: Skipped,
    evaluation: EvalSpec | None,
    fresh: bool,
) -> dict[str, Any]:
    """Complete a fine-tune's record (data, its fingerprint, evaluation plan, versions); start ``out``.

    :func:`_start` resumes ``out`` when it holds this fine-tune and refuses another one.
    """
    record["data"] = {
        **data,
        "n_examples": len(keys),
        "skipped": skipped.as_dict(),
        "fingerprint_sha256": fingerprint(keys),
    }
    record["evaluation_plan"] = _plan(evaluation)
    record["versions"] = _versions()
    return _start(out, record, fresh)


def _plan(evaluation: EvalSpec | None) -> dict[str, Any] | None:
    if evaluation is None:
        return None
    return {**asdict(evaluation), "source": evaluation.source.describe()}


def _fmt(row: dict[str, Any]) -> str:
    return f"{row['accuracy']:.3f} [{row['ci_low']:.3f}, {row['ci_high']:.3f}] (n={row['n']})"


def render_report(record: dict[str, Any]) -> str:
    """A Markdown before/after table of a finished fine-tune (accuracy, Wilson 95%, parse rate)."""
    lines = [f"# Fine-tune ({record['kind']}) of {record['base']['model']}", ""]
    lines.append(
        f"Seed {record['seed']}; data fingerprint `{record['data']['fingerprint_sha256'][:16]}`; "
        f"{record['data']['n_examples']} examples; steps {record['training']['steps']}; loss "
        f"{record['training']['first_loss']:.4f} → {record['training']['last_loss']:.4f}."
    )
    evals = record.get("evaluation") or {}
    if not evals:
        return "\n".join([*lines, "", "No held-out evaluation was asked for.", ""])
    names = list(evals)
    lines += [
        "",
        "Accuracy with 95% Wilson intervals (unanswered = wrong); parse rate = replies read as an option.",
        "",
        "| | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]
    lines.append("| all | " + " | ".join(_fmt(evals[n]) for n in names) + " |")
    tasks = sorted({t for n in names for t in evals[n]["by_task"]})
    for t in tasks:
        lines.append(
            f"| {t} | "
            + " | ".join(_fmt(evals[n]["by_task"][t]) if t in evals[n]["by_task"] else "–" for n in names)
            + " |"
        )
    lines.append("| parse rate | " + " | ".join(f"{evals[n]['parse_rate']:.3f}" for n in names) + " |")
    return "\n".join([*lines, ""])

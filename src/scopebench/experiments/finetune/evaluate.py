"""Before/after evaluation of a fine-tune on a held-out split, through the ordinary engine.

Each evaluation is an ordinary run directory (``OUT/eval/<name>/``, resumable, openable with
``scopebench report``). From its records we take accuracy with 95% Wilson intervals (unanswered
items count as wrong, the engine's default policy), per task, and the parse rate: the share of
items whose reply the parser mapped to an option (always 1 for score-based backends).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scopebench.engine import RunConfig, run_benchmark
from scopebench.experiments.finetune.data import DataSource
from scopebench.items import Record
from scopebench.scoring.accuracy import outcomes
from scopebench.scoring.intervals import proportion_ci
from scopebench.store import load_run

__all__ = ["EvalSpec", "evaluate_model", "summarise_records"]


@dataclass(frozen=True)
class EvalSpec:
    """The held-out evaluation of a fine-tune.

    Attributes:
        source: The held-out benchmark split.
        protocol: The prompt protocol (the same one the training prompts were rendered with).
        mode: The backend mode (``generate``/``choice-logprob`` for ``hf:``; empty for ``clip:``).
        limit: Evaluate only the first N items.
        batch_size: Items per model call.
        model_args: Extra ``--model-arg`` settings for the backend.
    """

    source: DataSource
    protocol: str = "default"
    mode: str | None = None
    limit: int | None = None
    batch_size: int | None = None
    model_args: tuple[tuple[str, Any], ...] = ()


def _rate(values: Sequence[float]) -> dict[str, Any]:
    ci = proportion_ci(values)
    n = len(values)
    return {
        "n": n,
        "correct": int(sum(values)),
        "accuracy": float(sum(values) / n) if n else float("nan"),
        "ci_low": ci.low,
        "ci_high": ci.high,
        "ci_method": ci.method,
    }


def summarise_records(records: Sequence[Record]) -> dict[str, Any]:
    """Accuracy (Wilson 95%), per-task accuracy and parse rate of a run's MCQ records."""
    mcq = [r for r in records if r.kind == "mcq"]
    values = outcomes(mcq, "wrong")
    tasks: dict[str, list[float]] = {}
    for r, v in zip(mcq, values, strict=True):
        tasks.setdefault(r.task, []).append(v)
    parsed = [1.0 if r.status == "ok" and r.choice is not None else 0.0 for r in mcq]
    return {
        **_rate(values),
        "parse_rate": float(sum(parsed) / len(parsed)) if parsed else float("nan"),
        "by_task": {t: _rate(v) for t, v in sorted(tasks.items())},
    }


def evaluate_model(
    spec: str, evaluation: EvalSpec, run_dir: Path, *, seed: int, device: str
) -> dict[str, Any]:
    """Run ``spec`` on the held-out split (an ordinary, resumable run) and summarise it."""
    config = RunConfig(
        benchmark=evaluation.source.benchmark,
        data=evaluation.source.data,
        model=spec,
        split=evaluation.source.split,
        limit=evaluation.limit,
        seed=seed,
        protocol=evaluation.protocol,
        device=device,
        batch_size=evaluation.batch_size,
        mode=evaluation.mode,
        model_args=dict(evaluation.model_args),
    )
    result = run_benchmark(config, run_dir)
    summary = summarise_records(load_run(result.run_dir).records)
    summary["run_dir"] = str(result.run_dir)
    summary["model"] = spec
    return summary

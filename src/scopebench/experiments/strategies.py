"""The prompting-strategy sweep (``scopebench strategies``): one model under several strategies.

Each strategy (:mod:`scopebench.models.strategies`: direct, chain-of-thought, self-refine…) is an
ordinary run under ``OUT/<strategy>/``, so the sweep resumes like any run; the model is loaded once
and wrapped by each strategy. Beside accuracy, each run gets MicroVQA's decoupling table
(:func:`scopebench.scoring.decoupling.decoupling_table`): reasoning accuracy split by whether the
figure's perception questions were answered correctly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from scopebench.engine import RunConfig, RunResult, run_benchmark
from scopebench.models import load_model
from scopebench.models.strategies import strategy_steps
from scopebench.scoring.decoupling import DecouplingRow, decoupling_table
from scopebench.store import load_run

__all__ = ["StrategyRun", "run_strategy_sweep"]


@dataclass(frozen=True)
class StrategyRun:
    """One strategy's run in a sweep.

    Attributes:
        strategy: The strategy's name.
        result: What :func:`scopebench.engine.run_benchmark` returned (metrics, run directory).
        decoupling: The run's decoupling rows (empty groups included).
    """

    strategy: str
    result: RunResult
    decoupling: list[DecouplingRow]


def run_strategy_sweep(
    base: RunConfig, strategies: Sequence[str], out: str | Path, *, fresh: bool = False, seed: int = 0
) -> list[StrategyRun]:
    """Run ``base`` once per strategy under ``out/<strategy>/``, loading the model once.

    Args:
        base: The run configuration; its ``strategy`` is replaced by each of ``strategies``.
        strategies: Strategy names; all are checked before any model work.
        out: The sweep folder.
        fresh: Discard stored results of other configurations (as ``scopebench run --fresh``).
        seed: Seed of the decoupling tables' bootstrap.

    Returns:
        One :class:`StrategyRun` per strategy, in the order given.

    Raises:
        ModelSpecError: For an unknown strategy name (before anything runs).
    """
    for name in strategies:
        strategy_steps(name)  # fail on a typo before any model work
    # One model for every strategy: the strategies wrap it, so its weights load once.
    backend = load_model(base.model, base.model_options())
    try:
        results = [
            run_benchmark(replace(base, strategy=n), Path(out) / n, fresh=fresh, backend=backend)
            for n in strategies
        ]
    finally:
        backend.close()
    sweep = []
    for name, res in zip(strategies, results, strict=True):
        run = load_run(res.run_dir)
        sweep.append(StrategyRun(name, res, decoupling_table(run.records, run.items, seed=seed)))
    return sweep

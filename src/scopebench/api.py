"""The public Python API: evaluate a model on a benchmark from a notebook or a script.

::

    import scopebench

    results = scopebench.evaluate("demo", "random", out="runs/demo-random")
    results.accuracy, results.interval      # the numbers `scopebench run` prints
    results.to_pandas()                     # one row per record

Each function is a thin layer over what the CLI runs (:func:`scopebench.engine.run_benchmark`,
:func:`scopebench.store.rundir.load_run`), so a run made here is the run directory
``scopebench run`` makes, with the same numbers, and each can resume or report the other's runs.
Documented in docs/api.md.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from scopebench.benchmarks import LoadedBenchmark, get_benchmark
from scopebench.config import ModelConfig, ReportConfig, RunConfig
from scopebench.engine import run_benchmark
from scopebench.errors import UsageError
from scopebench.models import Backend, ModelSpec
from scopebench.models import load_model as _load_backend
from scopebench.report import write_run_outputs
from scopebench.results import Results
from scopebench.scoring.compare import compare_runs
from scopebench.store.rundir import load_run as _load_run_dir
from scopebench.transforms import transform_hook

__all__ = ["compare", "evaluate", "load_benchmark", "load_model", "load_run"]

_RUN_FLAGS = ("fresh", "retry_errors", "rejudge")
#: RunConfig fields that describe the model; taken from a Backend handed to :func:`evaluate`.
_MODEL_FIELDS = ("batch_size", "mode", "no_image", "device", "base_url", "model_args")


def evaluate(
    benchmark: str,
    model: str | Backend,
    *,
    data: str | Path | None = None,
    split: str | None = None,
    limit: int | None = None,
    out: str | Path | None = None,
    protocol: str = "default",
    seed: int = 0,
    **options: Any,
) -> Results:
    """Run (or resume) ``model`` on ``benchmark``, exactly as ``scopebench run`` does.

    Args:
        benchmark: A benchmark name (``scopebench benchmarks``), an entry-point plugin's name, or
            ``path/to/file.py:ClassName`` (docs/extending.md).
        model: A model spec (``random``, ``clip:vinid/plip``, a preset…) or a backend built by
            :func:`load_model` (its weights are then loaded once for several runs; the caller
            closes it). With a backend, its options are the run's: pass none of ``device``,
            ``batch_size``, ``mode``, ``no_image``, ``base_url``, ``model_args``.
        data: The data location (``--data``); not needed for ``demo``.
        split: The split (default: the benchmark's default).
        limit: Evaluate only the first ``limit`` items.
        out: The run directory (resumed when it holds this run). Default: a new temporary folder,
            which is kept (its path is :attr:`Results.run_dir`).
        protocol: ``default`` or the benchmark's ``owner`` protocol.
        seed: Seed of every random choice and bootstrap (recorded in ``run.json``).
        **options: Any other run option, named like the fields of
            :class:`scopebench.config.RunConfig` and :class:`~scopebench.config.EngineConfig`
            (``batch_size``, ``device``, ``mode``, ``executor``, ``no_image``, ``model_args``,
            ``exclude_ids``, ``judge``…), and ``fresh``, ``retry_errors``, ``rejudge`` as in
            ``scopebench run``.

    Returns:
        The run's :class:`~scopebench.results.Results`, read back from its run directory.

    Raises:
        UsageError: For an option ``scopebench run`` has not, or model options given with a backend.
        ScopebenchError: For everything ``scopebench run`` refuses (unknown benchmark or model,
            missing data, a run directory holding another configuration…).
    """
    flags = {k: bool(options.pop(k)) for k in _RUN_FLAGS if k in options}
    unknown = sorted(set(options) - set(RunConfig.option_names()))
    if unknown:
        known = sorted(set(RunConfig.option_names()) | set(_RUN_FLAGS))
        raise UsageError(f"evaluate() has no option {', '.join(unknown)}; options: {', '.join(known)}")
    backend: Backend | None = None
    if isinstance(model, Backend):
        backend, model = model, model.spec
        options = {**_backend_options(backend, options, seed=seed, protocol=protocol), **options}
    config = RunConfig.from_options(
        benchmark,
        str(data) if data is not None else "",
        model,
        split=split,
        limit=limit,
        seed=seed,
        protocol=protocol,
        **options,
    )
    run_dir = Path(out) if out is not None else Path(tempfile.mkdtemp(prefix="scopebench-run-"))
    # The CLI's metrics (intervals seeded with the run's seed, report files) and its cache key, so
    # the run directory is the one `scopebench run` writes and each reuses the other's metrics.
    result = run_benchmark(
        config,
        run_dir,
        on_metrics=lambda d: write_run_outputs(d, ReportConfig(seed=seed)),
        metrics_key=f"report:seed={seed}",
        backend=backend,
        # A transform in the options is applied by the probe layer's hook, as the probes do.
        item_hook=transform_hook(config.transform, config.seed),
        fresh=flags.get("fresh", False),
        retry_errors=flags.get("retry_errors", False),
        rejudge=flags.get("rejudge", False),
    )
    return load_run(result.run_dir)


def _backend_options(
    backend: Backend, options: dict[str, Any], *, seed: int, protocol: str
) -> dict[str, Any]:
    """The run options a prebuilt backend implies; refuses options that would contradict it."""
    given = sorted(k for k in _MODEL_FIELDS if k in options)
    if given:
        raise UsageError(
            f"{', '.join(given)} describe the model, and the model passed is already built with its "
            f"options; pass them to load_model({backend.spec!r}, …) instead"
        )
    opts = backend.options
    for name, value in (("seed", seed), ("protocol", protocol)):
        if getattr(opts, name) != value:
            raise UsageError(
                f"the backend was built with {name}={getattr(opts, name)!r} and this run has "
                f"{name}={value!r}; pass {name}={getattr(opts, name)!r} or build the backend with "
                f"load_model({backend.spec!r}, {name}={value!r})"
            )
    return {
        "batch_size": opts.batch_size,
        "mode": opts.mode,
        "no_image": opts.no_image,
        "device": opts.device,
        "base_url": opts.base_url,
        "model_args": dict(opts.extra),
    }


def load_benchmark(name: str, data: str | Path | None = None, split: str | None = None) -> LoadedBenchmark:
    """Load a benchmark's items, as ``scopebench validate`` / ``run`` load them.

    Args:
        name: A benchmark name, an entry-point plugin's name, or ``path/to/file.py:ClassName``.
        data: The data location (not needed for ``demo``).
        split: The split (default: the benchmark's default).

    Returns:
        The :class:`~scopebench.benchmarks.LoadedBenchmark`: ``.items`` (every item, in order),
        ``.problems`` (everything found wrong in the data), ``.fingerprint``.
    """
    return get_benchmark(name).load(str(data) if data is not None else "", split=split)


def load_model(spec: str | ModelSpec, **options: Any) -> Backend:
    """Build a model backend (weights are loaded now; call ``.close()`` when done).

    Args:
        spec: A model spec (``random``, ``hf:Qwen/Qwen2-VL-2B-Instruct``, a preset, a plugin
            scheme…; ``scopebench models`` lists them), or a
            :class:`~scopebench.models.ModelSpec` already parsed by
            :func:`~scopebench.models.parse_spec` (it is not parsed again).
        **options: Fields of :class:`~scopebench.config.ModelConfig` (``seed``, ``device``,
            ``batch_size``, ``no_image``, ``protocol``, ``mode``, ``base_url``); any other name is
            a backend option (``--model-arg name=value``), checked by the backend.

    Returns:
        The :class:`~scopebench.models.Backend`; ``predict(items)`` answers a list of items.
    """
    known = {f.name for f in dataclasses.fields(ModelConfig)} - {"extra"}
    extra = {k: v for k, v in options.items() if k not in known}
    base = {k: v for k, v in options.items() if k in known}
    return _load_backend(spec, ModelConfig(**base, extra=extra))


def load_run(path: str | Path) -> Results:
    """Read a run directory (made by ``scopebench run`` or :func:`evaluate`) without writing to it.

    Raises:
        DataNotFoundError: When ``path`` is not a run directory.
        StoreDamagedError: When its store is damaged (the message says how to salvage it).
    """
    return Results.from_run(_load_run_dir(path))


def compare(
    runs: Sequence[Results | str | Path],
    *,
    seed: int = 0,
    resamples: int = 1000,
    policy: Literal["wrong", "exclude"] = "wrong",
) -> dict[str, Any]:
    """Leaderboard and paired tests of runs of one benchmark, as ``scopebench compare`` computes.

    Args:
        runs: Results or run directories (at least one).
        seed: Seed of every bootstrap.
        resamples: Bootstrap resamples.
        policy: ``wrong`` or ``exclude``: what unscorable records count as.

    Returns:
        ``compare.json``'s content: ``leaderboard`` (best first), ``pairs`` (accuracy difference
        with its 95% paired-bootstrap interval and McNemar's exact p-value per pair), ``warnings``.
    """
    if policy not in ("wrong", "exclude"):
        raise UsageError(f"policy must be 'wrong' or 'exclude', not {policy!r}")
    dirs = [r.run_dir if isinstance(r, Results) else Path(r) for r in runs]
    return compare_runs(dirs, ReportConfig(seed=seed, resamples=resamples, policy=policy))

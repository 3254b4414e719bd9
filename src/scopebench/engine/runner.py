"""Run a benchmark through a backend into a durable, resumable run directory.

The flow: load items → check/record provenance → skip what the store already has → the stages
**plan** (:meth:`Backend.plan <scopebench.models.Backend.plan>` orders the work) → **render** (each
item's :class:`~scopebench.protocols.Request`) → **execute** (the executor hands batches of requests
to the backend) → **parse** (:func:`~scopebench.engine.parse.parse`: each response, read with its
request's labels, becomes a :class:`~scopebench.items.Record`) → **store** (each batch committed) →
compute metrics. Item transforms (probes) happen before: :func:`load_items` takes them as a hook.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scopebench.benchmarks import LoadedBenchmark, get_benchmark
from scopebench.config import RunConfig
from scopebench.display import progress
from scopebench.engine.executors import AutoBatchExecutor, Executor, LocalExecutor, RayExecutor
from scopebench.engine.judging import (
    build_judge,
    check_judge_config,
    check_judge_spec,
    judge_provenance,
    judge_unparsed,
)
from scopebench.engine.limits import apply_limit, check_limit, select_tasks
from scopebench.engine.parse import guarded_parse, parse
from scopebench.engine.provenance import package_versions, run_provenance
from scopebench.errors import (
    ConfigMismatchError,
    ModelSpecError,
    NoItemsError,
    RunAbortedError,
    RunDirReadOnlyError,
    RunInterruptedError,
    ScopebenchError,
)
from scopebench.items import Item, Record, RecordStatus, Sample
from scopebench.models import Backend, ModelSpec, Response, load_model, parse_spec
from scopebench.models.strategies import StrategyBackend
from scopebench.protocols import Request, detection_class, resolve_protocol
from scopebench.scoring import compute_metrics
from scopebench.scoring.metrics import METRICS_SCHEMA_VERSION
from scopebench.store.lock import RunLock, check_unlocked
from scopebench.store.rundir import CONFIG_FILE, METRICS_FILE, RECORDS_JSONL, STORE_FILE, load_run
from scopebench.store.runstore import RunStore

__all__ = ["ItemHook", "RunConfig", "RunResult", "load_items", "make_record", "run_benchmark"]

#: Transforms a run's items after loading and before rendering (the probe layer's corruptions,
#: noise images, question swaps…): deterministic, keeping every item's id.
ItemHook = Callable[[list[Item]], list[Item]]

log = logging.getLogger(__name__)

# Keys of run.json that must match for a run directory to be resumed.
_IDENTITY_KEYS = (
    "benchmark",
    "data_fingerprint",
    "split",
    "tasks",
    "exclude_fingerprint",
    "transform",
    "strategy",
    "seed",
    "model",
    "model_identity",
    "protocol",
    "mode",
    "no_image",
    "gen_args",
    "parser_version",
    "box_repair",
    "box_parser_version",
    "owner_protocol_version",
)


@dataclass(slots=True)
class RunResult:
    """What :func:`run_benchmark` returns.

    Attributes:
        run_dir: The run directory.
        metrics: The metrics dict written to ``metrics.json``.
        n_items: Items in the run.
        n_new: Records produced by this invocation (0 for a finished run re-run).
        n_skipped_kind: Items the backend cannot answer (e.g. detection items for an MCQ model).
        seconds: Wall time of this invocation.
    """

    run_dir: Path
    metrics: dict[str, Any]
    n_items: int
    n_new: int
    n_skipped_kind: int
    seconds: float


def load_items(config: RunConfig, item_hook: ItemHook | None = None) -> tuple[LoadedBenchmark, list[Item]]:
    """Load the benchmark and select the run's items (split, exclusions, limit), then ``item_hook``.

    Args:
        config: The run.
        item_hook: Transforms the selected items before anything is rendered: the probe layer's
            ``config.transform`` (:func:`scopebench.transforms.transform_hook`). The engine
            applies no transform of its own.

    Raises:
        ScopebenchError: When ``config.transform`` is set but no ``item_hook`` applies it (the run
            would silently evaluate the untransformed items under the transform's name).
    """
    loaded = get_benchmark(config.benchmark).load(config.data, split=config.split)
    items = [it for it in loaded.items if it.id not in config.exclude_ids]
    if config.exclude_ids:
        unknown = config.exclude_ids - {it.id for it in loaded.items}
        if unknown:
            # A list from another benchmark or split excludes nothing; say so rather than run it all.
            names = sorted(unknown)
            log.warning(
                "%d of the %d excluded item ids are not in %s%s: %s%s%s",
                len(unknown),
                len(config.exclude_ids),
                config.benchmark,
                f" {config.split}" if config.split else "",
                ", ".join(names[:10]),
                f" … and {len(names) - 10} more" if len(names) > 10 else "",
                "; nothing was excluded" if len(unknown) == len(config.exclude_ids) else "",
            )
    if config.tasks:
        items = select_tasks(items, config.tasks, config.benchmark)
    if config.limit is not None:
        items = apply_limit(items, config.limit, config.seed)
    if config.transform and item_hook is None:
        raise ScopebenchError(
            f"the run names the item transform {config.transform!r}, which the engine does not apply "
            "itself; pass item_hook=scopebench.transforms.transform_hook(config.transform, "
            "config.seed) (the probes do), or leave RunConfig.transform unset"
        )
    if item_hook is not None:
        items = item_hook(items)
    return loaded, items


#: Schemes whose models always score the image against one caption per option: no text-only mode.
_CONTRASTIVE_SCHEMES = frozenset({"clip", "openclip"})


def _refuse_contrastive_no_image(model: str) -> None:
    raise ModelSpecError(
        f"a text-only run (--no-image, or a text-only probe) cannot use {model}: a contrastive model "
        "always compares the image with one caption per option and has no text-only mode, so the "
        "run would silently equal one with images. Leave --no-image out (or this model out of the "
        "probe), or use `scopebench probe noise` to take the image's information away."
    )


def _refuse_no_items(config: RunConfig, loaded: LoadedBenchmark, items: Sequence[Item]) -> None:
    """Stop a run that would evaluate nothing: an empty metrics file is no result."""
    if items:
        return
    if not loaded.items:
        why = (
            f"{config.benchmark} has no usable item"
            + (f" in split {config.split!r}" if config.split else "")
            + f" ({len(loaded.problems)} problem(s) found while loading)"
        )
        advice = f"Run `scopebench validate {config.benchmark} --data {config.data}` to see why"
    else:
        why = f"all {len(loaded.items)} items of {config.benchmark} are excluded by --exclude"
        advice = "Check the --exclude file"
    raise NoItemsError(f"nothing to evaluate: {why}; no run directory was written. {advice}.")


def _check_mode(config: RunConfig, backend: Backend) -> None:
    if config.no_image and backend.mode == "contrastive":
        _refuse_contrastive_no_image(config.model)  # a contrastive backend under another scheme
    # Backends with several modes check --mode themselves; the others must not ignore it silently.
    if config.mode is not None and config.mode != backend.mode:
        raise ModelSpecError(
            f"--mode {config.mode} does not apply to {backend.spec!r}, which answers in "
            f"'{backend.mode}' mode; leave --mode out (it chooses between generate and "
            "choice-logprob for hf: models)"
        )


def check_config(config: RunConfig, spec: ModelSpec | None = None) -> None:
    """Refuse values no run can honour, before any data or model is loaded.

    Args:
        config: The run.
        spec: ``config.model`` already parsed (:func:`run_benchmark` parses it once); parsed
            here when ``None``.

    Raises:
        ModelSpecError: For a bad limit, batch size, failure fraction or protocol name,
            ``no_image`` with a contrastive model (which has no text-only mode), or judge options
            without a judge.
    """
    _check_limit_value(config.limit)
    _check_batch_size(config)
    if not 0.0 <= config.max_fail_fraction <= 1.0:
        raise ModelSpecError(f"--max-fail-fraction must be between 0 and 1 (got {config.max_fail_fraction})")
    resolve_protocol(config.protocol, config.benchmark)
    if config.no_image and (spec or parse_spec(config.model)).scheme in _CONTRASTIVE_SCHEMES:
        _refuse_contrastive_no_image(config.model)
    if config.judge_args and not config.judge:
        raise ModelSpecError(
            "--judge-arg sets options of the judge; add --judge SPEC, or leave --judge-arg out"
        )


def _check_limit_value(limit: float | None) -> None:
    if limit is None or (isinstance(limit, int) and not isinstance(limit, bool) and limit >= 1):
        return
    if isinstance(limit, float) and 0 < limit < 1:
        return
    raise ModelSpecError(
        f"--limit must be at least 1 (a number of items) or a fraction between 0 and 1 (got {limit!r})"
    )


def _check_batch_size(config: RunConfig) -> None:
    size = config.batch_size
    if size == "auto":
        if config.engine.executor != "local":
            raise ModelSpecError(
                "--batch-size auto sizes the calls of this process's model; with --executor "
                f"{config.engine.executor} give a number (each worker's batch), or run locally"
            )
        return
    if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 1):
        raise ModelSpecError(f"--batch-size must be at least 1 (a whole number) or auto (got {size!r})")


def build_backend(config: RunConfig, spec: ModelSpec | None = None) -> Backend:
    """The run's backend: the model, wrapped in a chain-of-thought strategy when one is set.

    Args:
        config: The run.
        spec: ``config.model`` already parsed; parsed here when ``None`` (a Ray worker builds
            its own backend from the config alone).
    """
    backend = load_model(config.model if spec is None else spec, config.model_options())
    _check_mode(config, backend)
    if config.strategy:
        backend = StrategyBackend(
            backend, config.strategy, protocol=config.protocol, no_image=config.no_image
        )
    return backend


def _run_spec(config: RunConfig, backend: Backend | None, given: ModelSpec | None) -> ModelSpec:
    """``config.model`` parsed: the one parse of a run (every later step takes this ModelSpec).

    A caller's parse of this same spec (``model_spec=``, or the one a backend built by
    ``load_model`` carries; its raw text or the resolved text ``evaluate`` passes on) is reused.

    Raises:
        ScopebenchError: When ``given`` is the parse of another spec than ``config.model``.
    """
    if given is not None and config.model not in (given.raw, given.spec):
        raise ScopebenchError(
            f"model_spec is the parse of {given.raw!r}, and this run's model is {config.model!r}; "
            "pass parse_spec(config.model), or leave model_spec out"
        )
    known = given or (None if backend is None else backend.model_spec)
    if known is not None and config.model in (known.raw, known.spec):
        return known
    return parse_spec(config.model)


def _adopt_backend(config: RunConfig, backend: Backend, spec: ModelSpec) -> Backend:
    """Check that a caller's backend is the one ``config`` would build, and wrap its strategy."""
    theirs = backend.model_spec or parse_spec(backend.spec)  # a backend built from a bare string
    same_model = (theirs.scheme, theirs.target) == (spec.scheme, spec.target)
    if not same_model or backend.options != config.model_options():
        raise ScopebenchError(
            f"the backend handed to this run was built for {backend.spec!r} with other options than "
            f"the run's ({config.model!r}); build it with load_model(config.model, config.model_options())"
        )
    _check_mode(config, backend)
    if config.strategy:
        return StrategyBackend(backend, config.strategy, protocol=config.protocol, no_image=config.no_image)
    return backend


def _check_config(run_dir: Path, new: dict[str, Any], fresh: bool, backend: Backend) -> None:
    cfg_path = run_dir / CONFIG_FILE
    if fresh and not cfg_path.is_file():
        # No run.json, so not known to be a run folder: only a (damaged) store goes, the way out
        # its message names; other files here may be the user's.
        for name in (STORE_FILE, STORE_FILE + "-wal", STORE_FILE + "-shm"):
            (run_dir / name).unlink(missing_ok=True)
        return
    if fresh:
        _discard(run_dir)
        return
    if not cfg_path.is_file():
        return
    old = json.loads(cfg_path.read_text(encoding="utf-8"))
    diffs = [
        f"  {k}: stored {old.get(k)!r}, now {new.get(k)!r}"
        for k in _IDENTITY_KEYS
        if json.dumps(old.get(k), sort_keys=True) != json.dumps(new.get(k), sort_keys=True)
    ]
    if diffs:
        raise ConfigMismatchError(
            f"the run directory {run_dir} holds results of a different configuration:\n"
            + "\n".join(diffs)
            + "\nUse another --out, or pass --fresh to discard the stored results and start again."
        )
    if check_limit(old, new, backend, run_dir):
        _discard(run_dir)


def _discard(run_dir: Path) -> None:
    """Delete a run folder's stored results and report files (``--fresh``); other files stay."""
    for name in (
        CONFIG_FILE,
        STORE_FILE,
        STORE_FILE + "-wal",
        STORE_FILE + "-shm",
        METRICS_FILE,
        RECORDS_JSONL,
    ):
        (run_dir / name).unlink(missing_ok=True)
    # The report files of the discarded results too (tables, plots), so none outlives them.
    for pattern in ("metrics.*", "*.png", "*.svg", "records.parquet"):
        for path in run_dir.glob(pattern):
            path.unlink(missing_ok=True)


def run_benchmark(
    config: RunConfig,
    out_dir: str | Path,
    *,
    fresh: bool = False,
    retry_errors: bool = False,
    on_metrics: Callable[[Path], dict[str, Any]] | None = None,
    backend: Backend | None = None,
    metrics_key: str | None = None,
    rejudge: bool = False,
    item_hook: ItemHook | None = None,
    model_spec: ModelSpec | None = None,
) -> RunResult:
    """Run (or resume) ``config`` into ``out_dir``.

    Args:
        config: What to run.
        out_dir: The run directory (created if needed).
        fresh: Discard results stored with a different configuration instead of refusing.
        retry_errors: Redo items whose stored record is an ``error`` (e.g. after a server outage).
        on_metrics: Computes and writes the run's metrics from the run directory (the reporting
            stage); the default writes the basic accuracy tables.
        backend: An already-built model for this run's ``config.model`` and options, so a caller
            that runs many conditions of one model (probes, sweeps) loads its weights once. The
            caller keeps ownership: the run does not close it.
        metrics_key: Names what ``on_metrics`` computes (e.g. its seed and resamples), so a finished
            run that gains no record reuses its ``metrics.json`` instead of recomputing it. The
            default metrics have their own key; a custom ``on_metrics`` without a key always runs.
        rejudge: Drop the judge verdicts stored in ``out_dir`` first, so another judge (or none)
            may take over (:func:`~scopebench.engine.judging.check_judge_config`).
        item_hook: Applies ``config.transform`` to the loaded items (see :func:`load_items`).
        model_spec: ``config.model`` as the caller already parsed it (a sweep that checked its
            specs first), so the run does not parse it again; by default the run parses it once.

    Returns:
        A :class:`RunResult`.

    Raises:
        ConfigMismatchError: When ``out_dir`` holds a different configuration and not ``fresh``,
            or verdicts of another judge and not ``rejudge``.
        NoItemsError: When no item is left to evaluate (none usable, all excluded, or none of a
            kind the model answers); nothing is written.
        RunLockedError: When another process is writing to ``out_dir`` (refused at once).
        RunDirReadOnlyError: When ``out_dir`` cannot be written.
        StoreDamagedError: When ``out_dir``'s store is damaged (the message says how to salvage it).
        RunAbortedError: When too many items failed, or on Ctrl-C (finished work is kept).
        ScopebenchError: When ``backend`` was built for another model or other options, or
            ``model_spec`` is not the parse of ``config.model``.
    """
    start = time.perf_counter()
    # The model spec is parsed here, once (a typo in --model fails before minutes of data loading);
    # every later step takes the ModelSpec. Likewise a typo'd or non-generative --judge.
    spec = _run_spec(config, backend, model_spec)
    judge_spec = check_judge_spec(config.judge) if config.judge else None
    check_config(config, spec)
    run_dir = Path(out_dir)
    check_unlocked(run_dir)  # a second writer is refused before data and weights are loaded
    loaded, items = _load_run_items(config, run_dir, item_hook)
    owned = backend is None
    backend = build_backend(config, spec) if backend is None else _adopt_backend(config, backend, spec)
    _refuse_unanswerable(backend, items, owned)
    judge = _build_judge_or_close(config, backend, owned, judge_spec)
    # Only now: a typo'd model, a missing key or device fails without leaving an empty run folder.
    # One writer per folder, taken before anything is read or deleted (--fresh included), held
    # until the metrics are written.
    with _take_lock(run_dir, backend if owned else None, judge):
        try:
            provenance = run_provenance(config, loaded, items, backend, spec)
            _write_provenance(
                run_dir, provenance, judge_provenance(judge), backend, fresh=fresh, rejudge=rejudge
            )
            key = metrics_key if on_metrics is not None else "basic"
            n_new, n_skipped, stamp, cached = _answer_and_store(
                config, backend, judge, items, run_dir, retry_errors, item_hook, key
            )
        finally:
            for owned_backend in ([backend] if owned else []) + ([judge] if judge is not None else []):
                owned_backend.close()
        metrics = cached if cached is not None else _write_metrics(run_dir, on_metrics, stamp)
    return RunResult(run_dir, metrics, len(items), n_new, n_skipped, time.perf_counter() - start)


def _write_provenance(
    run_dir: Path, provenance: dict[str, Any], judge: Any, backend: Backend, *, fresh: bool, rejudge: bool
) -> None:  # fmt: skip
    """Check ``run_dir`` holds this configuration and judge (or discard it), then write ``run.json``."""
    provenance["judge"] = judge
    _check_config(run_dir, provenance, fresh, backend)
    with RunStore(run_dir / STORE_FILE, check=True) as store:
        check_judge_config(run_dir, judge, store, rejudge=rejudge)
    (run_dir / CONFIG_FILE).write_text(json.dumps(provenance, indent=2, sort_keys=True), encoding="utf-8")


def _load_run_items(
    config: RunConfig, run_dir: Path, item_hook: ItemHook | None
) -> tuple[LoadedBenchmark, list[Item]]:
    """The run's items; records the loader could not use are named, and no item at all is refused."""
    loaded, items = load_items(config, item_hook)
    unusable = [p for p in loaded.problems if p.severity == "error"]
    if unusable:
        log.warning(
            "%d record(s) of %s could not be used and are not in this run (listed in %s; "
            "`scopebench validate %s` explains each), e.g. %s",
            len(unusable),
            config.benchmark,
            run_dir / CONFIG_FILE,
            config.benchmark,
            unusable[0],
        )
    _refuse_no_items(config, loaded, items)
    return loaded, items


def _refuse_unanswerable(backend: Backend, items: Sequence[Item], owned: bool) -> None:
    """Stop a run whose model answers none of its items' kinds (closing the run's own backend)."""
    if any(it.kind in backend.kinds for it in items):
        return
    if owned:
        backend.close()
    kinds = "/".join(sorted({it.kind for it in items}))
    raise NoItemsError(
        f"{backend.spec} answers {'/'.join(backend.kinds)} items, and all {len(items)} items of "
        f"this run are {kinds} items: nothing to evaluate, no run directory written. "
        "Choose a model for this kind of item (`scopebench models`)."
    )


def _take_lock(run_dir: Path, owned: Backend | None, judge: Backend | None) -> RunLock:
    """Create ``run_dir`` and take its lock; on failure close the run's own backend and judge."""
    lock = RunLock(run_dir)
    try:
        try:
            run_dir.mkdir(parents=True, exist_ok=True)
        except PermissionError as exc:
            raise RunDirReadOnlyError(
                f"cannot create the run directory {run_dir} ({exc.strerror}); choose another --out"
            ) from exc
        lock.acquire()
    except BaseException:
        if owned is not None:
            owned.close()
        if judge is not None:
            judge.close()
        raise
    return lock


def _answer_and_store(
    config: RunConfig,
    backend: Backend,
    judge: Backend | None,
    items: Sequence[Item],
    run_dir: Path,
    retry_errors: bool,
    item_hook: ItemHook | None,
    key: str | None,
) -> tuple[int, int, dict[str, Any] | None, dict[str, Any] | None]:
    """Answer (and judge) what the store lacks; returns (new, skipped, metrics stamp, cached metrics)."""
    with RunStore(run_dir / STORE_FILE) as store:
        try:
            n_new, n_skipped = _execute(config, backend, items, store, retry_errors, item_hook)
            if judge is not None:
                judge_unparsed(config, judge, backend, items, store)
        except RunAbortedError:
            # Stopped (Ctrl-C, SIGTERM, too many failures): the export still shows what was kept.
            store.export_jsonl(run_dir / RECORDS_JSONL)
            raise
        stamp = None if key is None else _metrics_stamp(key, store.generation())
        cached = _cached_metrics(run_dir, store, stamp)
        if cached is None:
            store.export_jsonl(run_dir / RECORDS_JSONL)
    return n_new, n_skipped, stamp, cached


def _write_metrics(
    run_dir: Path, on_metrics: Callable[[Path], dict[str, Any]] | None, stamp: dict[str, Any] | None
) -> dict[str, Any]:
    """Compute the metrics (the caller's reporting stage, or the basic tables) and stamp the store."""
    metrics = (on_metrics or _basic_metrics)(run_dir)
    if stamp is not None:
        with RunStore(run_dir / STORE_FILE) as store:
            store.set_meta("metrics_stamp", stamp)
    return metrics


def _build_judge_or_close(
    config: RunConfig, backend: Backend, owned: bool, spec: ModelSpec | None
) -> Backend | None:
    """The run's judge backend (``None`` without ``--judge``); a failure closes the run's own backend."""
    if not config.judge:
        return None
    try:
        return build_judge(config, spec)
    except BaseException:
        if owned:
            backend.close()
        raise


def _metrics_stamp(key: str, generation: int) -> dict[str, Any]:

    return {
        "key": key,
        "generation": generation,
        "schema": METRICS_SCHEMA_VERSION,
        "scopebench": package_versions().get("scopebench", "unknown"),
    }


def _cached_metrics(run_dir: Path, store: RunStore, stamp: dict[str, Any] | None) -> dict[str, Any] | None:
    """The stored metrics when they were computed the same way from exactly what the store holds.

    Re-running a finished run then costs loading the items and checking the configuration, not a
    bootstrap per group, a re-export and (from the CLI) new plots.
    """
    if stamp is None or store.get_meta("metrics_stamp") != stamp:
        return None
    paths = (run_dir / METRICS_FILE, run_dir / RECORDS_JSONL)
    if not all(p.is_file() for p in paths):
        return None
    try:
        metrics: dict[str, Any] = json.loads(paths[0].read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    return metrics


def _basic_metrics(run_dir: Path) -> dict[str, Any]:

    # Recomputed from the store: a stale metrics file that is unreadable (a run killed while writing
    # it) must not stop the resume, as load_run would otherwise parse it.
    (run_dir / METRICS_FILE).unlink(missing_ok=True)
    run = load_run(run_dir)
    # The same metrics as the CLI's (item summaries feed the metadata tables, the owner
    # aggregations and the localization splits), without its report files.
    metrics = compute_metrics(
        run.records,
        benchmark=run.benchmark,
        items=run.items,
        seed=int(run.config.get("seed") or 0),
        protocol=str(run.config.get("protocol") or "default"),
    )
    (run_dir / METRICS_FILE).write_text(json.dumps(metrics, indent=2), encoding="utf-8")
    return metrics


def _execute(
    config: RunConfig,
    backend: Backend,
    items: Sequence[Item],
    store: RunStore,
    retry_errors: bool,
    item_hook: ItemHook | None = None,
) -> tuple[int, int]:
    """Answer every item the store lacks; returns (records written, items of unsupported kind)."""
    if retry_errors:
        store.delete_status(["error"])
    supported = [it for it in items if it.kind in backend.kinds]
    n_skipped = len(items) - len(supported)
    if n_skipped:
        log.warning(
            "%d %s item(s) are not evaluated by %s (it answers %s items); they are not in the metrics",
            n_skipped,
            "/".join(sorted({it.kind for it in items if it.kind not in backend.kinds})),
            backend.spec,
            "/".join(backend.kinds),
        )
    store.add_items(supported)
    backend.prepare(supported)
    done = store.done_ids()
    todo = [it for it in supported if it.id not in done]
    if not todo:
        log.info("all %d items already have results; nothing to do", len(supported))
        return 0, n_skipped

    # Items whose image is missing cannot be shown to an image model: record that, don't call it.
    needs_images = backend.needs_images and not config.no_image
    blocked = [it for it in todo if needs_images and "missing_image" in it.problems]
    store.add(_logged(config, [_blocked_record(it, backend.spec) for it in blocked]))
    blocked_ids = {it.id for it in blocked}
    # plan → render → execute → parse → store.
    todo = backend.plan([it for it in todo if it.id not in blocked_ids])
    requests, unrenderable = _render_all(backend, todo)
    store.add(_logged(config, unrenderable))
    batch_size = _first_batch_size(config, backend)
    batches = backend.batches(requests, batch_size)
    executor = _make_executor(config, backend, supported, item_hook, batch_size)
    written, failed, processed = len(blocked) + len(unrenderable), len(unrenderable), len(unrenderable)
    with progress(len(todo), desc=f"{config.benchmark} × {backend.spec}") as bar:
        bar.update(len(unrenderable))
        try:
            for batch, responses in executor.run(batches):
                fmt, repair = backend.box_format, config.box_repair
                records = [
                    guarded_parse(req, r, model=backend.spec, box_format=fmt, box_repair=repair)
                    for req, r in zip(batch, responses, strict=True)
                ]
                written += store.add(_logged(config, records))
                errors = [r.error for r in records if r.status == "error"]
                failed += len(errors)
                processed += len(batch)
                bar.update(len(batch))
                # Judge the failure rate only once enough items are in to mean something.
                if processed >= min(20, len(todo)) and failed / processed > config.max_fail_fraction:
                    last = errors[-1] if errors else "see the run's records"
                    raise RunAbortedError(
                        f"stopped: {failed} of {processed} items failed (more than "
                        f"{config.max_fail_fraction:.0%}); last error: {last}. Finished results are "
                        "kept; fix the cause and run the same command again to resume "
                        "(--retry-errors redoes the failed items)."
                    )
        except KeyboardInterrupt:
            raise RunInterruptedError(
                f"interrupted: {written} new results were saved in {store.path.parent}; "
                "run the same command again to resume"
            ) from None
        finally:
            executor.close()
            _record_batch_size(store.path.parent, executor, batch_size)
    return written, n_skipped


def _logged(config: RunConfig, records: list[Record]) -> list[Record]:
    """``records`` as stored: without their samples under ``--log-samples false``."""
    if not config.log_samples:
        for rec in records:
            rec.sample = None
    return records


#: Items per call that ``--batch-size auto`` tries first (less for a backend whose default is more).
AUTO_BATCH_START = 64


def _first_batch_size(config: RunConfig, backend: Backend) -> int:
    if config.batch_size == "auto":
        return max(AUTO_BATCH_START, backend.default_batch_size)
    return max(1, config.batch_size or backend.default_batch_size)


def _record_batch_size(run_dir: Path, executor: Executor, first: int) -> None:
    """Add the items per call this invocation ended with to ``run.json`` (``batch_size_used``).

    Not part of the run's identity: a resume on another card may fit another size. Under
    ``--batch-size auto`` the sizes that ran out of memory are kept too (``batch_size_backoffs``).
    """
    path = run_dir / CONFIG_FILE
    if not path.is_file():
        return
    provenance = json.loads(path.read_text(encoding="utf-8"))
    provenance["batch_size_used"] = getattr(executor, "size", first)
    if isinstance(executor, AutoBatchExecutor):
        provenance["batch_size_backoffs"] = executor.backoffs
    path.write_text(json.dumps(provenance, indent=2, sort_keys=True), encoding="utf-8")


def _render_all(backend: Backend, items: Sequence[Item]) -> tuple[list[Request], list[Record]]:
    """The render stage: each item's request, in order; an item that cannot be rendered is an error record."""
    requests: list[Request] = []
    failed: list[Record] = []
    for it in items:
        try:
            requests.append(backend.render(it))
        except ScopebenchError as exc:  # e.g. a plugin's owner prompt refusing an item
            failed.append(_item_record(it, backend.spec, "error", f"cannot render the prompt: {exc}"))
    return requests, failed


def _item_record(item: Item, model: str, status: RecordStatus, error: str) -> Record:
    """A record of ``item`` that no reply produced (``status`` says why)."""
    return Record(
        item_id=item.id,
        model=model,
        status=status,
        error=error,
        task=item.task,
        subset=item.subset,
        split=item.split,
        answer_index=item.answer_index,
        # A detection item keeps its kind and class: localization scores it 0, never drops it.
        kind=item.kind,
        extra={"class_name": detection_class(item)} if item.kind == "detection" else {},
        sample=Sample.of_item(item),
    )


def _blocked_record(item: Item, model: str) -> Record:
    """The record of an item whose image is missing from the data (the model is not asked)."""
    return _item_record(item, model, "missing_image", "image file missing from the data")


def make_record(item: Item, response: Response, backend: Backend, *, box_repair: bool = False) -> Record:
    """Turn a backend response about ``item`` into the stored record (render, then :func:`parse`).

    Kept for callers holding items rather than requests; the run itself parses each response with
    the request it answers. ``box_repair`` applies to detection items only.
    """
    request = backend.render(item)
    return parse(request, response, model=backend.spec, box_format=backend.box_format, box_repair=box_repair)


def _make_executor(
    config: RunConfig,
    backend: Backend,
    items: Sequence[Item],
    item_hook: ItemHook | None = None,
    batch_size: int = 1,
) -> Executor:
    if config.engine.executor == "local" and config.batch_size == "auto":
        return AutoBatchExecutor(backend, batch_size)
    if config.engine.executor == "local":
        return LocalExecutor(backend)
    if config.engine.executor == "ray":
        return RayExecutor(
            config,
            [it.id for it in items],
            setup=(load_items, build_backend),
            num_workers=config.engine.workers,
            address=config.engine.ray_address,
            item_hook=item_hook,
        )
    raise ScopebenchError(f"unknown executor {config.engine.executor!r}; use local or ray")

"""Optional experiment tracking: log a run's metrics, tables and plots to TensorBoard, MLflow or W&B.

Off by default. ``scopebench report RUN… --log-to tensorboard|mlflow|wandb [--log-dir DIR]``
(and ``run``/``eval`` with the same options, once each run is finished: :func:`log_finished_run``)
logs, per run, the scalars of every accuracy row (``accuracy``, ``ci_low``, ``ci_high``, ``n``
under ``<section>/<group>``, e.g. ``by_task/task-NP/accuracy``), the report's tables
(``metrics.csv``/``.md``), its plots (PNG files of the report folder) and the run's settings as
parameters (:func:`run_params`: benchmark, split, model, mode, protocol, seed, parser version…; MLflow
params, the W&B run config, a ``params`` text in TensorBoard). Each backend's library is
imported only when chosen; a missing one is a user error naming the extra to install
(``pip install 'scopebench[track-tensorboard]'`` etc.). W&B also gets a ``samples`` table, one row
per record (:func:`sample_rows`: item, prompt, reply, parsed answer, correct, status), to read the
model's answers beside the numbers.

Numbers are logged exactly as in ``metrics.json`` (fractions in ``[0, 1]``, not percent), so a
dashboard and the paper tables agree.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from scopebench.errors import MissingDependencyError, UsageError
from scopebench.items import Record
from scopebench.store.rundir import CONFIG_FILE, load_run

__all__ = [
    "BACKENDS",
    "SAMPLE_COLUMNS",
    "log_finished_run",
    "log_run",
    "metric_scalars",
    "run_params",
    "sample_rows",
]

#: The columns of the W&B samples table, in order.
SAMPLE_COLUMNS = ("item_id", "prompt", "reply", "parsed", "correct", "status")

#: Backend names accepted by ``--log-to``, and the extra that installs each.
BACKENDS: dict[str, str] = {
    "tensorboard": "track-tensorboard",
    "mlflow": "track-mlflow",
    "wandb": "track-wandb",
}

_SECTIONS = ("by_task", "by_subset", "by_split")
_FIELDS = ("accuracy", "ci_low", "ci_high", "n")


def metric_scalars(metrics: Mapping[str, Any]) -> dict[str, float]:
    """The scalars logged for one metrics dict: ``overall/<field>`` and ``<section>/<group>/<field>``.

    NaN values (an undefined interval) are left out: trackers plot them as gaps or reject them.
    Group names are written with ``-`` for ``=`` and ``_`` for any character outside letters,
    digits and ``_ - . /`` (``task=NP`` → ``task-NP``): the characters all three backends accept
    as a tag, so one key names one number in every dashboard.
    """
    out: dict[str, float] = {}

    def add(prefix: str, row: Mapping[str, Any]) -> None:
        prefix = re.sub(r"[^A-Za-z0-9_\-./]", "_", prefix.replace("=", "-"))
        for f in _FIELDS:
            v = row.get(f)
            if isinstance(v, int | float) and not (isinstance(v, float) and math.isnan(v)):
                out[f"{prefix}/{f}"] = float(v)

    add("overall", metrics["overall"])
    for sec in _SECTIONS:
        for row in metrics.get(sec) or []:
            add(f"{sec}/{row['group']}", row)
    return out


#: run.json keys logged as parameters, in this order (absent or null ones are left out).
_RUN_KEYS = (
    "benchmark", "split", "mode", "protocol", "strategy", "transform", "seed", "n_items", "limit",
    "no_image", "judge", "parser_version", "box_parser_version", "box_repair", "data_fingerprint",
    "scopebench_version",
)  # fmt: skip


def _path_free(spec: str) -> str:
    """A model spec without its folder: ``hf:/data/m/qwen2-vl-2b`` → ``hf:qwen2-vl-2b``.

    Dashboards are shared, so a local path (a user name, a project layout) is cut to its last part,
    as in the report's tables; hub ids (``hf:Qwen/Qwen2-VL-2B-Instruct``) are not paths and are kept.
    """
    scheme, sep, target = spec.partition(":")
    if not sep or "/" in scheme:  # a bare path ("/data/m/x", "./x")
        scheme, target = "", spec
    looks_local = target.startswith(("/", "./", "../", "~")) or Path(target).expanduser().exists()
    if looks_local:
        target = Path(target.rstrip("/")).name or target
    return f"{scheme}:{target}" if scheme else target


def run_params(run_json: Mapping[str, Any], metrics: Mapping[str, Any]) -> dict[str, str]:
    """The settings of one run and its report, as string parameters for a tracker.

    From ``run.json``: the keys of ``_RUN_KEYS`` that are set, and ``model`` (path-free, see
    :func:`_path_free`); from the report's metrics: ``policy`` and the bootstrap's ``seed`` and
    ``resamples`` (as ``bootstrap_seed``/``bootstrap_resamples``), so two logged reports of one
    run that differ only in those are told apart.
    """
    out: dict[str, str] = {}
    model = run_json.get("model") or metrics.get("model")
    if model:
        out["model"] = _path_free(str(model))
    for key in _RUN_KEYS:
        value = run_json.get(key)
        if value is not None and value != "":
            out[key] = str(value)
    if metrics.get("policy"):
        out["policy"] = str(metrics["policy"])
    boot = metrics.get("bootstrap") or {}
    for key in ("seed", "resamples"):
        if boot.get(key) is not None:
            out[f"bootstrap_{key}"] = str(boot[key])
    return out


def sample_rows(records: Iterable[Record]) -> list[list[Any]]:
    """One row of :data:`SAMPLE_COLUMNS` per record: what the model was asked and what it said.

    ``prompt`` is the rendered prompt the record stores (:attr:`Record.sample`), empty when the run
    kept no samples (``--log-samples false``) or no prompt was rendered; ``parsed`` the chosen
    option's letter (empty when the reply committed to none).
    """
    rows: list[list[Any]] = []
    for r in records:
        parsed = "" if r.choice is None else chr(ord("A") + r.choice)
        prompt = (r.sample.prompt if r.sample is not None else None) or ""
        rows.append([r.item_id, prompt, r.response or "", parsed, r.correct, r.status])
    return rows


def _files(folder: Path, suffixes: tuple[str, ...]) -> Iterator[Path]:
    return (p for p in sorted(folder.iterdir()) if p.suffix in suffixes and p.is_file())


def _missing(backend: str, exc: ImportError) -> MissingDependencyError:
    return MissingDependencyError(exc.name or backend, BACKENDS[backend], f"--log-to {backend}")


def _tensorboard(
    name: str,
    scalars: Mapping[str, float],
    params: Mapping[str, str],
    folder: Path,
    log_dir: Path,
    samples: Sequence[Sequence[Any]] = (),
) -> Path:
    try:
        from tensorboardX import SummaryWriter
    except ImportError as exc:
        raise _missing("tensorboard", exc) from exc
    import numpy as np
    from PIL import Image

    target = log_dir / name
    with SummaryWriter(logdir=str(target)) as w:
        for tag, v in scalars.items():
            w.add_scalar(tag, v, global_step=0)
        if params:  # a Markdown table in the Text tab (add_hparams would start a second run folder)
            rows = "".join(f"| {k} | {v} |\n" for k, v in params.items())
            w.add_text("params", "| parameter | value |\n|---|---|\n" + rows, global_step=0)
        for p in _files(folder, (".md",)):
            w.add_text(p.stem, p.read_text(encoding="utf-8"), global_step=0)
        for p in _files(folder, (".png",)):
            with Image.open(p) as im:
                w.add_image(p.stem, np.asarray(im.convert("RGB")), global_step=0, dataformats="HWC")
    return target


def _mlflow(
    name: str,
    scalars: Mapping[str, float],
    params: Mapping[str, str],
    folder: Path,
    log_dir: Path,
    samples: Sequence[Sequence[Any]] = (),
) -> Path:
    try:
        import mlflow
    except ImportError as exc:
        raise _missing("mlflow", exc) from exc
    # MLflow >= 3 refuses the plain-folder ``file:`` store, so the runs go to an SQLite file in
    # log_dir and the artifacts next to it (never MLflow's default ./mlartifacts in the cwd).
    mlflow.set_tracking_uri(f"sqlite:///{(log_dir / 'mlflow.db').resolve()}")
    client = mlflow.tracking.MlflowClient()
    exp = client.get_experiment_by_name("scopebench")
    exp_id = (
        exp.experiment_id
        if exp is not None
        else client.create_experiment(
            "scopebench", artifact_location=(log_dir / "artifacts").resolve().as_uri()
        )
    )
    with mlflow.start_run(run_name=name, experiment_id=exp_id):
        mlflow.log_metrics(dict(scalars))
        if params:
            mlflow.log_params(dict(params))
        for p in _files(folder, (".csv", ".md", ".tex", ".png", ".svg", ".json")):
            mlflow.log_artifact(str(p))
    return log_dir


def _wandb(
    name: str,
    scalars: Mapping[str, float],
    params: Mapping[str, str],
    folder: Path,
    log_dir: Path,
    samples: Sequence[Sequence[Any]] = (),
) -> Path:
    try:
        import wandb
    except ImportError as exc:
        raise _missing("wandb", exc) from exc
    run = wandb.init(name=name, dir=str(log_dir), reinit=True, config=dict(params))
    try:
        run.log(dict(scalars))
        for p in _files(folder, (".png",)):
            run.log({p.stem: wandb.Image(str(p))})
        for p in _files(folder, (".csv",)):
            import pandas as pd

            run.log({p.stem: wandb.Table(dataframe=pd.read_csv(p))})
        if samples:
            run.log({"samples": wandb.Table(columns=list(SAMPLE_COLUMNS), data=[list(r) for r in samples])})
    finally:
        run.finish()
    return log_dir


def log_run(
    backend: str,
    name: str,
    metrics: Mapping[str, Any],
    report_folder: Path,
    log_dir: Path,
    *,
    params: Mapping[str, str] | None = None,
    samples: Sequence[Sequence[Any]] = (),
) -> Path:
    """Log one run's metrics, tables, plots and parameters to ``backend``; return where they went.

    Args:
        backend: ``tensorboard``, ``mlflow`` or ``wandb``.
        name: The run's display name (its folder or preset name, never an absolute path).
        metrics: The run's metrics dict (as written to ``metrics.json``).
        report_folder: The folder with the run's ``metrics.*`` tables and PNG plots.
        log_dir: Where TensorBoard event files / the MLflow file store / W&B's files go.
        params: The run's settings (:func:`run_params`); none are logged when omitted.
        samples: Rows of :data:`SAMPLE_COLUMNS` (:func:`sample_rows`): W&B logs them as its
            ``samples`` table; the other backends keep the records' files instead.

    Raises:
        UsageError: Unknown backend.
        MissingDependencyError: Its library is not installed (the message names the extra).
    """
    writers = {"tensorboard": _tensorboard, "mlflow": _mlflow, "wandb": _wandb}
    if backend not in writers:
        raise UsageError(f"--log-to must be one of {', '.join(BACKENDS)}, not {backend!r}")
    log_dir.mkdir(parents=True, exist_ok=True)
    return writers[backend](
        name, metric_scalars(metrics), dict(params or {}), report_folder, log_dir, samples
    )


def log_finished_run(
    backend: str, run_dir: Path, metrics: Mapping[str, Any], log_dir: Path, name: str | None = None
) -> Path:
    """Log a run that ``run`` or ``eval`` just finished: its report files, settings and samples.

    Args:
        backend: ``tensorboard``, ``mlflow`` or ``wandb``.
        run_dir: The run directory (its report files are there, as ``run`` writes them).
        metrics: Its metrics (as written to ``metrics.json``).
        log_dir: The tracking folder.
        name: The run's display name; default its ``label`` in ``run.json``, else the folder name.
    """
    run_json = json.loads((run_dir / CONFIG_FILE).read_text(encoding="utf-8"))
    params = run_params(run_json, metrics)
    samples = sample_rows(load_run(run_dir).records) if backend == "wandb" else []
    label = name or run_json.get("label") or run_dir.name
    return log_run(backend, str(label), metrics, run_dir, log_dir, params=params, samples=samples)

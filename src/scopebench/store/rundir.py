"""The run directory: what a run writes and how to read it back.

Layout (documented in the README)::

    RUN/
      run.json         provenance: benchmark, data + fingerprint, model identity, protocol,
                       parser version, seed, package versions, device
      records.sqlite   the durable per-item store (SQLite, WAL)
      records.jsonl    export of every record (rewritten at the end of each run)
      metrics.json     accuracy tables (see docs/metrics-schema.md)
      .lock            the writer lock (engine/lock.py): one run per folder at a time
"""

from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scopebench.errors import DataNotFoundError, StoreDamagedError
from scopebench.items import Record
from scopebench.store.runstore import RunStore, salvage_hint

__all__ = [
    "CONFIG_FILE",
    "METRICS_FILE",
    "RECORDS_JSONL",
    "STORE_FILE",
    "RunData",
    "is_writable",
    "load_run",
]

CONFIG_FILE = "run.json"
STORE_FILE = "records.sqlite"
RECORDS_JSONL = "records.jsonl"
METRICS_FILE = "metrics.json"


@dataclass(slots=True)
class RunData:
    """A finished (or partial) run read back from its directory.

    Attributes:
        path: The run directory.
        config: The provenance dict of ``run.json``.
        records: Every stored record, ordered by item id.
        items: Item summaries (question, choices, answer, image locations) by id.
        metrics: ``metrics.json`` if present, else ``None``.
    """

    path: Path
    config: dict[str, Any]
    records: list[Record]
    items: dict[str, dict[str, Any]]
    metrics: dict[str, Any] | None

    @property
    def model(self) -> str:
        """The model spec of the run."""
        return str(self.config.get("model", "?"))

    @property
    def benchmark(self) -> str:
        """The benchmark of the run."""
        return str(self.config.get("benchmark", "?"))


def load_run(path: str | Path) -> RunData:
    """Read a run directory.

    Raises:
        DataNotFoundError: When ``path`` is not a run directory.
    """
    run_dir = Path(path)
    cfg_path = run_dir / CONFIG_FILE
    store_path = run_dir / STORE_FILE
    if not cfg_path.is_file() or not store_path.is_file():
        raise DataNotFoundError(
            f"{run_dir} is not a scopebench run directory (no {CONFIG_FILE} / {STORE_FILE}); "
            "pass the --out folder of a `scopebench run`"
        )
    config = json.loads(cfg_path.read_text(encoding="utf-8"))
    # Read-only: reading a run (report, compare, export) never writes into its folder, so it works
    # on a read-only copy and never races the run that may be writing there.
    with RunStore(store_path, readonly=True, check=True) as store:
        records = store.records()
        try:
            items = store.items()
        except sqlite3.DatabaseError as exc:
            raise StoreDamagedError(
                f"the run store {store_path} is damaged ({exc}). {salvage_hint(run_dir)}"
            ) from exc
    metrics_path = run_dir / METRICS_FILE
    metrics = json.loads(metrics_path.read_text(encoding="utf-8")) if metrics_path.is_file() else None
    return RunData(path=run_dir, config=config, records=records, items=items, metrics=metrics)


def is_writable(folder: str | Path) -> bool:
    """Whether files can be created in ``folder`` (a read-only run directory is read, not written).

    ``os.access`` asks the kernel with the real user's rights; it is a function of its own so tests
    running as root (whom no permission stops) can stand in a read-only folder.
    """
    return os.access(folder, os.W_OK)

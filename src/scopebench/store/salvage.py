"""Save what is readable from a damaged run directory into a new one that a run can resume.

``scopebench export RUN --salvage NEWDIR`` copies ``run.json`` and every record that can still be
read, first from ``records.sqlite`` (row by row around damaged pages), then from ``records.jsonl``
(the export of the last time the run stopped) for items the store lost. Running the same
``scopebench run`` command with ``--out NEWDIR`` then asks only the items no readable record
covers. Nothing is guessed: a record whose text cannot be parsed is counted as lost, not repaired.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from scopebench.errors import ConfigMismatchError, DataNotFoundError
from scopebench.items import Record
from scopebench.store.lock import RunLock
from scopebench.store.rundir import CONFIG_FILE, RECORDS_JSONL, STORE_FILE
from scopebench.store.runstore import RunStore

__all__ = ["SalvageResult", "salvage_run"]

# Rowids are read in ranges of this size; a range that hits a damaged page is split in halves.
_CHUNK = 1024


@dataclass(slots=True)
class SalvageResult:
    """What :func:`salvage_run` recovered.

    Attributes:
        out_dir: The new run directory.
        from_store: Records read from the damaged store.
        from_jsonl: Records taken from ``records.jsonl`` (items the store no longer had).
        unreadable: Rows of the store that exist but could not be read or parsed (their items are
            asked again on resume).
        store_error: Why the store could not be read at all, if it could not.
    """

    out_dir: Path
    from_store: int = 0
    from_jsonl: int = 0
    unreadable: int = 0
    store_error: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        """Records written to the new run directory."""
        return self.from_store + self.from_jsonl


def salvage_run(run_dir: str | Path, out_dir: str | Path) -> SalvageResult:
    """Copy a (damaged) run's configuration and readable records into a new run directory.

    The damaged folder is only read (its store is opened immutable), so this also works on a
    read-only copy.

    Args:
        run_dir: The damaged run directory.
        out_dir: A new or empty folder.

    Returns:
        The counts of what was recovered.

    Raises:
        DataNotFoundError: When ``run_dir`` has no ``run.json``.
        ConfigMismatchError: When ``out_dir`` exists and is not empty.
    """
    src, dst = Path(run_dir), Path(out_dir)
    if not (src / CONFIG_FILE).is_file():
        raise DataNotFoundError(f"{src} has no {CONFIG_FILE}: not a scopebench run directory")
    if dst.exists() and any(dst.iterdir()):
        raise ConfigMismatchError(f"{dst} is not empty; --salvage writes into a new or empty folder")
    dst.mkdir(parents=True, exist_ok=True)
    result = SalvageResult(dst)
    records: dict[str, Record] = {}
    with RunLock(dst):
        for rec in _store_records(src / STORE_FILE, result):
            records[rec.item_id] = rec
        result.from_store = len(records)
        for rec in _jsonl_records(src / RECORDS_JSONL, result):
            if rec.item_id not in records:
                records[rec.item_id] = rec
                result.from_jsonl += 1
        shutil.copyfile(src / CONFIG_FILE, dst / CONFIG_FILE)
        with RunStore(dst / STORE_FILE) as store:
            store.add(records[k] for k in sorted(records))
            store.set_meta("salvaged_from", str(src.resolve()))
    return result


def _store_records(path: Path, result: SalvageResult) -> Iterator[Record]:
    if not path.is_file() or path.stat().st_size == 0:
        result.store_error = "missing" if not path.is_file() else "empty (0 bytes)"
        return
    try:
        # immutable: never write to (or "recover") the damaged file; a WAL left beside it is
        # ignored, so its last batches come from records.jsonl if they are there.
        db = sqlite3.connect(f"{path.resolve().as_uri()}?immutable=1", uri=True)
        try:
            top = _max_rowid(db, path)
            for body in _rows(db, 1, top, result):
                try:
                    yield Record.from_dict(json.loads(body))
                except (ValueError, TypeError, KeyError):
                    result.unreadable += 1
        finally:
            db.close()
    except sqlite3.DatabaseError as exc:
        result.store_error = str(exc)


def _max_rowid(db: sqlite3.Connection, path: Path) -> int:
    try:
        row = db.execute("SELECT max(rowid) FROM records").fetchone()
        return int(row[0] or 0)
    except sqlite3.DatabaseError:
        # The right edge of the table is damaged: no row's id can exceed the number of rows ever
        # written, and each took more than 16 bytes of the file.
        return max(_CHUNK, path.stat().st_size // 16)


def _rows(db: sqlite3.Connection, lo: int, hi: int, result: SalvageResult) -> Iterator[str]:
    """Bodies of rows ``lo..hi``, skipping only the rowid ranges that cannot be read."""
    stack = [(k, min(hi, k + _CHUNK - 1)) for k in range(lo, hi + 1, _CHUNK)][::-1]
    while stack:
        a, b = stack.pop()
        try:
            rows = db.execute("SELECT body FROM records WHERE rowid BETWEEN ? AND ?", (a, b)).fetchall()
        except sqlite3.DatabaseError:
            if a == b:
                result.unreadable += 1
            else:
                mid = (a + b) // 2
                stack += [(mid + 1, b), (a, mid)]
            continue
        for (body,) in rows:
            if isinstance(body, str):
                yield body
            else:
                result.unreadable += 1


def _jsonl_records(path: Path, result: SalvageResult) -> Iterator[Record]:
    if not path.is_file():
        return
    bad = 0
    with open(path, "rb") as fh:
        for line in fh:
            if not line.strip():
                continue
            try:
                yield Record.from_dict(json.loads(line.decode("utf-8")))
            except (ValueError, TypeError, KeyError):
                bad += 1
    if bad:
        result.notes.append(f"{bad} line(s) of {path.name} could not be read")

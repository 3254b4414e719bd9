"""The per-run store: one SQLite database in WAL mode inside the run directory.

Why SQLite: every finished batch is committed in one transaction, so a ``kill -9`` loses at most
the batch in flight; WAL mode lets a report read while a run writes; and it needs no server.
Records are keyed by item id, which is what makes a re-run resume exactly where it stopped.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import fields
from pathlib import Path
from typing import Any

from scopebench.display import shown
from scopebench.errors import DataNotFoundError, RunDirReadOnlyError, StoreDamagedError
from scopebench.items import RECORD_FIELDS, Item, Record, Sample
from scopebench.store.lock import lock_holder

__all__ = ["RunStore", "salvage_hint"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS records (
    item_id TEXT PRIMARY KEY,
    status  TEXT NOT NULL,
    body    TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS items (
    item_id TEXT PRIMARY KEY,
    body    TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"""


_HEADER = b"SQLite format 3\x00"


def _unreadable_records(db: sqlite3.Connection, limit: int = 5) -> list[str]:
    """Item ids (up to ``limit``) whose stored record cannot be read back as that item's record.

    quick_check reads the B-trees, not what they hold: bytes overwritten inside a record's text
    pass it (and even SQLite's ``json_valid``) and only broke the report later. So each record is
    decoded and parsed as the report will, and must name its own item and status.
    """
    bad: list[str] = []
    rows = db.execute("SELECT CAST(item_id AS BLOB), CAST(status AS BLOB), CAST(body AS BLOB) FROM records")
    for raw_id, raw_status, body in rows:
        item_id = raw_id.decode("utf-8", "replace")
        try:
            rec = Record.from_dict(json.loads(body))
            ok = rec.item_id == raw_id.decode("utf-8") and rec.status == raw_status.decode("utf-8")
        except (ValueError, TypeError, KeyError):
            ok = False
        if not ok:
            bad.append(item_id)
            if len(bad) >= limit:
                break
    return bad


def _json_text(obj: Any) -> str:
    r"""``obj`` as the JSON text a row stores: UTF-8, non-ASCII characters kept as they are.

    A lone UTF-16 surrogate (valid JSON, ``"\ud800"``: a reply cut inside an emoji's surrogate pair,
    or a data file's text) has no UTF-8 encoding, so SQLite refused the whole batch with a
    ``UnicodeEncodeError`` traceback. Such a character is stored as U+FFFD, the replacement
    character a UTF-8 decoder shows for broken bytes (a split pair is joined back).
    """
    text = json.dumps(obj, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def _has_records(db: sqlite3.Connection) -> bool:
    row = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'records'").fetchone()
    return row is not None


def salvage_hint(run_dir: Path) -> str:
    """What a user can do with a damaged store (each way out is implemented and tested)."""
    return (
        f"Save what is readable with `scopebench export {run_dir} --salvage NEWDIR` (copies the run's "
        "configuration and every readable record, from the store and records.jsonl, into NEWDIR), then "
        "run the same command with --out NEWDIR: only the lost items are asked again. "
        "Or start over in this folder with --fresh"
    )


class RunStore:
    """Durable per-item results of one run.

    Args:
        path: The SQLite file (created if missing, unless ``readonly``).
        readonly: Open for reading only, never writing anything into the run directory (no
            ``-wal``/``-shm`` file is created): what ``report``, ``compare`` and ``export`` use, so
            they work on a read-only folder.
        check: Check the file's integrity first: header and ``PRAGMA quick_check``; when opened
            for writing, ``integrity_check`` instead and that every record parses back as its
            item's record. A run does, so a
            damaged store is reported before any work is added to it (cost measured in
            bench/RESULTS.md).

    Raises:
        StoreDamagedError: When the file is empty, not an SQLite database or fails the check.
        DataNotFoundError: When ``readonly`` and the file does not exist.
    """

    def __init__(self, path: Path, *, readonly: bool = False, check: bool = False) -> None:
        self.path = path
        self.readonly = readonly
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        if path.exists():
            _check_header(path)
        elif readonly:
            raise DataNotFoundError(
                f"no run store at {path}; give a run directory written by `scopebench run`"
            )
        try:
            if readonly:
                self._db = self._connect_readonly(path)
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                self._db = sqlite3.connect(path)
                self._db.execute("PRAGMA journal_mode=WAL")
                # NORMAL is durable across process crashes in WAL mode (only an OS crash can lose
                # the last commits), and much faster than FULL.
                self._db.execute("PRAGMA synchronous=NORMAL")
            if check:
                # A run also checks that indexes agree with the table (the id index decides what
                # is resumed); it costs about what quick_check does (bench/RESULTS.md).
                pragma = "quick_check" if readonly else "integrity_check"
                problems = [row[0] for row in self._db.execute(f"PRAGMA {pragma}(5)")]
                if problems != ["ok"]:
                    raise sqlite3.DatabaseError("integrity check failed: " + "; ".join(problems))
                # A run also parses every record (a reader finds a bad one as it reads it).
                bad = _unreadable_records(self._db) if not readonly and _has_records(self._db) else []
                if bad:
                    raise sqlite3.DatabaseError(
                        f"the stored record of item(s) {', '.join(map(repr, bad))} cannot be read"
                    )
            if not readonly:
                self._db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            self.close()
            if isinstance(exc, sqlite3.OperationalError) and "unable to open" in str(exc):
                raise RunDirReadOnlyError(
                    f"cannot open the run store {path}: {exc}; check the folder's permissions"
                ) from exc
            raise StoreDamagedError(
                f"the run store {path} is damaged ({exc}). {salvage_hint(path.parent)}"
            ) from exc

    def _connect_readonly(self, path: Path) -> sqlite3.Connection:
        # mode=ro still creates -wal/-shm files; immutable=1 writes nothing but ignores a WAL. So:
        # a folder a run is writing to is read like that run's other readers (mode=ro, the folder
        # is writable then); a WAL left by a stopped run is read from a private copy; a store with
        # no WAL (every finished run) is read in place, immutable.

        if lock_holder(path.parent) is not None:
            return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        wal = path.with_name(path.name + "-wal")
        if wal.is_file() and wal.stat().st_size > 0:
            self._tmp = tempfile.TemporaryDirectory(prefix="scopebench-ro-")
            copy = Path(self._tmp.name) / path.name
            shutil.copyfile(path, copy)
            shutil.copyfile(wal, copy.with_name(copy.name + "-wal"))
            return sqlite3.connect(copy)
        return sqlite3.connect(f"{path.resolve().as_uri()}?immutable=1", uri=True)

    def close(self) -> None:
        """Close the database."""
        if hasattr(self, "_db"):
            self._db.close()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # Records ----------------------------------------------------------------------------------

    def done_ids(self) -> set[str]:
        """Ids of items that already have a record."""
        return {row[0] for row in self._db.execute("SELECT item_id FROM records")}

    def add(self, records: Iterable[Record]) -> int:
        """Write records in one transaction (replacing older records of the same items).

        Returns:
            The number of records written.
        """
        rows = [(r.item_id, r.status, _json_text(r.to_dict())) for r in records]
        if not rows:
            return 0
        with self._db:
            self._db.executemany("INSERT OR REPLACE INTO records VALUES (?, ?, ?)", rows)
            self._bump_generation()
        return len(rows)

    def _bump_generation(self) -> None:
        # Inside the caller's transaction: the counter moves exactly when the records do.
        self._db.execute(
            "INSERT INTO meta VALUES ('generation', '1') "
            "ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1"
        )

    def generation(self) -> int:
        """A counter that changes whenever records are written or deleted (0 for a new store).

        Lets a finished run tell that its metrics file still describes what the store holds.
        """
        row = self._db.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        return 0 if row is None else int(row[0])

    def records(self) -> list[Record]:
        """Every stored record, ordered by item id."""
        return list(self.iter_records())

    def iter_records(self) -> Iterator[Record]:
        """Iterate over stored records, ordered by item id.

        Raises:
            StoreDamagedError: When the file or a record in it cannot be read.
        """
        for item_id, body in self._bodies():
            try:
                yield Record.from_dict(json.loads(body))
            except (ValueError, TypeError, KeyError) as exc:
                raise self._damaged(item_id, exc) from exc

    def _bodies(self) -> Iterator[tuple[str, str]]:
        """``(item id, stored JSON)`` of every record, ordered by item id."""
        try:
            yield from self._db.execute("SELECT item_id, body FROM records ORDER BY item_id")
        except sqlite3.DatabaseError as exc:
            raise StoreDamagedError(
                f"the run store {self.path} is damaged ({exc}). {salvage_hint(self.path.parent)}"
            ) from exc

    def _damaged(self, item_id: str, exc: Exception) -> StoreDamagedError:
        return StoreDamagedError(
            f"the run store {self.path} is damaged: the record of item {item_id!r} cannot be "
            f"read ({type(exc).__name__}: {exc}). {salvage_hint(self.path.parent)}"
        )

    def count(self) -> int:
        """Number of stored records."""
        return int(self._db.execute("SELECT COUNT(*) FROM records").fetchone()[0])

    def delete_status(self, statuses: Iterable[str]) -> int:
        """Delete records with the given statuses so a resumed run retries them."""
        stats = list(statuses)
        if not stats:
            return 0
        marks = ",".join("?" * len(stats))
        with self._db:
            cur = self._db.execute(f"DELETE FROM records WHERE status IN ({marks})", stats)
            if cur.rowcount:
                self._bump_generation()
        return cur.rowcount

    # Items (what the report's item browser shows) ---------------------------------------------

    def add_items(self, items: Iterable[Item]) -> None:
        """Store a JSON summary (no pixels) of each item, once."""
        rows = [(it.id, _json_text(it.to_summary())) for it in items]
        with self._db:
            self._db.executemany("INSERT OR IGNORE INTO items VALUES (?, ?)", rows)

    def items(self) -> dict[str, dict[str, Any]]:
        """Item summaries by id."""
        return {k: json.loads(v) for k, v in self._db.execute("SELECT item_id, body FROM items")}

    # Metadata ---------------------------------------------------------------------------------

    def set_meta(self, key: str, value: Any) -> None:
        """Store a JSON value under ``key``."""
        with self._db:
            self._db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, json.dumps(value)))

    def get_meta(self, key: str, default: Any = None) -> Any:
        """Read a value stored with :meth:`set_meta`."""
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return default if row is None else json.loads(row[0])

    # Exports ----------------------------------------------------------------------------------

    def export_jsonl(self, path: Path) -> Path:
        """Write every record as one JSON line (sorted by item id), paths as :func:`_shared` shows them."""
        tmp = path.with_suffix(path.suffix + ".tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            for row in self._record_dicts():
                fh.write(json.dumps(_shared(row), ensure_ascii=False) + "\n")
        tmp.replace(path)
        return path

    def _record_dicts(self) -> Iterator[dict[str, Any]]:
        """Every record as :meth:`Record.to_dict` gives it, ordered by item id.

        A stored body already is that dict when it has the current fields (every record this
        version writes); only an older run's body goes through :class:`Record` to gain the
        fields added since. Skipping the round trip is what keeps exporting a finished run cheap.

        Raises:
            StoreDamagedError: When the file or a record in it cannot be read.
        """
        for item_id, body in self._bodies():
            try:
                row = json.loads(body)
                yield row if _current_shape(row) else Record.from_dict(row).to_dict()
            except (ValueError, TypeError, KeyError, AttributeError) as exc:
                raise self._damaged(item_id, exc) from exc

    def export_parquet(self, path: Path) -> Path:
        """Write every record to Parquet, one row each.

        The sample's fields are columns (:data:`~scopebench.items.SAMPLE_COLUMNS`); the nested
        ``scores`` and ``extra`` are JSON text.
        """
        import pyarrow as pa
        import pyarrow.parquet as pq

        rows = []
        for rec in self.iter_records():
            d = _shared(rec.to_flat())
            d["scores"] = json.dumps(d["scores"]) if d["scores"] is not None else None
            d["extra"] = json.dumps(d["extra"], ensure_ascii=False)
            rows.append(d)
        table = pa.Table.from_pylist(rows) if rows else pa.table({"item_id": pa.array([], pa.string())})
        pq.write_table(table, path)
        return path


_SAMPLE_KEYS = tuple(f.name for f in fields(Sample))


def _current_shape(row: Any) -> bool:
    """Whether a stored record dict has exactly the current fields, in order (sample included)."""
    if not isinstance(row, dict) or tuple(row) != RECORD_FIELDS:
        return False
    sample = row["sample"]
    return sample is None or (isinstance(sample, dict) and tuple(sample) == _SAMPLE_KEYS)


def _shared(row: dict[str, Any]) -> dict[str, Any]:
    """A record as a shared file shows it: model spec and error text with ``~`` for the home folder.

    A spec may name a local model folder or a replay file under the home folder; ``run.json``
    keeps it whole.
    """
    for key in ("model", "error"):
        if isinstance(row.get(key), str):
            row[key] = shown(row[key])
    return row


def _check_header(path: Path) -> None:
    """Refuse a file that cannot be an SQLite database before SQLite silently treats it as one.

    SQLite opens a 0-byte file as a new, empty database: a truncated store would start over
    without a word, and every finished item would be asked (and paid for) again.
    """
    try:
        with open(path, "rb") as fh:
            head = fh.read(len(_HEADER))
    except OSError as exc:
        raise RunDirReadOnlyError(f"cannot read the run store {path}: {exc}") from exc
    if not head:
        what = "is empty (0 bytes): it was truncated (a full disk, a copy cut short) and holds no records"
    elif head != _HEADER:
        what = "does not start with the SQLite header: its first page is damaged, or it is another file"
    else:
        return
    raise StoreDamagedError(f"the run store {path} {what}. {salvage_hint(path.parent)}")

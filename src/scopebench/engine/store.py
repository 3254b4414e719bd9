"""The per-run store: one SQLite database in WAL mode inside the run directory.

Why SQLite: every finished batch is committed in one transaction, so a ``kill -9`` loses at most
the batch in flight; WAL mode lets a report read while a run writes; and it needs no server.
Records are keyed by item id, which is what makes a re-run resume exactly where it stopped.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from scopebench.errors import DataFormatError
from scopebench.items import Item, Record

__all__ = ["RunStore"]

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


class RunStore:
    """Durable per-item results of one run.

    Args:
        path: The SQLite file (created if missing).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(path)
            self._db.execute("PRAGMA journal_mode=WAL")
            # NORMAL is durable across process crashes in WAL mode (only an OS crash can lose the
            # last commits), and much faster than FULL.
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise DataFormatError(
                f"cannot open the run store {path}: {exc}; delete it or choose another --out"
            ) from exc

    def close(self) -> None:
        """Close the database."""
        self._db.close()

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
        rows = [(r.item_id, r.status, json.dumps(r.to_dict(), ensure_ascii=False)) for r in records]
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
        """Iterate over stored records, ordered by item id."""
        for (body,) in self._db.execute("SELECT body FROM records ORDER BY item_id"):
            yield Record.from_dict(json.loads(body))

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
        rows = [(it.id, json.dumps(it.to_summary(), ensure_ascii=False)) for it in items]
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
        """Write every record as one JSON line (sorted by item id)."""
        tmp = path.with_suffix(path.suffix + ".tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            for rec in self.iter_records():
                fh.write(json.dumps(rec.to_dict(), ensure_ascii=False) + "\n")
        tmp.replace(path)
        return path

    def export_parquet(self, path: Path) -> Path:
        """Write every record to Parquet (nested fields as JSON text columns)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        rows = []
        for rec in self.iter_records():
            d = rec.to_dict()
            d["scores"] = json.dumps(d["scores"]) if d["scores"] is not None else None
            d["extra"] = json.dumps(d["extra"], ensure_ascii=False)
            rows.append(d)
        table = pa.Table.from_pylist(rows) if rows else pa.table({"item_id": pa.array([], pa.string())})
        pq.write_table(table, path)
        return path

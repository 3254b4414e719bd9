"""Results kept by content between build runs: one SQLite table of JSON values by key.

A build step that makes the same thing from the same inputs (the questions of one image and task)
keys it by the SHA-256 of those inputs (:func:`content_key`), so a re-run after one changed row
looks every unchanged result up instead of making it again, and a result is never reused for
inputs that differ in any byte the key covers.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from scopebench.errors import DataFormatError

__all__ = ["ContentCache", "content_key"]


def content_key(*parts: Any) -> str:
    """SHA-256 of ``parts`` as JSON (keys sorted): the key of what they make."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


class ContentCache:
    """JSON values by content key, in one SQLite file (``None``: in memory, for this run only).

    Args:
        path: The SQLite file (created with its folder).

    Raises:
        DataFormatError: When ``path`` exists and is not such a cache (the message says to delete it).
    """

    def __init__(self, path: Path | None) -> None:
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path) if path is not None else ":memory:")
        try:
            self._db.execute("CREATE TABLE IF NOT EXISTS memo (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            self._db.execute("SELECT key, value FROM memo LIMIT 1").fetchall()
        except sqlite3.DatabaseError as exc:
            self._db.close()
            raise DataFormatError(
                f"{path} is not a readable scopebench cache ({exc}); delete it and run again "
                "(the run makes again what it held)"
            ) from exc

    def get_many(self, keys: Iterable[str]) -> dict[str, Any]:
        """The stored values of those of ``keys`` that have one."""
        wanted = list(dict.fromkeys(keys))
        found: dict[str, Any] = {}
        for start in range(0, len(wanted), 500):  # SQLite caps the parameters of one statement
            chunk = wanted[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for key, value in self._db.execute(f"SELECT key, value FROM memo WHERE key IN ({marks})", chunk):
                try:
                    found[key] = json.loads(value)
                except ValueError:
                    continue  # a damaged entry is made again, never guessed
        return found

    def put_many(self, values: Mapping[str, Any]) -> None:
        """Store ``values`` (key → JSON-able value) in one transaction."""
        rows = [(k, json.dumps(v, sort_keys=True)) for k, v in values.items()]
        with self._db:
            self._db.executemany("INSERT OR REPLACE INTO memo VALUES (?, ?)", rows)

    def close(self) -> None:
        """Close the database."""
        self._db.close()

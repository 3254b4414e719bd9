"""What ingest keeps between runs: file hashes by stat, and conversions by file content.

* :class:`FileHashes` — the SHA-256 of every input file, keyed by its absolute path and stat
  (size, modification time in nanoseconds, inode). A file whose stat has not changed is not read
  again; any write to it changes its modification time, and a copy or a move changes its inode, so
  the hash is recomputed. One SQLite file (``file_sha256.sqlite``).
* :class:`ConversionStore` — the result of converting one file's bytes: its lossless PNG, its
  near-duplicate grid (the stretched 64 × 64 float64 grey grid the pixel check compares, as
  ``.grid.npy``, 32 kB, so that check reads it instead of decoding the PNG) and a small JSON of
  hashes and facts (or the reason it could not be converted), named after the file's SHA-256
  (``v2/<2 hex>/<sha256>.png`` / ``.grid.npy`` / ``.json``). An entry without a grid (converted
  before grids were kept, or with a damaged one) stays valid: the check decodes its PNG instead. A
  metadata row that changes, a file that moves or a second source listing the same bytes reuse it;
  changing how images are converted changes the ``v2`` folder. Beside them, ``similarity.json``
  keeps the pixel similarity of every near-duplicate pair the hashes proposed, keyed by the two
  images' pixel MD5s, so a re-run loads no image to confirm a pair it has already scored (held in
  memory as :class:`~.pair_scores.PairScores`, 41 bytes a pair).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import sqlite3
from collections.abc import Callable, Iterator, MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from scopebench.curate.ingestion.pair_scores import PairScores

__all__ = ["ConversionStore", "FileHashes", "grid_bytes", "sha256_file"]

#: Bumped whenever conversion output changes (encoder, hashes, facts recorded), so old entries are
#: never reused for new rules.
_VERSION = "v2"


def sha256_file(path: Path) -> str:
    """SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _stat_key(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns, st.st_ino


class FileHashes:
    """SHA-256 of files, recomputed only when a file's stat changes (see the module docstring).

    Args:
        path: The SQLite file (created); ``None`` keeps the hashes in memory for this run only.
    """

    def __init__(self, path: Path | None) -> None:
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path) if path is not None else ":memory:")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, size INTEGER, mtime_ns INTEGER, "
            "inode INTEGER, sha256 TEXT)"
        )
        self._pending: list[tuple[str, int, int, int, str]] = []

    def known(self, path: Path) -> str | None:
        """The recorded hash of ``path`` when its stat still matches, else ``None``."""
        key = _stat_key(path)
        if key is None:
            return None
        row = self._db.execute(
            "SELECT sha256 FROM files WHERE path = ? AND size = ? AND mtime_ns = ? AND inode = ?",
            (str(path.resolve()), *key),
        ).fetchone()
        return str(row[0]) if row else None

    def record(self, path: Path, sha256: str) -> None:
        """Remember ``sha256`` for ``path`` at its current stat (written by :meth:`save`)."""
        key = _stat_key(path)
        if key is not None:
            self._pending.append((str(path.resolve()), *key, sha256))

    def sha256(self, path: Path) -> str:
        """The hash of ``path``: the recorded one when its stat matches, else read and recorded."""
        found = self.known(path)
        if found is None:
            found = sha256_file(path)
            self.record(path, found)
        return found

    def save(self) -> None:
        """Write the hashes recorded since the last save."""
        with self._db:
            self._db.executemany("INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?)", self._pending)
        self._pending.clear()

    def close(self) -> None:
        """Save and close the database."""
        self.save()
        self._db.close()


class ConversionStore:
    """Converted images by the SHA-256 of their source file (see the module docstring).

    Args:
        root: The cache folder (``OUT/../.cache/images`` for ``build ingest``).
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(root) / _VERSION

    def _base(self, sha: str) -> Path:
        return self.root / sha[:2] / sha

    def png_path(self, sha: str) -> Path:
        """Where the PNG converted from the file with hash ``sha`` is stored."""
        return self._base(sha).with_suffix(".png")

    def grid_path(self, sha: str) -> Path:
        """Where the near-duplicate grid of the file with hash ``sha`` is stored."""
        return self._base(sha).with_suffix(".grid.npy")

    def grid(self, sha: str, side: int) -> np.ndarray | None:
        """The stored near-duplicate grid of ``sha``; ``None``: absent, or not finite side × side float64."""
        # numpy here, not at the top: a re-run that changes nothing reads this module and no array.
        import numpy as np

        try:
            arr = np.load(self.grid_path(sha), allow_pickle=False)
        except (OSError, ValueError):
            return None  # absent or damaged: the caller decodes the PNG, never guesses
        if not isinstance(arr, np.ndarray) or arr.dtype != np.float64 or arr.shape != (side, side):
            return None
        return arr if bool(np.isfinite(arr).all()) else None

    def similarities(self) -> PairScores:
        """The remembered near-duplicate pair scores (empty when none, or unreadable), held compactly."""
        from scopebench.curate.ingestion.pair_scores import PairScores, read_json

        try:
            text = (self.root / "similarity.json").read_text(encoding="utf-8")
            # Item by item when the file is as written (no dict of a million items first).
            found = read_json(text)
            raw = json.loads(text) if found is None else None
        except (OSError, ValueError):
            return PairScores()  # absent or damaged: scores are recomputed, never guessed
        if found is not None:
            return found
        if not isinstance(raw, dict):
            return PairScores()
        return PairScores((str(k), float(v)) for k, v in raw.items() if _finite_number(v))

    def save_similarities(self, scores: MutableMapping[str, float]) -> None:
        """Write the pair scores (see :meth:`similarities`), as ``json.dump(scores, sort_keys=True)``."""
        from scopebench.curate.ingestion.pair_scores import write_json

        self.root.mkdir(parents=True, exist_ok=True)
        # Streamed into the file: on images whose hashes collide there are millions of pairs, and
        # the whole JSON text (then its bytes) held at once added ~200 MB to ingest's peak memory.
        with _replacing(self.root / "similarity.json") as tmp, tmp.open("w", encoding="utf-8") as fh:
            write_json(scores, fh)

    def get(self, sha: str) -> dict[str, Any] | None:
        """The stored facts of ``sha`` (``{"error": …}`` for a file that could not be converted)."""
        meta = self._base(sha).with_suffix(".json")
        try:
            info: dict[str, Any] = json.loads(meta.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None  # absent, or half-written by a run that was killed: convert again
        if "error" not in info and not self.png_path(sha).is_file():
            return None
        return info

    def put_png(self, sha: str, write: Callable[[Path], int]) -> int:
        """Store a PNG by ``write(path)`` (which returns its size) into a temporary file, renamed into place.

        The PNG counts only once :meth:`put` has written the JSON beside it.
        """
        final = self.png_path(sha)
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = final.with_name(f".{final.name}.{os.getpid()}.tmp")
        try:
            size = write(tmp)
            os.replace(tmp, final)
        finally:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
        return size

    def put(self, sha: str, info: dict[str, Any], png: bytes | None, grid: bytes | None = None) -> None:
        """Store a conversion; the JSON is renamed into place last, so a reader sees all or nothing.

        ``grid`` is the ``.npy`` file's bytes (:func:`grid_bytes`), when there is one.
        """
        base = self._base(sha)
        base.parent.mkdir(parents=True, exist_ok=True)
        if png is not None:
            _atomic_write(base.with_suffix(".png"), png)
        if grid is not None:
            _atomic_write(self.grid_path(sha), grid)
        _atomic_write(base.with_suffix(".json"), json.dumps(info, sort_keys=True).encode())


def _finite_number(value: object) -> bool:
    """Whether ``value`` (read from JSON) is a number a float holds (an integer may be too large)."""
    if not isinstance(value, int | float):
        return False
    try:
        float(value)
    except OverflowError:
        return False  # not a score ingest wrote: recomputed, never guessed
    return True


def grid_bytes(grid: np.ndarray) -> bytes:
    """A near-duplicate grid as the bytes of its ``.npy`` file (no pickle).

    Float64, the type :func:`~.near_duplicates.stretched_grid` computes in (its percentiles are
    float64): a narrower copy would change scores in their last bits, and with them decisions.
    """
    import numpy as np

    buffer = io.BytesIO()
    np.save(buffer, np.ascontiguousarray(grid, dtype=np.float64), allow_pickle=False)
    return buffer.getvalue()


@contextlib.contextmanager
def _replacing(path: Path) -> Iterator[Path]:
    """A temporary path beside ``path`` to write, renamed onto ``path`` when the block ends well."""
    # Two workers converting the same bytes write the same content; the rename makes either win.
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def _atomic_write(path: Path, data: bytes) -> None:
    with _replacing(path) as tmp:
        tmp.write_bytes(data)

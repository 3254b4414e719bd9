"""The remembered near-duplicate pair scores, held as sorted arrays instead of a dict.

Images whose hashes all collide propose a pair for almost every two of them (≈ 1.1M pairs at
20,000 images), and ingest remembers every score it computes (``similarity.json``) so that a
re-run scores no pair twice. A dict of ``"1:<md5>:<md5>"`` strings held ≈ 190 bytes a pair;
:class:`PairScores` holds a key as 67 ASCII bytes in a NumPy array beside its float64 score
(75 bytes a pair), kept sorted so that a look-up is a binary search, with the scores set since the
last merge in a small dict. :func:`write_json` writes them as ``json.dump(..., sort_keys=True)``
does, byte for byte, without building the sorted list of every item first.
"""

from __future__ import annotations

import heapq
import json
import math
from collections.abc import Iterable, Iterator, MutableMapping
from typing import TextIO

import numpy as np

__all__ = ["PairScores", "write_json"]

#: Longest key held in the arrays: ``<version>:<32 hex>:<32 hex>``, the pair keys ingest makes.
_WIDTH = 67
#: Scores set since the last merge into the arrays (a merge copies the arrays once).
_PENDING = 1 << 16
#: Items read from the arrays at a time while iterating (bounded, whatever the number of pairs).
_CHUNK = 1 << 14


def _fits(key: str) -> bool:
    """Whether ``key`` is held exactly as ``S67`` bytes: ASCII, no NUL (NumPy strips trailing ones)."""
    return len(key) <= _WIDTH and key.isascii() and "\x00" not in key


class PairScores(MutableMapping[str, float]):
    """Scores by pair key, compact (see the module docstring); any other key is kept in a dict.

    Args:
        items: The initial ``(key, score)`` items.
    """

    def __init__(self, items: Iterable[tuple[str, float]] = ()) -> None:
        self._keys = np.empty(0, dtype=f"S{_WIDTH}")
        self._values = np.empty(0, dtype=np.float64)
        self._pending: dict[str, float] = {}
        self._other: dict[str, float] = {}  # keys the arrays cannot hold exactly (a hostile file's)
        for key, value in items:
            self[key] = value
        self._merge()

    def _find(self, key: str) -> int | None:
        encoded = key.encode("ascii")
        pos = int(np.searchsorted(self._keys, encoded))
        return pos if pos < len(self._keys) and self._keys[pos] == encoded else None

    def _merge(self) -> None:
        """Move the pending scores into the sorted arrays."""
        if not self._pending:
            return
        keys = np.array(list(self._pending), dtype=self._keys.dtype)
        values = np.fromiter(self._pending.values(), dtype=np.float64, count=len(self._pending))
        order = np.argsort(keys, kind="stable")
        keys, values = keys[order], values[order]
        at = np.searchsorted(self._keys, keys)
        self._keys = np.insert(self._keys, at, keys)
        self._values = np.insert(self._values, at, values)
        self._pending.clear()

    def __getitem__(self, key: str) -> float:
        if not _fits(key):
            return self._other[key]
        if key in self._pending:
            return self._pending[key]
        pos = self._find(key)
        if pos is None:
            raise KeyError(key)
        return float(self._values[pos])

    def __setitem__(self, key: str, value: float) -> None:
        if not _fits(key):
            self._other[key] = float(value)
            return
        pos = self._find(key)
        if pos is not None:
            self._values[pos] = value
            return
        self._pending[key] = float(value)
        if len(self._pending) >= _PENDING:
            self._merge()

    def __delitem__(self, key: str) -> None:
        if not _fits(key):
            del self._other[key]
        elif key in self._pending:
            del self._pending[key]
        elif (pos := self._find(key)) is not None:
            self._keys = np.delete(self._keys, pos)
            self._values = np.delete(self._values, pos)
        else:
            raise KeyError(key)

    def __len__(self) -> int:
        return len(self._keys) + len(self._pending) + len(self._other)

    def __iter__(self) -> Iterator[str]:
        return (key for key, _ in self.sorted_items())

    def _array_items(self) -> Iterator[tuple[str, float]]:
        for start in range(0, len(self._keys), _CHUNK):
            keys = self._keys[start : start + _CHUNK].tolist()
            values = self._values[start : start + _CHUNK].tolist()
            yield from zip((k.decode("ascii") for k in keys), values, strict=True)

    def sorted_items(self) -> Iterator[tuple[str, float]]:
        """Every ``(key, score)``, by key as Python orders strings (the order of ``sort_keys``)."""
        # ASCII bytes sort as their code points: the arrays' order is the strings' order.
        streams = (self._array_items(), sorted(self._pending.items()), sorted(self._other.items()))
        return heapq.merge(*streams, key=lambda item: item[0])


def _number(value: float) -> str:
    # json's own spelling: repr for finite floats, NaN / Infinity / -Infinity otherwise.
    return float.__repr__(value) if math.isfinite(value) else json.dumps(value)


def write_json(scores: MutableMapping[str, float], fh: TextIO) -> None:
    """Write ``scores`` as ``json.dump(scores, fh, sort_keys=True)`` does, item by item."""
    items = scores.sorted_items() if isinstance(scores, PairScores) else iter(sorted(scores.items()))
    fh.write("{")
    for n, (key, value) in enumerate(items):
        fh.write(f"{', ' if n else ''}{json.dumps(key)}: {_number(float(value))}")
    fh.write("}")

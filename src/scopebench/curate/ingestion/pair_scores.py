"""The remembered near-duplicate pair scores, held as sorted arrays instead of a dict.

Images whose hashes all collide propose a pair for almost every two of them (≈ 1.1M pairs at
20,000 images), and ingest remembers every score it computes (``similarity.json``) so that a
re-run scores no pair twice. A dict of ``"1:<md5>:<md5>"`` strings held ≈ 190 bytes a pair;
:class:`PairScores` holds such a key as 33 bytes (the version character and the two MD5s' bytes)
in a NumPy array beside its float64 score (41 bytes a pair), kept sorted so that a look-up is a
binary search, with the scores set since the last merge in a small dict. :func:`write_json`
writes them as ``json.dump(..., sort_keys=True)`` does, byte for byte, without building the
sorted list of every item first.
"""

from __future__ import annotations

import heapq
import json
import math
import re
from collections.abc import Iterable, Iterator, MutableMapping
from typing import TextIO

import numpy as np

__all__ = ["PairScores", "read_json", "write_json"]

#: The keys held in the arrays, those ingest makes: ``<version>:<md5 hex>:<md5 hex>``. Lower-case
#: hex, so that the packed bytes sort as the strings do.
_PACKABLE = re.compile(r"[!-~]:[0-9a-f]{32}:[0-9a-f]{32}")
_WIDTH = 33  # bytes of a packed key
#: Scores set since the last merge into the arrays (a merge copies the arrays once).
_PENDING = 1 << 16
#: Items read from the arrays at a time while iterating (bounded, whatever the number of pairs).
_CHUNK = 1 << 14
_WS = "[ \t\n\r]*"  # JSON's whitespace (``\s`` would take more than json.loads does)
#: One ``"key": number`` item of an object of numbers, and what follows it (``,`` or ``}``).
_ITEM = re.compile(
    rf'{_WS}"((?:[^"\\\x00-\x1f]|\\.)*)"{_WS}:{_WS}'
    rf"(-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|NaN|-?Infinity){_WS}([,}}])"
)


def _pack(key: str) -> bytes | None:
    """``key`` as the arrays hold it (``None``: not a key of ingest's form, kept in a dict)."""
    if _PACKABLE.fullmatch(key) is None:
        return None
    return key[0].encode("ascii") + bytes.fromhex(key[2:34]) + bytes.fromhex(key[35:])


def _unpack(packed: bytes) -> str:
    # NumPy drops an ``S`` value's trailing NUL bytes (an MD5 may end in 00): pad them back.
    packed = packed.ljust(_WIDTH, b"\x00")
    return f"{chr(packed[0])}:{packed[1:17].hex()}:{packed[17:].hex()}"


class PairScores(MutableMapping[str, float]):
    """Scores by pair key, packed (see the module docstring); any other key is kept in a dict.

    Args:
        items: The initial ``(key, score)`` items.
    """

    def __init__(self, items: Iterable[tuple[str, float]] = ()) -> None:
        self._keys = np.empty(0, dtype=f"S{_WIDTH}")
        self._values = np.empty(0, dtype=np.float64)
        self._pending: dict[str, float] = {}
        self._other: dict[str, float] = {}  # keys of another form (an older version's, a hostile file's)
        for key, value in items:
            self[key] = value
        self._merge()

    def _find(self, packed: bytes) -> int | None:
        pos = int(np.searchsorted(self._keys, packed))
        if pos == len(self._keys):
            return None
        # An element comes back without its trailing NUL bytes: padded before comparing.
        return pos if bytes(self._keys[pos]).ljust(_WIDTH, b"\x00") == packed else None

    def _merge(self) -> None:
        """Move the pending scores into the sorted arrays."""
        if not self._pending:
            return
        keys = np.array([_pack(k) for k in self._pending], dtype=self._keys.dtype)
        values = np.fromiter(self._pending.values(), dtype=np.float64, count=len(self._pending))
        order = np.argsort(keys, kind="stable")
        keys, values = keys[order], values[order]
        at = np.searchsorted(self._keys, keys)
        self._keys = np.insert(self._keys, at, keys)
        self._values = np.insert(self._values, at, values)
        self._pending.clear()

    def __getitem__(self, key: str) -> float:
        packed = _pack(key)
        if packed is None:
            return self._other[key]
        if key in self._pending:
            return self._pending[key]
        pos = self._find(packed)
        if pos is None:
            raise KeyError(key)
        return float(self._values[pos])

    def __setitem__(self, key: str, value: float) -> None:
        packed = _pack(key)
        if packed is None:
            self._other[key] = float(value)
            return
        pos = self._find(packed)
        if pos is not None:
            self._values[pos] = value
            return
        self._pending[key] = float(value)
        if len(self._pending) >= _PENDING:
            self._merge()

    def __delitem__(self, key: str) -> None:
        packed = _pack(key)
        if packed is None:
            del self._other[key]
        elif key in self._pending:
            del self._pending[key]
        elif (pos := self._find(packed)) is not None:
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
            yield from zip(map(_unpack, keys), values, strict=True)

    def sorted_items(self) -> Iterator[tuple[str, float]]:
        """Every ``(key, score)``, by key as Python orders strings (the order of ``sort_keys``)."""
        # Packed keys sort as their strings do (fixed positions, lower-case hex): merge by string.
        streams = (self._array_items(), sorted(self._pending.items()), sorted(self._other.items()))
        return heapq.merge(*streams, key=lambda item: item[0])


def read_json(text: str) -> PairScores | None:
    """``text``, a JSON object whose values are all numbers, read item by item into :class:`PairScores`.

    Reads as ``json.loads`` followed by ``float`` of each value would (a repeated key keeps its last
    value), without the dict of every item that ``json.loads`` builds first. ``None`` when ``text``
    is anything else (another value among the items, not an object, damaged): the caller reads it
    the general way.
    """
    scores = PairScores()
    if re.fullmatch(rf"{_WS}{{{_WS}}}{_WS}", text[:256]) and len(text) <= 256:
        return scores
    start = re.match(rf"{_WS}{{", text)
    pos = start.end() if start is not None else len(text)
    while (item := _ITEM.match(text, pos)) is not None:
        key, number, after = item.groups()
        if "\\" in key:
            try:
                key = json.loads(f'"{key}"')
            except ValueError:
                return None  # an escape JSON does not have
        value = _parsed(number)
        if value is None:
            return None
        scores[key] = value
        pos = item.end()
        if after == "}":
            return scores if not text[pos:].strip(" \t\n\r") else None
    return None


def _parsed(number: str) -> float | None:
    """A JSON number as ``float(json.loads(number))``; ``None`` for an integer no float holds."""
    if any(c in number for c in ".eEIN"):
        return float(number)
    try:  # json.loads reads "-0" as the integer 0, whose float is 0.0, not -0.0
        return float(int(number))
    except (ValueError, OverflowError):  # past Python's digit limit, or beyond a float's range
        return None


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

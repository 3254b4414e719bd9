"""The compact pair-score cache: a dict to its readers, ``json.dump(sort_keys=True)`` on disk."""

from __future__ import annotations

import io
import json
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from scopebench.curate.ingestion import pair_scores
from scopebench.curate.ingestion.cache import ConversionStore
from scopebench.curate.ingestion.pair_scores import PairScores, read_json, write_json


def _key(rng: np.random.Generator) -> str:
    a, b = (bytes(rng.integers(0, 256, 16, dtype=np.uint8)).hex() for _ in range(2))
    return f"1:{a}:{b}"


def test_it_behaves_as_a_dict_and_writes_the_same_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Catches a look-up that misses a score set before the last merge (or finds one after it was
    replaced or deleted), keys that do not fit the arrays (non-ASCII, a NUL, longer) lost or
    truncated, a packed key whose last bytes are NUL read back short, and a file that differs from ``json.dump(sort_keys=True)`` in any byte (order,
    spacing, a float's digits, NaN)."""
    monkeypatch.setattr(pair_scores, "_PENDING", 7)  # many merges on a small set
    rng = np.random.default_rng(3)
    odd = [
        "1:é:b",
        "1:a\x00",
        "x" * 80,
        "",
        "1:",
        "0:zz",
        f"1:{'A' * 32}:{'0' * 32}",
        f"\x00:{'0' * 32}:{'0' * 32}",
    ]
    odd += [f"1:{'0' * 32}:{'0' * 32}", f"2:{'f' * 32}:{'e' * 30}00"]  # packed, NUL bytes last
    reference = {_key(rng): float(rng.random()) for _ in range(200)}
    reference.update({k: float(n) for n, k in enumerate(odd)})
    reference["1:nan"], reference["1:inf"], reference["1:tiny"] = float("nan"), float("-inf"), 1e-300
    scores = PairScores(list(reference.items())[:50])
    for key, value in list(reference.items())[50:]:
        scores[key] = value
    some = list(reference)[::17]
    for key in some[:5]:
        reference[key] = scores[key] = -0.25  # replaced: in the arrays or still pending
    for key in some[5:8]:
        del reference[key], scores[key]
    assert len(scores) == len(reference) and "1:a" not in scores and "1:a\x00" in scores and odd[-1] in scores
    assert all(scores[k] == v for k, v in reference.items() if v == v)
    merged = PairScores(reference.items())  # every packed key in the arrays, none pending
    assert all(merged[k] == v for k, v in reference.items() if v == v) and odd[-1] in merged
    assert list(scores) == sorted(reference)
    with pytest.raises(KeyError):
        scores[some[5]]
    written, expected = io.StringIO(), io.StringIO()
    write_json(scores, written)
    json.dump(reference, expected, sort_keys=True)
    assert written.getvalue() == expected.getvalue()
    written = io.StringIO()
    write_json(PairScores(), written)
    assert written.getvalue() == "{}"


def test_a_remembered_pair_costs_under_48_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Catches the scores held as a dict of key strings again (≈ 190 bytes a pair: 210 MB at the
    1.1M pairs of 20,000 images whose hashes all collide), or pending scores never merged."""
    monkeypatch.setattr(pair_scores, "_PENDING", 1000)  # the dict part stays a twentieth of the set
    rng = np.random.default_rng(4)
    parts = [_key(rng).split(":")[1:] for _ in range(20_000)]
    tracemalloc.start()
    try:
        scores = PairScores()
        for n, (a, b) in enumerate(parts):
            scores[f"1:{a}:{b}"] = n / 7  # key and score made here, as the scorer makes them
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert len(scores) == len(parts) and scores[f"1:{parts[9][0]}:{parts[9][1]}"] == 9 / 7
    assert held < 48 * len(parts), held / len(parts)


def _general(text: str) -> dict[str, float]:
    raw = json.loads(text)
    return {str(k): float(v) for k, v in raw.items()}


@pytest.mark.parametrize(
    "text",
    [
        "{}",
        " \n{ }\t",
        '{"1:a": 0.5, "1:a": -0, "1:\\u00e9\\n": 1e-3, "b" : NaN,"c":-Infinity , "d": 12}\n',
        f'{{"1:{"0" * 32}:{"ab" * 16}": 0.25, "1:x": 123456789012345678901234567890}}',
        '{"a": 1e999}',
    ],
)
def test_reading_item_by_item_is_json_loads(text: str) -> None:
    """Catches the item-by-item reader parting from ``json.loads`` + ``float`` on a file it takes:
    a repeated key keeping its first value, ``-0`` read as -0.0, an escaped key left escaped, NaN,
    an exponent or a long integer read otherwise."""
    found = read_json(text)
    assert found is not None
    expected = _general(text)
    assert list(found) == sorted(expected)
    assert [found[k] for k in sorted(expected)] == pytest.approx(
        [expected[k] for k in sorted(expected)], nan_ok=True
    )
    assert [str(found[k]) for k in sorted(expected)] == [str(expected[k]) for k in sorted(expected)]


@pytest.mark.parametrize(
    "text",
    [
        '{"a": "x"}',
        '{"a": true}',
        '{"a": 1,}',
        '{"a": 1',
        "[1]",
        '{"a": 1} x',
        '{"a\\q": 1}',
        '{"a": 01}',
        '{"a": 1}\x0b',
        '{"a": %s}' % ("9" * 5000),
        '{"a": {"b": 1}}',
        "",
    ],
)
def test_anything_else_is_left_to_the_general_reader(text: str) -> None:
    """Catches the item-by-item reader accepting what ``json.loads`` refuses (a trailing comma,
    a leading zero, whitespace JSON does not have, text after the object, a bad escape) or
    reading part of an object whose other values are not numbers."""
    assert read_json(text) is None


def test_the_store_reads_what_it_wrote_and_survives_hostile_numbers(tmp_path: Path) -> None:
    """Catches a store whose saved scores read back otherwise (one key lost, one value changed)
    and an integer too large for a float crashing the read instead of being recomputed."""
    store = ConversionStore(tmp_path)
    rng = np.random.default_rng(6)
    scores = PairScores((_key(rng), float(v)) for v in rng.random(300))
    scores["0:old"] = 0.125
    store.save_similarities(scores)
    assert store.similarities() == scores
    (store.root / "similarity.json").write_text('{"1:a": %s, "1:b": 0.5, "1:c": true}' % ("9" * 400))
    assert store.similarities() == {"1:b": 0.5, "1:c": 1.0}

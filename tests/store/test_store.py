from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pyarrow.parquet as pq

from scopebench.items import Record
from scopebench.store import RunStore
from scopebench.store.runstore import _unreadable_records, salvage_hint


def _rec(i: int, status: str = "ok") -> Record:
    return Record(
        item_id=f"x/{i}", model="random", status=status, choice=1, correct=i % 2 == 0, scores=[0.5, 0.5]
    )


def test_add_and_read_back(tmp_path: Path) -> None:
    with RunStore(tmp_path / "r.sqlite") as store:
        assert store.add([_rec(2), _rec(1)]) == 2
        assert store.done_ids() == {"x/1", "x/2"}
        recs = store.records()
    assert [r.item_id for r in recs] == ["x/1", "x/2"]
    assert recs[1].correct is True and recs[1].scores == [0.5, 0.5]


def test_wal_mode_and_persistence_across_connections(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    with RunStore(path) as store:
        store.add([_rec(1)])
    mode = sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"
    with RunStore(path) as store:
        assert store.count() == 1


def test_replace_same_item_and_delete_status(tmp_path: Path) -> None:
    with RunStore(tmp_path / "r.sqlite") as store:
        store.add([_rec(1, "error"), _rec(2)])
        store.add([_rec(1, "error")])
        assert store.count() == 2
        assert store.delete_status(["error"]) == 1
        assert store.done_ids() == {"x/2"}


def test_exports(tmp_path: Path) -> None:
    with RunStore(tmp_path / "r.sqlite") as store:
        store.add([_rec(i) for i in range(3)])
        store.export_jsonl(tmp_path / "r.jsonl")
        store.export_parquet(tmp_path / "r.parquet")
    lines = (tmp_path / "r.jsonl").read_text().splitlines()
    assert [json.loads(x)["item_id"] for x in lines] == ["x/0", "x/1", "x/2"]
    table = pq.read_table(tmp_path / "r.parquet")
    assert table.num_rows == 3
    assert json.loads(table.column("scores")[0].as_py()) == [0.5, 0.5]


def test_meta_roundtrip(tmp_path: Path) -> None:
    with RunStore(tmp_path / "r.sqlite") as store:
        store.set_meta("k", {"a": [1, 2]})
        assert store.get_meta("k") == {"a": [1, 2]}
        assert store.get_meta("missing", 3) == 3


def test_generation_moves_with_every_write_and_delete(tmp_path: Path) -> None:
    from helpers import make_items
    from scopebench.items import Record

    items = make_items(3)
    with RunStore(tmp_path / "s.sqlite") as store:
        assert store.generation() == 0
        store.add([Record(item_id=it.id, model="m", status="ok", choice=0, correct=True) for it in items])
        assert store.generation() == 1
        store.add([])  # nothing written: nothing changed
        assert store.generation() == 1
        store.add([Record(item_id=items[0].id, model="m", status="error", error="x")])
        assert store.delete_status(["unparsed"]) == 0 and store.generation() == 2
        assert store.delete_status(["error"]) == 1 and store.generation() == 3
    with RunStore(tmp_path / "s.sqlite") as store:  # persisted with the records
        assert store.generation() == 3


def test_store_creates_missing_folders_and_refuses_a_corrupt_file(tmp_path: Path) -> None:
    import pytest

    from scopebench.errors import DataFormatError

    with RunStore(tmp_path / "a" / "b" / "r.sqlite") as store:
        store.add([_rec(1)])
    with RunStore(tmp_path / "a" / "b" / "r.sqlite") as store:  # an existing folder is fine too
        assert store.count() == 1
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"this is not a database" * 100)
    with pytest.raises(
        DataFormatError, match=r"bad\.sqlite does not start with the SQLite header.*--salvage.*--fresh"
    ):
        RunStore(bad)


def test_closed_after_with_block(tmp_path: Path) -> None:
    import pytest

    with RunStore(tmp_path / "r.sqlite") as store:
        store.add([_rec(1)])
    with pytest.raises(sqlite3.ProgrammingError):
        store.count()
    other = RunStore(tmp_path / "r.sqlite")
    other.close()
    with pytest.raises(sqlite3.ProgrammingError):
        other.done_ids()


def test_items_are_stored_once_and_read_back(tmp_path: Path) -> None:
    from dataclasses import replace

    from helpers import make_items

    items = make_items(2)
    with RunStore(tmp_path / "r.sqlite") as store:
        store.add_items(items)
        store.add_items([replace(items[0], question="changed?")])  # "once": the first summary stays
        got = store.items()
    assert set(got) == {"unit/000", "unit/001"}
    assert got["unit/000"] == items[0].to_summary()
    assert got["unit/000"]["question"] == "Question 0?"


def test_delete_status_several_and_none(tmp_path: Path) -> None:
    with RunStore(tmp_path / "r.sqlite") as store:
        store.add([_rec(1, "error"), _rec(2, "unparsed"), _rec(3), _rec(4, "error")])
        gen = store.generation()
        assert store.delete_status([]) == 0 and store.generation() == gen
        assert store.delete_status(iter(["error", "unparsed"])) == 3
        assert store.done_ids() == {"x/3"} and store.generation() == gen + 1
        assert [r.status for r in store.records()] == ["ok"]


def test_exports_keep_unicode_and_empty_parquet(tmp_path: Path) -> None:
    rec = Record(
        item_id="x/μ", model="m", status="ok", choice=0, correct=True, response="5 μm", extra={"k": "é"}
    )
    with RunStore(tmp_path / "r.sqlite") as store:
        assert store.export_parquet(tmp_path / "empty.parquet") == tmp_path / "empty.parquet"
        store.add([rec])
        assert store.export_jsonl(tmp_path / "r.jsonl") == tmp_path / "r.jsonl"
        store.export_parquet(tmp_path / "r.parquet")
    text = (tmp_path / "r.jsonl").read_text(encoding="utf-8")
    # Readable UTF-8 (what the export promises), no leftover temporary file.
    assert "5 μm" in text and '"é"' in text and text.endswith("\n") and text.count("\n") == 1
    assert json.loads(text) == rec.to_dict()
    assert not list(tmp_path.glob("*.tmp"))
    empty = pq.read_table(tmp_path / "empty.parquet")
    assert empty.num_rows == 0 and empty.column_names == ["item_id"]
    assert str(empty.schema.field("item_id").type) == "string"  # a typed column, not pyarrow's "null"
    row = pq.read_table(tmp_path / "r.parquet").to_pylist()[0]
    assert row["scores"] is None and json.loads(row["extra"]) == {"k": "é"} and '"é"' in row["extra"]
    assert row["response"] == "5 μm" and row["item_id"] == "x/μ"


# The integrity check a writing run does (make mutation survivors) ------------------------------


def _records_table(rows: list[tuple[bytes | str, str, str]]) -> sqlite3.Connection:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE records (item_id TEXT, status TEXT, body TEXT)")
    db.executemany("INSERT INTO records VALUES (?, ?, ?)", rows)
    return db


def test_unreadable_records_names_at_most_limit_in_store_order() -> None:
    # Seven broken bodies: the first five are named (a list, never None), the scan stops there.
    db = _records_table([(f"x/{i}", "ok", "{broken") for i in range(7)])
    assert _unreadable_records(db) == ["x/0", "x/1", "x/2", "x/3", "x/4"]
    assert _unreadable_records(db, limit=2) == ["x/0", "x/1"]


def test_unreadable_records_checks_both_id_and_status_columns() -> None:
    good, other = _rec(1), _rec(2, "error")
    db = _records_table([
        ("x/1", "ok", json.dumps(good.to_dict())),  # readable
        ("x/9", "ok", json.dumps(good.to_dict())),  # body of another item
        ("x/2", "ok", json.dumps(other.to_dict())),  # its own item, but the status column says ok
    ])  # fmt: skip
    assert _unreadable_records(db) == ["x/9", "x/2"]


def test_unreadable_records_names_an_id_of_broken_utf8_without_raising() -> None:
    # Overwritten bytes in the id column: reported (with U+FFFD), not a UnicodeDecodeError traceback.
    db = _records_table([(b"x/\xff", "ok", json.dumps(_rec(1).to_dict()))])
    assert _unreadable_records(db) == ["x/\ufffd"]


def test_salvage_hint_gives_the_commands_to_type() -> None:
    # Users copy these commands: NEWDIR must be spelt alike in both, and each way out named.
    assert salvage_hint(Path("runs/a")) == (
        "Save what is readable with `scopebench export runs/a --salvage NEWDIR` (copies the run's "
        "configuration and every readable record, from the store and records.jsonl, into NEWDIR), then "
        "run the same command with --out NEWDIR: only the lost items are asked again. "
        "Or start over in this folder with --fresh"
    )

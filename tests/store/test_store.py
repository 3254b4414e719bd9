from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

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


# Messages and options of opening a store (mutation testing) ------------------


def _ids_store(path: Path, ids: list[str]) -> None:
    """A closed store holding one record per id (its WAL checkpointed into the file)."""
    with RunStore(path) as store:
        store.add(Record(item_id=i, model="m", status="ok", choice=0, correct=True) for i in ids)


def test_missing_empty_and_unreadable_stores_say_which_file_and_what_to_do(tmp_path: Path) -> None:
    from scopebench.errors import DataNotFoundError, RunDirReadOnlyError, StoreDamagedError

    gone = tmp_path / "run" / "records.sqlite"
    with pytest.raises(DataNotFoundError) as nf:
        RunStore(gone, readonly=True)
    assert str(nf.value) == f"no run store at {gone}; give a run directory written by `scopebench run`"
    empty = tmp_path / "run" / "records.sqlite"
    empty.parent.mkdir()
    empty.write_bytes(b"")
    with pytest.raises(StoreDamagedError) as dmg:
        RunStore(empty)
    assert str(dmg.value) == (
        f"the run store {empty} is empty (0 bytes): it was truncated (a full disk, a copy cut short) "
        f"and holds no records. {salvage_hint(empty.parent)}"
    )
    # A store that cannot be read at all (here a folder in its place): the OS's reason, no traceback.
    folder = tmp_path / "dir.sqlite"
    folder.mkdir()
    with pytest.raises(RunDirReadOnlyError) as ro:
        RunStore(folder)
    assert str(ro.value).startswith(f"cannot read the run store {folder}: [Errno 21] Is a directory")


def _corrupt_index(path: Path, renames: dict[bytes, bytes]) -> None:
    """Rename ids in the id index only (order kept): the index and the table now disagree."""
    with sqlite3.connect(path) as db:
        root = db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'sqlite_autoindex_records_1'")
        page = root.fetchone()[0]
    raw = bytearray(path.read_bytes())
    size = int.from_bytes(raw[16:18], "big")
    start = (page - 1) * size
    for old, new in renames.items():
        at = raw.index(old, start, start + size)
        raw[at : at + len(new)] = new
    path.write_bytes(bytes(raw))


def test_a_run_refuses_an_index_that_disagrees_with_its_table_a_reader_does_not(tmp_path: Path) -> None:
    # The id index decides what a resume skips, so a writing run checks it (integrity_check); readers
    # (report, export, salvage) only need the table, and open the store all the same.
    from scopebench.errors import StoreDamagedError

    path = tmp_path / "run" / "records.sqlite"
    _ids_store(path, ["id-a", "id-b", "id-d", "id-f"])
    _corrupt_index(path, {b"id-b": b"id-c", b"id-f": b"id-g"})
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA quick_check").fetchone()[0] == "ok"
        problems = [row[0] for row in db.execute("PRAGMA integrity_check(5)")]
    assert len(problems) >= 2  # so the message's "; " separator is exercised
    with pytest.raises(StoreDamagedError) as exc:
        RunStore(path, check=True)
    assert str(exc.value) == (
        f"the run store {path} is damaged (integrity check failed: {'; '.join(problems)}). "
        f"{salvage_hint(path.parent)}"
    )
    with RunStore(path, readonly=True, check=True) as reader:  # quick_check: the table is fine
        assert {r.item_id for r in reader.records()} == {"id-a", "id-b", "id-d", "id-f"}
    with RunStore(path) as unchecked:  # no check unless asked (what salvage relies on)
        assert unchecked.count() == 4


def test_a_run_names_every_unreadable_record(tmp_path: Path) -> None:
    from scopebench.errors import StoreDamagedError

    path = tmp_path / "run" / "records.sqlite"
    _ids_store(path, ["a", "b", "c"])
    with sqlite3.connect(path) as db:
        db.execute("UPDATE records SET body = '{broken' WHERE item_id != 'b'")
    with pytest.raises(StoreDamagedError) as exc:
        RunStore(path, check=True)
    assert str(exc.value) == (
        f"the run store {path} is damaged (the stored record of item(s) 'a', 'c' cannot be read). "
        f"{salvage_hint(path.parent)}"
    )


def test_a_store_sqlite_cannot_open_is_a_permissions_problem_other_errors_damage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scopebench.errors import RunDirReadOnlyError, StoreDamagedError

    path = tmp_path / "run" / "records.sqlite"

    def refuse(message: str) -> Any:
        def connect(*args: object, **kwargs: object) -> sqlite3.Connection:
            raise sqlite3.OperationalError(message)

        return connect

    monkeypatch.setattr(sqlite3, "connect", refuse("unable to open database file"))
    with pytest.raises(RunDirReadOnlyError) as ro:
        RunStore(path)
    assert str(ro.value) == (
        f"cannot open the run store {path}: unable to open database file; check the folder's permissions"
    )
    monkeypatch.setattr(sqlite3, "connect", refuse("disk I/O error"))
    with pytest.raises(StoreDamagedError, match=r"is damaged \(disk I/O error\)\. Save what is readable"):
        RunStore(path)


def test_readers_ask_for_uri_filenames(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # This machine's SQLite reads "file:" names as URIs anyway (SQLITE_USE_URI=1); a build without
    # it takes "file:///…?immutable=1" for a relative file name and cannot open it. Emulate one.
    from scopebench.store.lock import RunLock

    real = sqlite3.connect

    def no_uri_build(database: Any, *args: Any, uri: bool = False, **kwargs: Any) -> sqlite3.Connection:
        if str(database).startswith("file:") and not uri:
            raise sqlite3.OperationalError("unable to open database file")
        return real(database, *args, uri=uri, **kwargs)

    path = tmp_path / "run" / "records.sqlite"
    _ids_store(path, ["a", "b"])
    monkeypatch.setattr(sqlite3, "connect", no_uri_build)
    with RunStore(path, readonly=True) as finished:  # read in place, immutable
        assert finished.done_ids() == {"a", "b"}
    lock = RunLock(path.parent)
    lock.acquire()
    try:
        with RunStore(path, readonly=True) as live:  # a run holds the folder: mode=ro
            assert live.done_ids() == {"a", "b"}
    finally:
        lock.release()


def test_closing_a_reader_of_a_copied_wal_twice_is_harmless(tmp_path: Path) -> None:
    path = tmp_path / "run" / "records.sqlite"
    writer = RunStore(path)
    writer.add([_rec(1)])  # kept in records.sqlite-wal while the writer is open
    reader = RunStore(path, readonly=True)
    assert reader.done_ids() == {"x/1"}
    copy_dir = Path(reader._tmp.name) if reader._tmp is not None else None
    assert copy_dir is not None and copy_dir.is_dir()
    reader.close()
    reader.close()  # e.g. close() and then the with-block's exit
    assert not copy_dir.exists()
    writer.close()


def test_a_record_that_cannot_be_read_back_names_the_item_and_the_error(tmp_path: Path) -> None:
    from scopebench.errors import StoreDamagedError

    path = tmp_path / "run" / "records.sqlite"
    _ids_store(path, ["a"])
    with sqlite3.connect(path) as db:
        db.execute("UPDATE records SET body = '{broken'")
    try:
        json.loads("{broken")
    except json.JSONDecodeError as err:
        why = f"JSONDecodeError: {err}"
    with RunStore(path) as store, pytest.raises(StoreDamagedError) as exc:
        store.records()
    assert str(exc.value) == (
        f"the run store {path} is damaged: the record of item 'a' cannot be read ({why}). "
        f"{salvage_hint(path.parent)}"
    )


def test_a_page_sqlite_cannot_read_names_the_store_and_the_way_out(tmp_path: Path) -> None:
    from scopebench.errors import StoreDamagedError

    path = tmp_path / "run" / "records.sqlite"
    _ids_store(path, [f"item-{i:03d}" for i in range(300)])  # several pages of records
    with sqlite3.connect(path) as db:
        page = db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'records'").fetchone()[0]
    raw = bytearray(path.read_bytes())
    size = int.from_bytes(raw[16:18], "big")
    raw[(page - 1) * size : page * size] = b"\xff" * size
    path.write_bytes(bytes(raw))
    with RunStore(path) as store, pytest.raises(StoreDamagedError) as exc:
        store.records()
    msg = str(exc.value)
    assert msg.startswith(f"the run store {path} is damaged (") and "malformed" in msg
    assert msg.endswith(f"). {salvage_hint(path.parent)}")


def test_export_jsonl_is_utf8_whatever_the_locale(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # open() without an encoding takes the locale's; emulate a Latin-1 locale for this module.
    import builtins

    import scopebench.store.runstore as runstore_mod

    def latin1_locale(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if "b" not in mode and kwargs.get("encoding") is None:
            kwargs["encoding"] = "latin-1"
        return builtins.open(file, mode, *args, **kwargs)

    monkeypatch.setattr(runstore_mod, "open", latin1_locale, raising=False)
    rec = Record(item_id="x/1", model="m", status="ok", choice=0, correct=True, response="细胞 5 μm")
    with RunStore(tmp_path / "r.sqlite") as store:
        store.add([rec])
        store.export_jsonl(tmp_path / "r.jsonl")
    assert json.loads((tmp_path / "r.jsonl").read_bytes().decode("utf-8"))["response"] == "细胞 5 μm"


def test_adding_nothing_writes_nothing(tmp_path: Path) -> None:
    # add() returns how many records it wrote (the run adds it to its count of new results): 0 for none,
    # and the generation (what tells a finished run its metrics are stale) does not move.
    with RunStore(tmp_path / "r.sqlite") as store:
        assert store.add([]) == 0 and store.add(iter([])) == 0
        assert store.generation() == 0 and store.count() == 0


def test_a_lone_surrogate_is_stored_as_the_replacement_character(tmp_path: Path) -> None:
    # "\ud800" is valid JSON (a reply cut inside an emoji's surrogate pair, or a data file's text) but
    # has no UTF-8 encoding: SQLite refused the whole batch with a UnicodeEncodeError traceback.
    # It is stored as U+FFFD (what a UTF-8 decoder shows for broken bytes); a split pair is joined.
    from dataclasses import replace

    from helpers import make_items

    path = tmp_path / "r.sqlite"
    rec = Record(item_id="x/1", model="m", status="ok", choice=0, response="A \ud800 B \ud83d\ude00")
    with RunStore(path) as store:
        assert store.add([rec, _rec(2)]) == 2
        store.add_items([replace(make_items(1)[0], question="Q \udfff?")])
        got = store.records()[0]
        store.export_jsonl(tmp_path / "r.jsonl")
        assert store.items()["unit/000"]["question"] == "Q \ufffd?"
    assert (got.item_id, got.response) == ("x/1", "A \ufffd B 😀")
    assert '"A \ufffd B 😀"' in (tmp_path / "r.jsonl").read_text(encoding="utf-8")

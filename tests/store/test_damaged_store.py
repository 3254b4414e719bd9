"""Damaged and read-only run folders: each says what is wrong and what to do; reading never writes."""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import sqlite3
from pathlib import Path

import pytest

from scopebench.cli import main
from scopebench.engine import RunConfig, run_benchmark
from scopebench.errors import StoreDamagedError
from scopebench.items import Record
from scopebench.store import RunStore, load_run
from scopebench.store.salvage import salvage_run

N = 200


def _cfg() -> RunConfig:
    return RunConfig(benchmark="unit", data=str(N), model="random", batch_size=16)


@pytest.fixture()
def finished(tmp_path: Path) -> Path:
    run_benchmark(_cfg(), tmp_path / "run")
    return tmp_path / "run"


def _page_holding(store: Path, needle: bytes) -> tuple[int, int]:
    """(offset, size) of the database page whose bytes contain ``needle``."""
    raw = store.read_bytes()
    size = int.from_bytes(raw[16:18], "big")
    at = raw.index(needle)
    return at - at % size, size


def _snapshot(folder: Path) -> dict[str, tuple[int, int, str]]:
    return {
        str(p.relative_to(folder)): (
            p.stat().st_size,
            p.stat().st_mtime_ns,
            hashlib.sha256(p.read_bytes()).hexdigest(),
        )
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _expected_choices(run: Path) -> dict[str, int | None]:
    return {r.item_id: r.choice for r in load_run(run).records}


# Damaged stores --------------------------------------------------------------------------------


def test_zeroed_page_is_reported_on_resume_and_salvage_recovers_the_rest(
    finished: Path, tmp_path: Path
) -> None:
    expected = _expected_choices(finished)
    store = finished / "records.sqlite"
    offset, size = _page_holding(store, b'"item_id": "unit/100"')
    with open(store, "r+b") as fh:
        fh.seek(offset)
        fh.write(b"\0" * size)
    # Before: the resume died in a sqlite3.DatabaseError traceback.
    with pytest.raises(StoreDamagedError, match=r"records\.sqlite is damaged .*--salvage NEWDIR"):
        run_benchmark(_cfg(), finished)
    # The store alone: records.jsonl would give the lost page back, so leave it out here.
    (finished / "records.jsonl").unlink()
    res = salvage_run(finished, tmp_path / "saved")
    assert res.from_jsonl == 0 and 0 < res.from_store < N and res.store_error is None
    lost = N - res.from_store
    assert "unit/100" not in {r.item_id for r in load_run(tmp_path / "saved").records}
    resumed = run_benchmark(_cfg(), tmp_path / "saved")
    assert resumed.n_new == lost  # only the lost items are asked again
    assert _expected_choices(tmp_path / "saved") == expected


def test_salvage_fills_lost_items_from_records_jsonl(
    finished: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = finished / "records.sqlite"
    offset, size = _page_holding(store, b'"item_id": "unit/150"')
    with open(store, "r+b") as fh:
        fh.seek(offset)
        fh.write(b"\0" * size)
    assert main(["export", str(finished), "--salvage", str(tmp_path / "saved")]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"{N} records saved to" in out and "from records.jsonl" in out and "--out" in out
    assert run_benchmark(_cfg(), tmp_path / "saved").n_new == 0
    assert _expected_choices(tmp_path / "saved") == {r.item_id: r.choice for r in _jsonl(finished)}
    # A salvage never writes over a folder that holds something.
    assert main(["export", str(finished), "--salvage", str(tmp_path / "saved")]) == 2


def _jsonl(run: Path) -> list[Record]:
    lines = (run / "records.jsonl").read_text().splitlines()
    return [Record.from_dict(json.loads(line)) for line in lines]


def test_random_bytes_in_a_record_are_caught_when_the_run_opens(
    finished: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = finished / "records.sqlite"
    raw = store.read_bytes()
    at = raw.index(b'"item_id": "unit/120"')
    rng = random.Random(0)
    garbage = bytes(rng.randrange(128, 256) for _ in range(24))  # bytes no UTF-8 text starts with
    with open(store, "r+b") as fh:
        fh.seek(at + 2)  # inside the JSON text of the record: SQLite's own check cannot see it
        fh.write(garbage)
    with sqlite3.connect(store) as db:
        assert db.execute("PRAGMA quick_check").fetchone()[0] == "ok"
    # Before: unnoticed by the run, then `report` crashed in json.loads.
    with pytest.raises(StoreDamagedError, match=r"record of item\(s\) 'unit/120' cannot be read.*--salvage"):
        run_benchmark(_cfg(), finished)
    assert main(["report", str(finished)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "is damaged" in err and "--salvage" in err and "Traceback" not in err


def test_empty_store_is_not_silently_started_over(finished: Path) -> None:
    (finished / "records.sqlite").write_bytes(b"")
    # Before: SQLite took the 0-byte file for a new database and the run asked all 200 items again.
    with pytest.raises(StoreDamagedError, match=r"is empty \(0 bytes\).*--fresh"):
        run_benchmark(_cfg(), finished)
    assert (finished / "records.sqlite").stat().st_size == 0  # nothing was written over it
    # The two ways out the message names both work.
    assert salvage_run(finished, finished.parent / "saved").from_jsonl == N
    assert run_benchmark(_cfg(), finished, fresh=True).n_new == N


def test_damaged_header_names_the_problem(finished: Path) -> None:
    store = finished / "records.sqlite"
    with open(store, "r+b") as fh:
        fh.write(b"\0" * 100)
    with pytest.raises(StoreDamagedError, match="does not start with the SQLite header"):
        load_run(finished)


# Read-only reading -----------------------------------------------------------------------------


def test_compare_export_load_write_nothing_into_the_run_folder(
    finished: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Root ignores permissions, so this checks what matters in any case: reading writes nothing.
    # Before: opening the store created records.sqlite-wal and -shm (gone again after the close,
    # so they are looked for while the store is open) and ran the schema script.
    seen: set[str] = set()
    real_close = RunStore.close

    def close(self: RunStore) -> None:
        seen.update(os.listdir(finished))
        real_close(self)

    monkeypatch.setattr(RunStore, "close", close)
    before = _snapshot(finished)
    assert main(["-q", "compare", str(finished), str(finished), "--out", str(tmp_path / "cmp")]) == 0
    assert main(["export", str(finished), "--format", "jsonl", "--out", str(tmp_path / "x.jsonl")]) == 0
    assert len(load_run(finished).records) == N
    assert _snapshot(finished) == before
    assert seen == set(before)  # no -wal, no -shm, nothing else, at any time
    assert len((tmp_path / "x.jsonl").read_text().splitlines()) == N


def test_read_only_folder_is_reported_without_writing(
    finished: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Stands in for a folder the user may not write (root, who runs these tests here, may).
    from scopebench.store import rundir

    before = _snapshot(finished)
    monkeypatch.setattr(rundir, "is_writable", lambda folder: Path(folder) != finished)
    assert main(["report", str(finished)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "read-only: no report files were written; pass --out DIR" in out
    assert "accuracy" in out.lower()
    # With --out the files go there, and the run's own metrics.json is not rewritten.
    assert main(["-q", "report", str(finished), "--out", str(tmp_path / "rep")]) == 0
    assert (tmp_path / "rep" / "run" / "metrics.json").is_file()
    assert main(["export", str(finished)]) == 2
    assert "read-only" in capsys.readouterr().err
    assert _snapshot(finished) == before


def _permissions_enforced(tmp: Path) -> bool:
    """False for root with CAP_DAC_OVERRIDE (whom no mode bit stops); True for users, and for root
    run under ``setpriv --bounding-set=-dac_override,-dac_read_search``."""
    probe = tmp / "probe"
    probe.mkdir()
    probe.chmod(0o555)
    try:
        (probe / "f").write_text("x")
    except PermissionError:
        return True
    finally:
        probe.chmod(0o755)
    return False


def test_chmod_read_only_folder(finished: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if not _permissions_enforced(tmp_path):
        pytest.skip("file permissions do not apply to this user (root)")
    before = _snapshot(finished)
    for p in [finished, *finished.iterdir()]:
        p.chmod(p.stat().st_mode & ~0o222)
    try:
        assert main(["report", str(finished)]) == 0
        assert "read-only" in capsys.readouterr().out
        assert main(["-q", "report", str(finished), "--out", str(tmp_path / "rep")]) == 0
        # A run needs write access: one message, no OSError traceback.
        assert (
            main(
                [
                    "-q",
                    "run",
                    "--bench",
                    "unit",
                    "--data",
                    str(N),
                    "--model",
                    "random",
                    "--out",
                    str(finished),
                ]
            )
            == 2
        )
        assert "cannot write to the run directory" in capsys.readouterr().err
    finally:
        for p in [finished, *finished.iterdir()]:
            p.chmod(p.stat().st_mode | 0o200)
    assert _snapshot(finished) == before


def test_wal_left_by_a_killed_run_is_read_from_a_copy(tmp_path: Path) -> None:
    # A run killed mid-way leaves records in records.sqlite-wal; a reader must see them without
    # writing (mode=ro would create -shm; immutable=1 would miss them).
    live = tmp_path / "live"
    run_benchmark(RunConfig(benchmark="unit", data="6", model="random"), live)
    writer = RunStore(live / "records.sqlite")
    writer.add([Record(item_id="late", model="random", status="ok", choice=0, correct=True)])
    assert (live / "records.sqlite-wal").stat().st_size > 0
    copy = tmp_path / "copy"
    shutil.copytree(live, copy)  # as a killed run leaves it: WAL present, nobody holding the lock
    writer.close()
    before = _snapshot(copy)
    ids = {r.item_id for r in load_run(copy).records}
    assert "late" in ids and len(ids) == 7
    assert _snapshot(copy) == before


def test_fresh_replaces_a_damaged_store_even_without_run_json(finished: Path) -> None:
    (finished / "run.json").unlink()
    (finished / "records.sqlite").write_bytes(b"\0" * 4096)
    (finished / "notes.png").write_bytes(b"mine")  # not known to be a run's file: kept
    assert run_benchmark(_cfg(), finished, fresh=True).n_new == N
    assert (finished / "notes.png").read_bytes() == b"mine"


def test_export_to_a_place_that_cannot_be_written_is_one_message(
    finished: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A destination under a plain file cannot be created, for root too (as a read-only or
    # missing mount would for a user): one message naming the place, exit 2, no OSError traceback.
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    assert main(["export", str(finished), "--format", "jsonl", "--out", str(blocker / "x.jsonl")]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"cannot write {blocker / 'x.jsonl'}" in err and "Traceback" not in err
    assert main(["export", str(finished), "--salvage", str(blocker / "new")]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"cannot write {blocker / 'new'}" in err


def test_report_and_compare_outputs_that_cannot_be_written_are_one_message(
    finished: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    for argv in (
        ["report", str(finished), "--out", str(blocker / "rep")],
        ["report", str(finished), "--out", str(tmp_path / "rep"), "--html", str(blocker / "r.html")],
        ["compare", str(finished), str(finished), "--out", str(blocker / "cmp")],
    ):
        assert main(["-q", *argv]) == 2, argv
        err = " ".join(capsys.readouterr().err.split())
        assert f"cannot write or open {blocker}" in err, (argv, err)

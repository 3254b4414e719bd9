"""One writer per run folder: a second real `scopebench run` process is refused; a dead one's lock is not."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import REPO
from scopebench.engine import RunConfig, run_benchmark
from scopebench.errors import RunLockedError
from scopebench.store import load_run
from scopebench.store.lock import LOCK_FILE, RunLock, lock_holder

_SCRIPT = """
import sys
from scopebench.models import register_scheme
register_scheme("slow", "slow_backend:SlowBackend", bare=True)
from scopebench.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _data(tmp: Path, n: int) -> Path:
    path = tmp / "data.jsonl"
    with open(path, "w") as fh:
        for i in range(n):
            row = {"id": f"q{i:03d}", "question": f"Q{i}?", "choices": ["a", "b", "c"], "answer": i % 3}
            fh.write(json.dumps(row) + "\n")
    return path


def _cmd(data: Path, out: Path, delay: float, *extra: str) -> list[str]:
    return [
        sys.executable, "-c", _SCRIPT, "-q", "run", "--bench", "local", "--data", str(data),
        "--model", "slow", "--out", str(out), "--batch-size", "2", "--model-arg", f"delay={delay}", *extra,
    ]  # fmt: skip


def _env() -> dict[str, str]:
    extra = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(REPO / "tests"), extra) if p)}


def _count(out: Path) -> int:
    try:
        db = sqlite3.connect(f"file:{out / 'records.sqlite'}?mode=ro", uri=True)
        return int(db.execute("SELECT COUNT(*) FROM records").fetchone()[0])
    except sqlite3.Error:
        return 0


def _wait_for(cond: object, proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    deadline = time.time() + timeout
    while not cond() and proc.poll() is None and time.time() < deadline:  # type: ignore[operator]
        time.sleep(0.02)
    assert cond(), "the first run did not get going"  # type: ignore[operator]


@pytest.mark.slow
def test_second_writer_refused_at_once_fresh_too_and_a_killed_holder_leaves_no_lock(tmp_path: Path) -> None:
    data, out = _data(tmp_path, 40), tmp_path / "run"
    first = subprocess.Popen(
        _cmd(data, out, 0.25), env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        _wait_for(lambda: _count(out) >= 4, first)
        holder = lock_holder(out)
        assert holder is not None and holder["pid"] == first.pid
        for extra in ((), ("--fresh",)):
            t = time.perf_counter()
            second = subprocess.run(_cmd(data, out, 0.0, *extra), env=_env(), capture_output=True, text=True)
            took = time.perf_counter() - t
            assert second.returncode == 2, second.stderr
            assert f"in use by process {first.pid}" in second.stderr, second.stderr
            assert "Traceback" not in second.stderr
            assert took < 20  # refused before the items were answered (each batch takes 0.25 s)
        # --fresh deleted nothing: the first run's records are all still there and it keeps going.
        before = _count(out)
        assert before >= 4 and (out / "run.json").is_file()
        _wait_for(lambda: _count(out) > before, first)
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    # The kernel released the dead process's lock: the next run takes it and resumes.
    assert lock_holder(out) is None and (out / LOCK_FILE).is_file()
    kept = _count(out)
    assert 0 < kept < 40
    # Without -q (silent except errors): the resumed run's summary is printed.
    loud = [c for c in _cmd(data, out, 0.0) if c != "-q"]
    done = subprocess.run(loud, env=_env(), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert f"40 items ({40 - kept} new this time" in done.stdout
    assert lock_holder(out) is None


def test_lock_in_process_names_holder_and_is_released(tmp_path: Path) -> None:
    with RunLock(tmp_path):
        info = lock_holder(tmp_path)
        assert info is not None and info["pid"] == os.getpid() and info["host"]
        with pytest.raises(RunLockedError, match=f"in use by process {os.getpid()}"):
            RunLock(tmp_path).acquire()
        # A run into this folder is refused before it loads anything.
        with pytest.raises(RunLockedError):
            run_benchmark(RunConfig(benchmark="unit", data="4", model="random"), tmp_path)
    assert lock_holder(tmp_path) is None
    assert (tmp_path / LOCK_FILE).read_text() == ""  # no stale details left behind
    RunLock(tmp_path).acquire()  # free again (released when the test's process ends)


def test_stale_lock_file_of_a_dead_process_is_taken_over(tmp_path: Path) -> None:
    # Details left by a process that died (no flock held): the next run is not refused.
    (tmp_path / LOCK_FILE).write_text(json.dumps({"pid": 999999, "host": "gone", "command": "x"}))
    res = run_benchmark(RunConfig(benchmark="unit", data="4", model="random"), tmp_path)
    assert res.n_new == 4 and lock_holder(tmp_path) is None


def test_nested_runs_into_other_folders_work_while_one_holds_its_lock(tmp_path: Path) -> None:
    # Probes and sweeps run conditions into sub-folders of their output folder.
    with RunLock(tmp_path):
        res = run_benchmark(RunConfig(benchmark="unit", data="4", model="random"), tmp_path / "cond-a")
        assert res.n_new == 4
    assert len(load_run(tmp_path / "cond-a").records) == 4


def test_backend_closed_when_the_lock_is_lost_to_a_run_that_started_at_the_same_moment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two runs that pass the early check together: the loser must free its model (GPU memory).
    import scopebench.engine.runner as runner_mod
    from scopebench.models import ModelOptions, load_model

    closed = []
    backend = load_model("random", ModelOptions())
    monkeypatch.setattr(backend, "close", lambda: closed.append(True))
    monkeypatch.setattr(runner_mod, "load_model", lambda spec, opts: backend)
    monkeypatch.setattr(runner_mod, "check_unlocked", lambda run_dir: None)
    with RunLock(tmp_path), pytest.raises(RunLockedError):
        run_benchmark(RunConfig(benchmark="unit", data="4", model="random"), tmp_path)
    assert closed == [True]
    assert not (tmp_path / "run.json").exists()  # nothing written by the refused run


def test_holder_is_readable_after_a_very_long_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "argv", ["scopebench", *(f"arg{i:06d}" for i in range(20000))])
    with RunLock(tmp_path):
        info = lock_holder(tmp_path)
        assert info is not None and info["pid"] == os.getpid()
        assert info["command"].startswith("scopebench arg000000") and len(info["command"]) == 4096

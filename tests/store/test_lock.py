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
from slow_backend import GATE_CAP_S, allow

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


def _cmd(data: Path, out: Path, *extra: str, gate: Path | None = None) -> list[str]:
    pace = ["--model-arg", f"gate={gate}"] if gate is not None else ["--model-arg", "delay=0"]
    return [
        sys.executable, "-c", _SCRIPT, "-q", "run", "--bench", "local", "--data", str(data),
        "--model", "slow", "--out", str(out), "--batch-size", "2", *pace, *extra,
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


def _wait_for_records(out: Path, n: int, proc: subprocess.Popen[bytes]) -> None:
    """Wait until ``out`` holds ``n`` records (the gated run writes exactly what it is allowed).

    The wait is on that event; it ends early only when the run exits (a failure, with its
    message), and the cap is a safety net against a hang, far above any working run's time.
    """
    cap = time.monotonic() + GATE_CAP_S
    while _count(out) < n:
        if proc.poll() is not None:
            stderr = proc.stderr.read().decode() if proc.stderr else ""
            pytest.fail(f"the first run exited ({proc.returncode}) before writing {n} records: {stderr}")
        assert time.monotonic() < cap, f"no {n} records after {GATE_CAP_S:.0f} s: the run hangs"
        time.sleep(0.02)


@pytest.mark.slow
def test_second_writer_refused_at_once_fresh_too_and_a_killed_holder_leaves_no_lock(tmp_path: Path) -> None:
    """A second writer (plain or --fresh) is refused while the first holds the folder, deletes
    nothing, and a SIGKILLed holder leaves a lock the next run takes over. The first run is paced
    by a gate file (tests/slow_backend.py): it answers exactly the items allowed, then waits, so it
    is provably mid-run while the second writer tries, however loaded the machine."""
    data, out, gate = _data(tmp_path, 40), tmp_path / "run", tmp_path / "gate"
    allow(gate, 4)
    first = subprocess.Popen(_cmd(data, out, gate=gate), env=_env(), stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)  # fmt: skip
    try:
        _wait_for_records(out, 4, first)
        holder = lock_holder(out)
        assert holder is not None and holder["pid"] == first.pid
        for extra in ((), ("--fresh",)):
            second = subprocess.run(_cmd(data, out, *extra), env=_env(), capture_output=True, text=True)
            assert second.returncode == 2, second.stderr
            assert f"in use by process {first.pid}" in second.stderr, second.stderr
            assert "Traceback" not in second.stderr
            # Refused before answering anything (the gate holds the first run at 4 records, and
            # the second run, ungated, would have answered all 40 at once), and --fresh deleted nothing.
            assert _count(out) == 4 and (out / "run.json").is_file()
        # The first run keeps going: allowed two more items, it writes them.
        allow(gate, 6)
        _wait_for_records(out, 6, first)
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    # The kernel released the dead process's lock: the next run takes it and resumes.
    assert lock_holder(out) is None and (out / LOCK_FILE).is_file()
    assert _count(out) == 6
    # Without -q (silent except errors): the resumed run's summary is printed.
    loud = [c for c in _cmd(data, out) if c != "-q"]
    done = subprocess.run(loud, env=_env(), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "40 items (34 new this time" in done.stdout
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

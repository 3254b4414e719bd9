"""SIGKILL a real `scopebench run` process at several points and resume it."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from helpers import REPO
from scopebench.store import load_run
from slow_backend import GATE_CAP_S, allow

_SCRIPT = """
import sys
from scopebench.models import register_scheme
register_scheme("slow", "slow_backend:SlowBackend", bare=True)
from scopebench.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _write_local(tmp: Path, n: int) -> Path:
    path = tmp / "data.jsonl"
    with open(path, "w") as fh:
        for i in range(n):
            row = {"id": f"q{i:03d}", "question": f"Q{i}?", "choices": ["a", "b", "c"], "answer": i % 3}
            fh.write(json.dumps(row) + "\n")
    return path


def _cmd(data: Path, out: Path, gate: Path | None = None) -> list[str]:
    pace = f"gate={gate}" if gate is not None else "delay=0"
    return [
        sys.executable, "-c", _SCRIPT, "-q", "run", "--bench", "local", "--data", str(data),
        "--model", "slow", "--out", str(out), "--batch-size", "2", "--model-arg", pace,
    ]  # fmt: skip


def _env() -> dict[str, str]:
    # Prepend, not replace: a PYTHONPATH that points at another checkout's src must still win.
    extra = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(REPO / "tests"), extra) if p)}


def _count(out: Path) -> int:
    try:
        db = sqlite3.connect(f"file:{out / 'records.sqlite'}?mode=ro", uri=True)
        return int(db.execute("SELECT COUNT(*) FROM records").fetchone()[0])
    except sqlite3.Error:
        return 0


def _wait_for_records(out: Path, n: int, proc: subprocess.Popen[Any]) -> None:
    """Wait until the gated run has stored ``n`` records (an event: it stores exactly what it may).

    Ends early only when the run exits (a failure, with its message); the cap is a safety net
    against a hang, far above any working run's time, and decides no verdict.
    """
    cap = time.monotonic() + GATE_CAP_S
    while _count(out) < n:
        if proc.poll() is not None:
            err = proc.stderr.read() if proc.stderr else ""
            pytest.fail(f"the run exited ({proc.returncode}) before storing {n} records: {err!r}")
        assert time.monotonic() < cap, f"no {n} records after {GATE_CAP_S:.0f} s: the run hangs"
        time.sleep(0.01)


@pytest.mark.slow
def test_sigkill_at_several_points_then_resume(tmp_path: Path) -> None:
    pytest.importorskip("scopebench.benchmarks.local")
    data = _write_local(tmp_path, 60)
    straight = tmp_path / "straight"
    subprocess.run(_cmd(data, straight), env=_env(), check=True, capture_output=True)
    expected = {(r.item_id, r.choice, r.correct) for r in load_run(straight).records}
    assert len(expected) == 60

    out, gate = tmp_path / "killed", tmp_path / "gate"
    seen = []
    for target in (6, 20, 40):
        # Each process answers from zero: allow it what is missing up to the target, then kill it
        # while it waits for more (mid-run, by construction).
        allow(gate, target - _count(out))
        proc = subprocess.Popen(
            _cmd(data, out, gate), env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        _wait_for_records(out, target, proc)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        seen.append(_count(out))
    assert seen == [6, 20, 40]  # killed mid-run each time, progress kept
    # Without -q (silent except errors), so the finished run's summary is printed.
    loud = [c for c in _cmd(data, out) if c != "-q"]
    done = subprocess.run(loud, env=_env(), check=True, capture_output=True, text=True)
    assert "60 items" in done.stdout
    resumed = load_run(out)
    ids = [r.item_id for r in resumed.records]
    assert len(ids) == len(set(ids)) == 60
    assert {(r.item_id, r.choice, r.correct) for r in resumed.records} == expected
    assert resumed.metrics is not None and load_run(straight).metrics is not None
    assert resumed.metrics["overall"] == load_run(straight).metrics["overall"]


@pytest.mark.slow
def test_sigterm_exports_finished_records_exits_143_and_resumes(tmp_path: Path) -> None:
    # What SLURM sends at the time limit. Before: the process died at once (exit -15), no
    # records.jsonl, no advice.
    pytest.importorskip("scopebench.benchmarks.local")
    data = _write_local(tmp_path, 40)
    out, gate = tmp_path / "run", tmp_path / "gate"
    allow(gate, 6)
    cmd = _cmd(data, out, gate)
    proc = subprocess.Popen(cmd, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for_records(out, 6, proc)
    proc.send_signal(signal.SIGTERM)  # while it waits for the gate: mid-run by construction
    _, stderr = proc.communicate(timeout=GATE_CAP_S)  # a safety cap against a hang only
    assert proc.returncode == 143, stderr
    assert "interrupted:" in stderr and "run the same command again to resume" in stderr
    assert "Traceback" not in stderr
    kept = _count(out)
    assert kept == 6
    lines = (out / "records.jsonl").read_text().splitlines()
    assert len(lines) == kept  # every finished record exported, nothing else
    assert {json.loads(line)["item_id"] for line in lines} == {r.item_id for r in load_run(out).records}
    loud = [c for c in _cmd(data, out) if c != "-q"]  # -q is silent except errors
    done = subprocess.run(loud, env=_env(), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert f"40 items ({40 - kept} new this time" in done.stdout

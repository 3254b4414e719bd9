"""`scopebench run` across a real two-node Ray cluster that loses a node in the middle.

The cluster (a head and a second node with its own resources, each its own raylet) and the
driver run in a network namespace the test creates, so every connection stays on loopback;
tests/ray_cluster.py starts it, refuses to go on if a node advertises any address but 127.0.0.1,
kills the second node (its raylet and workers, SIGKILL) once some records are stored, and reports.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from helpers import REPO
from scopebench.store import load_run

# 30 calls of 0.5 s over two workers: the run outlasts the polling that kills a node after 6 records.
N_ITEMS = 60


def _namespaces_work() -> str | None:
    """Why a network namespace cannot be made here (None when it can)."""
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return "needs unshare and ip (util-linux, iproute2)"
    done = subprocess.run(["unshare", "-n", "true"], capture_output=True, text=True)
    return None if done.returncode == 0 else f"unshare -n is not permitted here: {done.stderr.strip()}"


def _site(tmp: Path) -> Path:
    """A site folder where the slow test backend is an installed ``scopebench.models`` plugin.

    A plugin, not ``register_scheme`` in the driver: Ray's workers are fresh interpreters that
    find the model scheme the way an installed lab package is found.
    """
    site = tmp / "site"
    info = site / "slowmodel-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: slowmodel\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[scopebench.models]\nslow = slow_backend:SlowBackend\n")
    return site


def _env(site: Path) -> dict[str, str]:
    extra = os.environ.get("PYTHONPATH")
    paths = (str(site), str(REPO / "tests"), extra)
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}


def _run_cmd(data: Path, out: Path, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "scopebench", "run", "--bench", "local", "--data", str(data),
        "--model", "slow", "--model-arg", "delay=0.5", "--batch-size", "2", "--seed", "5",
        "--out", str(out), *extra,
    ]  # fmt: skip


@pytest.mark.slow
def test_a_run_survives_losing_a_node_and_equals_the_local_run(tmp_path: Path) -> None:
    """Catches: a lost node's batch dropped (missing records) or answered twice (duplicates), a
    run that hangs or fails when a worker dies, and a cluster result that differs from a local
    one; and a cluster that listens on the machine's interface address instead of loopback."""
    pytest.importorskip("ray", reason="ray is an optional extra (pip install 'scopebench[ray]')")
    if (why := _namespaces_work()) is not None:
        pytest.skip(why)
    data = tmp_path / "data.jsonl"
    with open(data, "w") as fh:
        for i in range(N_ITEMS):
            row = {"id": f"q{i:03d}", "question": f"Q{i}?", "choices": ["a", "b", "c"], "answer": i % 3}
            fh.write(json.dumps(row) + "\n")
    env = _env(_site(tmp_path))
    local = tmp_path / "local"
    subprocess.run(_run_cmd(data, local), env=env, check=True, capture_output=True, timeout=300)

    cluster = tmp_path / "cluster"
    # Ray's sockets live under its temp folder and a socket path may not exceed 107 bytes:
    # pytest's tmp_path is too deep.
    ray_temp = tempfile.TemporaryDirectory(prefix="sb-ray-")
    spec = {
        "temp": ray_temp.name,
        "out": str(cluster),
        "kill_after": 6,
        "timeout": 600,  # any one wait; a loaded machine needs minutes to start Ray
        "cmd": _run_cmd(
            data, cluster, "--executor", "ray", "--ray-address", "127.0.0.1:6399", "--workers", "2"
        ),
    }
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    with ray_temp:
        done = subprocess.run(
            ["unshare", "-n", sys.executable, str(REPO / "tests" / "ray_cluster.py"), str(tmp_path / "spec.json")],
            env=env, capture_output=True, text=True, timeout=3000,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["addresses"] == ["127.0.0.1", "127.0.0.1"], "a node advertised a non-loopback address"
    assert not report["finished_before_kill"], "the run ended before the node was lost: nothing tested"
    assert 6 <= report["stored_at_kill"] < N_ITEMS
    assert report["rc"] == 0, report["stderr"]

    records = load_run(cluster).records
    assert [r.item_id for r in records] == [f"local/q{i:03d}" for i in range(N_ITEMS)]  # once each
    assert {r.status for r in records} == {"ok"}
    # Records carry no timing fields: the exports are byte-identical to a local run's.
    for name in ("records.jsonl", "metrics.json"):
        assert (cluster / name).read_bytes() == (local / name).read_bytes(), name
    # The second node's worker held a batch when it went, and another worker redid it.
    assert "ray worker lost" in report["stderr"]

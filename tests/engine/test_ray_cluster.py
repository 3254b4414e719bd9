"""`scopebench run` and `scopebench build ingest` across a real two-node Ray cluster that loses a
node in the middle of each.

The cluster (a head and a second node with its own resources, each its own raylet) and the
drivers run in a network namespace the test creates, so every connection stays on loopback;
tests/ray_cluster.py starts it, refuses to go on if a node advertises any address but 127.0.0.1,
kills the second node (its raylet and workers, SIGKILL) once some records are stored, starts a
fresh second node, runs the ingest and kills that node while it converts, and reports.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from helpers import REPO
from scopebench.cli import main
from scopebench.store import load_run

# 30 calls of 0.5 s over two workers: the run outlasts the polling that kills a node after 6 records.
N_ITEMS = 60
# Image files of the ingest: a dozen batches of eight, so the second node converts several.
N_IMAGES = 96
ROW = "light microscopy,brightfield microscopy,pathology,hematopathology,Giemsa,Homo sapiens"


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


def _lab(root: Path) -> Path:
    """A source of ``N_IMAGES`` files in three formats: noisy fields (slow enough to encode that the
    ingest outlasts the kill), near-duplicates, exact copies, one truncated file and one listed twice."""
    import tifffile
    from PIL import Image

    rng = np.random.default_rng(7)
    images = root / "images"
    images.mkdir(parents=True)
    names: list[str] = []
    base = rng.integers(0, 256, (192, 192, 3), dtype=np.uint8)
    for i in range(N_IMAGES - 2):
        field = base if i % 10 == 0 else rng.integers(0, 256, (192, 192, 3), dtype=np.uint8)
        if i % 3 == 0:
            names.append(f"f{i:03d}.tif")
            tifffile.imwrite(images / names[-1], field[..., 0].astype(np.uint16) * 257)
        else:
            names.append(f"f{i:03d}.{'png' if i % 3 == 1 else 'jpg'}")
            Image.fromarray(field).save(images / names[-1], quality=95)
    (images / "truncated.png").write_bytes((images / names[1]).read_bytes()[:300])
    names += ["truncated.png", names[5]]
    rows = "".join(f"{n},{ROW}\n" for n in names)
    (root / "meta.csv").write_text("image,modality,submodality,domain,subdomain,stain,organism\n" + rows)
    (root / "manifest.yaml").write_text(
        "name: lab\nsources:\n  - name: lab\n    images: images\n    metadata: meta.csv\n    license: CC-BY-4.0\n"
    )
    return root / "manifest.yaml"


def _files(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def _ingest_cmd(*extra: str) -> list[str]:
    # Relative paths, each run in its own folder: whatever a file records of them is the same.
    return ["build", "ingest", "../lab/manifest.yaml", "--out", "out", "--cache", "cache", *extra]


@pytest.mark.slow
def test_a_run_and_an_ingest_survive_losing_a_node_and_equal_local_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Catches: a lost node's batch dropped (missing records, rows) or done twice (duplicates), a
    run or ingest that hangs or fails when a node dies, a cluster result that differs from a local
    one (records, metrics, every file of the dataset); and a cluster that listens on the machine's
    interface address instead of loopback."""
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
    _lab(tmp_path / "lab")
    (tmp_path / "local-ingest").mkdir()
    (tmp_path / "ray-ingest").mkdir()
    monkeypatch.chdir(tmp_path / "local-ingest")
    assert main(["-q", *_ingest_cmd("--workers", "1")]) == 0

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
        "ingest": {
            "cwd": str(tmp_path / "ray-ingest"),
            "cmd": [sys.executable, "-m", "scopebench", *_ingest_cmd("--executor", "ray", "--ray-address",
                                                                     "127.0.0.1:6399", "--workers", "2")],
        },
    }  # fmt: skip
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
    assert 6 <= report["at_kill"] < N_ITEMS
    assert report["rc"] == 0, report["stderr"]

    records = load_run(cluster).records
    assert [r.item_id for r in records] == [f"local/q{i:03d}" for i in range(N_ITEMS)]  # once each
    assert {r.status for r in records} == {"ok"}
    # Records carry no timing fields: the exports are byte-identical to a local run's.
    for name in ("records.jsonl", "metrics.json"):
        assert (cluster / name).read_bytes() == (local / name).read_bytes(), name
    # The second node's worker held a batch when it went, and another worker redid it.
    assert "ray worker lost" in report["stderr"]

    ingest = report["ingest"]
    assert ingest["addresses"] == ["127.0.0.1", "127.0.0.1"], "a node advertised a non-loopback address"
    assert not ingest["finished_before_kill"], "the ingest ended before the node was lost: nothing tested"
    assert ingest["at_kill"], "the node was killed before it converted anything"
    assert ingest["rc"] == 0, ingest["stderr"]
    # The node held a batch when it went; the driver sent it again.
    assert "ray node lost" in ingest["stderr"], ingest["stderr"]
    local_files, ray_files = (
        _files(tmp_path / "local-ingest" / "out"),
        _files(tmp_path / "ray-ingest" / "out"),
    )
    assert ray_files.keys() == local_files.keys() and "test/state.json" in ray_files
    assert [k for k in local_files if local_files[k] != ray_files[k]] == []
    from datasets import load_from_disk

    rows = load_from_disk(str(tmp_path / "ray-ingest" / "out"))["test"]
    paths = rows["source_path"]
    assert (
        len(paths) == len(set(paths)) == N_IMAGES - 2
    )  # each file once; the repeat and the truncated file out

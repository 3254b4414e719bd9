"""Ingest on Ray without a cluster: the driver's batching, ordering, resending and store writes.

A stand-in for the ``ray`` module runs each task in this process when its result is asked for
and finishes tasks newest first (the opposite of the order they were sent), so completion order
never matches job order; it can lose chosen attempts the way a dead node does. The real cluster
(a killed node mid-ingest) is tests/engine/test_ray_cluster.py.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tifffile
from curate_helpers import tree_bytes
from PIL import Image

from scopebench.cli import main
from scopebench.curate.ingestion import cluster
from scopebench.curate.ingestion.cache import ConversionStore, sha256_file
from scopebench.curate.ingestion.cluster import ATTEMPTS, BATCH_FILES, _Driver, convert_batch
from scopebench.curate.ingestion.convert import Job, convert_one
from scopebench.errors import ScopebenchError, UsageError


class _RayError(Exception):
    pass


class _RayTaskError(_RayError):
    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


class FakeRay:
    """The part of ``ray`` the driver uses. ``lose`` holds send numbers (0-based) that fail as
    a lost node does; ``crash`` makes every task raise inside the worker."""

    class exceptions:
        RayError = _RayError
        RayTaskError = _RayTaskError

    def __init__(self, lose: set[int] | None = None, crash: bool = False) -> None:
        self.lose = lose or set()
        self.crash = crash
        self.sent: list[Any] = []  # each send's payload, in order
        self.most_in_flight = 0
        self.options: dict[str, Any] = {}

    def remote(self, **options: Any) -> Any:
        self.options = options
        fake = self

        class Task:
            def __init__(self, fn: Any) -> None:
                self.fn = fn

            def remote(self, *args: Any) -> int:
                fake.sent.append(args)
                return len(fake.sent) - 1

        return Task

    def put(self, value: Any) -> Any:
        return value

    def wait(self, refs: list[int], num_returns: int) -> tuple[list[int], list[int]]:
        self.most_in_flight = max(self.most_in_flight, len(refs))
        newest = max(refs)
        return [newest], [r for r in refs if r != newest]

    def get(self, ref: int) -> Any:
        if ref in self.lose:
            raise _RayError(f"the node of send {ref} died")
        if self.crash:
            raise _RayTaskError(ModuleNotFoundError("No module named 'scopebench'"))
        return convert_batch(*self.sent[ref])


def _images(folder: Path, n: int) -> list[Path]:
    """``n`` small files in three formats, a truncated one and a repeat of the first's bytes."""
    rng = np.random.default_rng(3)
    folder.mkdir()
    paths = []
    for i in range(n):
        pixels = rng.integers(0, 256, (24, 20, 3), dtype=np.uint8)
        path = folder / f"im{i:02d}.{('png', 'jpg', 'tif')[i % 3]}"
        if i % 3 == 2:
            tifffile.imwrite(path, pixels[..., 0].astype(np.uint16) * 257)
        else:
            Image.fromarray(pixels).save(path)
        paths.append(path)
    (folder / "cut.png").write_bytes(paths[0].read_bytes()[:60])
    (folder / "again.png").write_bytes(paths[0].read_bytes())
    return [*paths, folder / "cut.png", folder / "again.png"]


def _jobs(paths: list[Path], store: Path, known: bool = False) -> list[Job]:
    return [Job(str(p), sha256_file(p) if known else None, str(store), 10_000) for p in paths]


def test_results_come_in_job_order_and_the_store_equals_a_local_one(tmp_path: Path) -> None:
    """Catches results taken in completion order, a lost batch not sent again (a missing row) or
    its results taken twice, more batches in flight than the window (driver memory unbounded),
    Ray's own retries left on, and store entries (PNG, facts, refusals) that differ from the
    process pool's."""
    paths = _images(tmp_path / "images", 21)  # 23 files: three batches
    local = [convert_one(job) for job in _jobs(paths, tmp_path / "local")]
    ray = FakeRay(lose={1})
    store = ConversionStore(tmp_path / "ray")
    got = list(_Driver(ray, store, 2, 10_000).run(_jobs(paths, tmp_path / "ignored")))
    assert [(g.sha256, g.info, g.kind, g.message) for g in got] == [
        (c.sha256, c.info, c.kind, c.message) for c in local
    ]
    assert [g.kind for g in got].count("bad_image") == 1
    batches = -(-len(paths) // BATCH_FILES)
    assert len(ray.sent) == batches + 1  # the lost batch, once more
    assert ray.sent.count(ray.sent[1]) == 2  # … and it is the one sent again
    assert ray.most_in_flight <= 2
    assert ray.options["max_retries"] == 0
    assert tree_bytes(tmp_path / "ray") == tree_bytes(tmp_path / "local")


def test_stored_conversions_are_not_sent(tmp_path: Path) -> None:
    """Catches a driver that ships files already in its store (by a hash known from the file's
    stat or computed from its bytes): a rerun would cost the whole transfer again."""
    paths = _images(tmp_path / "images", 5)
    store = ConversionStore(tmp_path / "store")
    first = list(_Driver(FakeRay(), store, 2, 10_000).run(_jobs(paths, tmp_path / "x")))
    for known in (False, True):
        ray = FakeRay()
        again = list(_Driver(ray, store, 2, 10_000).run(_jobs(paths, tmp_path / "x", known)))
        assert ray.sent == []
        assert [a.info for a in again] == [f.info for f in first] and all(a.reused for a in again)


def test_a_batch_lost_every_time_and_a_failing_task_stop_with_a_message(tmp_path: Path) -> None:
    """Catches an endless resend loop when every node that takes a batch dies, and a task error
    (a worker without scopebench) resent or shown as a traceback instead of what to do."""
    paths = _images(tmp_path / "images", 3)
    ray = FakeRay(lose=set(range(ATTEMPTS)))
    with pytest.raises(ScopebenchError, match=rf"lost {ATTEMPTS} times.*ray status"):
        list(_Driver(ray, ConversionStore(tmp_path / "a"), 2, None).run(_jobs(paths, tmp_path)))
    assert len(ray.sent) == ATTEMPTS
    with pytest.raises(ScopebenchError, match=r"No module named 'scopebench'.*build extra"):
        list(
            _Driver(FakeRay(crash=True), ConversionStore(tmp_path / "b"), 2, None).run(_jobs(paths, tmp_path))
        )


def test_a_task_never_writes_outside_its_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Catches a worker that trusts the file name the driver sends (a hostile ``../`` name would
    write outside the task's temporary folder) and one that leaves files behind on the node."""
    monkeypatch.setenv("TMPDIR", str(tmp_path / "node"))
    (tmp_path / "node").mkdir()
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
    data = (_images(tmp_path / "images", 1))[0].read_bytes()
    [(done, entry, png, grid), (dots, _, _, _)] = convert_batch(
        [("../../escaped.png", data, "ab" * 32), ("..", data, "cd" * 32)], None
    )
    assert done.info is not None and entry == done.info and png is not None and png.startswith(b"\x89PNG")
    assert grid is not None and grid.startswith(b"\x93NUMPY")  # the near-duplicate grid travels too
    assert dots.info is not None and dots.info["pixel_md5"] == done.info["pixel_md5"]
    assert not (tmp_path / "escaped.png").exists() and list((tmp_path / "node").iterdir()) == []


def test_cli_refuses_an_address_without_the_ray_executor_and_an_unanswered_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Catches ``--ray-address`` silently ignored (the user meant the cluster; the run goes
    local), an address nothing answers at hanging in ``ray.init`` instead of failing, and a
    cluster joined (seconds of start-up) when there is nothing to convert."""
    pytest.importorskip("ray", reason="ray is an optional extra (pip install 'scopebench[ray]')")
    from scopebench.cli.build import _engine
    from scopebench.cli.options import Args

    with pytest.raises(UsageError, match="add --executor ray"):
        _engine(Args(executor="local", ray_address="127.0.0.1:1", workers=None))
    with socket.socket() as s:  # a loopback port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    paths = _images(tmp_path / "images", 1)
    with pytest.raises(ScopebenchError, match=f"no Ray cluster answers at --ray-address 127.0.0.1:{port}"):
        list(
            cluster.convert_on_ray(
                _jobs(paths, tmp_path), ConversionStore(tmp_path), address=f"127.0.0.1:{port}", workers=1
            )
        )
    monkeypatch.chdir(tmp_path)
    # Nothing to convert (every row refused, or everything cached): no cluster is asked.
    assert (
        list(cluster.convert_on_ray([], ConversionStore(tmp_path), address=f"127.0.0.1:{port}", workers=1))
        == []
    )
    assert main(["build", "ingest", "m.yaml", "--out", "o", "--ray-address", "127.0.0.1:1"]) != 0
    assert "add --executor ray" in capsys.readouterr().err.replace("\n", " ")


def test_build_run_hands_the_executor_to_ingest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Catches ``build run --executor ray`` converting locally all the same (the option dropped
    between the CLI, the pipeline and the ingest step): the unanswered cluster must be reported."""
    pytest.importorskip("ray", reason="ray is an optional extra (pip install 'scopebench[ray]')")
    from curate_helpers import make_sources

    make_sources(tmp_path)
    (tmp_path / "build.yaml").write_text("manifest: manifest.yaml\nout: out\n")
    with socket.socket() as s:  # a loopback port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.chdir(tmp_path)
    code = main(["build", "run", "build.yaml", "--executor", "ray", "--ray-address", f"127.0.0.1:{port}"])
    err = capsys.readouterr().err.replace("\n", " ")
    assert code != 0 and f"no Ray cluster answers at --ray-address 127.0.0.1:{port}" in err
    assert "Traceback" not in err

"""Converting image files on a Ray cluster (``--executor ray``): the driver ships bytes, tasks convert.

The driver (the machine running ``build ingest``) reads every file it needs converted and sends its
bytes with the task; the workers never open a path of the lab's. Shipping bytes works on any
cluster — no shared filesystem, no identical mount points, no credentials for the image store on
the workers — and costs one network copy of each source file and of its PNG, which conversion
(decoding, hashing, PNG encoding) outweighs. The driver reads each file anyway to hash it, and
looks the hash up in its conversion store first: a file converted before costs no transfer.

* Files are grouped in batches (at most :data:`BATCH_FILES` files and :data:`BATCH_BYTES` bytes);
  each batch is one Ray task of one CPU, which writes the files into a private temporary folder on
  its node, converts them exactly as the process pool does (:func:`.convert.convert_new`) and
  returns the conversion store entries (facts, PNG bytes and near-duplicate grid bytes). The
  driver alone writes its store.
* At most two batches per worker slot are in flight, and a batch is read only when it is sent:
  the driver holds a bounded number of files, whatever the number of images.
* Results come back in job order whatever the cluster did, so the dataset is byte-identical to a
  local run's.
* A batch whose node dies (or whose worker process is killed) is sent again, up to
  :data:`ATTEMPTS` times in all, and a warning says so. Ray's own task retries are off so that
  the driver knows what a lost node cost; a task is a pure function of its bytes, so a batch done
  twice writes the same entries.
"""

from __future__ import annotations

import hashlib
import logging
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scopebench.curate.ingestion.cache import ConversionStore
from scopebench.curate.ingestion.convert import Converted, Job, convert_new, default_workers, stored
from scopebench.engine.executors import connect_ray
from scopebench.errors import ScopebenchError

__all__ = ["ATTEMPTS", "BATCH_BYTES", "BATCH_FILES", "convert_batch", "convert_on_ray"]

log = logging.getLogger(__name__)

#: Files per task: enough to amortise a task's overhead, few enough to spread over the nodes.
BATCH_FILES = 8
#: Source bytes per task (a batch closes at whichever limit comes first; one bigger file goes alone).
BATCH_BYTES = 64 << 20
#: Times a batch is sent before the ingest gives up on the cluster.
ATTEMPTS = 3

#: What a task returns per file: the result, the store's entry for the bytes (``None``: nothing to
#: store, e.g. an oversized image), the PNG and the near-duplicate grid's ``.npy`` (both ``None``
#: unless converted).
Entry = tuple[Converted, dict[str, Any] | None, bytes | None, bytes | None]


def convert_batch(files: Sequence[tuple[str, bytes, str]], max_pixels: int | None) -> list[Entry]:
    """The Ray task: convert ``(file name, file bytes, sha256)`` triples on this node.

    Runs on a worker; nothing outlives the call there (the temporary folder is removed).
    """
    out: list[Entry] = []
    with tempfile.TemporaryDirectory(prefix="scopebench-ingest-") as tmp:
        store = ConversionStore(Path(tmp) / "store")
        for k, (name, data, sha) in enumerate(files):
            folder = Path(tmp) / str(k)
            folder.mkdir()
            # The bare name (its suffix picks the decoder, messages quote it), never a path.
            bare = Path(name).name
            path = folder / (bare if bare not in ("", ".", "..") else "image")
            path.write_bytes(data)
            done = convert_new(path, sha, max_pixels, store)
            path.unlink()
            entry = store.get(sha)
            image = entry is not None and "error" not in entry
            png = store.png_path(sha).read_bytes() if image else None
            grid = store.grid_path(sha).read_bytes() if image else None
            out.append((done, entry, png, grid))
    return out


@dataclass(slots=True)
class _Batch:
    """Files sent as one task: their job indices and hashes, the payload's object ref, attempts."""

    indices: list[int]
    hashes: list[str]
    payload: Any
    attempts: int = 0


class _Driver:
    """Sends batches, keeps a bounded number in flight, stores results and yields them in job order."""

    def __init__(self, ray: Any, store: ConversionStore, window: int, max_pixels: int | None) -> None:
        self.ray = ray
        self.store = store
        self.window = window
        self.max_pixels = max_pixels
        self.task = ray.remote(num_cpus=1, max_retries=0)(convert_batch)
        self.pending: dict[Any, _Batch] = {}
        self.results: dict[int, Converted] = {}

    def run(self, jobs: Sequence[Job]) -> Iterator[Converted]:
        """Every job's result, in job order."""
        batches = self._batches(jobs)
        self._fill(batches)
        next_out = 0
        while True:
            while next_out in self.results:
                yield self.results.pop(next_out)
                next_out += 1
            if not self.pending:
                break
            [ref], _ = self.ray.wait(list(self.pending), num_returns=1)
            self._receive(ref)
            self._fill(batches)
        if next_out != len(jobs):  # a bug, never a cluster's doing: refuse rather than drop rows
            raise ScopebenchError(f"ray ingest returned {next_out} of {len(jobs)} conversions")

    def _batches(self, jobs: Sequence[Job]) -> Iterator[_Batch]:
        """Batches of the files not in the store, read as they are needed; stored ones are answered."""
        files: list[tuple[str, bytes, str]] = []
        indices: list[int] = []
        size = 0
        for index, job in enumerate(jobs):
            data, sha = None, job.sha256
            if sha is None:  # unknown from the file's stat: read it now, to hash it and maybe send it
                data = Path(job.path).read_bytes()
                sha = hashlib.sha256(data).hexdigest()
            found = stored(self.store, sha, job)
            if found is not None:
                self.results[index] = found
                continue
            if data is None:
                data = Path(job.path).read_bytes()
            if indices and (len(indices) >= BATCH_FILES or size + len(data) > BATCH_BYTES):
                yield self._batch(indices, files)
                files, indices, size = [], [], 0
            files.append((Path(job.path).name, data, sha))
            indices.append(index)
            size += len(data)
        if indices:
            yield self._batch(indices, files)

    def _batch(self, indices: list[int], files: list[tuple[str, bytes, str]]) -> _Batch:
        return _Batch(indices, [sha for _, _, sha in files], self.ray.put(files))

    def _fill(self, batches: Iterator[_Batch]) -> None:
        while len(self.pending) < self.window and (batch := next(batches, None)) is not None:
            self._send(batch)

    def _send(self, batch: _Batch) -> None:
        batch.attempts += 1
        self.pending[self.task.remote(batch.payload, self.max_pixels)] = batch

    def _receive(self, ref: Any) -> None:
        """Store a finished batch's entries, or send it again when its node was lost."""
        batch = self.pending.pop(ref)
        errors = self.ray.exceptions
        try:
            entries: list[Entry] = self.ray.get(ref)
        except errors.RayTaskError as exc:  # the task itself failed: the same again would fail again
            raise ScopebenchError(
                f"a Ray worker could not convert a batch of images: {exc.cause!r}; every node needs "
                "scopebench with its build extra (the driver's version) and a writable temporary "
                "folder, or run without --executor ray"
            ) from exc
        except errors.RayError as exc:  # a lost node or worker process: nothing of the batch came back
            if batch.attempts >= ATTEMPTS:
                raise ScopebenchError(
                    f"a batch of {len(batch.indices)} images was lost {batch.attempts} times (the last: "
                    f"{type(exc).__name__}); check the cluster (`ray status` on its head node; every node "
                    "needs scopebench with its build extra) and run the same command again: "
                    "conversions already stored are reused"
                ) from exc
            log.warning(
                "ray node lost (%s); its batch of %d images is converted again",
                type(exc).__name__,
                len(batch.indices),
            )
            self._send(batch)
            return
        for index, sha, (done, entry, png, grid) in zip(batch.indices, batch.hashes, entries, strict=True):
            if entry is not None:
                self.store.put(sha, entry, png, grid)
            self.results[index] = done


def convert_on_ray(
    jobs: Sequence[Job],
    store: ConversionStore,
    *,
    address: str | None,
    workers: int | None,
    on_done: Callable[[], object] | None = None,
) -> Iterator[Converted]:
    """Convert ``jobs`` on the Ray cluster at ``address``, yielding results in job order.

    Args:
        jobs: The files to convert (their ``store`` field is ignored: ``store`` is the driver's).
        store: The driver's conversion store; results are written into it.
        address: The cluster (``None``: a local Ray instance with ``workers`` CPUs).
        workers: Batches converting at once (``None``: the cluster's CPUs); twice as many are in
            flight, so that a node never waits for the driver.
        on_done: Called after each result (the progress bar).

    Raises:
        MissingDependencyError: Ray is not installed.
        ScopebenchError: The cluster does not answer, a task fails, or a batch is lost
            :data:`ATTEMPTS` times.
    """
    if not jobs:  # nothing to convert: no reason to join (or start) a cluster
        return
    ray, owns = connect_ray(address, local_cpus=workers or default_workers())
    try:
        slots = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        max_pixels = jobs[0].max_pixels
        for done in _Driver(ray, store, 2 * slots, max_pixels).run(jobs):
            yield done
            if on_done is not None:
                on_done()
    finally:
        if owns:
            ray.shutdown()

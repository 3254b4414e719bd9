"""Converting image files on every core: one job per distinct file, in a process pool.

A worker hashes the file (unless its hash is known from an unchanged stat), reuses the
:class:`~.cache.ConversionStore` entry of those bytes or decodes, checks, encodes and hashes the
image and stores it. It returns only the small facts (the PNG stays on disk), so the parent's
memory does not grow with the images. Results come back in job order whatever the number of
workers, which is what makes the output byte-identical for any ``--workers``. With
``--executor ray`` the same conversion runs as Ray tasks on a cluster (:mod:`.cluster`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scopebench.curate.ingestion.cache import ConversionStore, grid_bytes, sha256_file
from scopebench.curate.ingestion.images import (
    OversizedImageError,
    dhash,
    grey_float,
    pixel_md5,
    read_image,
    write_png,
)
from scopebench.curate.ingestion.near_duplicates import stretched_grid
from scopebench.errors import ImageLoadError

__all__ = ["Converted", "Job", "convert_all", "convert_new", "convert_one", "default_workers", "stored"]

_CHUNK = 4  # jobs handed to a worker at a time: small enough to balance, large enough to amortise
#: Fewer files than this per worker convert in this process: starting a worker (a fresh interpreter
#: importing numpy and Pillow) costs more than it saves.
MIN_JOBS_PER_WORKER = 16


@dataclass(frozen=True, slots=True)
class Job:
    """One file to convert.

    Attributes:
        path: The image file.
        sha256: Its hash when known from an unchanged stat (the worker then need not read it).
        store: The conversion store's folder.
        max_pixels: The pixel limit (``None``: none).
    """

    path: str
    sha256: str | None
    store: str
    max_pixels: int | None


@dataclass(frozen=True, slots=True)
class Converted:
    """What a worker found: the file's hash and its facts, or why it could not be converted.

    Attributes:
        sha256: The file's SHA-256.
        info: Hashes and facts (``pixel_md5``, ``dhash``, size, depth…); ``None`` on failure.
        kind: ``bad_image`` or ``oversized_image`` on failure.
        message: What is wrong and what to do, on failure.
        converted: ``True`` when the file was decoded in this run.
        reused: ``True`` when its conversion (or failure) came from the store.
    """

    sha256: str
    info: dict[str, Any] | None
    kind: str | None = None
    message: str | None = None
    converted: bool = False
    reused: bool = False


def default_workers() -> int:
    """Every core this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _refusal(sha: str, info: dict[str, Any], job: Job) -> Converted | None:
    """A stored conversion that this run must still refuse (a failure, or now over the limit)."""
    max_pixels = job.max_pixels
    if "error" in info:
        # The stored message names the file first seen with these bytes; name this one.
        message = str(info["error"]).replace(str(info.get("name", "")), Path(job.path).name)
        return Converted(sha, None, "bad_image", message, reused=True)
    pixels = int(info["width"]) * int(info["height"])
    if max_pixels is not None and pixels > max_pixels:
        msg = (
            f"the image has {pixels:,} pixels, more than the limit of {max_pixels:,}; raise --max-pixels "
            "if it is genuine and memory allows"
        )
        return Converted(sha, None, "oversized_image", msg, reused=True)
    return None


def convert_one(job: Job) -> Converted:
    """Convert one file (see the module docstring); never raises for a bad image."""
    path = Path(job.path)
    store = ConversionStore(Path(job.store))
    sha = job.sha256 or sha256_file(path)
    return stored(store, sha, job) or convert_new(path, sha, job.max_pixels, store)


def stored(store: ConversionStore, sha: str, job: Job) -> Converted | None:
    """The conversion of the bytes ``sha`` already in ``store`` (or its refusal); ``None``: not there."""
    info = store.get(sha)
    if info is None:
        return None
    return _refusal(sha, info, job) or Converted(sha, info, reused=True)


def convert_new(path: Path, sha: str, max_pixels: int | None, store: ConversionStore) -> Converted:
    """Decode, check, encode and hash ``path`` (whose SHA-256 is ``sha``) into ``store``.

    The near-duplicate grid is made here too, from the pixels already decoded, so the main
    process reads 32 kB per image instead of decoding PNGs one after the other.

    Never raises for a bad image: it becomes a refusal (stored, as the same bytes fail again) or an
    ``oversized_image`` result (not stored: the limit may change).
    """
    try:
        std = read_image(path, max_pixels)
    except OversizedImageError as exc:
        return Converted(sha, None, "oversized_image", str(exc))  # not stored: the limit may change
    except ImageLoadError as exc:
        store.put(sha, {"error": str(exc), "name": path.name}, None)  # same bytes, same failure next time
        return Converted(sha, None, "bad_image", str(exc), converted=True)
    px = std.pixels
    info = {
        "file_sha256": sha,
        "pixel_md5": pixel_md5(px),
        "dhash": dhash(px),
        "conversion": std.conversion,
        "source_format": std.source_format,
        "width": int(px.shape[1]),
        "height": int(px.shape[0]),
        "bit_depth": 16 if px.dtype.itemsize == 2 else 8,
        "channels": 1 if px.ndim == 2 else int(px.shape[-1]),
        "png_bytes": store.put_png(sha, lambda path: write_png(px, path)),
    }
    store.put(sha, info, None, grid_bytes(stretched_grid(grey_float(px))))
    return Converted(sha, info, converted=True)


def _stored(job: Job) -> Converted | None:
    """The stored result of ``job`` when it comes with its hash and the store has it."""
    if job.sha256 is None:
        return None
    return stored(ConversionStore(Path(job.store)), job.sha256, job)


def convert_all(
    jobs: Sequence[Job], workers: int | None, on_done: Callable[[], object] | None = None
) -> Iterator[Converted]:
    """Convert ``jobs`` with ``workers`` processes, yielding results in job order.

    Jobs whose hash is known and stored are answered in this process first (a re-run starts no
    worker for them); one worker, or fewer than :data:`MIN_JOBS_PER_WORKER` remaining jobs per
    worker, convert in this process.

    Args:
        jobs: The files to convert.
        workers: Processes to use (``None``: every core).
        on_done: Called after each result (the progress bar).
    """
    known = [_stored(job) for job in jobs]
    todo = [job for job, found in zip(jobs, known, strict=True) if found is None]
    fresh = _convert(todo, min(workers or default_workers(), len(todo) // MIN_JOBS_PER_WORKER))
    try:
        for found in known:
            yield found if found is not None else next(fresh)
            if on_done is not None:
                on_done()
    finally:
        fresh.close()  # shuts the pool down now, not when the generator is collected


def _convert(jobs: Sequence[Job], workers: int) -> Generator[Converted, None, None]:
    """:func:`convert_one` of every job, in job order, on ``workers`` processes (≤ 1: this one)."""
    if workers <= 1:
        yield from map(convert_one, jobs)
        return
    import multiprocessing

    # spawn: a clean interpreter per worker, never a fork of a parent that holds threads or locks.
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        yield from pool.map(convert_one, jobs, chunksize=_CHUNK)

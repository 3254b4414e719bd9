"""Near-duplicates: how the hash index scales, and both error rates of the grouping on a labelled set.

* **index** — :func:`candidate_pairs` on 10k, 100k and 1M synthetic 64-bit hashes (uniform, plus
  1 % planted copies with 0–6 bits flipped) at ``r = 6``: seconds per size and the exponent of a
  log-log fit (quadratic all-pairs would be 2).
* **errors** — :func:`~scopebench.testing.near_duplicate_set.labelled_set` (fields sharing a
  background and stain per family, each with a JPEG re-encoding, a 16-bit copy, a rescale, a crop
  and a contrast change). Over every pair of images: *missed* = pairs of one field not grouped /
  all such pairs; *merged look-alikes* = pairs of different fields grouped / all such pairs. Shown
  for the hash alone (what grouping was before the pixel check) and hash + pixels, at ``r = 6`` (the
  default) and ``r = 10``.
* **confirm** — the whole :func:`find_near_duplicates` (hash index + confirmation, decoding real
  PNG files) on 512 × 512 smooth fields (:func:`~scopebench.testing.near_duplicate_set.smooth_field`:
  no two are near-duplicates, but their hashes are weak and propose pairs in bulk): candidate
  pairs, decodes, pairs scored on the pixels, CPU seconds and the exponent of a log-log fit in
  the number of images. The PNGs are written once into ``--dir`` and reused.

Usage: python bench/bench_near_duplicates.py [--sizes 10000,100000,1000000] [--families 6 --fields 5]
       [--only confirm --confirm-sizes 1000,2000,4000 --dir /tmp/scopebench-smooth-fields]
"""

from __future__ import annotations

import argparse
import itertools
import os
import platform
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from tqdm import tqdm

from scopebench.curate.ingestion.images import dhash, grey8
from scopebench.curate.ingestion.near_duplicates import (
    DEFAULT_MIN_SIMILARITY,
    candidate_pairs,
    find_near_duplicates,
)
from scopebench.curate.ingestion.step import _grey
from scopebench.testing.near_duplicate_set import labelled_set, smooth_field


def synthetic_hashes(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 2**63, n, dtype=np.uint64) * np.uint64(2) + rng.integers(
        0, 2, n, dtype=np.uint64
    )
    planted = rng.choice(n, n // 100, replace=False)
    for k in planted:  # a near copy of another hash, 0–6 bits away
        flips = rng.choice(64, size=int(rng.integers(0, 7)), replace=False)
        values[k] = values[(k + 1) % n] ^ np.uint64(sum(1 << int(f) for f in flips))
    return values


def bench_index(sizes: list[int], r: int) -> None:
    """CPU seconds per size (wall seconds beside them: on a shared machine only CPU time is stable)."""
    times = []
    for n in sizes:
        values = synthetic_hashes(n)
        start, start_cpu = time.perf_counter(), time.process_time()
        pairs = candidate_pairs(values, r)
        times.append(time.process_time() - start_cpu)
        wall = time.perf_counter() - start
        print(
            f"  {n:>9,} hashes: {times[-1]:7.2f} s CPU ({wall:.2f} s wall), {len(pairs):,} pairs within {r}"
        )
    if len(sizes) >= 2:
        exponent = np.polyfit(np.log(sizes), np.log(times), 1)[0]
        print(f"  fitted exponent (log CPU time vs log n): {exponent:.2f}; load {os.getloadavg()[0]:.1f}")


def _rates(images: list, roots: list[int]) -> tuple[float, float, int, int]:
    same_missed = same_total = look_merged = look_total = 0
    for i, j in itertools.combinations(range(len(images)), 2):
        a, b = images[i], images[j]
        grouped = roots[i] == roots[j]
        if (a.family, a.field) == (b.family, b.field):
            same_total += 1
            same_missed += not grouped
        elif a.family == b.family:
            look_total += 1
            look_merged += grouped
    return same_missed / same_total, look_merged / look_total, same_total, look_total


def _hash_only_roots(hashes: list[str], r: int) -> list[int]:
    parent = list(range(len(hashes)))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for i, j in candidate_pairs(hashes, r).tolist():
        a, b = find(i), find(j)
        parent[max(a, b)] = min(a, b)
    return [find(i) for i in range(len(hashes))]


def bench_errors(families: int, fields: int, seed: int) -> None:
    images = labelled_set(families, fields, seed=seed)
    hashes = [dhash(im.pixels) for im in images]
    greys = [grey8(im.pixels) for im in images]
    print(
        f"  {len(images)} images: {families} families × {fields} fields × 6 (original + 5 edits), 256 × 256, "
        f"seed {seed}; min similarity {DEFAULT_MIN_SIMILARITY}"
    )
    for r in (6, 10):
        missed, merged, n_same, n_look = _rates(images, _hash_only_roots(hashes, r))
        print(
            f"  r = {r:>2}, hash alone:     missed {missed:6.1%} of {n_same} same-field pairs, "
            f"merged {merged:6.1%} of {n_look} look-alike pairs"
        )
        start = time.perf_counter()
        found = find_near_duplicates(hashes, r, lambda i: greys[i])
        took = time.perf_counter() - start
        missed, merged, _, _ = _rates(images, found.roots)
        print(
            f"  r = {r:>2}, hash + pixels:  missed {missed:6.1%}, merged {merged:6.1%} "
            f"({len(found.refused)} proposed pairs refused by the pixels; {took:.1f} s)"
        )
        by_edit: dict[str, int] = {}
        for im, root in zip(images, found.roots, strict=True):
            orig = next(
                k
                for k, o in enumerate(images)
                if (o.family, o.field, o.edit) == (im.family, im.field, "orig")
            )
            if im.edit != "orig" and found.roots[orig] != root:
                by_edit[im.edit] = by_edit.get(im.edit, 0) + 1
        if by_edit:
            print(f"           edits not grouped with their original: {by_edit}")


def make_fields(folder: Path, n: int, seed: int = 0) -> list[Path]:
    """Smooth fields 0 … n−1 as 512 × 512 grey PNGs in ``folder`` (written only when missing)."""
    from PIL import Image

    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / f"field{seed}_{i:06d}.png" for i in range(n)]
    for i, path in enumerate(tqdm(paths, desc="writing fields", unit="image", leave=False)):
        if not path.exists():
            Image.fromarray(smooth_field(seed, i)).save(path, compress_level=1)
    return paths


def _counting(paths: list[Path], decoded: list[int]) -> Callable[[int], np.ndarray]:
    """Loads image ``i`` as the build does, noting each decode in ``decoded``."""

    def grey(i: int) -> np.ndarray:
        decoded.append(i)
        return _grey(paths[i])

    return grey


def bench_confirm(sizes: list[int], r: int, folder: Path) -> None:
    """CPU seconds of the whole near-duplicate search per collection size, decodes counted."""
    paths = make_fields(folder, max(sizes))
    hashes = [
        dhash(_grey(p).astype(np.uint8)) for p in tqdm(paths, desc="hashing", unit="image", leave=False)
    ]
    times = []
    for n in sizes:
        decoded: list[int] = []
        scores: dict[str, float] = {}
        start, start_cpu = time.perf_counter(), time.process_time()
        found = find_near_duplicates(hashes[:n], r, _counting(paths, decoded), scores=scores, key=str)
        times.append(time.process_time() - start_cpu)
        wall = time.perf_counter() - start
        pairs = len(candidate_pairs(hashes[:n], r))
        print(
            f"  {n:>6,} images: {pairs:>8,} candidate pairs, {len(decoded):,} decodes "
            f"({len(set(decoded)):,} images), {len(scores):,} pairs scored, {len(found.refused):,} refused, "
            f"{sum(i != root for i, root in enumerate(found.roots))} grouped; "
            f"{times[-1]:.1f} s CPU ({wall:.1f} s wall)"
        )
    if len(sizes) >= 2:
        exponent = np.polyfit(np.log(sizes), np.log(times), 1)[0]
        print(f"  fitted exponent (log CPU time vs log n): {exponent:.2f}; load {os.getloadavg()[0]:.1f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--bits", type=int, default=6)
    ap.add_argument("--families", type=int, default=6)
    ap.add_argument("--fields", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--confirm-sizes", default="1000,2000,4000")
    ap.add_argument("--dir", type=Path, default=Path("/tmp/scopebench-smooth-fields"))
    ap.add_argument("--only", choices=("index", "errors", "confirm"), action="append")
    args = ap.parse_args()
    cpu = platform.processor() or platform.machine()
    print(f"machine: {cpu}, {os.cpu_count()} cores, Python {platform.python_version()}")
    only = set(args.only or ("index", "errors", "confirm"))
    if "index" in only:
        print(f"index (r = {args.bits}):")
        bench_index([int(s) for s in args.sizes.split(",")], args.bits)
    if "errors" in only:
        print("errors on the labelled set:")
        bench_errors(args.families, args.fields, args.seed)
    if "confirm" in only:
        print(f"whole search on smooth fields (r = {args.bits}, PNGs in {args.dir}):")
        bench_confirm([int(s) for s in args.confirm_sizes.split(",")], args.bits, args.dir)


if __name__ == "__main__":
    main()

"""``build ingest`` at scale: peak memory, speed-up over workers, the PIL floor, re-runs, disk.

Data: 512 × 512 images, half 16-bit grey TIFF, half 8-bit RGB PNG, each its own smooth field plus
noise (seeded; generated once under ``--root`` and reused). Every measurement runs in a fresh
process; peak memory is the largest sum of the resident set sizes of the ingest process and its
workers, sampled every 50 ms.

* **memory** — peak RSS at each of ``--sizes`` (stopping before a size whose predicted time passes
  ``--time-limit``) and the fitted growth (MB per 1,000 images);
* **speed** — ``--speed`` images with 1 and 2 workers: the speed-up, and the ratio of the bare PIL
  loop (decode, lossless PNG, MD5 in a pool of the same two processes) to ingest;
* **re-runs** — ``build run`` cold, again with nothing changed, after one changed metadata row and
  after one changed question template: CPU seconds (user + sys of the process and its workers) and
  wall, each as a ratio to the cold run, in this process and as ``scopebench build run`` commands
  (nothing changed: the least CPU of ``--repeat`` runs), and that command's CPU by stage (interpreter,
  the CLI, pydantic, the manifest models, the pipeline, the run itself);
* **disk** — input, ingest output and conversion cache sizes;
* **worker** — the peak memory one worker adds converting a 2048 × 2048 16-bit RGBA image;
* **ray** — ``--speed`` images converted by 2 Ray tasks at once on a running one-node Ray cluster
  of 2 CPUs (``--executor ray --ray-address``, the driver shipping each file's bytes) against the
  process pool of 2 workers: the wall-clock ratio and the driver's peak memory. The cluster is
  started first (a lab's is already running) and, like the driver, in a network namespace of its
  own (``unshare -n``, loopback only; root needed), so nothing listens beyond 127.0.0.1.

Usage: python bench/bench_ingest.py [--sizes 1000,5000,20000] [--speed 300] [--time-limit 120]
       [--only reruns --reruns 100 --repeat 5]
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROW = "light microscopy,brightfield microscopy,pathology,hematopathology,Giemsa,Homo sapiens"


def make_images(folder: Path, n: int, seed: int = 0) -> None:
    """Write images 0 … n−1 that are not there yet (``i`` even: 16-bit grey TIFF, odd: RGB PNG)."""
    import tifffile
    from PIL import Image

    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:512, 0:512] / 512
    noise = rng.normal(0, 0.03, (1024, 1024))
    for i in range(n):
        name = folder / (f"im{i:06d}.tif" if i % 2 == 0 else f"im{i:06d}.png")
        if name.exists():
            continue
        r = np.random.default_rng([seed, i])
        oy, ox = r.integers(0, 512, 2)
        fx, fy, phase = r.uniform(2, 12, 3)  # each image its own field: no two are near-duplicates
        field = np.sin(x * fx + y * fy + phase) * 0.3 + 0.5
        grey = np.clip(field + noise[oy : oy + 512, ox : ox + 512], 0, 1)
        if i % 2 == 0:
            tifffile.imwrite(name, (grey * 65535).astype(np.uint16))
        else:
            rgb = np.stack([grey, grey**1.3, 1 - grey * 0.5], axis=-1)
            Image.fromarray((rgb * 255).astype(np.uint8)).save(name, compress_level=1)


def write_manifest(root: Path, n: int) -> Path:
    names = [f"im{i:06d}.tif" if i % 2 == 0 else f"im{i:06d}.png" for i in range(n)]
    (root / f"meta_{n}.csv").write_text(
        "image,modality,submodality,domain,subdomain,stain,organism\n"
        + "".join(f"{m},{ROW}\n" for m in names)
    )
    path = root / f"manifest_{n}.yaml"
    source = f"  - name: s\n    images: images\n    metadata: meta_{n}.csv\n    license: CC0-1.0\n"
    path.write_text(f"name: bench\nsources:\n{source}")
    return path


CPU: list[float] = []  # CPU seconds of each measured command, in order
#: CPU seconds of each measured command's own process (workers excluded): the part that does not
#: spread over workers, read every 50 ms, so up to 50 ms short
MAIN_CPU: list[float] = []


def _tree_rss(proc: object) -> int:
    import psutil

    assert isinstance(proc, psutil.Process)
    total = 0
    for p in [proc, *proc.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):  # a worker that exited between listing and reading
            total += p.memory_info().rss
    return total


def _cpu_seen(root: object, seen: dict[int, float]) -> None:
    """Record the CPU seconds of ``root``'s descendants in ``seen`` (by pid, the latest reading)."""
    import psutil

    assert isinstance(root, psutil.Process)
    with contextlib.suppress(psutil.Error):
        for p in root.children(recursive=True):
            with contextlib.suppress(psutil.Error):  # exited between listing and reading
                t = p.cpu_times()
                seen[p.pid] = t.user + t.system


def run_measured(cmd: list[str], watch: object = None) -> tuple[float, int]:
    """Wall seconds and peak tree RSS (bytes) of ``cmd``; its CPU seconds (workers included) in ``CPU``.

    ``watch`` (a ``psutil.Process``): the CPU its descendants used meanwhile (sampled every 50 ms,
    so a process living less than that is missed) is added to ``CPU``'s entry.
    """
    import resource

    import psutil

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    watched: dict[int, float] = {}
    if watch is not None:
        _cpu_seen(watch, watched)
    start_cpu = dict(watched)
    start = time.perf_counter()
    child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    proc = psutil.Process(child.pid)
    peak, main_cpu = 0, 0.0
    while child.poll() is None:
        peak = max(peak, _tree_rss(proc))
        with contextlib.suppress(psutil.Error):  # exited since the poll
            own = proc.cpu_times()
            main_cpu = own.user + own.system
        if watch is not None:
            _cpu_seen(watch, watched)
        time.sleep(0.05)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # workers are reaped by ingest, so they count
    extra = sum(cpu - start_cpu.get(pid, 0.0) for pid, cpu in watched.items())
    CPU.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime + extra)
    MAIN_CPU.append(main_cpu)
    if child.returncode:
        raise SystemExit(f"{cmd} failed:\n{child.stderr.read().decode() if child.stderr else ''}")
    return wall, peak


def ingest_cmd(manifest: Path, out: Path, workers: int, *extra: str) -> list[str]:
    cache = str(out.parent / "cache")
    head = [sys.executable, "-m", "scopebench", "--quiet", "build", "ingest", str(manifest)]
    return [*head, "--out", str(out), "--workers", str(workers), "--cache", cache, *extra]


def floor_one(path: str) -> str:
    """The floor per image: Pillow decodes it, writes lossless PNG, MD5 of the bytes."""
    import hashlib
    import io

    from PIL import Image

    with Image.open(path) as im:
        im.load()
        buf = io.BytesIO()
        im.save(buf, format="PNG")
    return hashlib.md5(buf.getvalue()).hexdigest()


def floor_main(workers: int, listing: Path) -> None:
    """The bare PIL loop over the files listed, in a pool of ``workers`` spawned processes like ingest's."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    files = listing.read_text().split()
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        list(pool.map(floor_one, files, chunksize=4))


def _fresh(path: Path) -> Path:
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def bench_memory(root: Path, sizes: list[int], time_limit: float) -> dict:
    out: dict = {"sizes": [], "peak_mb": [], "seconds": []}
    per_image = None
    for n in sizes:
        if per_image is not None and per_image * n > time_limit:
            predicted = per_image * n
            print(f"  {n:>6} images: skipped (predicted {predicted:.0f} s > --time-limit {time_limit:.0f} s)")
            continue
        make_images(root / "images", n)
        manifest = write_manifest(root, n)
        work = _fresh(root / f"run_{n}")
        wall, peak = run_measured(ingest_cmd(manifest, work / "out", 2))
        per_image = wall / n
        inputs = sum(
            (root / "images" / (f"im{i:06d}.tif" if i % 2 == 0 else f"im{i:06d}.png")).stat().st_size
            for i in range(n)
        )
        disk = {
            "input_mb": inputs / 1e6,
            "output_mb": _size(work / "out") / 1e6,
            "cache_mb": _size(work / "cache") / 1e6,
        }
        mb_in, mb_out, mb_cache = disk["input_mb"], disk["output_mb"], disk["cache_mb"]
        print(
            f"  {n:>6} images: peak RSS {peak / 1e6:7.0f} MB, {wall:6.1f} s; disk: input {mb_in:.0f} MB, "
            f"output {mb_out:.0f} MB ({mb_out / mb_in:.2f}×), "
            f"cache {mb_cache:.0f} MB ({(mb_out + mb_cache) / mb_in:.2f}× with it)"
        )
        out["sizes"].append(n)
        out["peak_mb"].append(peak / 1e6)
        out["seconds"].append(wall)
        out.setdefault("disk", {})[n] = disk
        shutil.rmtree(work)
    if len(out["sizes"]) >= 2:
        slope, _ = np.polyfit(out["sizes"], out["peak_mb"], 1)
        out["growth_mb_per_1000"] = slope * 1000
        print(f"  fitted growth: {slope * 1000:+.1f} MB per 1,000 images")
    return out


def stage_cpu(files: list[Path]) -> dict[str, float]:
    """CPU milliseconds per image of each stage of a conversion, in this process, and of the floor."""
    from scopebench.curate.ingestion.cache import sha256_file
    from scopebench.curate.ingestion.images import dhash, encode_png, grey_float, pixel_md5, read_image
    from scopebench.curate.ingestion.near_duplicates import stretched_grid

    pixels = [read_image(p).pixels for p in files]  # warm: imports and the page cache
    stages = {
        "file SHA-256": lambda k: sha256_file(files[k]),
        "decode": lambda k: read_image(files[k]),
        "PNG encode": lambda k: encode_png(pixels[k]),
        "dHash": lambda k: dhash(pixels[k]),
        "pixel MD5": lambda k: pixel_md5(pixels[k]),
        "near-duplicate grid": lambda k: stretched_grid(grey_float(pixels[k])),
        "bare PIL loop": lambda k: floor_one(str(files[k])),
    }
    out = {}
    for name, fn in stages.items():
        start = time.process_time()
        for k in range(len(files)):
            fn(k)
        out[name] = (time.process_time() - start) / len(files) * 1000
    ours = sum(v for k, v in out.items() if k != "bare PIL loop")
    parts = ", ".join(f"{k} {v:.1f}" for k, v in out.items() if k != "bare PIL loop")
    print(f"  CPU ms per image: {parts}; total {ours:.1f}, the bare PIL loop {out['bare PIL loop']:.1f}")
    return out


def bench_speed(root: Path, n: int) -> dict:
    make_images(root / "images", n)
    manifest = write_manifest(root, n)
    times, cpu, main_cpu = {}, {}, {}
    for workers in (1, 2):
        work = _fresh(root / f"speed_{workers}")
        times[workers], _ = run_measured(ingest_cmd(manifest, work / "out", workers))
        cpu[workers], main_cpu[workers] = CPU[-1], MAIN_CPU[-1]
        shutil.rmtree(work)
    files = [str(root / "images" / (f"im{i:06d}.tif" if i % 2 == 0 else f"im{i:06d}.png")) for i in range(n)]
    (root / "floor.txt").write_text("\n".join(files))
    floor, _ = run_measured([sys.executable, __file__, "--floor", "2", "--root", str(root)])
    floor_cpu = CPU[-1]
    speedup, ratio, ratio_cpu = times[1] / times[2], floor / times[2], floor_cpu / cpu[2]
    print(
        f"  {n} images, wall: 1 worker {times[1]:.1f} s, 2 workers {times[2]:.1f} s: speed-up {speedup:.2f}×"
    )
    print(
        f"  bare PIL loop (2 spawned processes): {floor:.1f} s wall; floor / ingest (2 workers) {ratio:.2f}"
    )
    print(
        f"  CPU s (workers included): 1 worker {cpu[1]:.1f}, 2 workers {cpu[2]:.1f}, floor {floor_cpu:.1f}: "
        f"floor / ingest {ratio_cpu:.2f}"
    )
    print(
        f"  CPU s of the main process alone (what does not spread over workers), 2 workers: {main_cpu[2]:.1f}"
    )
    print(
        f"  load average now {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (wall times need an idle one)"
    )
    stages = stage_cpu([Path(f) for f in files[:20]])
    return {
        "stages_ms": stages,
        "images": n,
        "wall": times,
        "cpu": cpu,
        "main_cpu": main_cpu,
        "floor": floor,
        "floor_cpu": floor_cpu,
        "speedup": speedup,
    }


_WORKER = """
import resource, sys
from scopebench.curate.ingestion import convert
import imagehash, scipy, tifffile  # imported before the baseline: they are a worker's fixed cost
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
convert.convert_one(convert.Job(sys.argv[1], None, sys.argv[2], None))
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) * 1024)
"""


def bench_worker(root: Path, side: int = 2048) -> dict:
    """Peak RSS growth of one worker converting one ``side``² 16-bit RGBA TIFF (the worst case per pixel)."""
    import tifffile

    path = root / f"rgba16_{side}.tif"
    if not path.exists():
        pixels = np.random.default_rng(0).integers(0, 65535, (side, side, 4), dtype=np.uint16)
        tifffile.imwrite(path, pixels, photometric="rgb", extrasamples=["unassalpha"])
    store = _fresh(root / "worker_store")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    done = subprocess.run(
        [sys.executable, "-c", _WORKER, str(path), str(store)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    grown = int(done.stdout.split()[-1])
    per_pixel = grown / side**2
    print(
        f"  one worker, one {side}² 16-bit RGBA TIFF: peak RSS +{grown / 1e6:.0f} MB = {per_pixel:.1f} B/px"
    )
    return {"side": side, "bytes": grown, "bytes_per_pixel": per_pixel}


_TEMPLATES = "templates:\n  questions:\n    stain: {text}\n"


def _process_cpu() -> float:
    """CPU seconds (user + sys) of this process and of every child it has reaped (ingest's workers)."""
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _rerun_project(root: Path, n: int) -> tuple[Path, Path, Path]:
    """``build_<n>.yaml`` with a user taxonomy holding one template: (build.yaml, metadata, taxonomy)."""
    make_images(root / "images", n)
    write_manifest(root, n)
    work = _fresh(root / "reruns")
    tax = root / "reruns_taxonomy.yaml"
    tax.write_text(_TEMPLATES.format(text='"Which stain is shown?"'))
    build = root / f"build_{n}.yaml"
    build.write_text(f"manifest: manifest_{n}.yaml\nout: {work / 'build'}\nseed: 0\ntaxonomy: {tax.name}\n")
    return build, root / f"meta_{n}.csv", tax


def _rerun_cases(
    build: Path, meta: Path, tax: Path, measure: Any, repeat: int
) -> dict[str, tuple[float, float]]:
    """(CPU s, wall s) of a cold run and of re-runs: nothing changed, one row, one template changed.

    ``measure(label)`` runs the build once; nothing changed is the run of least CPU of ``repeat``
    (a fixed cost of tenths of a second: one run's figure is mostly the machine's load).
    """
    shutil.rmtree(build.parent / "reruns" / "build", ignore_errors=True)
    original, template = meta.read_text(), tax.read_text()
    out = {"cold": measure("cold")}
    out["no change"] = min((measure("no change") for _ in range(repeat)), key=lambda m: m[0])
    # One row's stain changes (a real change: its stain question is drawn again).
    meta.write_text(
        original.replace(f"im000001.png,{ROW}", f"im000001.png,{ROW.replace('Giemsa', 'Wright-Giemsa')}")
    )
    try:
        out["one row"] = measure("one row")
    finally:
        meta.write_text(original)
    measure("restored")  # back to the original rows (not reported)
    tax.write_text(_TEMPLATES.format(text='"Which dye or label is shown?"'))
    try:
        out["one template"] = measure("one template")
    finally:
        tax.write_text(template)
    return out


# A nothing-changed `scopebench build run` in stages, each stage's process CPU marked: the imports in
# the order the command makes them, then the command itself (whose imports are then done).
_RERUN_PARTS = """
import contextlib, io, json, sys, time
marks = [time.process_time()]
import scopebench
marks.append(time.process_time())
import click, scopebench.cli as cli
group = cli.build_cli()
group.get_command(click.Context(group), "build")
marks.append(time.process_time())
import pydantic
marks.append(time.process_time())
import scopebench.curate.manifest
marks.append(time.process_time())
import scopebench.curate.pipeline, yaml
marks.append(time.process_time())
with contextlib.redirect_stdout(io.StringIO()):
    code = cli.main(["-q", "build", "run", sys.argv[1], "--workers", "2"])
marks.append(time.process_time())
print(json.dumps({"code": code, "marks": marks}))
"""
_PART_NAMES = (
    "interpreter start",
    "import scopebench (item types, PIL)",
    "the CLI: click, rich, the build command's module",
    "pydantic",
    "manifest and taxonomy models (pydantic's plugin scan)",
    "pipeline, step contract, settings, PyYAML",
    "the run itself and its summary table",
)


def rerun_parts(build: Path, repeat: int) -> dict[str, float]:
    """CPU seconds of each stage of a nothing-changed ``build run`` command, median of ``repeat``
    fresh interpreters (a stage's share, where the minimum of a sum would mix runs)."""
    import statistics

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    runs = []
    for _ in range(repeat):
        done = subprocess.run([sys.executable, "-c", _RERUN_PARTS, str(build)], check=True,
                              capture_output=True, text=True, env=env)  # fmt: skip
        got = json.loads(done.stdout.strip().splitlines()[-1])
        assert got["code"] == 0, done.stderr
        marks = got["marks"]
        runs.append([marks[0], *(b - a for a, b in itertools.pairwise(marks))])
    return {name: statistics.median(r[i] for r in runs) for i, name in enumerate(_PART_NAMES)}


def bench_reruns(root: Path, n: int, repeat: int) -> dict:
    """``build run`` cold, with nothing changed, one metadata row changed, one template changed.

    Measured twice: in this process with the imports done first (the work itself; the steps'
    counts of what they redid are printed) and as ``scopebench build run`` commands (what a user
    waits for, interpreter start and imports included).
    """
    import datasets  # noqa: F401  (imported before the timing: a library user pays it once)
    import pyarrow.parquet  # noqa: F401

    from scopebench.curate import run_build

    build, meta, tax = _rerun_project(root, n)
    steps: dict[str, list] = {}

    per_step: dict[str, dict[str, float]] = {}

    def in_process(label: str) -> tuple[float, float]:
        cpu, start = _process_cpu(), time.perf_counter()
        marks = [cpu]
        outcome = run_build(build, workers=2, on_step=lambda _r: marks.append(_process_cpu()))
        wall, used = time.perf_counter() - start, _process_cpu() - cpu
        steps[label] = outcome.steps
        per_step[label] = {r.step: marks[i + 1] - marks[i] for i, r in enumerate(outcome.steps)}
        return used, wall

    def command(label: str) -> tuple[float, float]:
        wall, _ = run_measured([sys.executable, "-m", "scopebench", "--quiet", "build", "run", str(build),
                                "--workers", "2"])  # fmt: skip
        return CPU[-1], wall

    results = {}
    for mode, measure in (("in-process", in_process), ("command", command)):
        cases = _rerun_cases(build, meta, tax, measure, repeat)
        cold_cpu, cold_wall = cases["cold"]
        print(f"  {n} images, build run {mode}: cold {cold_cpu:.1f} CPU s, {cold_wall:.1f} s wall")
        for name in ("no change", "one row", "one template"):
            cpu, wall = cases[name]
            print(f"    {name}: {cpu:.2f} CPU s = {cpu / cold_cpu:.1%} of cold; {wall:.2f} s wall = "
                  f"{wall / cold_wall:.1%} of cold")  # fmt: skip
        results[mode] = cases
        if mode == "in-process":
            row, template = steps["one row"], steps["one template"]
            print(f"    one row: images converted again {row[0].converted}, questions drawn {row[1].made} "
                  f"(reused {row[1].reused}); one template: questions drawn {template[1].made} "
                  f"(reused {template[1].reused}), ingest reused: {template[0].cached}")  # fmt: skip
            for name in ("cold", "one row", "one template"):
                print(
                    f"    CPU s per step, {name}: "
                    + ", ".join(f"{k} {v:.2f}" for k, v in per_step[name].items())
                )
    print(f"  load average now {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    run_build(build, workers=2)  # back to the original template: the next runs change nothing
    parts = rerun_parts(build, repeat)
    print(f"  nothing changed, as a command, by stage (CPU s, median of {repeat}):")
    for name, cpu in parts.items():
        print(f"    {name}: {cpu:.3f}")
    print(f"    together: {sum(parts.values()):.3f}")
    results["command parts"] = parts
    shutil.rmtree(root / "reruns")
    return results


def _start_cluster(temp: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """A one-node cluster of 2 CPUs on 127.0.0.1:6398, in its own process group (``ray stop`` would
    stop every Ray process on the machine, other users' included); returns once it answers."""
    ray = str(Path(sys.executable).with_name("ray"))
    head = subprocess.Popen(
        [ray, "start", "--head", "--port", "6398", "--node-ip-address", "127.0.0.1", "--num-cpus", "2",
         "--include-dashboard", "false", "--temp-dir", temp, "--disable-usage-stats", "--block"],
        env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    status = [ray, "status", "--address", "127.0.0.1:6398"]
    while subprocess.run(status, env=env, capture_output=True).returncode != 0:
        if head.poll() is not None:
            raise SystemExit("ray start --head exited")
        time.sleep(0.5)
    return head


def _stop_cluster(head: subprocess.Popen[bytes], temp: str) -> None:
    """Kill the cluster by process id: ``ray start`` and every process it started (listed first)."""
    import signal

    import psutil

    started: list[psutil.Process] = []
    with contextlib.suppress(psutil.Error):
        started = psutil.Process(head.pid).children(recursive=True)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(head.pid, signal.SIGKILL)
    head.wait()
    for proc in started:  # Ray's daemons and workers leave the group: killed by their ids
        with contextlib.suppress(psutil.Error):
            proc.kill()
    shutil.rmtree(temp, ignore_errors=True)


def bench_ray(root: Path, n: int) -> dict:
    """The process pool against Ray tasks on a running local cluster (inside ``unshare -n``)."""
    import tempfile

    import psutil

    make_images(root / "images", n)
    manifest = write_manifest(root, n)
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    temp = tempfile.mkdtemp(prefix="sb-bench-ray-")  # short: Ray's socket paths are limited to 107 bytes
    head = _start_cluster(temp, {**os.environ, "RAY_AUTH_MODE": "disabled"})
    try:
        times, peaks, cpu = {}, {}, {}
        for name, extra in (("pool", ()), ("ray", ("--executor", "ray", "--ray-address", "127.0.0.1:6398"))):
            work = _fresh(root / f"ray_{name}")
            watch = psutil.Process(head.pid) if name == "ray" else None  # the cluster's processes
            times[name], peaks[name] = run_measured(ingest_cmd(manifest, work / "out", 2, *extra), watch)
            cpu[name] = CPU[-1]
            shutil.rmtree(work)
    finally:
        _stop_cluster(head, temp)
    ratio, ratio_cpu = times["pool"] / times["ray"], cpu["pool"] / cpu["ray"]
    print(f"  {n} images, wall: process pool (2) {times['pool']:.1f} s, Ray (2 tasks) {times['ray']:.1f} s")
    print(f"  pool / Ray {ratio:.2f} (above 1: Ray faster)")
    print(
        f"  CPU s: pool with its workers {cpu['pool']:.1f}, Ray driver and cluster {cpu['ray']:.1f}: "
        f"pool / Ray {ratio_cpu:.2f}"
    )
    print(
        f"  peak RSS: pool with its workers {peaks['pool'] / 1e6:.0f} MB, "
        f"Ray driver {peaks['ray'] / 1e6:.0f} MB (the cluster's processes not counted)"
    )
    print(f"  load average now {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    return {"images": n, "wall": times, "cpu": cpu, "peak_rss": peaks, "pool_over_ray": ratio}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,5000,20000")
    ap.add_argument("--speed", type=int, default=300)
    ap.add_argument("--reruns", type=int, default=300, help="images of the re-runs' build")
    ap.add_argument(
        "--repeat", type=int, default=5, help="re-runs with nothing changed; the least CPU is reported"
    )
    ap.add_argument("--time-limit", type=float, default=120.0, help="skip a size predicted to take longer")
    ap.add_argument("--root", default="/tmp/scopebench-bench-ingest")
    ap.add_argument("--only", choices=("memory", "speed", "reruns", "worker", "ray"), action="append")
    ap.add_argument("--floor", type=int, help=argparse.SUPPRESS)  # the floor's own process
    args = ap.parse_args()
    root = Path(args.root)
    if args.floor:
        floor_main(args.floor, root / "floor.txt")
        return
    cpu = platform.processor() or platform.machine()
    print(f"machine: {cpu}, {os.cpu_count()} cores, Python {platform.python_version()}")
    # ray needs root (a network namespace): only when asked for.
    only = set(args.only or ("memory", "speed", "reruns", "worker"))
    results: dict = {}
    if "worker" in only:
        print("worker memory:")
        results["worker"] = bench_worker(root)
    if "speed" in only:
        print("speed:")
        results["speed"] = bench_speed(root, args.speed)
    if "reruns" in only:
        print("re-runs:")
        results["reruns"] = bench_reruns(root, args.reruns, args.repeat)
    if "ray" in only:
        print("ray (a local cluster of 2 CPUs, inside unshare -n):")
        if os.environ.get("SB_BENCH_NETNS") != "1":  # start again in a network namespace of our own
            own = [__file__, "--only", "ray", "--speed", str(args.speed), "--root", str(root)]
            cmd = ["unshare", "-n", sys.executable, *own]
            subprocess.run(cmd, check=True, env={**os.environ, "SB_BENCH_NETNS": "1"})
        else:
            results["ray"] = bench_ray(root, args.speed)
    if "memory" in only:
        print("memory (2 workers):")
        results["memory"] = bench_memory(root, [int(s) for s in args.sizes.split(",")], args.time_limit)
    print(json.dumps(results, default=str))


if __name__ == "__main__":
    main()

"""Contrastive engine vs the reference implementations' naive loop, on μ-Bench-shaped data.

Data: N unique images, 5 questions per image (μ-Bench's coarse tasks), 4 templated caption
options per task — captions repeat across every image, as in μ-Bench. Model: a CLIP with ViT-B/32
dimensions and random weights (same compute as the real one), on CPU.

Prints five ratios:
* naive / engine           (target ≥ 5×)
* engine / model-only      (target ≤ 1.05×): model-only = encoding each unique image and caption
                           once, batched, with nothing else (the model's loading is outside its
                           clock, inside the engine's)
* engine / overlapped      the same floor with the next batch of images decoded while the model
                           encodes this one, as the engine does on a GPU or when a CPU core is
                           left beside torch's threads
* engine / in parts        the same floor with each batch decoded in one part per core before it
                           is encoded, as the engine does on a CPU whose cores torch's threads all
                           take: on such a CPU, the engine's own cost
* resume / original        (target ≤ 2%): re-running the finished run

The naive loop and the floors run in a process of their own, as a user's script would (spawned
once, its imports and first model load done before any clock starts); the engine runs in this
one, as ``scopebench run`` does. On a CPU the engine sets glibc's allocator to keep freed
activations for the next layer (``scopebench.models.cpu_memory``): ``--floor-allocator system``
(the default) leaves the floors' process glibc's defaults, as a plain script has them;
``--floor-allocator ours`` gives it the engine's settings, so the ratios are the engine's own cost
alone; ``--allocator system`` keeps the engine from changing them (what the settings buy). Each
path's minor page faults are printed beside its time.

Engine and floors take turns in a rotating order (each first, second, third and last once in every
4 repeats; use a multiple of 4 for --repeat), after a pause and a garbage collection; each ratio
is printed as the minimum over the minimum and per repeat (adjacent runs, so a slow spell of the
machine hits both).

Usage: python bench/bench_contrastive.py [--images 40] [--repeat 3] [--out /tmp/bench] [--device cuda]
       [--skip-naive] [--allocator ours|system] [--floor-allocator system|ours]
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import multiprocessing
import os
import platform
import resource
import shutil
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from itertools import pairwise
from pathlib import Path
from typing import Any

import torch
from _data import TASKS, make_data
from PIL import Image

from scopebench.engine import RunConfig, run_benchmark
from scopebench.models import cpu_memory
from scopebench.testing.tiny import build_tiny_clip


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def naive_loop(model_dir: Path, data: Path, device: str = "cpu") -> float:
    """What the reference code does: per question, re-load and re-encode image and captions, batch 1."""
    from transformers import AutoModel, AutoProcessor

    model = AutoModel.from_pretrained(model_dir).to(device).eval()
    proc = AutoProcessor.from_pretrained(model_dir)
    rows = [json.loads(x) for x in data.read_text().splitlines()]
    start = time.perf_counter()
    with torch.inference_mode():
        for r in rows:
            image = Image.open(data.parent / r["image"]).convert("RGB")
            inp = proc(text=r["captions"], images=[image], padding=True, return_tensors="pt").to(device)
            model(**inp).logits_per_image.softmax(-1).cpu()
    _sync(device)
    return time.perf_counter() - start


def model_only(model_dir: Path, data: Path, batch: int, device: str = "cpu", prep: str = "plain") -> float:
    """The floor: each unique image and caption encoded once, batched, nothing else.

    ``prep`` says how each batch of images is decoded and preprocessed: ``plain`` in one pass
    before it is encoded; ``ahead`` in a thread while the model encodes the batch before (what the
    engine does on a GPU, or with a core left beside torch's threads); ``parts`` in one part per
    core, in threads, before it is encoded (what the engine does on a CPU whose cores torch takes).
    The ratio to the last two is the engine's own cost.
    """
    from transformers import AutoModel, AutoProcessor

    model = AutoModel.from_pretrained(model_dir).to(device).eval()
    proc = AutoProcessor.from_pretrained(model_dir)
    rows = [json.loads(x) for x in data.read_text().splitlines()]
    images = sorted({r["image"] for r in rows})
    captions = sorted({c for r in rows for c in r["captions"]})
    chunks = [images[k : k + batch] for k in range(0, len(images), batch)]

    cores = len(os.sched_getaffinity(0))

    def one_pass(chunk: list[str]) -> torch.Tensor:
        pil = [Image.open(data.parent / p).convert("RGB") for p in chunk]
        return proc(images=pil, return_tensors="pt")["pixel_values"]

    def pixels(chunk: list[str]) -> torch.Tensor:
        if prep != "parts":
            return one_pass(chunk)
        bounds = [len(chunk) * k // cores for k in range(cores + 1)]
        return torch.cat(list(parts.map(one_pass, [chunk[a:b] for a, b in pairwise(bounds) if b > a])))

    start = time.perf_counter()
    with torch.inference_mode(), ThreadPoolExecutor(1) as pool, ThreadPoolExecutor(cores) as parts:
        ahead = pool.submit(pixels, chunks[0]) if prep == "ahead" else None
        for n, chunk in enumerate(chunks):
            if ahead is None:
                px = pixels(chunk)
            else:
                px = ahead.result()
                if n + 1 < len(chunks):
                    ahead = pool.submit(pixels, chunks[n + 1])
            model.get_image_features(pixel_values=px.to(device))
        for k in range(0, len(captions), batch):
            text = proc(text=captions[k : k + batch], padding=True, return_tensors="pt").to(device)
            model.get_text_features(**text)
    _sync(device)
    return time.perf_counter() - start


def _floor_process(threads: int, allocator: str) -> None:
    """Set up the floors' process: a plain script's, or with the engine's allocator settings."""
    logging.getLogger("transformers").setLevel(logging.ERROR)
    torch.set_num_threads(threads)
    if allocator == "ours":
        cpu_memory.keep_freed_memory("cpu")


def _counted(fn: Callable[..., float], *args: Any) -> tuple[float, int]:
    """``fn(*args)``'s seconds and the minor page faults of this process meanwhile."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    seconds = fn(*args)
    return seconds, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


MODEL_LOAD, IMAGES, CAPTIONS = "model load", "images (waiting for pixels, encoding)", "captions (encoding)"


def breakdown(cfg: RunConfig, run_dir: Path) -> dict[str, float]:
    """Wall seconds of one engine run and of its parts (timers around the engine's own functions)."""
    import scopebench.engine.runner as runner
    from scopebench.models.contrastive import ContrastiveBackend, HFContrastiveBackend
    from scopebench.store.runstore import RunStore

    spent: dict[str, float] = {}
    timed = [
        (HFContrastiveBackend, "_ensure_loaded", MODEL_LOAD),
        (ContrastiveBackend, "_fill_image_cache", IMAGES),
        (HFContrastiveBackend, "encode_prepared", "  of which encoding"),
        (ContrastiveBackend, "_fill_text_cache", CAPTIONS),
        (runner, "_load_run_items", "reading and checking the items"),
        (RunStore, "add", "storing records"),
        (RunStore, "export_jsonl", "exporting records.jsonl"),
        (runner, "_write_metrics", "metrics, intervals and baselines"),
    ]
    originals = [(owner, name, getattr(owner, name)) for owner, name, _ in timed]

    def timer(fn: Callable[..., Any], label: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[label] = spent.get(label, 0.0) + time.perf_counter() - start

        return call

    for (owner, name, label), (_, _, fn) in zip(timed, originals, strict=True):
        setattr(owner, name, timer(fn, label))
    try:
        gc.collect()
        start = time.perf_counter()
        run_benchmark(cfg, run_dir)
        spent["total"] = time.perf_counter() - start
    finally:
        for owner, name, fn in originals:
            setattr(owner, name, fn)
    return spent


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--images", type=int, default=40)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--out", default="/tmp/scopebench-bench")
    ap.add_argument("--repeat", type=int, default=3, help="interleaved repeats; each figure is the minimum")
    ap.add_argument("--device", default="cpu", help="cpu or cuda (all three paths run there)")
    ap.add_argument("--pause", type=float, default=1.0, help="seconds idle before each timed path")
    ap.add_argument("--breakdown", action="store_true", help="then one engine run timed part by part")
    ap.add_argument("--skip-naive", action="store_true", help="no naive loop (minutes at 1,000 items)")
    ap.add_argument("--allocator", choices=("ours", "system"), default="ours",
                    help="the engine's: glibc's as the engine sets it on a CPU, or its defaults")  # fmt: skip
    ap.add_argument("--floor-allocator", choices=("system", "ours"), default="system",
                    help="the floors' process: glibc's defaults (a script's), or the engine's")  # fmt: skip
    args = ap.parse_args()
    if args.allocator == "system":
        cpu_memory._libc = lambda: None  # the engine keeps glibc's defaults
    logging.getLogger("transformers").setLevel(logging.ERROR)
    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    torch.set_num_threads(max(1, torch.get_num_threads()))
    model_dir = build_tiny_clip(out / "vit-b32-random", kind="clip", size="base", seed=0)
    data = make_data(out / "data", args.images)
    n_items = args.images * len(TASKS)

    cfg = RunConfig(benchmark="local", data=str(data), model=f"clip:{model_dir}", batch_size=args.batch,
                    device=args.device)  # fmt: skip
    # Interleaved repeats, minimum of each: on a shared machine a single timing varies by up to 2x.
    naive, floor, overlapped, in_parts, engine, resume = [], [], [], [], [], []
    faults: dict[str, list[int]] = {}

    def timed_engine(r: int) -> float:
        start = time.perf_counter()
        run_benchmark(cfg, out / f"run-{r}")  # end to end: model loading, store and metrics included
        engine.append(time.perf_counter() - start)
        return engine[-1]

    floors = ProcessPoolExecutor(1, multiprocessing.get_context("spawn"), _floor_process,
                                 (torch.get_num_threads(), args.floor_allocator))  # fmt: skip

    def floor_path(name: str, times: list[float], prep: str) -> Callable[[int], None]:
        def run(r: int) -> None:
            job = floors.submit(_counted, model_only, model_dir, data, args.batch, args.device, prep)
            seconds, n_faults = job.result()
            times.append(seconds)
            faults.setdefault(name, []).append(n_faults)

        return run

    def engine_path(r: int) -> None:
        faults.setdefault("engine", []).append(_counted(timed_engine, r)[1])

    paths: list[Callable[[int], None]] = [
        engine_path,
        floor_path("model only", floor, "plain"),
        floor_path("ahead", overlapped, "ahead"),
        floor_path("in parts", in_parts, "parts"),
    ]
    run_benchmark(cfg, out / "warm-up")  # imports (scipy's, the store's) are paid once per process
    floors.submit(model_only, model_dir, data, args.batch, args.device).result()  # the floors' too
    for r in range(args.repeat):
        if not args.skip_naive:
            naive.append(floors.submit(naive_loop, model_dir, data, args.device).result())
        # The four paths take turns in a rotating order (each first, second, third and last once in
        # every 4 repeats): on this machine a path run after minutes of back-to-back encoding is
        # slower, and a fixed order would always bill that to the same one. A pause and a full
        # garbage collection before each, outside its clock, so none pays for another's leftovers.
        for k in range(len(paths)):
            gc.collect()
            time.sleep(args.pause)
            paths[(r + k) % len(paths)](r)
        start = time.perf_counter()
        again = run_benchmark(cfg, out / f"run-{r}")
        resume.append(time.perf_counter() - start)
        assert again.n_new == 0
    floors.shutdown()
    naive = naive or [float("nan")]
    t_naive, t_floor, t_engine, t_resume = min(naive), min(floor), min(engine), min(resume)
    t_overlap, t_parts = min(overlapped), min(in_parts)

    machine = platform.processor() or platform.machine()
    gpu = f" + {torch.cuda.get_device_name()}" if args.device.startswith("cuda") else ""
    print(f"machine: {machine}{gpu}, {torch.get_num_threads()} torch threads, torch {torch.__version__}; "
          f"{n_items} items on {args.images} images, 20 unique captions; min of {args.repeat}; "
          f"allocator: engine {args.allocator}, floors {args.floor_allocator}")  # fmt: skip
    each = (("model only", floor), ("ahead", overlapped), ("in parts", in_parts), ("engine", engine))
    for name, times in each:
        print(f"  each repeat, {name}: " + ", ".join(f"{t:.2f}" for t in times) + " s; minor page faults, "
              f"median {statistics.median(faults[name]):,.0f}")  # fmt: skip
    print(f"naive loop (re-encode per question, batch 1): {t_naive:8.2f} s")
    print(f"model only (unique images+captions, batched): {t_floor:8.2f} s")
    print(f"model only, next batch decoded meanwhile:     {t_overlap:8.2f} s")
    print(f"model only, each batch decoded on every core: {t_parts:8.2f} s")
    print(f"engine (scopebench run, end to end):          {t_engine:8.2f} s")
    print(f"resume of the finished run:                   {t_resume:8.2f} s")
    print(f"ratio naive/engine        = {t_naive / t_engine:6.2f}x   (target >= 5x)")
    print(f"ratio engine/model-only   = {t_engine / t_floor:6.2f}x   (target <= 1.05x)")
    paired = sorted(e / f for e, f in zip(engine, floor, strict=True))
    print(f"  each repeat's engine/model-only (adjacent runs, so a slow spell hits both): "
          f"{', '.join(f'{r:.3f}' for r in paired)}; median {statistics.median(paired):.3f}")  # fmt: skip
    print(f"ratio engine/overlapped   = {t_engine / t_overlap:6.2f}x   (floor with the next batch decoded "
          "meanwhile, as the engine does on a GPU or with a spare core)")  # fmt: skip
    print(f"ratio engine/in parts     = {t_engine / t_parts:6.2f}x   (floor with each batch decoded on every "
          "core, as the engine does on a CPU whose cores torch takes: its own cost there)")  # fmt: skip
    own = sorted(e / f for e, f in zip(engine, in_parts, strict=True))
    print(f"  each repeat's engine/in parts: {', '.join(f'{r:.3f}' for r in own)}; "
          f"median {statistics.median(own):.3f}")  # fmt: skip
    print(f"ratio resume/original     = {100 * t_resume / t_engine:6.2f}%   (target <= 2%)")
    if args.breakdown:
        parts = breakdown(cfg, out / "breakdown")
        total = parts.pop("total")
        model = sum(parts.get(k, 0.0) for k in (MODEL_LOAD, IMAGES, CAPTIONS))
        print(f"one more engine run, part by part: {total:.3f} s")
        for label, secs in parts.items():
            print(f"  {label:<45} {secs:7.3f} s")
        print(f"  {'the rest: the engine beside the model':<45} {total - model:7.3f} s")


if __name__ == "__main__":
    main()

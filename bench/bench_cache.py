"""The ``openai:`` response cache (``ResponseCache``, one JSON file per request) against diskcache.

Should a maintained library (``diskcache.Cache``, SQLite plus files for large
values) should replace ``models/openai_api.py``'s ``ResponseCache``. Both store the same entry (a
~0.9 kB Chat Completions reply with model, server and time) under the same SHA-256 keys. Measured:

* ``seq``: N puts, then N gets of the same keys, in one process (time per operation);
* ``concurrent``: P writer processes at once, each putting N/P distinct keys and getting them back
  (wall time from a common start), then a check in the parent that all N entries read back intact;
* ``crash``: a writer putting entries in a loop is killed with SIGKILL at a random moment, T times;
  after each kill the cache is reopened, every entry read, and damaged entries, entries the reader
  cannot see, and leftover temporary files counted; the cache must accept a new put afterwards;
* ``size``: disk space after N entries (allocated blocks, ``du``'s measure, and apparent bytes);
* ``open``: in a fresh process, seconds to import the cache's module, open the N-entry cache and
  read one entry (the page cache is warm: dropping it needs root).

Usage: ``python bench/bench_cache.py [--n 10000] [--procs 2 4] [--crash-trials 5] [--json OUT]``
(diskcache must be installed: ``pip install diskcache``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing as mp
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

MODEL = "gpt-4o-2024-08-06"
SERVER = "https://api.openai.com/v1"


class _Store(Protocol):
    def put(self, key: str, reply: dict[str, Any]) -> None: ...
    def get(self, key: str) -> dict[str, Any] | None: ...
    def close(self) -> None: ...


class Ours:
    """``ResponseCache`` behind the bench's interface."""

    def __init__(self, root: Path) -> None:
        from scopebench.models.openai_api import ResponseCache

        self.cache = ResponseCache(root)

    def put(self, key: str, reply: dict[str, Any]) -> None:
        self.cache.put(key, MODEL, SERVER, reply)

    def get(self, key: str) -> dict[str, Any] | None:
        return self.cache.get(key)

    def close(self) -> None:
        pass


class Disk:
    """``diskcache.Cache`` holding the same entry dict ``ResponseCache`` writes (pickled)."""

    def __init__(self, root: Path) -> None:
        import diskcache

        self.cache = diskcache.Cache(str(root))

    def put(self, key: str, reply: dict[str, Any]) -> None:
        self.cache.set(key, {"model": MODEL, "server": SERVER, "created": time.time(), "response": reply})

    def get(self, key: str) -> dict[str, Any] | None:
        entry = self.cache.get(key)
        return entry["response"] if isinstance(entry, dict) else None

    def close(self) -> None:
        self.cache.close()


KINDS: dict[str, Callable[[Path], _Store]] = {"ours": Ours, "diskcache": Disk}
#: The module each kind needs imported (the "import" part of the fresh-process open time).
MODULES = {"ours": "scopebench.models.openai_api", "diskcache": "diskcache"}


def key_of(i: int, tag: str = "") -> str:
    """The SHA-256 key of request ``i`` (as ``ResponseCache.key`` makes them)."""
    return hashlib.sha256(f"{tag}request-{i}".encode()).hexdigest()


def reply_of(i: int) -> dict[str, Any]:
    """A realistic Chat Completions reply (about 0.9 kB as JSON) that names its index."""
    text = f"Reply {i}: the micrograph shows mitochondria with swollen cristae; the answer is (C). " * 4
    return {
        "id": f"chatcmpl-{i:08d}",
        "object": "chat.completion",
        "created": 1_764_000_000 + i,
        "model": MODEL,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 812, "completion_tokens": 64, "total_tokens": 876},
    }


def bench_seq(kind: str, root: Path, n: int) -> dict[str, float]:
    """Sequential puts then gets in one process; microseconds per operation."""
    store = KINDS[kind](root)
    replies = [reply_of(i) for i in range(n)]
    keys = [key_of(i) for i in range(n)]
    t0 = time.perf_counter()
    for k, r in zip(keys, replies, strict=True):
        store.put(k, r)
    t1 = time.perf_counter()
    bad = sum(store.get(k) != r for k, r in zip(keys, replies, strict=True))
    t2 = time.perf_counter()
    store.close()
    assert bad == 0, f"{kind}: {bad} entries read back wrong"
    return {"put_us": 1e6 * (t1 - t0) / n, "get_us": 1e6 * (t2 - t1) / n}


def _writer(kind: str, root: str, lo: int, hi: int, ready: Any, start: Any, out: Any) -> None:
    store = KINDS[kind](Path(root))
    ready.put(lo)
    start.wait()
    for i in range(lo, hi):
        store.put(key_of(i), reply_of(i))
    bad = sum(store.get(key_of(i)) != reply_of(i) for i in range(lo, hi))
    store.close()
    out.put((time.monotonic(), bad))  # CLOCK_MONOTONIC: one clock for every process on Linux


def bench_concurrent(kind: str, root: Path, n: int, procs: int) -> dict[str, float]:
    """``procs`` writers at once; wall seconds, and entries lost or wrong afterwards."""
    ctx = mp.get_context("spawn")
    ready, start, out = ctx.Queue(), ctx.Event(), ctx.Queue()
    KINDS[kind](root).close()  # create the cache before the race, as a run does
    step = n // procs
    workers = [
        ctx.Process(target=_writer, args=(kind, str(root), p * step, (p + 1) * step, ready, start, out))
        for p in range(procs)
    ]
    for w in workers:
        w.start()
    for _ in workers:  # every child has imported and opened the cache before the start signal
        ready.get(timeout=120)
    t0 = time.monotonic()
    start.set()
    done = [out.get(timeout=600) for _ in workers]
    for w in workers:
        w.join()
    store = KINDS[kind](root)
    lost = sum(store.get(key_of(i)) != reply_of(i) for i in range(step * procs))
    store.close()
    return {
        "wall_s": max(t for t, _ in done) - t0,
        "bad_in_writers": sum(b for _, b in done),
        "lost_or_wrong": lost,
    }


def _endless_writer(kind: str, root: str, ready: Any) -> None:
    store = KINDS[kind](Path(root))
    ready.set()
    i = 0
    while True:
        store.put(key_of(i, "crash"), reply_of(i))
        i += 1


def _scan_after_crash(kind: str, root: Path) -> dict[str, int]:
    """Entries that read back intact, damaged ones, and temporary files left behind."""
    if kind == "ours":
        files = [p for p in root.rglob("*.json") if not p.name.startswith(".tmp-")]
        temps = len(list(root.rglob(".tmp-*")))
        store = KINDS[kind](root)
        ok = sum(store.get(p.stem) is not None for p in files)
        return {"entries": len(files), "intact": ok, "damaged": len(files) - ok, "temp_files": temps}
    import diskcache

    with diskcache.Cache(str(root)) as cache:
        warnings = cache.check()
        keys = list(cache.iterkeys())
        ok = sum(isinstance(cache.get(k), dict) for k in keys)
    return {"entries": len(keys), "intact": ok, "damaged": len(keys) - ok, "check_warnings": len(warnings)}


def bench_crash(kind: str, root: Path, trials: int, seed: int) -> dict[str, Any]:
    """Kill a writer with SIGKILL ``trials`` times at random moments (``seed``); scan after each."""
    rng = random.Random(seed)
    ctx = mp.get_context("spawn")
    scans = []
    for t in range(trials):
        ready = ctx.Event()
        proc = ctx.Process(target=_endless_writer, args=(kind, str(root), ready))
        proc.start()
        ready.wait(60)
        time.sleep(rng.uniform(0.2, 0.8))
        assert proc.pid is not None
        os.kill(proc.pid, signal.SIGKILL)
        proc.join()
        scan = _scan_after_crash(kind, root)
        store = KINDS[kind](root)  # still usable after the crash?
        store.put(key_of(t, "after"), reply_of(t))
        scan["put_after_crash_ok"] = int(store.get(key_of(t, "after")) == reply_of(t))
        store.close()
        scans.append(scan)
    return {"seed": seed, "trials": scans}


def disk_usage(root: Path) -> dict[str, float]:
    """Allocated MB (``du``) and apparent MB of every file under ``root``, and the file count."""
    files = [p for p in root.rglob("*") if p.is_file()]
    alloc = sum(p.stat().st_blocks * 512 for p in files)
    alloc += sum(p.stat().st_blocks * 512 for p in root.rglob("*") if p.is_dir())
    return {
        "alloc_mb": alloc / 1e6,
        "apparent_mb": sum(p.stat().st_size for p in files) / 1e6,
        "files": len(files),
    }


_OPEN_CODE = """
import sys, time
t0 = time.perf_counter()
sys.path.insert(0, {bench!r})
from bench_cache import KINDS, key_of
__import__({module!r})
t1 = time.perf_counter()
store = KINDS[{kind!r}](__import__("pathlib").Path({root!r}))
hit = store.get(key_of(7))
t2 = time.perf_counter()
assert hit is not None
print(t1 - t0, t2 - t1)
"""


def bench_open(kind: str, root: Path, repeat: int = 5) -> dict[str, float]:
    """Fresh-process import and open+first-get seconds (best of ``repeat``)."""
    code = _OPEN_CODE.format(
        bench=str(Path(__file__).parent), module=MODULES[kind], kind=kind, root=str(root)
    )
    best_imp, best_open = float("inf"), float("inf")
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        imp, opened = map(float, out.stdout.split())
        best_imp, best_open = min(best_imp, imp), min(best_open, opened)
    # "ours" imports models/openai_api (PIL, httpx types, tenacity): an openai: run pays it anyway.
    return {"import_s": best_imp, "open_get_s": best_open}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--procs", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--crash-trials", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0, help="seed of the kill moments")
    ap.add_argument("--json", type=Path, help="also write the results here")
    args = ap.parse_args()
    results: dict[str, Any] = {"n": args.n, "python": sys.version.split()[0]}
    import diskcache

    results["diskcache_version"] = diskcache.__version__
    for kind in KINDS:
        res: dict[str, Any] = {}
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "seq"
            res["seq"] = bench_seq(kind, root, args.n)
            res["size"] = disk_usage(root)
            res["open"] = bench_open(kind, root)
        for procs in args.procs:
            with tempfile.TemporaryDirectory() as tmp:
                res[f"concurrent_{procs}"] = bench_concurrent(kind, Path(tmp) / "c", args.n, procs)
        with tempfile.TemporaryDirectory() as tmp:
            res["crash"] = bench_crash(kind, Path(tmp) / "crash", args.crash_trials, args.seed)
        results[kind] = res
        print(kind, json.dumps(res, indent=1), flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()

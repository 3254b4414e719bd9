"""Peak memory of a 20k-item μ-Bench-shaped run ("Memory").

Data: 4,000 unique 224×224 images, 5 coarse questions per image (20,000 items), 4 templated
caption options per question (captions repeat across images, as in μ-Bench). Each measurement runs
in a fresh Python process so its peak resident set size (``ru_maxrss``) is its own:

* ``baseline`` — Python + scopebench + torch/transformers imported, nothing run (the floor);
* ``random``   — the whole engine with the ``random`` baseline (items, store, metrics, export);
* ``clip``     — the contrastive engine with a small random-weight CLIP (images decoded per batch,
  one embedding per unique image and caption cached).

What matters is the difference to the floor: it must not grow with the number of pixels read
(no raw image arrays are kept after their batch). Usage:
python bench/bench_memory.py [--images 4000] [--out /tmp/scopebench-mem]
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

from _data import make_data

_CHILD = """
import json, resource, sys, time, logging
from pathlib import Path
import torch, transformers  # the floor includes the libraries every model run imports
what, data, model_dir, out = sys.argv[1:5]
logging.getLogger("transformers").setLevel(logging.ERROR)
start = time.perf_counter()
n = 0
if what != "baseline":
    from scopebench.engine import RunConfig, run_benchmark
    model = "random" if what == "random" else f"clip:{model_dir}"
    cfg = RunConfig(benchmark="local", data=data, model=model, batch_size=64, device="cpu")
    n = run_benchmark(cfg, Path(out)).n_new
peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"what": what, "items": n, "seconds": time.perf_counter() - start, "peak_mib": peak_mib}))
"""


def measure(what: str, data: Path, model_dir: Path, out: Path) -> dict[str, float]:
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, what, str(data), str(model_dir), str(out / f"run-{what}")],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    result: dict[str, float] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--images", type=int, default=4000)
    ap.add_argument("--out", default="/tmp/scopebench-mem")
    args = ap.parse_args()
    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    data = make_data(out / "data", args.images, size=(224, 224), jpeg=True)
    print(f"data: {args.images} images, {5 * args.images} items ({time.perf_counter() - t0:.0f} s to write)")

    from scopebench.testing.tiny import build_tiny_clip

    # The tiny CLIP keeps model memory out of the picture; every 224-px JPEG is still decoded in full
    # and resized by the real processor, which is what could leak.
    model_dir = build_tiny_clip(out / "clip", size="tiny")
    rows = [measure(w, data, model_dir, out) for w in ("baseline", "random", "clip")]
    floor = rows[0]["peak_mib"]
    print(f"machine: {platform.machine()}, Python {platform.python_version()}, {time.strftime('%Y-%m-%d')}")
    for r in rows:
        grow = r["peak_mib"] - floor
        print(f"{r['what']:>9}: {int(r['items']):>6} items in {r['seconds']:7.1f} s, "
              f"peak RSS {r['peak_mib']:7.0f} MiB (+{grow:5.0f} MiB over the floor)")  # fmt: skip
    pixels_mib = args.images * 224 * 224 * 3 / 2**20
    print(f"all decoded pixels together: {pixels_mib:.0f} MiB (uint8); the growth must stay far below")


if __name__ == "__main__":
    main()

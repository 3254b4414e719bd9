"""Size and build time of the HTML report at 114, 2,000 and 20,000 items.

Builds two runs (two models) of N SPUR-shaped items, each item with its own 240×180 JPEG
(textured, so thumbnails are as large as a micrograph's), a generative reply per record, and
writes ``report --html`` with :func:`scopebench.report.html.write_html_report`. Prints, per N, the
HTML page's size, the item folder's size and its largest file (what a browser loads for one page),
the build time, and the ratios to the smallest N. With ``--browser`` it also opens the page in
headless Chromium from ``file://`` and times load → first page of items drawn.

Run it against another tree (e.g. an older report writer) with
``PYTHONPATH=/work/main/src``: there the page is the whole report and there is no item folder.

Usage: ``python bench/bench_html.py [--items 114 2000 20000] [--resamples 1000] [--browser]``
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import tempfile
import time
from pathlib import Path

from PIL import Image

from scopebench.config import ReportConfig
from scopebench.items import ImageRef, Item, Record
from scopebench.report.html import write_html_report
from scopebench.store import RunStore

REPLY = "The micrograph shows densely packed nuclei with a granular chromatin pattern; the answer is ({})."


def _image(path: Path, rng: random.Random) -> None:
    # Coarse noise upscaled: a texture that JPEG cannot squeeze to nothing, like real micrographs.
    small = Image.frombytes("RGB", (24, 18), bytes(rng.randrange(256) for _ in range(24 * 18 * 3)))
    small.resize((240, 180), Image.Resampling.BICUBIC).save(path, quality=85)


def _items(n: int, img_dir: Path, seed: int) -> list[Item]:
    rng = random.Random(seed)
    img_dir.mkdir(parents=True)
    items = []
    for i in range(n):
        p = img_dir / f"img{i:06d}.jpg"
        _image(p, rng)
        items.append(
            Item(
                id=f"bench/q{i:06d}",
                benchmark="spur",
                split="test",
                task="NP" if i % 2 == 0 else "HI",
                subset="single" if i % 3 else "multi",
                question=f"Question {i}: which cellular structure is most prominent in this image?",
                choices=("nucleus", "mitochondrion", "cell membrane", "cytoplasm"),
                answer_index=i % 4,
                images=(ImageRef(key=p.name, path=p),),
                metadata={"modality": "light" if i % 3 == 0 else "fluorescence"},
            )
        )
    return items


def _runs(n: int, root: Path, seed: int) -> list[Path]:
    items = _items(n, root / "images", seed)
    rng = random.Random(seed + 1)
    runs = []
    for name in ("model-a", "model-b"):
        run = root / name
        run.mkdir()
        cfg = {
            "benchmark": "spur",
            "model": name,
            "data": None,
            "data_fingerprint": "fp",
            "protocol": "default",
        }
        (run / "run.json").write_text(json.dumps(cfg), encoding="utf-8")
        recs = []
        for it in items:
            choice = rng.randrange(4)
            recs.append(
                Record(
                    item_id=it.id,
                    model=name,
                    status="ok",
                    choice=choice,
                    correct=choice == it.answer_index,
                    response=REPLY.format("ABCD"[choice]),
                    task=it.task,
                    subset=it.subset,
                    split=it.split,
                    answer_index=it.answer_index,
                )
            )
        with RunStore(run / "records.sqlite") as store:
            store.add_items(items)
            store.add(recs)
        runs.append(run)
    return runs


def _browser_seconds(page: Path) -> float:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--headless", "--no-sandbox"])
        pg = b.new_page()
        t0 = time.perf_counter()
        pg.goto(page.as_uri(), timeout=600_000)
        # The paged browser marks #items ready; the single-file page has its articles on load.
        pg.wait_for_selector('#items[data-state="ready"], article.item', state="attached", timeout=600_000)
        dt = time.perf_counter() - t0
        b.close()
    return dt


def main() -> None:
    """Build the runs and reports and print the table."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--items", type=int, nargs="+", default=[114, 2000, 20000])
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--browser", action="store_true", help="also time opening the page in Chromium")
    args = ap.parse_args()
    rows = []
    for n in args.items:
        root = Path(tempfile.mkdtemp(prefix=f"bench_html_{n}_"))
        try:
            runs = _runs(n, root, args.seed)
            page = root / "report.html"
            t0 = time.perf_counter()
            write_html_report(runs, page, ReportConfig(resamples=args.resamples, seed=args.seed))
            build = time.perf_counter() - t0
            folder = root / "report_items"
            files = list(folder.iterdir()) if folder.is_dir() else []
            sizes = [f.stat().st_size for f in files]
            row = {
                "items": n,
                "page_MB": page.stat().st_size / 1e6,
                "folder_MB": sum(sizes) / 1e6,
                "files": len(files),
                "largest_file_MB": max(sizes, default=0) / 1e6,
                "build_s": build,
                "open_s": _browser_seconds(page) if args.browser else float("nan"),
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
        finally:
            shutil.rmtree(root, ignore_errors=True)
    base = rows[0]
    print("\n| items | page MB | item folder MB (files) | largest item file MB | build s | open s |")
    print("|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['items']} | {r['page_MB']:.3f} | {r['folder_MB']:.2f} ({r['files']}) | "
            f"{r['largest_file_MB']:.3f} | {r['build_s']:.1f} | {r['open_s']:.2f} |"
        )
    for r in rows[1:]:
        print(
            f"{r['items']}/{base['items']} items ({r['items'] / base['items']:.1f}×): page size "
            f"{r['page_MB'] / base['page_MB']:.2f}×, build time {r['build_s'] / base['build_s']:.2f}×, "
            f"open time {r['open_s'] / base['open_s']:.2f}×"
        )


if __name__ == "__main__":
    main()

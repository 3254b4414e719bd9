"""Cost of the run store's integrity check on open (``PRAGMA integrity_check`` + every record parsed).

Builds a store of N realistic records (a generative reply, per-option scores, extra fields) and
times opening it without and with ``check=True``, and the read-only open a report uses.

Usage: ``python bench/bench_store_check.py [--records 20000] [--repeat 5]``
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from scopebench.items import Record
from scopebench.store.runstore import RunStore


def _records(n: int) -> list[Record]:
    return [
        Record(
            item_id=f"item-{i:06d}",
            model="openai:gpt-4o",
            status="ok",
            choice=i % 4,
            correct=i % 3 == 0,
            response="The image shows a fluorescence micrograph of nuclei; the answer is (B). " * 3,
            scores=[0.1, 0.6, 0.2, 0.1],
            task="perception",
            subset="cells",
            split="test",
            answer_index=1,
            extra={"usage": {"prompt_tokens": 812, "completion_tokens": 64}, "latency_s": 1.234},
        )
        for i in range(n)
    ]


def _time(fn: object, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()  # type: ignore[operator]
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "records.sqlite"
        records = _records(args.records)
        with RunStore(path) as store:
            for k in range(0, args.records, 64):  # batches of 64, as a run commits them
                store.add(records[k : k + 64])
        size = path.stat().st_size

        def plain() -> None:
            RunStore(path).close()

        def checked() -> None:
            RunStore(path, check=True).close()

        def readonly_checked() -> None:
            RunStore(path, readonly=True, check=True).close()

        def readonly_all() -> None:
            with RunStore(path, readonly=True, check=True) as s:
                s.records()

        t_plain, t_check = _time(plain, args.repeat), _time(checked, args.repeat)
        t_read, t_ro = _time(readonly_all, args.repeat), _time(readonly_checked, args.repeat)
        print(f"records: {args.records}, store size: {size / 2**20:.1f} MiB")
        print(f"open without check: {1000 * t_plain:.1f} ms")
        print(f"open for a run, with check (integrity_check + every record parsed): {1000 * t_check:.1f} ms")
        print(f"check cost: {1000 * (t_check - t_plain):.1f} ms")
        print(f"read-only open with check (quick_check only, what a reader does): {1000 * t_ro:.1f} ms")
        print(f"read-only open + read every record with check (what report does): {1000 * t_read:.1f} ms")


if __name__ == "__main__":
    main()

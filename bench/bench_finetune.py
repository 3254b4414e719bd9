"""Proof of `scopebench finetune` on a CPU: the demo's tiny untrained models learn.

1. Contrastive: the demo's tiny random-weight CLIP (32 px) fine-tuned on the demo's training split
   (cell-shape tasks) and evaluated on its test split through the engine, before and after.
2. Generative: the tiny random-weight Qwen2-VL-shaped VLM, LoRA-fine-tuned on the same training
   split with target `answer`: its parse rate (replies read as an option) before and after.

    PYTHONPATH=src python bench/bench_finetune.py --out /tmp/ft-bench [--n-per-class 40]

Writes OUT/results.json and prints both reports (Markdown). Times are wall-clock seconds on this
machine (2 shared cores; torch limited to one thread so eight users do not oversubscribe them).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from scopebench.benchmarks.demo import generate_demo
from scopebench.experiments.finetune import DataSource, EvalSpec, LoopConfig, render_report
from scopebench.experiments.finetune.generative import LoraSettings
from scopebench.experiments.finetune.run import finetune_contrastive, finetune_generative
from scopebench.testing.tiny import build_tiny_clip, build_tiny_generative


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--n-per-class", type=int, default=40, help="demo size (train: 5x; default 40)")
    ap.add_argument("--clip-steps", type=int, default=3000)
    ap.add_argument("--clip-lr", type=float, default=3e-4)
    ap.add_argument("--clip-warmup", type=int, default=100)
    ap.add_argument("--vlm-steps", type=int, default=30)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cpu", help="cpu, or cuda for the GPU figures")
    ap.add_argument("--vlm-size", choices=["tiny", "2b"], default="tiny",
                    help="2b: Qwen2-VL-2B's dimensions, random weights (for a GPU)")  # fmt: skip
    ap.add_argument("--skip-clip", action="store_true", help="only the generative (LoRA) part")
    ap.add_argument("--train-only", action="store_true",
                    help="no VLM evaluation: time training alone (throughput)")  # fmt: skip
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    results: dict[str, object] = {"n_per_class": args.n_per_class}

    t = time.perf_counter()
    demo = generate_demo(out / "demo", seed=0, n_per_class=args.n_per_class)
    results["demo_seconds"] = round(time.perf_counter() - t, 1)
    clip = out / "tiny-clip"
    if not args.skip_clip:
        if not clip.exists():
            build_tiny_clip(clip, kind="clip", seed=0)
        loop = LoopConfig(
            steps=args.clip_steps,
            batch_size=32,
            lr=args.clip_lr,
            warmup_steps=args.clip_warmup,
            seed=0,
            checkpoint_every=500,
            device=args.device,
        )
        t = time.perf_counter()
        res = finetune_contrastive(
            str(clip),
            out / "clip-ft",
            loop,
            source=DataSource("demo", "train", str(demo)),
            group_batches=True,
            evaluation=EvalSpec(DataSource("demo", "test", str(demo))),
        )
        results["contrastive_seconds"] = round(time.perf_counter() - t, 1)
        results["contrastive"] = res.record
        print(render_report(res.record))

    vlm = out / f"{args.vlm_size}-vlm"
    if not vlm.exists():
        build_tiny_generative(vlm, "qwen2-vl", seed=0, size=args.vlm_size)
    small = generate_demo(out / "demo-small", seed=0)  # the default demo (6 per class)
    loop = LoopConfig(steps=args.vlm_steps, batch_size=8, lr=1e-3, seed=0, checkpoint_every=0,
                      device=args.device)  # fmt: skip
    if args.device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()
    t = time.perf_counter()
    res = finetune_generative(
        str(vlm),
        out / "vlm-ft",
        loop,
        DataSource("demo", "train", str(small)),
        lora=LoraSettings(),
        evaluation=None
        if args.train_only
        else EvalSpec(DataSource("demo", "test", str(small)), model_args=(("max_new_tokens", 8),)),
    )
    took = time.perf_counter() - t
    results["generative_seconds"] = round(took, 1)
    if args.train_only:  # loading, the steps and saving the adapter: examples per second of it all
        results["generative_examples_per_second"] = round(args.vlm_steps * loop.batch_size / took, 2)
    if args.device.startswith("cuda"):
        results["gpu"] = torch.cuda.get_device_name()
        results["generative_peak_gpu_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
    results["generative"] = res.record
    print(render_report(res.record))
    (out / "results.json").write_text(json.dumps(results, indent=2, default=str))


if __name__ == "__main__":
    main()

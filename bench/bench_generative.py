"""Generative engine (choice-logprob, planned and batched) vs the reference implementations' loop.

Data: μ-Bench-shaped — N unique images, 5 questions per image, 4 options each. Model: a
Qwen2-VL-style model built from its config with random weights (same compute as a trained one):
``--size small`` (default; hidden 256, 4 layers, 224 px images → 64 image tokens; for CPU) or
``--size 2b`` (Qwen2-VL-2B's published dimensions, 448 px; for a GPU — too large for a laptop CPU).

Measured, on the same items and model:
* naive — what the reference implementations do: per question, open the image, build the chat
  prompt, run the processor and ``model.generate`` greedily at batch size 1
  (``--max-new-tokens``, default 8: a short answer such as "The answer is A." — random weights never
  stop early, so every call decodes exactly this many tokens);
* engine — ``scopebench run --mode choice-logprob`` end to end (model loading, planning, batching,
  the run store and metrics included): one forward pass per batch, no decoding.

Also printed: the naive loop at ``max_new_tokens=1`` (one forward pass per item: the ratio to it
is what planning, batching and prefix sharing buy without any decoding saved), and the engine with
``--model-arg share_prefix=false`` (batching only).

Each is run ``--repeat`` times (interleaved) and the minimum kept.

Usage: python bench/bench_generative.py [--images 12] [--batch 16] [--size small|2b] [--device cpu]
"""

from __future__ import annotations

import argparse
import json
import logging
import platform
import shutil
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from scopebench.engine import RunConfig, run_benchmark
from scopebench.models.hf_generative import load_processor
from scopebench.protocols import render_prompt
from scopebench.testing.tiny import build_tiny_generative

TASKS = {
    "modality": ["light microscopy", "fluorescence microscopy", "electron microscopy", "none of the above"],
    "submodality": ["brightfield", "phase contrast", "confocal", "none of the above"],
    "domain": ["pathology", "cell biology", "neuroscience", "none of the above"],
    "subdomain": ["hematopathology", "cytology", "histology", "none of the above"],
    "stain": ["H&E", "Giemsa", "DAPI", "none of the above"],
}


def make_data(root: Path, n_images: int, side: int) -> Path:
    rng = np.random.default_rng(0)
    (root / "images").mkdir(parents=True, exist_ok=True)
    rows = []
    for i in range(n_images):
        name = f"images/{i:04d}.png"
        Image.fromarray(rng.integers(0, 255, (side, side, 3), dtype=np.uint8)).save(root / name)
        for task, opts in TASKS.items():
            question = f"What is the {task} of this image?"
            rows.append({"id": f"{i:04d}-{task}", "question": question, "choices": opts,
                         "answer": int(rng.integers(4)), "image": name, "task": task})  # fmt: skip
    (root / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root / "data.jsonl"


def naive_loop(model_dir: Path, data: Path, max_new_tokens: int, device: str, dtype: torch.dtype) -> float:
    """Per question: open the image, build the prompt, process, generate greedily at batch size 1."""
    from transformers import AutoModelForImageTextToText

    from scopebench.benchmarks import get_benchmark

    model = AutoModelForImageTextToText.from_pretrained(model_dir, dtype=dtype).to(device).eval()
    proc = load_processor(str(model_dir))
    items = get_benchmark("local").load(data).items
    tok = proc.tokenizer
    start = time.perf_counter()
    with torch.inference_mode():
        for it in items:
            image = it.images[0].load()
            text = render_prompt(it).text
            messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": text}]}]
            prompt = proc.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
            inputs = proc(text=[prompt], images=[image], return_tensors="pt").to(device)
            out = model.generate(**inputs, max_new_tokens=max_new_tokens, do_sample=False,
                                 pad_token_id=tok.pad_token_id)  # fmt: skip
            tok.decode(out[0, inputs["input_ids"].shape[1] :], skip_special_tokens=True)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--images", type=int, default=12)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--max-new-tokens", type=int, default=8)
    ap.add_argument("--size", choices=["small", "2b"], default="small")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--repeat", type=int, default=3, help="repeats; the minimum time of each is kept")
    ap.add_argument("--out", default="/tmp/scopebench-bench-gen")
    args = ap.parse_args()
    logging.getLogger("transformers").setLevel(logging.ERROR)
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    model_dir = build_tiny_generative(
        out / f"qwen2-vl-{args.size}-random", "qwen2-vl", size=args.size, seed=0
    )
    side = 224 if args.size == "small" else 448
    data = make_data(out / "data", args.images, side)
    n_items = args.images * len(TASKS)
    dtype = torch.float32 if args.device == "cpu" else torch.bfloat16

    cfg = RunConfig(benchmark="local", data=str(data), model=f"hf:{model_dir}", mode="choice-logprob",
                    batch_size=args.batch, device=args.device)  # fmt: skip
    # Interleaved repeats, minimum of each: on a shared machine the minimum is the least disturbed.
    unshared = replace(cfg, model_args={"share_prefix": "false"})
    t_naive = t_naive_1 = t_engine = t_unshared = float("inf")
    for rep in range(args.repeat):
        t_naive = min(t_naive, naive_loop(model_dir, data, args.max_new_tokens, args.device, dtype))
        t_naive_1 = min(t_naive_1, naive_loop(model_dir, data, 1, args.device, dtype))
        for config, name in ((cfg, "run"), (unshared, "run-unshared")):
            start = time.perf_counter()
            res = run_benchmark(config, out / f"{name}{rep}")
            took = time.perf_counter() - start
            assert res.n_new == n_items and res.metrics["overall"]["errors"] == 0, res.metrics["overall"]
            if config is cfg:
                t_engine = min(t_engine, took)
            else:
                t_unshared = min(t_unshared, took)

    machine = platform.processor() or platform.machine()
    gpu = torch.cuda.get_device_name() if args.device.startswith("cuda") else "no GPU"
    print(f"machine: {machine} ({gpu}), {torch.get_num_threads()} torch threads, torch {torch.__version__}; "
          f"Qwen2-VL-style '{args.size}' random weights, {n_items} items on {args.images} images "
          f"({side} px)")  # fmt: skip
    print(f"naive loop (generate, batch 1, {args.max_new_tokens} new tokens): {t_naive:8.2f} s")
    print(f"naive loop (generate, batch 1, 1 new token):   {t_naive_1:8.2f} s")
    print(f"engine (choice-logprob, batch {args.batch}, end to end): {t_engine:8.2f} s")
    print(f"engine without prefix sharing (share_prefix=false): {t_unshared:8.2f} s")
    print(
        f"ratio naive/engine            = {t_naive / t_engine:6.2f}x   (target >= 3x on CPU, >= 10x on GPU)"
    )
    print(f"ratio naive(1 token)/engine   = {t_naive_1 / t_engine:6.2f}x   (no decoding on either side)")
    print(f"ratio naive/engine unshared   = {t_naive / t_unshared:6.2f}x   (batching, no prefix sharing)")


if __name__ == "__main__":
    main()

"""``scopebench build …``: make a benchmark (ingest, questions, filter, split, export, run).

The build package (and datasets, yaml, tifffile) is imported only when a build command runs, so
``import scopebench`` and every other command stay light.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import click
from rich.table import Table

from scopebench.cli.options import (
    Args,
    Group,
    argument,
    command,
    executor_options,
    model_arg_option,
    pass_args,
    seed_option,
)
from scopebench.cli.output import out_console
from scopebench.errors import DataFormatError, UsageError

if TYPE_CHECKING:
    from scopebench.config import EngineConfig

#: The default of ``--max-pixels`` (8192 × 8192), as ``scopebench.curate.ingestion.images`` has it;
#: repeated so that ``--help`` does not import the build package.
DEFAULT_MAX_PIXELS = 8192 * 8192

__all__ = ["register", "summary_table"]

console = out_console(120)
_SHOWN = 20


def summary_table(results: list[Any]) -> Table:
    """The end-of-build table: items in, kept, and dropped per step and reason."""
    table = Table(title="build summary")
    for col in ("step", "in", "kept", "dropped (reason: n)", "problems", "cached"):
        table.add_column(col, justify="right" if col in ("in", "kept", "problems") else "left")
    for r in results:
        dropped = ", ".join(f"{k}: {v}" for k, v in sorted(r.dropped.items())) or "-"
        table.add_row(
            r.step, str(r.items_in), str(r.kept), dropped, str(len(r.problems)), "yes" if r.cached else "no"
        )
    return table


def ledger_table(results: list[Any]) -> Table | None:
    """LLM calls of this run per step and task: sent, answered from the call cache, failed, cost.

    A step reused whole from an earlier run (``cached``) made no call at all: its row says so
    instead of repeating the requests its first run sent.
    """
    rows = [(r, task, e) for r in results for task, e in r.stats.get("ledger", {}).get("steps", {}).items()]
    if not rows:
        return None
    table = Table(title="LLM calls of this run and their cost")
    cols = ("step", "task", "sent this run", "from the call cache", "failed", "input tokens",
            "output tokens", "price")  # fmt: skip
    for col in cols:
        table.add_column(col, justify="left" if col in ("step", "task") else "right")
    for r, task, e in rows:
        if r.cached:
            table.add_row(f"{r.step} (reused)", task, "0", "0", "0", "0", "0", "-")
            continue
        price = "-" if e["price"] is None else f"{e['price']:.4f}"
        cells = (e["requests"], e["cached"], e["failed"], e["input_tokens"], e["output_tokens"])
        table.add_row(r.step, task, *map(str, cells), price)
    return table


def _show(results: list[Any]) -> int:
    console.print(summary_table(results))
    ledger = ledger_table(results)
    if ledger is not None:
        console.print(ledger)
    for r in results:
        errors = [p for p in r.problems if p.severity == "error"]
        warnings = len(r.problems) - len(errors)
        for p in errors[:_SHOWN]:
            console.print(f"  {p}", style="red", markup=False, highlight=False)
        if len(errors) > _SHOWN:
            console.print(f"  … {len(errors) - _SHOWN} more errors")
        if r.problems:
            console.print(
                f"  {r.step}: {len(errors)} errors, {warnings} warnings; all in {r.out}/problems.jsonl"
            )
        for task, s in r.stats.get("answer_positions", {}).items():
            if s.get("n"):
                stat = f"chi-square {s['chi2']:.3f} (p {s['p']:.3f})"
                console.print(f"  {r.step} {task}: correct letters {s['counts']}, {stat}", highlight=False)
    return 0


def _fractions(text: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for part in text.split(","):
        name, sep, value = part.partition("=")
        try:
            out[name.strip()] = float(value)
        except ValueError:
            sep = ""
        if not sep or not name.strip():
            raise DataFormatError(f"--fractions expects name=share,… (e.g. train=0.8,test=0.2), got {text!r}")
    return out


def _engine(args: Args) -> EngineConfig:
    """Where the image steps convert: ``--executor``, ``--ray-address``, ``--workers``."""
    if args.ray_address and args.executor != "ray":
        raise UsageError("--ray-address names a Ray cluster: add --executor ray (or leave the address out)")
    from scopebench.config import EngineConfig

    return EngineConfig(executor=args.executor, ray_address=args.ray_address, workers=args.workers)


def cmd_ingest(args: Args) -> int:
    """Ingest a manifest's sources into a standardised dataset."""
    from pathlib import Path

    from scopebench.curate.ingestion.step import IngestResult
    from scopebench.curate.pipeline import STEPS

    step = STEPS["ingest"]
    config = step.make_config(None, max_pixels=args.max_pixels)
    cache = args.cache or Path(args.out).resolve().parent / ".cache" / "images"
    progress = not getattr(args, "quiet", False)
    result = step.run(
        args.manifest,
        args.out,
        config,
        progress=progress,
        cache_dir=cache,
        workers=args.workers,
        engine=_engine(args),
    )
    code = _show([result])
    if isinstance(result, IngestResult):
        console.print(
            f"  ingest: {result.converted} image files converted, {result.reused} reused from {cache}",
            highlight=False,
        )
    return code


def cmd_questions(args: Args) -> int:
    """Make multiple-choice questions and captions."""
    from scopebench.curate.pipeline import STEPS

    step = STEPS["questions"]
    cfg = step.make_config(
        {"tasks": tuple(args.tasks)} if args.tasks else {},
        seed=args.seed,
        options=args.options,
        difficulty=args.difficulty,
        none_of_the_above=args.none_of_the_above,
        taxonomy=args.taxonomy,
    )
    return _show([step.run(args.data, args.out, cfg, progress=not getattr(args, "quiet", False))])


def cmd_filter(args: Args) -> int:
    """Run the quality gates of a filter configuration on a questions output."""
    from scopebench.curate.filtering.step import load_filter_section
    from scopebench.curate.pipeline import STEPS

    section = load_filter_section(args.config).model_copy(update={"seed": args.seed})
    section.to_config()  # a bad gate configuration is refused before anything is read
    progress = not getattr(args, "quiet", False)
    result = STEPS["filter"].run(args.data, args.out, section, progress=progress, cache=args.cache)
    code = _show([result])
    _show_filter(result)
    return code


def _show_filter(result: Any) -> None:
    """Blind accuracies, RefineBot codes and the quota table of a filter step."""
    sc = result.stats.get("shortcut")
    if sc:
        for key in ("text_only", "choices_only"):
            acc = sc.get(key)
            if acc and acc["entering"] is not None:
                kept = "-" if acc["kept"] is None else f"{acc['kept']:.3f}"
                console.print(f"  {key} blind accuracy: {acc['entering']:.3f} entering, {kept} kept")
    ref = result.stats.get("refine")
    if ref:
        console.print("  RefineBot: " + ", ".join(f"{c} {n}" for c, n in ref["codes"].items()))
    q = result.stats.get("quotas")
    if q:
        table = Table(title="coverage quotas (modality × domain × task)")
        cols = ("modality", "domain", "task", "target", "available", "kept", "shortfall")
        for col in cols:
            table.add_column(col)
        for r in q["table"]:
            table.add_row(*(str("-" if r[c] is None else r[c]) for c in cols))
        console.print(table)


def _model_args(pairs: Sequence[str]) -> dict[str, Any]:
    from scopebench.cli.options import parse_key_values

    return parse_key_values(pairs)


def cmd_generate(args: Args) -> int:
    """Write items with an LLM (describe, mcq, open_to_mcq, SPUR templates)."""
    from scopebench.curate.pipeline import STEPS

    step = STEPS["generate"]
    cfg = step.make_config(
        None,
        model=args.model,
        tasks=tuple(args.tasks),
        seed=args.seed,
        retries=args.retries,
        inputs=args.inputs,
        templates=args.templates,
        questions_per_image=args.questions_per_image,
        max_new_tokens=args.max_new_tokens,
        model_args=_model_args(args.model_arg),
        max_fail_fraction=args.max_fail_fraction,
        max_consecutive_failures=args.max_consecutive_failures,
    )
    progress = not getattr(args, "quiet", False)
    return _show([step.run(args.data, args.out, cfg, progress=progress, cache=args.cache)])


def cmd_split(args: Args) -> int:
    """Split by image (near-duplicates together) with a test_tiny sample."""
    from scopebench.curate.pipeline import STEPS

    step = STEPS["split"]
    cfg = step.make_config(None, seed=args.seed, fractions=_fractions(args.fractions), tiny=args.tiny)
    return _show([step.run(args.data, args.out, cfg, progress=not getattr(args, "quiet", False))])


def cmd_export(args: Args) -> int:
    """Export the local format and an HF dataset."""
    from scopebench.curate.pipeline import STEPS

    return _show([STEPS["export"].run(args.data, args.out, progress=not getattr(args, "quiet", False))])


def cmd_localise(args: Args) -> int:
    """Detection items from instance masks or boxes."""
    from scopebench.curate.localisation import localise

    result = localise(
        args.images, args.out, masks=args.masks, coco=args.coco, boxes=args.boxes,
        label=args.class_name, min_area=args.min_area, subset=args.subset,
    )  # fmt: skip
    code = _show([result])
    console.print(
        f"{result.stats['items']} detection items, boxes per class {result.stats['boxes']}; "
        f"{result.stats['instances_below_min_area']} instances under {result.stats['min_area']} px left out; "
        f"evaluate it: scopebench run --bench local --data {args.out} --model …",
        highlight=False,
        soft_wrap=True,
    )
    return code


def cmd_figures(args: Args) -> int:
    """Sub-figures cropped from captioned compound figures."""
    from scopebench.curate.figures import split_figures
    from scopebench.curate.filtering.panels import PanelConfig

    cfg = PanelConfig(method=args.method, min_area=args.min_area, min_side=args.min_side)
    result = split_figures(args.folder, args.out, captions=args.captions, source=args.source, config=cfg)
    code = _show([result])
    st = result.stats
    console.print(
        f"{st['compound_figures']} compound figures cropped into {st['crops']} sub-figures, "
        f"{st['single_figures']} kept whole; report: {args.out}/crops.csv",
        highlight=False,
        soft_wrap=True,
    )
    return code


def cmd_run(args: Args) -> int:
    """Run every step of build.yaml, reusing the unchanged ones."""
    from scopebench.curate.pipeline import run_build

    progress = not getattr(args, "quiet", False)
    outcome = run_build(args.config, progress=progress, workers=args.workers, engine=_engine(args))
    code = _show(outcome.steps)
    for r in outcome.steps:
        if r.step == "filter":
            _show_filter(r)
    console.print(
        f"evaluate it: scopebench run --bench local --data {outcome.out / 'export' / 'local'} --model random",
        highlight=False,
    )
    return code


def register(group: click.Group) -> None:
    """Add ``scopebench build …`` to the ``scopebench`` group."""
    build = Group(
        "build",
        short_help="build a benchmark: ingest, questions, generate, filter, split, export (or all: run)",
        help="Build a benchmark: ingest, questions, generate, filter, split, export (or all: run).",
        subcommand_metavar="STEP [ARGS]...",
    )
    for cmd in (_ingest, _questions, _generate, _filter, _split, _export, _localise, _figures, _run):
        build.add_command(cmd)
    group.add_command(build)


_Deco = Callable[[Callable[..., int]], Callable[..., int]]

#: ``--out`` of every step but ``run``, declared once.
_out: _Deco = click.option(
    "--out", required=True, help="output folder (an earlier build output there is replaced)"
)
#: ``--workers``, ``--executor`` and ``--ray-address`` of the image steps: where and how many images
#: convert at once (the output does not depend on them).
_workers_options = [
    click.option(
        "--workers",
        type=click.IntRange(min=1),
        help="images converting at once: processes (default: every core), or Ray tasks (default: the "
        "cluster's CPUs); the output is the same for any number",
    ),
    *executor_options("where images are converted (ray: the driver ships each file's bytes to the cluster)"),
]


def _workers(f: Callable[..., int]) -> Callable[..., int]:
    for option in reversed(_workers_options):
        f = option(f)
    return f


#: ``--cache`` of the LLM steps.
_llm_cache: _Deco = click.option("--cache", help="LLM call cache file (default OUT/../.cache/llm.sqlite)")


@command("ingest", short_help="images + metadata tables → standardised μ-Bench-format dataset")
@argument("manifest", help="manifest YAML (docs/build.md)")
@_out
@click.option(
    "--cache",
    help="folder of converted images and file hashes, reused by later runs (default OUT/../.cache/images)",
)
@_workers
@click.option(
    "--max-pixels",
    type=click.IntRange(min=0),
    default=DEFAULT_MAX_PIXELS,
    show_default=True,
    help="images declaring more pixels (width × height × planes) are problem rows, not decoded; 0: no limit",
)
@pass_args
def _ingest(args: Args) -> int:
    """Images + metadata tables → standardised μ-Bench-format dataset."""
    return cmd_ingest(args)


@command(
    "questions",
    short_help="multiple-choice questions and captions from metadata and the taxonomy",
    greedy=("--tasks",),
)
@argument("data", help="an ingest output folder")
@_out
@seed_option("seed of every random choice (default 0)")
@click.option("--options", type=int, default=4, help="options per question, answer included (default 4)")
@click.option(
    "--difficulty",
    type=click.Choice(["hard", "easy"]),
    default="hard",
    help="sibling (hard) or cross-tree (easy) distractors",
)
@click.option("--none-of-the-above", is_flag=True, help='append "none of the above" (never correct)')
@click.option("--tasks", multiple=True, metavar="TASK…", help="tasks to make (default all six)")
@click.option("--taxonomy", help="your taxonomy YAML, merged into the shipped one")
@pass_args
def _questions(args: Args) -> int:
    """Multiple-choice questions and captions from metadata and the taxonomy."""
    return cmd_questions(args)


@command(
    "generate",
    short_help="LLM-written descriptions and questions, validated, cached, with a cost ledger",
    greedy=("--tasks",),
)
@argument("data", help="a questions (or ingest) output folder")
@_out
@click.option("--model", required=True, help="generative model: openai:…, vllm:…, hf:…, replay:FILE")
@model_arg_option()
@click.option(
    "--tasks",
    multiple=True,
    default=("describe", "mcq"),
    metavar="TASK…",
    help="describe, mcq, open_to_mcq, spur_np … spur_quant, or your own (default: describe mcq)",
)
@click.option("--inputs", help="table of caption/question/answer/context per image (source + image columns)")
@click.option("--templates", help="your templates YAML, merged over the shipped ones")
@seed_option("seed of every random choice (default 0)")
@click.option("--retries", type=int, default=2, help="retries after an invalid reply (default 2)")
@click.option("--questions-per-image", type=int, help="questions per image of the mcq task (default 3)")
@click.option("--max-new-tokens", type=int, default=1024, help="reply length limit (default 1024)")
@click.option(
    "--max-fail-fraction",
    type=float,
    default=0.5,
    help="exit non-zero when more of the calls end as failure rows (default 0.5)",
)
@click.option(
    "--max-consecutive-failures",
    type=int,
    default=8,
    help="stop at once after this many calls in a row fail with an error (default 8; 0: never)",
)
@_llm_cache
@pass_args
def _generate(args: Args) -> int:
    """LLM-written descriptions and questions, validated, cached, with a cost ledger."""
    return cmd_generate(args)


@command("filter", short_help="quality gates: figure panels, RefineBot, text shortcut, coverage quotas")
@argument("data", help="a questions (or generate) output folder")
@_out
@click.option("--config", required=True, help="YAML with the gates (a build.yaml's filter: section)")
@seed_option("seed of every random choice (default 0)")
@_llm_cache
@pass_args
def _filter(args: Args) -> int:
    """Quality gates: figure panels, RefineBot, text shortcut, coverage quotas."""
    return cmd_filter(args)


@command("split", short_help="image-level splits (near-duplicates together) and test_tiny")
@argument("data", help="a questions (or ingest) output folder")
@_out
@seed_option("seed of every random choice (default 0)")
@click.option("--fractions", default="test=1", help="name=share,… summing to 1 (default test=1)")
@click.option("--tiny", type=int, default=0, help="images in test_tiny (default 0: none)")
@pass_args
def _split(args: Args) -> int:
    """Image-level splits (near-duplicates together) and test_tiny."""
    return cmd_split(args)


@command("export", short_help="local format (OUT/local) and HF dataset (OUT/hf)")
@argument("data", help="a split output folder")
@_out
@pass_args
def _export(args: Args) -> int:
    """Local format (OUT/local) and HF dataset (OUT/hf)."""
    return cmd_export(args)


@command("localise", short_help="detection items (μ-Bench localisation) from instance masks or boxes")
@argument("images", help="folder of images")
@_out
@click.option("--masks", help="folder of label images (PNG/TIFF), one per image by file stem")
@click.option("--coco", help="COCO instances JSON of boxes")
@click.option("--boxes", help="CSV of boxes: image, x1, y1, x2, y2[, label]")
@click.option("--class", "class_name", default="object", help="class of mask instances (default object)")
@click.option("--min-area", type=int, default=16, help="smallest mask component kept, in pixels (default 16)")
@click.option("--subset", help="the items' subset (default: the images folder's name)")
@pass_args
def _localise(args: Args) -> int:
    """Detection items (μ-Bench localisation) from instance masks or boxes."""
    return cmd_localise(args)


@command(
    "figures",
    short_help="sub-figures cropped from captioned compound figures (PathMMU), each keeping its caption",
)
@argument("folder", help="folder of figures")
@_out
@click.option(
    "--captions", help="table with figure (file name) and caption (default: <stem>.txt beside each)"
)
@click.option("--source", help="the manifest source name written to texts.csv (default: the folder's name)")
@click.option("--method", type=click.Choice(["xycut", "components"]), default="xycut", help="panel splitter")
@click.option("--min-area", type=float, default=0.01, help="smallest panel, as a share of the figure (0.01)")
@click.option("--min-side", type=int, default=8, help="smallest panel side in pixels (default 8)")
@pass_args
def _figures(args: Args) -> int:
    """Sub-figures cropped from captioned compound figures (PathMMU), each keeping its caption."""
    return cmd_figures(args)


@command("run", short_help="every step from build.yaml, redoing only what changed")
@argument("config", help="build.yaml (docs/build.md)")
@_workers
@pass_args
def _run(args: Args) -> int:
    """Every step from build.yaml, redoing only what changed."""
    return cmd_run(args)

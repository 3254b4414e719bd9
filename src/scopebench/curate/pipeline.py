"""``build run build.yaml``: every step in order, each skipped when its inputs have not changed.

A step's cache key is the SHA-256 of (scopebench version, step name, the step's configuration, the
previous step's key); ingest's key covers the manifest, the taxonomy file and the bytes of every
metadata table and every file in the sources' image folders. A step whose output folder holds the
same key is reused as it is; a changed step reruns, and so does every step after it (its key
changes with its predecessor's). Image files are hashed once and then recognised by their stat
(size, modification time, inode: :class:`~scopebench.curate.ingestion.cache.FileHashes`), so a
re-run with nothing changed reads no image; ingest also keeps converted images keyed by file
content (``OUT/.cache/images``), so a re-run after fixing one row converts no image twice.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from scopebench import __version__
from scopebench.curate.exporting import export
from scopebench.curate.filtering.step import FilterSection, filter_questions
from scopebench.curate.generation.step import GenerateConfig, generate
from scopebench.curate.ingestion.cache import FileHashes
from scopebench.curate.ingestion.images import DEFAULT_MAX_PIXELS
from scopebench.curate.ingestion.step import ingest
from scopebench.curate.llm import Prices
from scopebench.curate.manifest import load_manifest
from scopebench.curate.output import MARKER
from scopebench.curate.questions import QuestionConfig, make_questions
from scopebench.curate.report import StepResult, read_problems
from scopebench.curate.splits import SplitConfig, split
from scopebench.errors import DataFormatError, DataNotFoundError
from scopebench.models import parse_spec

__all__ = ["BuildConfig", "BuildOutcome", "load_build_config", "run_build"]

STEPS = ("ingest", "questions", "generate", "filter", "split", "export")


class _Questions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    options: int = 4
    difficulty: str = "hard"
    none_of_the_above: bool = False
    tasks: list[str] | None = None


class _Prices(BaseModel):
    model_config = ConfigDict(extra="forbid")
    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)


class _Generate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    model: str
    tasks: list[str] = Field(default_factory=lambda: ["describe", "mcq"])
    retries: int = Field(default=2, ge=0)
    inputs: str | None = None
    templates: str | None = None
    questions_per_image: int | None = Field(default=None, ge=1)
    max_new_tokens: int = Field(default=1024, ge=1)
    model_args: dict[str, Any] = Field(default_factory=dict)
    prices: _Prices | None = None
    shuffle: bool = True


class _Ingest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    max_pixels: int | None = Field(default=DEFAULT_MAX_PIXELS, ge=1)


class _Split(BaseModel):
    model_config = ConfigDict(extra="forbid")
    fractions: dict[str, float] = Field(default_factory=lambda: {"test": 1.0})
    tiny: int = 0


class BuildConfig(BaseModel):
    """A ``build.yaml``: the manifest, the output folder, the seed and each step's settings.

    Attributes:
        manifest: The ingest manifest (relative to build.yaml).
        out: Output folder; each step writes ``OUT/<step>`` (relative to build.yaml).
        seed: Seed of every step.
        taxonomy: A user taxonomy YAML used by the questions step (the manifest's own ``taxonomy``
            is used by ingest).
        ingest: The pixel limit of an image (``max_pixels``; larger ones are problem rows).
        questions: Options, difficulty, "none of the above", tasks.
        generate: LLM-written items (``build generate``); the step runs only when given.
        split: Fractions per split and the ``test_tiny`` size.
        filter: The quality gates (docs/build.md); the filter step runs only when this is given.
    """

    model_config = ConfigDict(extra="forbid")
    manifest: str
    out: str = "build"
    seed: int = 0
    taxonomy: str | None = None
    ingest: _Ingest = Field(default_factory=_Ingest)
    questions: _Questions = Field(default_factory=_Questions)
    generate: _Generate | None = None
    split: _Split = Field(default_factory=_Split)
    filter: FilterSection | None = None
    root: Path = Path(".")

    def path(self, rel: str) -> Path:
        """``rel`` resolved against build.yaml's folder."""
        p = Path(rel).expanduser()
        return p if p.is_absolute() else self.root / p


@dataclass
class BuildOutcome:
    """What :func:`run_build` did: one result per step, in order."""

    steps: list[StepResult] = field(default_factory=list)
    out: Path = Path(".")


def load_build_config(path: str | Path) -> BuildConfig:
    """Read and validate ``build.yaml``.

    Raises:
        DataNotFoundError: When it does not exist.
        DataFormatError: When it is not a valid build configuration (every violation listed).
    """
    import yaml

    p = Path(path)
    if not p.is_file():
        raise DataNotFoundError(f"build configuration not found: {p}")
    try:
        raw = yaml.safe_load(p.read_text(encoding="utf-8"))
        return BuildConfig.model_validate({**(raw or {}), "root": p.parent})
    except yaml.YAMLError as exc:
        raise DataFormatError(f"{p} is not valid YAML: {exc}") from exc
    except ValidationError as exc:
        lines = [f"  {'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()]
        raise DataFormatError(f"{p} is not a valid build configuration:\n" + "\n".join(lines)) from exc


def _hash_inputs(cfg: BuildConfig, hashes: FileHashes) -> str:
    """SHA-256 over the manifest, its taxonomy, metadata tables and every image file's bytes.

    Each file's hash comes from ``hashes`` while its stat is unchanged, so an unchanged input folder
    is listed and stat-ed, not read.
    """
    man = load_manifest(cfg.path(cfg.manifest))
    h = hashlib.sha256()
    files = [cfg.path(cfg.manifest)]
    if man.taxonomy:
        files.append(man.path(man.taxonomy))
    for s in man.sources:
        files.append(man.path(s.metadata))
        folder = man.path(s.images)
        if folder.is_dir():
            files += sorted(p for p in folder.rglob("*") if p.is_file())
    for f in files:
        # Paths relative to build.yaml, so moving the whole project keeps the cache valid.
        try:
            name = f.resolve().relative_to(cfg.root.resolve()).as_posix()
        except ValueError:
            name = str(f.resolve())
        h.update(f"{name}\0{hashes.sha256(f) if f.is_file() else 'missing'}\0".encode())
    return h.hexdigest()


def _key(*parts: Any) -> str:

    return hashlib.sha256(json.dumps([__version__, *parts], sort_keys=True, default=str).encode()).hexdigest()


def _cached(folder: Path, key: str) -> StepResult | None:
    summary = folder / MARKER
    if not summary.is_file():
        return None
    raw = json.loads(summary.read_text(encoding="utf-8"))
    if raw.get("cache_key") != key:
        return None
    return StepResult.from_json(raw, read_problems(folder / "problems.jsonl"))


def _stamp(folder: Path, key: str) -> None:
    summary = folder / MARKER
    raw = json.loads(summary.read_text(encoding="utf-8"))
    raw["cache_key"] = key
    summary.write_text(json.dumps(raw, indent=2), encoding="utf-8")


def _digest(path: Path) -> str | None:
    """SHA-256 of a file, or of a folder's file names and sizes (model folders are large)."""
    if path.is_file():
        return hashlib.sha256(path.read_bytes()).hexdigest()
    if path.is_dir():
        listing = sorted(
            (p.relative_to(path).as_posix(), p.stat().st_size) for p in path.rglob("*") if p.is_file()
        )
        return hashlib.sha256(json.dumps(listing).encode()).hexdigest()
    return None


def _generate_step(
    cfg: BuildConfig, out: Path, progress: bool
) -> list[tuple[str, Any, Callable[[Path, Path], StepResult]]]:
    """The generate step of the plan (none when build.yaml has no ``generate:``).

    Its cache key covers the settings and the bytes of the inputs table, the templates file and a
    replay file (or a model folder's listing); the LLM calls themselves are cached by content in
    ``OUT/.cache/llm.sqlite``, so even a rerun step sends only the calls that changed.
    """
    g = cfg.generate
    if g is None:
        return []
    gcfg = GenerateConfig(
        model=g.model,
        tasks=tuple(g.tasks),
        seed=cfg.seed,
        retries=g.retries,
        inputs=str(cfg.path(g.inputs)) if g.inputs else None,
        templates=str(cfg.path(g.templates)) if g.templates else None,
        questions_per_image=g.questions_per_image,
        max_new_tokens=g.max_new_tokens,
        model_args=dict(g.model_args),
        prices=Prices(g.prices.input_per_mtok, g.prices.output_per_mtok) if g.prices else None,
        shuffle=g.shuffle,
    )
    spec = parse_spec(g.model)  # once; its target is the model file (or hub id) hashed below
    target = spec.target
    if spec.scheme == "replay" and target and not Path(target).expanduser().is_absolute():
        # A replay file is named relative to build.yaml, like every other path in it.
        target = str(cfg.path(target))
        gcfg = GenerateConfig(**{**gcfg.__dict__, "model": f"replay:{target}"})
    model_file = Path(target).expanduser() if target else None
    settings = [
        gcfg.__dict__,
        *(_digest(Path(p)) if p else None for p in (gcfg.inputs, gcfg.templates)),
        _digest(model_file) if model_file else None,
    ]
    cache = out / ".cache" / "llm.sqlite"
    return [("generate", settings, lambda s, d: generate(s, d, gcfg, cache=cache, progress=progress))]


Plan = list[tuple[str, Any, Callable[[Path, Path], StepResult]]]


def _filter_plan(cfg: BuildConfig, progress: bool) -> Plan:
    """The filter step, when build.yaml has a ``filter:`` section (its key covers replay files' bytes)."""
    if cfg.filter is None:
        return []
    section = cfg.filter.resolved(cfg.root)
    fcfg = section.to_config(cfg.seed)  # refuses a bad gate configuration before any step runs
    specs = sorted(set(_specs(section)))
    replays = {s: _file_hash(s.partition(":")[2]) for s in specs if s.startswith("replay:")}
    settings = [section.model_dump(), replays]
    return [("filter", settings, lambda s, d: filter_questions(s, d, fcfg, progress=progress))]


def _specs(section: FilterSection) -> list[str]:
    out: list[str] = []
    if section.shortcut:
        out += section.shortcut.models
    if section.refine:
        out += [*section.refine.rewriters, *section.refine.testers, *section.refine.judges]
    return out


def _file_hash(path: str) -> str:
    p = Path(path).expanduser()
    return hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "missing"


def run_build(
    config: str | Path,
    *,
    progress: bool = False,
    on_step: Callable[[StepResult], None] | None = None,
    workers: int | None = None,
) -> BuildOutcome:
    """Run ingest → questions → generate → filter (when configured) → split → export, reusing steps.

    Args:
        config: The ``build.yaml`` file.
        progress: Show a progress bar per step.
        on_step: Called with each step's result as it finishes.
        workers: Processes converting images at ingest (``None``: every core).

    Returns:
        Each step's result (``cached`` says which were reused).
    """
    cfg = load_build_config(config)
    out = cfg.path(cfg.out)
    qcfg = QuestionConfig(
        seed=cfg.seed,
        options=cfg.questions.options,
        difficulty=cfg.questions.difficulty,  # type: ignore[arg-type]  # QuestionConfig checks it
        none_of_the_above=cfg.questions.none_of_the_above,
        tasks=tuple(cfg.questions.tasks) if cfg.questions.tasks else QuestionConfig().tasks,
        taxonomy=str(cfg.path(cfg.taxonomy)) if cfg.taxonomy else None,
    )
    scfg = SplitConfig(seed=cfg.seed, fractions=cfg.split.fractions, tiny=cfg.split.tiny)
    tax_hash = None
    if qcfg.taxonomy:
        if not Path(qcfg.taxonomy).is_file():
            raise DataNotFoundError(f"taxonomy file not found: {qcfg.taxonomy} (from {config})")
        tax_hash = hashlib.sha256(Path(qcfg.taxonomy).read_bytes()).hexdigest()
    cache = out / ".cache" / "images"
    hashes = FileHashes(cache / "file_sha256.sqlite")
    try:
        inputs_key = _hash_inputs(cfg, hashes)
    finally:
        hashes.close()  # ingest opens the same file: one writer at a time

    def run_ingest(_s: Path, d: Path) -> StepResult:
        limit = cfg.ingest.max_pixels
        return ingest(
            cfg.path(cfg.manifest), d, cache_dir=cache, workers=workers, max_pixels=limit, progress=progress
        )

    plan: list[tuple[str, Any, Callable[[Path, Path], StepResult]]] = [
        ("ingest", [inputs_key, cfg.ingest.model_dump()], run_ingest),
        ("questions", [qcfg.__dict__, tax_hash], lambda s, d: make_questions(s, d, qcfg, progress=progress)),
        *_generate_step(cfg, out, progress),
        *_filter_plan(cfg, progress),
        ("split", scfg.__dict__, lambda s, d: split(s, d, scfg, progress=progress)),
        ("export", None, lambda s, d: export(s, d, progress=progress)),
    ]
    outcome = BuildOutcome(out=out)
    key = ""
    previous = out
    for name, settings, fn in plan:
        key = _key(name, settings, key)
        folder = out / name
        result = _cached(folder, key)
        if result is None:
            result = fn(previous, folder)
            # A step with calls that got no reply (generate) is not stamped: the next run asks again.
            if not result.stats.get("incomplete"):
                _stamp(folder, key)
        if result.stats.get("output_sha256"):
            # Later steps depend on what the step wrote, not only on its settings (an LLM step
            # rerun after a failed call may write more).
            key = _key(key, result.stats["output_sha256"])
        outcome.steps.append(result)
        if on_step is not None:
            on_step(result)
        previous = folder
    return outcome

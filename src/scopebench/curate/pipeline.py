"""``build run build.yaml``: every step in order, each skipped when its inputs have not changed.

A step's cache key is the SHA-256 of (scopebench version, step name, the step's configuration, the
previous step's key); ingest's key covers the manifest, the taxonomy file and the bytes of every
metadata table and every file in the sources' image folders. A step whose output folder holds the
same key is reused as it is; a changed step reruns, and so does every step after it (its key
changes with its predecessor's). Image files are hashed once and then recognised by their stat
(size, modification time, inode: :class:`~scopebench.curate.ingestion.cache.FileHashes`), so a
re-run with nothing changed reads no image. Inside a step that reruns, the work that grows with the
rows is kept by content under ``OUT/.cache``: ingest's conversions and near-duplicate pair scores
(``images/``), each image's question per task (``questions.sqlite``) and the LLM calls
(``llm.sqlite``); so a re-run after one changed row converts no image and draws only the questions
that row changes, and its output is byte-identical to a cold build (docs/build.md).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, ValidationError

from scopebench.curate.ingestion.cache import FileHashes
from scopebench.curate.manifest import load_manifest
from scopebench.curate.report import MARKER, StepResult, read_problems
from scopebench.curate.settings import IngestConfig, QuestionConfig, SplitConfig
from scopebench.curate.step import Step, signature
from scopebench.errors import DataFormatError, DataNotFoundError

if TYPE_CHECKING:
    from scopebench.config import EngineConfig
    from scopebench.curate.filtering.step import FilterSection
    from scopebench.curate.generation.step import GenerateConfig

__all__ = ["STEPS", "BuildConfig", "BuildOutcome", "load_build_config", "run_build"]

# Each step's module is imported by the functions below, when the step runs (and, for generate and
# filter, whose configuration classes live in their step modules, when their section is validated),
# not here: a re-run that reuses every step must not pay for datasets, scipy, NumPy or the engine
# (which the filter's gates import); ingest's, questions' and split's classes are in settings.py.


def _generate_config() -> type:
    from scopebench.curate.generation.step import GenerateConfig

    return GenerateConfig


def _filter_config() -> type:
    from scopebench.curate.filtering.step import FilterSection

    return FilterSection


def _run_ingest(
    d: Path,
    o: Path,
    c: IngestConfig,
    p: bool,
    cache_dir: Path | None = None,
    workers: int | None = None,
    engine: EngineConfig | None = None,
) -> StepResult:
    from scopebench.curate.ingestion.step import ingest

    # The worker count and the executor are runner options, not configuration: the output does not
    # depend on them, so they stay out of the cache signature.
    max_pixels = c.max_pixels or None
    return ingest(
        d, o, cache_dir=cache_dir, workers=workers, max_pixels=max_pixels, progress=p, engine=engine
    )


def _run_questions(d: Path, o: Path, c: QuestionConfig, p: bool, cache: Path | None = None) -> StepResult:
    from scopebench.curate.questions import make_questions

    return make_questions(d, o, c, progress=p, cache=cache)


def _run_generate(d: Path, o: Path, c: GenerateConfig, p: bool, cache: Path | None = None) -> StepResult:
    from scopebench.curate.generation.step import generate

    return generate(d, o, c, cache=cache, progress=p)


def _run_filter(d: Path, o: Path, c: FilterSection, p: bool, cache: Path | None = None) -> StepResult:
    from scopebench.curate.filtering.step import filter_questions

    return filter_questions(d, o, c.to_config(), progress=p, cache=cache)


def _run_split(d: Path, o: Path, c: SplitConfig, p: bool) -> StepResult:
    from scopebench.curate.splits import split

    return split(d, o, c, progress=p)


def _run_export(d: Path, o: Path, _c: None, p: bool) -> StepResult:
    from scopebench.curate.exporting import export

    return export(d, o, progress=p)


_DATASET = "the dataset (save_to_disk + Parquet shards)"
#: Every step's contract, in the order ``build run`` runs them (docs/build.md's table).
STEPS: dict[str, Step] = {
    s.name: s
    for s in (
        Step(
            "ingest",
            "a manifest: image folders and metadata tables",
            (_DATASET, "sources.json", "inputs.json", "benchmark.json"),
            IngestConfig,
            _run_ingest,
        ),
        Step(
            "questions",
            "an ingest output",
            (f"{_DATASET} with questions and captions",),
            QuestionConfig,
            _run_questions,
        ),
        Step(
            "generate",
            "a questions (or ingest) output and an inputs table",
            (f"{_DATASET} with a generated column", "generated.jsonl", "ledger.json"),
            _generate_config,
            _run_generate,
        ),
        Step(
            "filter",
            "a questions or generate output",
            (f"{_DATASET} of the kept questions", "gates/", "review_queue/", "benchmark_stats.json"),
            _filter_config,
            _run_filter,
        ),
        Step(
            "split",
            "a questions, generate or filter output",
            (f"{_DATASET}, split by image",),
            SplitConfig,
            _run_split,
        ),
        Step("export", "a split output", ("hf/", "local/"), None, _run_export),
    )
}


class BuildConfig(BaseModel):
    """A ``build.yaml``: the manifest, the output folder, the seed and each step's settings.

    Each step's section is checked against that step's own configuration class (:data:`STEPS`),
    with the top-level ``seed`` (and ``taxonomy`` for questions) added.

    Attributes:
        manifest: The ingest manifest (relative to build.yaml).
        out: Output folder; each step writes ``OUT/<step>`` (relative to build.yaml).
        seed: Seed of every step.
        taxonomy: A user taxonomy YAML used by the questions step (the manifest's own ``taxonomy``
            is used by ingest).
        ingest: :class:`~scopebench.curate.settings.IngestConfig` (``max_pixels``).
        questions: :class:`~scopebench.curate.settings.QuestionConfig` (options, difficulty…).
        generate: :class:`~scopebench.curate.generation.step.GenerateConfig`; the step runs only
            when given.
        split: :class:`~scopebench.curate.settings.SplitConfig` (fractions, ``tiny``).
        filter: :class:`~scopebench.curate.filtering.step.FilterSection`; the step runs only when
            given.
    """

    model_config = ConfigDict(extra="forbid")
    manifest: str
    out: str = "build"
    seed: int = 0
    taxonomy: str | None = None
    ingest: dict[str, Any] | None = None
    questions: dict[str, Any] | None = None
    generate: dict[str, Any] | None = None
    split: dict[str, Any] | None = None
    filter: dict[str, Any] | None = None
    root: Path = Path(".")

    def section(self, step: str, **given: Any) -> Any:
        """Step ``step``'s configuration: its section (empty values left out), the seed, ``given``."""
        raw = {k: v for k, v in (getattr(self, step) or {}).items() if v is not None}
        contract = STEPS[step]
        # Only a step that makes random choices takes the seed (ingest makes none).
        config = contract.config_class
        takes_seed = config is not None and "seed" in _field_names(config)
        return contract.make_config(raw, **({"seed": self.seed} if takes_seed else {}), **given)

    def path(self, rel: str) -> Path:
        """``rel`` resolved against build.yaml's folder."""
        p = Path(rel).expanduser()
        return p if p.is_absolute() else self.root / p


def _field_names(config: type) -> set[str]:
    if dataclasses.is_dataclass(config):
        return {f.name for f in dataclasses.fields(config)}
    return set(getattr(config, "model_fields", {}))


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
        # Absolute (not resolved): the paths in step keys then read the same however the
        # command names build.yaml (``build.yaml``, ``./proj/build.yaml``, ``/abs/build.yaml``).
        return BuildConfig.model_validate({**(raw or {}), "root": Path(os.path.abspath(p.parent))})
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
    # Only the paths matter here (the manifest's own bytes are hashed): its licences are not
    # normalised, which would build the SPDX index on every re-run; ingest does it when it runs.
    man = load_manifest(cfg.path(cfg.manifest), licences=False)
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


@dataclass
class _Planned:
    """One step of the plan: its contract, configuration, input digests and runner options."""

    step: Step
    config: Any = None
    inputs: tuple[Any, ...] = ()
    options: dict[str, Any] = field(default_factory=dict)


def _generate_plan(cfg: BuildConfig, out: Path) -> list[_Planned]:
    """The generate step (none when build.yaml has no ``generate:``).

    Paths in the section are relative to build.yaml. Its signature covers the bytes of the inputs
    table, the templates file and a replay file (or a model folder's listing); the LLM calls
    themselves are cached by content in ``OUT/.cache/llm.sqlite``, so even a rerun step sends only
    the calls that changed.
    """
    if cfg.generate is None:
        return []
    from scopebench.models import parse_spec

    gcfg: GenerateConfig = cfg.section("generate")
    spec = parse_spec(gcfg.model)  # once; its target is the model file (or hub id) hashed below
    target = spec.target
    if spec.scheme == "replay" and target and not Path(target).expanduser().is_absolute():
        target = str(cfg.path(target))  # a replay file is named relative to build.yaml
        gcfg = replace(gcfg, model=f"replay:{target}")
    gcfg = replace(
        gcfg,
        inputs=str(cfg.path(gcfg.inputs)) if gcfg.inputs else None,
        templates=str(cfg.path(gcfg.templates)) if gcfg.templates else None,
    )
    model_file = Path(target).expanduser() if target else None
    digests = (
        *(_digest(Path(p)) if p else None for p in (gcfg.inputs, gcfg.templates)),
        _digest(model_file) if model_file else None,
    )
    return [_Planned(STEPS["generate"], gcfg, digests, {"cache": out / ".cache" / "llm.sqlite"})]


def _filter_plan(cfg: BuildConfig) -> list[_Planned]:
    """The filter step, when build.yaml has a ``filter:`` section (its key covers replay files' bytes)."""
    if cfg.filter is None:
        return []
    section: FilterSection = cfg.section("filter").resolved(cfg.root)
    section.to_config()  # refuses a bad gate configuration before any step runs
    replays = {
        s: _file_hash(s.partition(":")[2]) for s in sorted(section.models()) if s.startswith("replay:")
    }
    # The captions' and categories' tables, and a replayed categoriser, are inputs too.
    cats = section.categories
    files = [section.caption.texts if section.caption else None, cats.table if cats else None]
    if cats and cats.model and cats.model.startswith("replay:"):
        files.append(cats.model[7:])
    return [_Planned(STEPS["filter"], section, (replays, {f: _file_hash(f) for f in files if f}))]


def _file_hash(path: str) -> str:
    p = Path(path).expanduser()
    return hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "missing"


def _plan(
    cfg: BuildConfig, out: Path, workers: int | None = None, engine: EngineConfig | None = None
) -> list[_Planned]:
    """Every step of build.yaml with its configuration, checked before any step runs."""
    taxonomy = str(cfg.path(cfg.taxonomy)) if cfg.taxonomy else None
    tax_hash = None
    if taxonomy:
        if not Path(taxonomy).is_file():
            raise DataNotFoundError(f"taxonomy file not found: {taxonomy} (from {cfg.root / 'build.yaml'})")
        tax_hash = hashlib.sha256(Path(taxonomy).read_bytes()).hexdigest()
    # Every section is checked first: a misspelt setting must stop the build before it writes a file.
    later = [
        _Planned(
            STEPS["questions"],
            cfg.section("questions", taxonomy=taxonomy),
            (tax_hash,),
            {"cache": out / ".cache" / "questions.sqlite"},
        ),
        *_generate_plan(cfg, out),
        *_filter_plan(cfg),
        _Planned(STEPS["split"], cfg.section("split")),
        _Planned(STEPS["export"]),
    ]
    ingest_config = cfg.section("ingest")
    cache = out / ".cache" / "images"
    hashes = FileHashes(cache / "file_sha256.sqlite")
    try:
        inputs_key = _hash_inputs(cfg, hashes)
    finally:
        hashes.close()  # ingest opens the same file: one writer at a time
    ingest_step = _Planned(
        STEPS["ingest"],
        ingest_config,
        (inputs_key,),
        {"cache_dir": cache, "workers": workers, "engine": engine},
    )
    return [ingest_step, *later]


def run_build(
    config: str | Path,
    *,
    progress: bool = False,
    on_step: Callable[[StepResult], None] | None = None,
    workers: int | None = None,
    engine: EngineConfig | None = None,
) -> BuildOutcome:
    """Run ingest → questions → generate → filter (when configured) → split → export, reusing steps.

    Args:
        config: The ``build.yaml`` file.
        progress: Show a progress bar per step.
        on_step: Called with each step's result as it finishes.
        workers: Conversions at once at ingest: processes (``None``: every core), or Ray tasks.
        engine: Where ingest converts images (``executor="ray"``: on a Ray cluster; ``None``: here).

    Returns:
        Each step's result (``cached`` says which were reused).
    """
    cfg = load_build_config(config)
    out = cfg.path(cfg.out)
    outcome = BuildOutcome(out=out)
    key = ""
    previous = cfg.path(cfg.manifest)
    for planned in _plan(cfg, out, workers, engine):
        name = planned.step.name
        key = planned.step.signature(planned.config, key, *planned.inputs)
        folder = out / name
        result = _cached(folder, key)
        if result is None:
            result = planned.step.run(previous, folder, planned.config, progress=progress, **planned.options)
            # A step with calls that got no reply (generate) is not stamped: the next run asks again.
            if not result.stats.get("incomplete"):
                _stamp(folder, key)
        if result.stats.get("output_sha256"):
            # Later steps depend on what the step wrote, not only on its settings (an LLM step
            # rerun after a failed call may write more).
            key = signature(key, result.stats["output_sha256"])
        outcome.steps.append(result)
        if on_step is not None:
            on_step(result)
        previous = folder
    return outcome

"""Evaluation grids: models × benchmarks × protocols as ordinary resumable runs.

An eval config (YAML or TOML; committed with the paper) names the models, benchmarks and
protocols; ``scopebench eval CONFIG`` runs every combination into its own run folder and then
writes the paper tables (:mod:`scopebench.paper.tables`). Each run is an ordinary
``scopebench run`` (resumable, locked, provenance in ``run.json``), so a crashed or interrupted
grid is resumed by running the same command again: finished runs cost nothing, a half-done one
does only its missing items.

Run folders are named predictably: ``OUT/<benchmark>[-<split>]/<protocol>/<model name>``, with
``<model name>`` the model's ``name`` (default: the preset name, or the spec's last path part)
made file-safe.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from scopebench.config import RunConfig
from scopebench.engine.limits import select_tasks
from scopebench.engine.runner import load_items
from scopebench.errors import DataFormatError, DataNotFoundError
from scopebench.models.sampling import check_gen_args

__all__ = [
    "BenchmarkEntry",
    "EngineEntry",
    "EvalConfig",
    "GridRun",
    "ModelEntry",
    "load_eval_config",
    "plan_grid",
    "slug",
]


def slug(text: str) -> str:
    """A file-safe folder name for ``text`` (``hf:Qwen/Qwen2-VL-7B`` → ``hf_Qwen_Qwen2-VL-7B``)."""
    out = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "run"
    return out[:100]


class _Strict(BaseModel):
    # A misspelt key is an error naming it, never a silently ignored setting.
    model_config = ConfigDict(extra="forbid")


class ModelEntry(_Strict):
    """A model of the grid (a bare string in the config is its ``spec``).

    Attributes:
        spec: The model spec or preset (``biomedclip``, ``random``, ``hf:Qwen/Qwen2-VL-7B-Instruct``).
        name: Display name in the tables and the run folder's name (default: from the spec).
        args: Backend options (``--model-arg``).
        mode: Backend mode (``generate``/``choice-logprob``).
        batch_size: Items per model call, or ``auto`` (default: the engine's ``batch_size``).
        no_image: Text-only prompts.
        gen_args: Generation beyond greedy (``--gen-arg``: ``temperature``, ``top_p``, ``n``).
    """

    spec: str = Field(min_length=1)
    name: str | None = None
    args: dict[str, Any] = Field(default_factory=dict)
    mode: str | None = None
    batch_size: Annotated[int, Field(ge=1)] | Literal["auto"] | None = None
    no_image: bool = False
    gen_args: dict[str, Any] = Field(default_factory=dict)

    def display_name(self) -> str:
        """``name``, else the spec with any path shortened to its last part."""
        if self.name:
            return self.name
        scheme, sep, arg = self.spec.partition(":")
        if sep and ("/" in arg or "\\" in arg) and arg.startswith(("/", "~", ".")):
            return f"{scheme}:{Path(arg).name}"
        return self.spec


class BenchmarkEntry(_Strict):
    """A benchmark of the grid (a bare string in the config is its ``name``).

    Attributes:
        name: Registered benchmark name (``pathmmu``, ``ubench``, ``demo``…).
        data: Data location (not needed for ``demo``).
        split: Split to evaluate (default: the benchmark's default).
        tasks: Evaluate only the items of these tasks (or PathMMU subsets); default: all.
        limit: The first N items, or a seeded sample of a fraction (overrides the config's ``limit``).
    """

    name: str = Field(min_length=1)
    data: str = ""
    split: str | None = None
    tasks: list[str] | None = None
    limit: Annotated[int, Field(ge=1)] | Annotated[float, Field(gt=0, lt=1)] | None = None

    def folder(self) -> str:
        """The benchmark level of the run folders: ``pathmmu`` or ``pathmmu-test_tiny``."""
        return slug(self.name if self.split is None else f"{self.name}-{self.split}")


class EngineEntry(_Strict):
    """The config file's ``engine`` section: settings shared by every run of the grid.

    Named as ``scopebench run``'s flags; :func:`plan_grid` turns them, with each model's and
    benchmark's own, into each run's :class:`~scopebench.config.RunConfig`.
    """

    device: str = "auto"
    batch_size: Annotated[int, Field(ge=1)] | Literal["auto"] | None = None
    executor: Literal["local", "ray"] = "local"
    workers: int | None = Field(default=None, ge=1)
    ray_address: str | None = None
    base_url: str | None = None
    max_fail_fraction: float = Field(default=0.5, ge=0.0, le=1.0)


class TablesEntry(_Strict):
    """Where and how the grid's paper tables are written."""

    out: str | None = None
    published: bool = False


class EvalConfig(_Strict):
    """An evaluation grid: every model on every benchmark under every protocol.

    Attributes:
        models: Models (at least one).
        benchmarks: Benchmarks (at least one).
        protocols: Prompt protocols (``default``, ``owner``).
        seed: Seed of every random choice (recorded in each run).
        limit: The first N items of each benchmark (a trial), or a fraction (a seeded sample); raise it
            later to extend the runs.
        out: Root folder of the run folders (relative paths: to the config file's folder).
        engine: Engine options.
        tables: Paper-table options (default folder: ``OUT/tables``).
    """

    models: list[ModelEntry] = Field(min_length=1)
    benchmarks: list[BenchmarkEntry] = Field(min_length=1)
    protocols: list[str] = Field(default_factory=lambda: ["default"], min_length=1)
    seed: int = 0
    limit: Annotated[int, Field(ge=1)] | Annotated[float, Field(gt=0, lt=1)] | None = None
    out: str = "runs/eval"
    engine: EngineEntry = Field(default_factory=EngineEntry)
    tables: TablesEntry = Field(default_factory=TablesEntry)

    @field_validator("models", mode="before")
    @classmethod
    def _model_strings(cls, value: Any) -> Any:
        return [{"spec": v} if isinstance(v, str) else v for v in value] if isinstance(value, list) else value

    @field_validator("benchmarks", mode="before")
    @classmethod
    def _bench_strings(cls, value: Any) -> Any:
        return [{"name": v} if isinstance(v, str) else v for v in value] if isinstance(value, list) else value


def _format_errors(path: Path, exc: ValidationError) -> str:
    lines = []
    for err in exc.errors():
        key = ".".join(str(p) for p in err["loc"]) or "(top level)"
        lines.append(f"  {key}: {err['msg']}")
    return f"{path}: the eval config is not valid:\n" + "\n".join(lines)


def load_eval_config(path: str | Path) -> EvalConfig:
    """Read and validate an eval config (``.yaml``/``.yml`` or ``.toml``).

    Raises:
        DataNotFoundError: When the file does not exist.
        DataFormatError: When it cannot be parsed, or a key is unknown, missing or of a wrong
            type (the message names each such key, e.g. ``models.1.spec``).
    """
    p = Path(path)
    if not p.is_file():
        raise DataNotFoundError(f"eval config not found: {p}")
    text = p.read_text(encoding="utf-8")
    try:
        if p.suffix.lower() == ".toml":
            raw: Any = tomllib.loads(text)
        else:
            import yaml

            raw = yaml.safe_load(text)
    except (tomllib.TOMLDecodeError, ValueError) as exc:
        raise DataFormatError(f"{p}: cannot parse the eval config: {exc}") from exc
    except Exception as exc:  # yaml.YAMLError, without importing yaml for TOML files
        raise DataFormatError(f"{p}: cannot parse the eval config: {exc}") from exc
    if not isinstance(raw, Mapping):
        raise DataFormatError(f"{p}: an eval config is a mapping with models, benchmarks, protocols…")
    try:
        return EvalConfig.model_validate(raw)
    except ValidationError as exc:
        raise DataFormatError(_format_errors(p, exc)) from exc


@dataclass(frozen=True, slots=True)
class GridRun:
    """One run of a grid.

    Attributes:
        label: Display name in the tables (the model's name, with the protocol when several).
        config: The run's configuration.
        out_dir: Its run folder.
        tasks: Tasks the run is restricted to (resolved to ``config.exclude_ids`` by :func:`resolve_tasks`).
    """

    label: str
    config: RunConfig
    out_dir: Path
    tasks: tuple[str, ...] | None = None


def plan_grid(cfg: EvalConfig, root: str | Path) -> list[GridRun]:
    """Every (benchmark, protocol, model) run of ``cfg``, benchmarks outermost.

    Args:
        cfg: The validated config.
        root: Folder of the run folders (``cfg.out`` resolved by the caller).

    Raises:
        DataFormatError: When two models, or two benchmarks, would share a run folder.
    """
    names = [slug(m.display_name()) for m in cfg.models]
    _unique(names, "models", "give each a distinct `name`")
    _unique([b.folder() for b in cfg.benchmarks], "benchmarks", "give them distinct splits")
    _unique(cfg.protocols, "protocols", "list each once")
    runs = []
    for bench in cfg.benchmarks:
        for protocol in cfg.protocols:
            for model, folder in zip(cfg.models, names, strict=True):
                label = model.display_name() + (f" ({protocol})" if len(cfg.protocols) > 1 else "")
                config = RunConfig.from_options(
                    bench.name,
                    bench.data,
                    model.spec,
                    split=bench.split,
                    limit=bench.limit if bench.limit is not None else cfg.limit,
                    seed=cfg.seed,
                    batch_size=model.batch_size or cfg.engine.batch_size,
                    protocol=protocol,
                    mode=model.mode,
                    no_image=model.no_image,
                    device=cfg.engine.device,
                    base_url=cfg.engine.base_url,
                    model_args=dict(model.args),
                    gen_args=check_gen_args(model.gen_args),
                    max_fail_fraction=cfg.engine.max_fail_fraction,
                    executor=cfg.engine.executor,
                    ray_address=cfg.engine.ray_address,
                    workers=cfg.engine.workers,
                    label=label,
                )
                out = Path(root) / bench.folder() / slug(protocol) / folder
                runs.append(GridRun(label, config, out, tuple(bench.tasks) if bench.tasks else None))
    return runs


def _unique(values: Sequence[str], key: str, advice: str) -> None:
    seen = {v for v in values if values.count(v) > 1}
    if seen:
        raise DataFormatError(
            f"eval config: {key} share a run folder name ({', '.join(sorted(seen))}): {advice}"
        )


def resolve_tasks(run: GridRun) -> GridRun:
    """``run`` with its task restriction turned into excluded item ids (loads the benchmark).

    An item is kept when its task or its subset (PathMMU's tasks are subsets) is listed.

    Raises:
        DataFormatError: When a listed task is not in the benchmark (the message lists its tasks).
    """
    if not run.tasks:
        return run
    from dataclasses import replace

    _, items = load_items(replace(run.config, limit=None))
    try:
        kept = {it.id for it in select_tasks(items, run.tasks, run.config.benchmark)}
    except DataFormatError as exc:
        raise DataFormatError(f"eval config: {exc}") from None
    excluded = frozenset(it.id for it in items if it.id not in kept)
    return GridRun(run.label, replace(run.config, exclude_ids=excluded), run.out_dir, run.tasks)

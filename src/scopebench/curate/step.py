"""The step contract: what every build step declares once, and what the pipeline and the CLI use.

A :class:`Step` names a step, says what it reads and writes, holds the class of its configuration
(the one declaration: ``build.yaml``'s section of the step is validated against it, and ``scopebench
build <step>`` builds the same class from its options), runs the step's function, and computes its
cache signature. :data:`scopebench.curate.pipeline.STEPS` holds every step's contract, in the order
``build run`` runs them. The configuration classes of ingest, questions and split live in
:mod:`scopebench.curate.settings`, generate's and filter's in their step modules.

A step whose configuration class lives in a heavy module gives a function that imports and returns
it instead of the class (:attr:`Step.config_class` resolves either), and its runner imports the
step's implementation when called: a ``build run`` that finds every step's output up to date loads
only the configuration classes it validates, never a step's implementation (datasets, the engine,
scipy).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from scopebench import __version__
from scopebench.curate.report import StepResult
from scopebench.errors import DataFormatError

__all__ = ["Step", "signature"]

#: ``(data, out, config, progress, **options)`` → what the step did.
Runner = Callable[..., StepResult]


def signature(*parts: Any) -> str:
    """SHA-256 of the scopebench version and ``parts`` (JSON, keys sorted): a step's cache key."""
    text = json.dumps([__version__, *parts], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class Step:
    """One build step.

    Attributes:
        name: The step's name (its ``build.yaml`` section, its output folder under ``out``, its
            ``scopebench build`` subcommand, the ``step`` of its problems).
        reads: What it reads.
        writes: What it writes beyond every output's ``build.json``, ``problems.jsonl``,
            ``README.md`` and ``provenance/``.
        config: The class of its configuration (a dataclass or pydantic model; ``None``: none), or
            a function that imports and returns it (:attr:`config_class`).
        runner: Runs it: ``(data, out, config, progress, **options)`` (``options``: where the
            step keeps caches, ``cache`` or ``cache_dir``); it imports the step's implementation
            when called.
    """

    name: str
    reads: str
    writes: tuple[str, ...]
    config: type | Callable[[], type] | None
    runner: Runner

    @property
    def config_class(self) -> type | None:
        """The class of the step's configuration (``None``: the step takes none)."""
        if self.config is None or isinstance(self.config, type):
            return self.config
        return self.config()

    def make_config(self, raw: Mapping[str, Any] | None, **given: Any) -> Any:
        """The step's configuration from a ``build.yaml`` section (unknown keys refused) and ``given``.

        Raises:
            DataFormatError: Naming every invalid key of the section.
        """
        config = self.config_class
        if config is None:
            return None
        values = {**(raw or {}), **given}
        if dataclasses.is_dataclass(config):
            # pydantic ignores unknown keys of a plain dataclass: a misspelt setting must not be.
            known = {f.name for f in dataclasses.fields(config)}
            unknown = sorted(set(values) - known)
            if unknown:
                raise DataFormatError(
                    f"invalid {self.name} settings: unknown key(s) {', '.join(unknown)}; known: "
                    + ", ".join(sorted(known))
                )
        adapter: TypeAdapter[Any] = TypeAdapter(config)
        try:
            return adapter.validate_python(values)
        except ValidationError as exc:
            lines = [f"  {self.name}.{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()]
            raise DataFormatError(f"invalid {self.name} settings:\n" + "\n".join(lines)) from exc

    def settings(self, config: Any) -> Any:
        """The configuration as JSON-able data (what the cache signature covers)."""
        if config is None:
            return None
        if isinstance(config, BaseModel):
            return config.model_dump(mode="json")
        return dataclasses.asdict(config)

    def signature(self, config: Any, previous: str, *inputs: Any) -> str:
        """The cache key: version, name, settings, the previous step's key and input digests."""
        return signature(self.name, self.settings(config), previous, *inputs)

    def run(
        self, data: str | Path, out: str | Path, config: Any = None, *, progress: bool = False, **options: Any
    ) -> StepResult:
        """Run the step on ``data`` (the previous output, or the manifest) into ``out``."""
        return self.runner(Path(data), Path(out), config, progress, **options)

"""Third-party benchmarks and backends: Python entry points and plugin files.

A lab ships a private benchmark or backend as its own pip package and declares it in that package's
metadata (``pyproject.toml``)::

    [project.entry-points."scopebench.benchmarks"]
    mylab = "mylab_bench.loader:MyLabBenchmark"      # a Benchmark subclass

    [project.entry-points."scopebench.models"]
    mylab-model = "mylab_bench.backend:MyBackend"    # a Backend subclass

Entry points are discovered lazily (:func:`importlib.metadata.entry_points`, which reads the
``*.dist-info/entry_points.txt`` of every distribution on ``sys.path``) and their modules are
imported only when used. A name that clashes with a built-in is refused (the built-in keeps the
name; the listing says why the plugin is unavailable); a module that fails to import is reported
with its distribution and the error, never with a crash of the listings.

Without packaging, one file is enough: ``--bench path/to/mybench.py:MyBenchmark`` imports the file
and uses the class it names (see docs/extending.md).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import logging
import sys
from collections.abc import Collection
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Any

from scopebench.errors import PluginError, reason

__all__ = [
    "BENCHMARK_GROUP",
    "MODEL_GROUP",
    "PluginEntry",
    "clear_plugin_cache",
    "discover",
    "file_provenance",
    "is_file_spec",
    "load_entry",
    "load_file_class",
]

log = logging.getLogger(__name__)

BENCHMARK_GROUP = "scopebench.benchmarks"
MODEL_GROUP = "scopebench.models"

_CACHE: dict[str, dict[str, PluginEntry]] = {}


@dataclass(frozen=True, slots=True)
class PluginEntry:
    """One entry point of a ``scopebench.*`` group, as declared (nothing imported yet).

    Attributes:
        group: ``scopebench.benchmarks`` or ``scopebench.models``.
        name: The benchmark name or model scheme it registers.
        value: ``module:Class`` it points at.
        distribution: The installed distribution declaring it (``name version``), for messages.
        problem: Why it cannot be used although declared (a clash with a built-in or with another
            distribution's entry point); ``None`` when usable.
    """

    group: str
    name: str
    value: str
    distribution: str
    problem: str | None = None


def _dist_label(ep: metadata.EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    if dist is None:
        return "an unknown distribution"
    return f"{dist.metadata['Name']} {dist.version}"


def discover(group: str, builtin: Collection[str], kind: str) -> dict[str, PluginEntry]:
    """The entry points of ``group`` by name (cached; :func:`clear_plugin_cache` rescans).

    Args:
        group: The entry-point group.
        builtin: Names already taken by built-ins (a plugin may not take them).
        kind: ``benchmark`` or ``model scheme``, for messages.

    Returns:
        Every declared entry point; unusable ones carry a :attr:`PluginEntry.problem`.
    """
    if group in _CACHE:
        return _CACHE[group]
    found: dict[str, PluginEntry] = {}
    seen: set[tuple[str, str]] = set()
    for ep in sorted(metadata.entry_points(group=group), key=lambda e: (e.name, e.value)):
        if (ep.name, ep.value) in seen:  # the same distribution reachable twice on sys.path
            continue
        seen.add((ep.name, ep.value))
        dist = _dist_label(ep)
        problem = None
        if ep.name in builtin:
            problem = (
                f"the {kind} {ep.name!r} declared by {dist} ({ep.value}) clashes with a built-in "
                f"name of scopebench and is not used; rename its entry point in the "
                f"[project.entry-points.{group!r}] table of {dist.split(' ')[0]}"
            )
        elif ep.name in found:
            other = found[ep.name]
            problem = (
                f"the {kind} {ep.name!r} is declared twice, by {other.distribution} ({other.value}) "
                f"and by {dist} ({ep.value}); neither is used: uninstall one or rename its entry point"
            )
            found[ep.name] = PluginEntry(group, ep.name, other.value, other.distribution, problem)
            continue
        if problem:
            log.warning("%s", problem)
        found[ep.name] = PluginEntry(group, ep.name, ep.value, dist, problem)
    _CACHE[group] = found
    return found


def clear_plugin_cache() -> None:
    """Forget discovered entry points (after installing a plugin into a running interpreter)."""
    _CACHE.clear()


def load_entry(entry: PluginEntry, base: type, kind: str) -> Any:
    """Import the class an entry point names and check that it is a ``base`` subclass.

    Raises:
        PluginError: When the entry is unusable, its module fails to import, or it names
            something else than a ``base`` subclass; the message names the distribution.
    """
    if entry.problem:
        raise PluginError(entry.problem)
    module_name, _, attr = entry.value.partition(":")
    where = f"the {kind} {entry.name!r} of {entry.distribution} ({entry.value})"
    try:
        obj = importlib.import_module(module_name)
        for part in attr.split(".") if attr else []:
            obj = getattr(obj, part)
    except Exception as exc:  # any error of third-party code: say whose it is
        raise PluginError(
            f"{where} failed to import: {type(exc).__name__}: {reason(exc)}; "
            f"fix or reinstall {entry.distribution.split(' ')[0]}, or uninstall it"
        ) from exc
    if not (isinstance(obj, type) and issubclass(obj, base)):
        raise PluginError(f"{where} is not a {base.__name__} subclass; point the entry point at one")
    return obj


def is_file_spec(spec: str) -> bool:
    """Whether ``spec`` names a class in a Python file (``path/to/file.py:ClassName``)."""
    path, sep, attr = spec.rpartition(":")
    return bool(sep) and path.endswith(".py") and attr.isidentifier()


def _import_file(path: Path) -> ModuleType:
    """Import a Python file once per process under a name derived from its resolved path."""
    resolved = path.resolve()
    name = "scopebench_plugin_" + hashlib.sha256(str(resolved).encode()).hexdigest()[:12]
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, resolved)
    if spec is None or spec.loader is None:
        raise PluginError(f"{path} cannot be imported as a Python module; give a .py file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look the module up while it runs
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        raise PluginError(
            f"the plugin file {path} failed to import: {type(exc).__name__}: {reason(exc)}"
        ) from exc
    return module


def file_provenance(spec: str) -> dict[str, str]:
    """What a run records about a plugin file: its resolved path and the SHA-256 of its content."""
    path = Path(spec.rpartition(":")[0]).expanduser().resolve()
    return {"file": str(path), "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}


def load_file_class(spec: str, base: type, kind: str) -> Any:
    """The ``base`` subclass named by ``path/to/file.py:ClassName``.

    Raises:
        PluginError: When the file is missing, fails to import, lacks the class, or the class is no
            ``base`` subclass.
    """
    path_str, _, attr = spec.rpartition(":")
    path = Path(path_str).expanduser()
    if not path.is_file():
        raise PluginError(f"plugin file {path} not found (from the {kind} {spec!r}); check the path")
    module = _import_file(path)
    obj = getattr(module, attr, None)
    if not (isinstance(obj, type) and issubclass(obj, base)):
        candidates = sorted(
            n
            for n, v in vars(module).items()
            if isinstance(v, type) and issubclass(v, base) and v is not base
        )
        raise PluginError(
            f"{path} defines no {base.__name__} subclass named {attr!r}"
            + (f"; it defines: {', '.join(candidates)}" if candidates else "")
        )
    return obj

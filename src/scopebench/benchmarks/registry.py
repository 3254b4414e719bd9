"""Benchmark registry: names → loader classes, imported lazily.

Besides the built-ins, a benchmark comes from a ``scopebench.benchmarks`` entry point of an
installed distribution, or from one file (``path/to/mybench.py:MyBenchmark``); see
:mod:`scopebench.plugins` and docs/extending.md.
"""

from __future__ import annotations

import importlib
import logging
import pkgutil
from collections.abc import Callable

from scopebench.benchmarks.base import Benchmark
from scopebench.errors import BenchmarkNotFoundError, PluginError, ScopebenchError
from scopebench.plugins import (
    BENCHMARK_GROUP,
    PluginEntry,
    discover,
    file_provenance,
    is_file_spec,
    load_entry,
    load_file_class,
)
from scopebench.registry import Registry

__all__ = [
    "available_benchmarks",
    "benchmark_origin",
    "benchmark_plugins",
    "find_benchmark",
    "get_benchmark",
    "owner_protocol_benchmarks",
    "published_key",
    "register_benchmark",
]

log = logging.getLogger(__name__)

# Built-in benchmarks: every public module of this package (``ubench.py`` defines ``ubench``), found
# by listing the package, so adding a benchmark is adding its module. Modules are imported only
# when the benchmark is used, so `import scopebench` stays light (μ-Bench pulls in `datasets`).
_NOT_BENCHMARKS = frozenset({"base", "registry", "validate"})  # helpers: name others with a leading _
_BUILTIN: Registry[str] = Registry("benchmark", BenchmarkNotFoundError)
for _module in pkgutil.iter_modules(importlib.import_module("scopebench.benchmarks").__path__):
    if not _module.name.startswith("_") and _module.name not in _NOT_BENCHMARKS:
        _BUILTIN.add(_module.name, f"scopebench.benchmarks.{_module.name}")  # importing it registers it
_REGISTRY: dict[str, type[Benchmark]] = {}


def register_benchmark(name: str) -> Callable[[type[Benchmark]], type[Benchmark]]:
    """Class decorator registering a :class:`Benchmark` under ``name``.

    Raises:
        PluginError: When ``name`` is a built-in benchmark's and ``cls`` is not that built-in (a
            plugin must not silently replace a benchmark whose numbers get published).
    """

    def deco(cls: type[Benchmark]) -> type[Benchmark]:
        if name in _BUILTIN and cls.__module__ != _BUILTIN.target(name):
            raise PluginError(
                f"{cls.__module__}.{cls.__qualname__} registers the benchmark name {name!r}, which "
                "is a built-in benchmark's; register it under another name"
            )
        cls.name = name
        _REGISTRY[name] = cls
        return cls

    return deco


def available_benchmarks() -> list[str]:
    """Names of every known benchmark (built-in, registered and from entry points)."""
    return sorted(set(_BUILTIN) | set(_REGISTRY) | set(_entry_points()))


def _entry_points() -> dict[str, PluginEntry]:
    return discover(BENCHMARK_GROUP, _BUILTIN, "benchmark")


def benchmark_origin(name: str) -> dict[str, str] | None:
    """Where a plugin benchmark comes from (for a run's provenance); ``None`` for the others."""
    if is_file_spec(name):
        return file_provenance(name)
    entry = _entry_points().get(name) if name not in _BUILTIN else None
    if entry is None or entry.problem or _REGISTRY.get(name) is None:
        return None
    if _REGISTRY[name].__module__ != entry.value.partition(":")[0]:
        return None  # registered in code under this name (tests, notebooks), not by the plugin
    return {"entry_point": entry.value, "distribution": entry.distribution}


def benchmark_plugins() -> list[PluginEntry]:
    """Every ``scopebench.benchmarks`` entry point, usable or not (for listings)."""
    return list(_entry_points().values())


def get_benchmark(name: str) -> Benchmark:
    """Instantiate the benchmark registered as ``name``.

    Args:
        name: A registered or entry-point name, or ``path/to/file.py:ClassName`` (a
            :class:`Benchmark` subclass defined in that file).

    Raises:
        BenchmarkNotFoundError: For an unknown name; the message lists the known ones.
        PluginError: When a plugin's module fails to import or names no :class:`Benchmark`.
    """
    if is_file_spec(name):
        cls: type[Benchmark] = load_file_class(name, Benchmark, "benchmark")
        if not hasattr(cls, "name"):  # not decorated: name it after its file
            cls.name = name.rpartition(":")[0].rsplit("/", 1)[-1].removesuffix(".py")
        # Its items carry ``cls.name``: register it under that name too, so rendering an item
        # (``--protocol owner``) finds its owner prompt. Never over a built-in or another class.
        if cls.name not in _BUILTIN:
            _REGISTRY.setdefault(cls.name, cls)
        return cls()
    if name not in _REGISTRY and name in _BUILTIN:
        importlib.import_module(_BUILTIN.target(name))
    if name not in _REGISTRY and name in _entry_points():
        plugin: type[Benchmark] = load_entry(_entry_points()[name], Benchmark, "benchmark")
        plugin.name = name
        _REGISTRY[name] = plugin
    if name not in _REGISTRY:
        known = available_benchmarks()
        raise _BUILTIN.unknown(
            name, known, f"known benchmarks: {', '.join(known)} (`scopebench benchmarks` describes each)"
        )
    return _REGISTRY[name]()


def find_benchmark(name: str) -> Benchmark | None:
    """The benchmark ``name`` if it can be had, else ``None`` (for hooks that are optional).

    Used where a missing benchmark means "no owner hooks" rather than an error: the metrics of a
    stored run whose plugin is no longer installed still compute (without an ``owner`` section),
    and the reason is logged.
    """
    try:
        return get_benchmark(name)
    except BenchmarkNotFoundError:
        return None
    except ScopebenchError as exc:  # a plugin that fails to import: say so, go on without it
        log.warning("benchmark %s cannot be loaded, so its owner hooks are not used: %s", name, exc)
        return None


def published_key(name: str) -> str | None:
    """The ``benchmark`` key of ``name``'s rows in the published-results table (``None``: none)."""
    bench = find_benchmark(name)
    return None if bench is None else bench.published_key


def owner_protocol_benchmarks() -> list[str]:
    """Names of the built-in and registered benchmarks that have an owner protocol (for messages)."""
    for name in _BUILTIN:
        importlib.import_module(_BUILTIN.target(name))
    return sorted(n for n, cls in _REGISTRY.items() if cls.owner_prompt is not Benchmark.owner_prompt)

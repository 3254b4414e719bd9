"""Benchmark registry: names → loader classes, imported lazily.

Besides the built-ins, a benchmark comes from a ``scopebench.benchmarks`` entry point of an
installed distribution, or from one file (``path/to/mybench.py:MyBenchmark``); see
:mod:`scopebench.plugins` and docs/extending.md.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from scopebench.benchmarks.base import Benchmark
from scopebench.errors import BenchmarkNotFoundError, PluginError
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
    "get_benchmark",
    "register_benchmark",
]

# Built-in benchmarks and the module that defines each. Modules are imported only when the
# benchmark is used, so `import scopebench` stays light (μ-Bench pulls in `datasets`).
_BUILTIN: Registry[str] = Registry("benchmark", BenchmarkNotFoundError)
for _name in ("ubench", "pathmmu", "spur", "microvqa", "local", "demo"):
    _BUILTIN.add(_name, f"scopebench.benchmarks.{_name}")  # importing the module registers it
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

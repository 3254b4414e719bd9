"""Benchmark registry: names → loader classes, imported lazily."""

from __future__ import annotations

import importlib
from collections.abc import Callable

from scopebench.benchmarks.base import Benchmark
from scopebench.errors import BenchmarkNotFoundError

__all__ = ["available_benchmarks", "get_benchmark", "register_benchmark"]

# Built-in benchmarks and the module that defines each. Modules are imported only when the
# benchmark is used, so `import scopebench` stays light (μ-Bench pulls in `datasets`).
_BUILTIN: dict[str, str] = {
    "ubench": "scopebench.benchmarks.ubench",
    "pathmmu": "scopebench.benchmarks.pathmmu",
    "spur": "scopebench.benchmarks.spur",
    "microvqa": "scopebench.benchmarks.microvqa",
    "local": "scopebench.benchmarks.local",
    "demo": "scopebench.benchmarks.demo",
}
_REGISTRY: dict[str, type[Benchmark]] = {}


def register_benchmark(name: str) -> Callable[[type[Benchmark]], type[Benchmark]]:
    """Class decorator registering a :class:`Benchmark` under ``name``."""

    def deco(cls: type[Benchmark]) -> type[Benchmark]:
        cls.name = name
        _REGISTRY[name] = cls
        return cls

    return deco


def available_benchmarks() -> list[str]:
    """Names of every known benchmark (built-in and registered)."""
    return sorted(set(_BUILTIN) | set(_REGISTRY))


def get_benchmark(name: str) -> Benchmark:
    """Instantiate the benchmark registered as ``name``.

    Raises:
        BenchmarkNotFoundError: For an unknown name; the message lists the known ones.
    """
    if name not in _REGISTRY and name in _BUILTIN:
        importlib.import_module(_BUILTIN[name])
    if name not in _REGISTRY:
        raise BenchmarkNotFoundError(
            f"unknown benchmark {name!r}; known benchmarks: {', '.join(available_benchmarks())} "
            "(`scopebench benchmarks` describes each)"
        )
    return _REGISTRY[name]()

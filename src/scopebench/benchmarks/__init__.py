"""Benchmark loaders: one module per benchmark, registered by name."""

from scopebench.benchmarks.base import Benchmark, LoadedBenchmark, OwnerPrompt, Problem, fingerprint_files
from scopebench.benchmarks.registry import available_benchmarks, get_benchmark, register_benchmark

__all__ = [
    "Benchmark",
    "LoadedBenchmark",
    "OwnerPrompt",
    "Problem",
    "available_benchmarks",
    "fingerprint_files",
    "get_benchmark",
    "register_benchmark",
]

"""The benchmark registry finds the built-ins by itself: one module per benchmark, same name."""

from __future__ import annotations

import importlib

from scopebench.benchmarks.base import Benchmark
from scopebench.benchmarks.registry import _BUILTIN, get_benchmark, owner_protocol_benchmarks


def test_every_builtin_module_registers_its_own_name() -> None:
    # A helper module added without a leading "_" would be listed as a benchmark it does not define.
    assert set(_BUILTIN) == {"demo", "hf", "local", "microvqa", "pathmmu", "spur", "ubench"}
    for name, module in _BUILTIN.items():
        importlib.import_module(module)
        bench = get_benchmark(name)
        assert type(bench).__module__ == module and bench.name == name


def test_each_owner_protocol_lives_with_its_benchmark() -> None:
    # hf's owner protocol is the dataset mapping's own template.
    assert owner_protocol_benchmarks() == ["hf", "microvqa", "pathmmu", "spur", "ubench"]
    keys = {n: get_benchmark(n).published_key for n in _BUILTIN}
    assert keys == {"demo": None, "hf": None, "local": None, "microvqa": "microvqa", "pathmmu": "pathmmu", "spur": "spur",
                    "ubench": "ubench"}  # fmt: skip
    prefixes = {n: get_benchmark(n).answer_prefix for n in owner_protocol_benchmarks()}
    assert prefixes == {
        "hf": "",
        "microvqa": "The answer is (",
        "pathmmu": "",
        "spur": "<ANSWER>",
        "ubench": "",
    }
    # Benchmarks without an owner protocol keep the base class's hooks (no owner section).
    assert type(get_benchmark("local")).owner_rows is Benchmark.owner_rows

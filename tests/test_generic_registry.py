"""The generic Registry: lazy imports, suggestions for typos, our error type."""

from __future__ import annotations

import sys

import pytest

from scopebench.benchmarks import get_benchmark
from scopebench.errors import BenchmarkNotFoundError, ModelSpecError
from scopebench.models import load_model
from scopebench.models.strategies import strategy_steps
from scopebench.registry import Registry, did_you_mean


def test_a_string_target_is_imported_on_first_use_only() -> None:
    reg: Registry[object] = Registry("thing", ModelSpecError)
    reg.add("json-dumps", "json:dumps")
    reg.add("direct", 42)
    assert reg.target("json-dumps") == "json:dumps"  # nothing imported yet
    import json

    assert reg.load("json-dumps") is json.dumps
    assert reg.load("direct") == 42
    assert reg.names() == ["direct", "json-dumps"] and len(reg) == 2 and "direct" in reg


def test_a_lazy_target_module_is_not_imported_by_registering() -> None:
    reg: Registry[object] = Registry("thing", ModelSpecError)
    reg.add("x", "scopebench_no_such_module_xyz:Thing")
    assert "scopebench_no_such_module_xyz" not in sys.modules
    with pytest.raises(ModuleNotFoundError):
        reg.load("x")


def test_unknown_name_raises_the_registry_error_with_a_suggestion() -> None:
    reg: Registry[int] = Registry("colour", BenchmarkNotFoundError)
    reg.add("red", 1)
    reg.add("green", 2)
    with pytest.raises(BenchmarkNotFoundError) as exc:
        reg.load("gren")
    assert str(exc.value) == "unknown colour 'gren' (did you mean 'green'?); choose one of: green, red"


@pytest.mark.parametrize(
    ("name", "known", "expected"),
    [
        ("pathmu", ["pathmmu", "spur"], " (did you mean 'pathmmu'?)"),
        ("PathMMU", ["pathmmu", "spur"], " (did you mean 'pathmmu'?)"),  # case-insensitive
        ("zzzz", ["pathmmu", "spur"], ""),  # nothing close: no guess
        ("x", [], ""),
    ],
)
def test_did_you_mean(name: str, known: list[str], expected: str) -> None:
    assert did_you_mean(name, known) == expected


def test_benchmark_typo_suggests_the_benchmark() -> None:
    with pytest.raises(
        BenchmarkNotFoundError, match=r"unknown benchmark 'pathmu' \(did you mean 'pathmmu'\?\)"
    ):
        get_benchmark("pathmu")


@pytest.mark.parametrize(
    ("spec", "suggestion"),
    [("randm", "random"), ("hff:some/model", "hf"), ("biomedclp", "biomedclip")],  # scheme, preset
)
def test_model_spec_typo_suggests_a_scheme_or_preset(spec: str, suggestion: str) -> None:
    with pytest.raises(
        ModelSpecError, match=rf"unknown model spec '{spec}' \(did you mean '{suggestion}'\?\)"
    ):
        load_model(spec)


def test_strategy_typo_suggests_the_strategy() -> None:
    with pytest.raises(ModelSpecError, match=r"unknown strategy 'dd-cot' \(did you mean 'ddcot'\?\)"):
        strategy_steps("dd-cot")

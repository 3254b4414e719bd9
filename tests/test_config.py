"""The run configuration: one frozen object per concept, built by one constructor."""

from __future__ import annotations

import dataclasses

import pytest

from scopebench.config import EngineConfig, ModelConfig, ReportConfig, RunConfig, UnknownOptionError
from scopebench.models import ModelOptions


def test_every_configuration_is_frozen() -> None:
    """A config edited in place by one consumer would change the run another is executing."""
    for config in (RunConfig("demo", "", "random"), ModelConfig(), EngineConfig(), ReportConfig()):
        field = dataclasses.fields(config)[0].name
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(config, field, None)


def test_from_options_routes_engine_names_and_normalises_collections() -> None:
    """Catches an engine flag silently dropped (a Ray run that runs locally) or a list kept mutable."""
    config = RunConfig.from_options(
        "demo", "d", "random", executor="ray", workers=3, seed=5, exclude_ids=["b", "a"], model_args={"k": 1}
    )
    assert config.engine == EngineConfig(executor="ray", workers=3)
    assert config.exclude_ids == frozenset({"a", "b"}) and config.seed == 5
    assert config.model_options() == ModelConfig(seed=5, extra={"k": 1})


def test_from_options_refuses_an_unknown_name_and_lists_the_known_ones() -> None:
    """A misspelt option (``seeed``) must fail, never run with the default seed."""
    with pytest.raises(UnknownOptionError, match="seeed") as info:
        RunConfig.from_options("demo", "", "random", seeed=1)
    assert "seed" in info.value.known and "executor" in info.value.known
    assert "benchmark" not in info.value.known and "engine" not in info.value.known


def test_the_backends_options_are_the_model_config() -> None:
    """One shape for the model settings: the name backends import is the same class."""
    assert ModelOptions is ModelConfig

"""A run parses its model spec string once and hands the ModelSpec on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import scopebench.models.registry as registry
from scopebench.api import evaluate
from scopebench.engine import RunConfig, run_benchmark
from scopebench.errors import ScopebenchError
from scopebench.models import ModelOptions, ModelSpec, load_model, parse_spec
from scopebench.models.baselines import RandomBackend


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every spec string read. ``resolve_preset`` is the first step of reading one (and of
    ``scheme_origin`` in code that re-reads the spec), so it counts every parse, old code and new alike."""
    calls: list[str] = []
    real = registry.resolve_preset

    def counting(spec: str) -> str:
        calls.append(spec)
        return real(spec)

    monkeypatch.setattr(registry, "resolve_preset", counting)
    return calls


#: The run's model in the counting tests: the metrics' chance baselines build ``random`` and
#: ``frequent`` backends of their own (their own specs), which must not blur the count.
MODEL = "frequent-text-loo"


def _replay(tmp: Path, name: str, rows: dict[str, str]) -> str:
    path = tmp / name
    path.write_text("".join(json.dumps({"item_id": k, "response": v}) + "\n" for k, v in rows.items()))
    return f"replay:{path}"


def test_a_run_parses_its_model_spec_once(tmp_path: Path, parsed: list[str]) -> None:
    # Parsed 4 times before: the early typo check, load_model, the backend's constructor and the
    # plugin provenance (5 with --no-image).
    run_benchmark(RunConfig(benchmark="unit", data="6", model=MODEL, no_image=True), tmp_path / "run")
    assert parsed.count(MODEL) == 1


def test_a_judged_run_parses_each_spec_once(tmp_path: Path, parsed: list[str]) -> None:
    model = _replay(tmp_path, "answers.jsonl", {"unit/000": "A", "unit/001": "no idea"})
    judge = _replay(tmp_path, "judge.jsonl", {"unit/001": "B"})
    res = run_benchmark(RunConfig(benchmark="unit", data="2", model=model, judge=judge), tmp_path / "run")
    assert (parsed.count(model), parsed.count(judge)) == (1, 1)
    assert res.metrics["judge"]["answered"] == 1  # the judge was built and asked, from its ModelSpec


def test_evaluate_parses_once(tmp_path: Path, parsed: list[str]) -> None:
    evaluate("unit", MODEL, data="4", out=tmp_path / "run")
    assert parsed.count(MODEL) == 1


def test_a_backend_from_load_model_brings_its_parse(tmp_path: Path, parsed: list[str]) -> None:
    backend = load_model(MODEL, ModelOptions())
    assert backend.model_spec == ModelSpec(MODEL, MODEL, "") and backend.spec == MODEL
    cfg = RunConfig(benchmark="unit", data="4", model=MODEL)
    run_benchmark(cfg, tmp_path / "a", backend=backend)  # a probe's shared model: not parsed again
    assert parsed.count(MODEL) == 1
    # evaluate(backend) names the run's model by the resolved spec: recognised too.
    evaluate("unit", backend, data="4", out=tmp_path / "b")
    assert parsed.count(MODEL) == 1


def test_a_callers_parse_is_reused_and_checked(tmp_path: Path, parsed: list[str]) -> None:
    spec = parse_spec(MODEL)
    cfg = RunConfig(benchmark="unit", data="4", model=MODEL)
    run_benchmark(cfg, tmp_path / "a", model_spec=spec)
    assert parsed.count(MODEL) == 1
    with pytest.raises(ScopebenchError, match="model_spec is the parse of 'frequent'"):
        run_benchmark(cfg, tmp_path / "b", model_spec=parse_spec("frequent"))


def test_backends_take_the_model_spec_plugins_the_string(monkeypatch: pytest.MonkeyPatch) -> None:
    got: list[object] = []

    class Plugin(RandomBackend):
        takes_model_spec = False  # a plugin written against the documented str contract

        def __init__(self, spec: str, options: ModelOptions) -> None:
            got.append(spec)
            super().__init__(spec, options)

    monkeypatch.setitem(registry._SCHEMES, "plug", Plugin)
    monkeypatch.setattr(registry, "_BARE", registry._BARE | {"plug"})
    plug = load_model("plug")
    assert got == ["plug"] and plug.spec == "plug" and plug.model_spec == ModelSpec("plug", "plug", "")
    built = load_model("random")
    assert isinstance(built, RandomBackend) and built.model_spec is not None
    # A backend built directly from a string keeps that string and has no parse to share.
    direct = RandomBackend("random", ModelOptions())
    assert direct.spec == "random" and direct.model_spec is None

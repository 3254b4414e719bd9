"""The step contract: one declaration per step, used by ``build run`` and by each subcommand."""

from __future__ import annotations

from pathlib import Path

import pytest
from curate_helpers import make_sources

from scopebench.cli import main
from scopebench.curate import run_build
from scopebench.curate.pipeline import STEPS
from scopebench.curate.questions import QuestionConfig
from scopebench.errors import DataFormatError


def test_the_steps_in_order_each_with_its_config_class() -> None:
    # Catches a step added to the CLI but not to build run (or the other way round).
    assert list(STEPS) == ["ingest", "questions", "generate", "filter", "split", "export"]
    assert STEPS["questions"].config is QuestionConfig
    got = STEPS["questions"].make_config({"options": 3}, seed=4)
    assert got == QuestionConfig(seed=4, options=3)


def test_signature_follows_settings_inputs_and_the_previous_step() -> None:
    # Catches a cache key that ignores a setting or an upstream change (a stale step reused).
    step = STEPS["questions"]
    base = step.signature(QuestionConfig(), "k0")
    assert base == step.signature(QuestionConfig(), "k0")
    assert len({base, step.signature(QuestionConfig(options=3), "k0"), step.signature(QuestionConfig(), "k1"),
                step.signature(QuestionConfig(), "k0", "taxonomy-hash")}) == 4  # fmt: skip


def test_a_misspelt_setting_in_build_yaml_is_refused_before_any_step_runs(tmp_path: Path) -> None:
    # Catches a section key the step's config does not know being ignored silently.
    make_sources(tmp_path)
    (tmp_path / "build.yaml").write_text("manifest: manifest.yaml\nout: out\nquestions: {optons: 3}\n")
    with pytest.raises(DataFormatError, match=r"questions settings: unknown key\(s\) optons"):
        run_build(tmp_path / "build.yaml")
    assert not (tmp_path / "out").exists()
    (tmp_path / "build.yaml").write_text("manifest: manifest.yaml\nout: out\nsplit: {tiny: many}\n")
    with pytest.raises(DataFormatError, match=r"split\.tiny"):
        run_build(tmp_path / "build.yaml")


def test_a_subcommand_builds_the_same_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Catches a CLI that checks its options differently from build.yaml.
    assert main(["build", "questions", str(tmp_path), "--out", str(tmp_path / "o"), "--options", "1"]) == 2
    assert "at least 2 options" in capsys.readouterr().err

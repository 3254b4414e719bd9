"""Fixtures of the fine-tuning tests: a small demo benchmark and the tiny random-weight models."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def small_demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo benchmark at 2 test items per class (train: 10 per class)."""
    from scopebench.benchmarks.demo import generate_demo

    return generate_demo(tmp_path_factory.mktemp("ft-demo") / "demo", seed=0, n_per_class=2)


@pytest.fixture(scope="session")
def tiny_clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("transformers")
    from scopebench.testing.tiny import build_tiny_clip

    return build_tiny_clip(tmp_path_factory.mktemp("ft-clip") / "clip", kind="clip", seed=0)


@pytest.fixture(scope="session")
def tiny_vlm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("transformers")
    from scopebench.testing.tiny import build_tiny_generative

    return build_tiny_generative(tmp_path_factory.mktemp("ft-vlm") / "qwen", "qwen2-vl", seed=0)

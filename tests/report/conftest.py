"""Fixtures of the report tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from html_fixtures import A_OUTCOMES, B_OUTCOMES, make_html_run


@pytest.fixture(scope="module")
def html_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two SPUR runs (``a``, ``b``) over the same 12 items."""
    root = tmp_path_factory.mktemp("html_runs")
    img_dir = root / "images"
    return make_html_run(root, "a", A_OUTCOMES, img_dir), make_html_run(root, "b", B_OUTCOMES, img_dir)

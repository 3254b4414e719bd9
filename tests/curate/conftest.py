"""Shared fixtures of the build tests."""

from __future__ import annotations

import pytest
from curate_helpers import make_sources


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """Ingest + questions of :func:`make_sources`, shared by a module's tests (read-only)."""
    from scopebench.curate import ingest, make_questions

    root = tmp_path_factory.mktemp("sources")
    manifest = make_sources(root)
    ing = ingest(manifest, root / "ingest")
    q = make_questions(root / "ingest", root / "questions")
    return {"root": root, "ingest": ing, "questions": q}

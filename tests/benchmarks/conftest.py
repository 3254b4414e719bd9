"""Fixtures shared by the benchmark-loader tests: fixture folders and small file writers."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from helpers import FIXTURES


@pytest.fixture
def pathmmu_dir() -> Path:
    return FIXTURES / "pathmmu"


@pytest.fixture
def spur_dir() -> Path:
    return FIXTURES / "spur"


@pytest.fixture
def local_dir() -> Path:
    return FIXTURES / "local"


def write_png(path: Path, color: tuple[int, int, int] = (10, 20, 30)) -> Path:
    """Write a 16×16 image (format from the suffix) and return its path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (16, 16), color).save(path)
    return path


@pytest.fixture
def png() -> Callable[..., Path]:
    return write_png


@pytest.fixture
def write_jsonl() -> Callable[[Path, Iterable[Any]], Path]:
    """Write rows as JSON Lines; a ``str`` row is written verbatim (for malformed lines)."""

    def write(path: Path, rows: Iterable[Any]) -> Path:
        lines = [row if isinstance(row, str) else json.dumps(row) for row in rows]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path

    return write

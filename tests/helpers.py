"""Helpers shared by tests (importable as ``helpers``; pytest puts tests/ on sys.path)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from PIL import Image

from scopebench.items import ImageRef, Item
from scopebench.models import ModelOptions, load_model

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"


def make_items(n: int, n_choices: int = 4, *, image_dir: Path | None = None) -> list[Item]:
    """``n`` items whose answer cycles through the options (item i → option i % n_choices)."""
    items = []
    for i in range(n):
        images: tuple[ImageRef, ...] = ()
        problems: tuple[str, ...] = ()
        if image_dir is not None:
            p = image_dir / f"img{i % 3}.png"
            if not p.exists():
                Image.new("RGB", (8, 8), (i * 40 % 255, 0, 0)).save(p)
            images = (ImageRef(key=p.name, path=p),)
        items.append(
            Item(
                id=f"unit/{i:03d}",
                benchmark="unit",
                split="test",
                task="t1" if i % 2 == 0 else "t2",
                subset="s",
                question=f"Question {i}?",
                choices=tuple(f"option {j}" for j in range(n_choices)),
                answer_index=i % n_choices,
                images=images,
                problems=problems,
            )
        )
    return items


def check_keeps_freed_memory(monkeypatch: pytest.MonkeyPatch, module: ModuleType, spec: str) -> Any:
    """Load ``spec`` on the CPU and check its backend (in ``module``) sets and releases the allocator.

    The settings are made once, when the weights load (not when the backend is built: a finished
    run's resume builds it and loads nothing), and the heap's free memory is given back at close.
    Returns the closed backend.
    """
    calls: list[tuple[str, str | None]] = []
    monkeypatch.setattr(module, "keep_freed_memory", lambda device: calls.append(("keep", device)) or True)
    monkeypatch.setattr(module, "release_freed_memory", lambda: calls.append(("release", None)))
    backend: Any = load_model(spec, ModelOptions(device="cpu"))
    assert calls == []
    backend._ensure_loaded()
    backend._ensure_loaded()
    assert calls == [("keep", "cpu")]
    backend.close()
    assert calls == [("keep", "cpu"), ("release", None)]
    return backend

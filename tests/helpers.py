"""Helpers shared by tests (importable as ``helpers``; pytest puts tests/ on sys.path)."""

from __future__ import annotations

from pathlib import Path

from PIL import Image

from scopebench.items import ImageRef, Item

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

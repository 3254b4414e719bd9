"""`review init --limit N`: a seeded sample stratified by task and image, recorded in the project;
docs/review.md's example run as written."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from scopebench.cli import main
from scopebench.items import ImageRef, Item
from scopebench.review.errors import Invalid
from scopebench.review.sampling import sample_items

DOC = Path(__file__).resolve().parents[2] / "docs" / "review.md"
_BLOCK = re.compile(r"<!-- review-sample: (?P<name>[\w.]+) -->\n```\w*\n(?P<body>.*?)```", re.S)


def _items(spec: dict[str, tuple[int, int]]) -> list[Item]:
    """Items sorted by task then image: ``spec[task] = (images, questions per image)``."""
    out = []
    for task, (n_images, per_image) in spec.items():
        for i in range(n_images):
            ref = ImageRef(key=f"{task}-{i}", data=b"x")
            for q in range(per_image):
                out.append(
                    Item(
                        id=f"{task}-{i}-{q}",
                        benchmark="t",
                        split="test",
                        question="?",
                        choices=("a", "b"),
                        answer_index=0,
                        images=(ref,),
                        task=task,
                    )
                )
    return out


def test_sample_is_proportional_spread_over_images_and_in_file_order() -> None:
    """Catches the head-of-file slice (all of one image and task), a quota that ignores task
    sizes, a second question of an image taken while another image has none, and a shuffled
    output order."""
    items = _items({"big": (6, 5), "mid": (4, 5), "small": (2, 5)})
    picked, record = sample_items(items, 6, seed=3)
    assert Counter(it.task for it in picked) == {"big": 3, "mid": 2, "small": 1}
    assert len({it.images[0].key for it in picked}) == 6
    positions = [items.index(it) for it in picked]
    assert positions == sorted(positions)
    assert record == {
        "method": "stratified by task, one item per image first",
        "seed": 3,
        "limit": 6,
        "from_items": 60,
        "items": 6,
        "per_task": {"big": 3, "mid": 2, "small": 1},
        "images": 6,
    }


def test_sample_is_seeded_and_covers_every_task() -> None:
    """Catches an unseeded draw (two calls differ), a seed that is ignored (every seed the same),
    a small task rounded away, and a limit that returns more or fewer items than asked."""
    items = _items({"a": (10, 3), "b": (10, 3), "tiny": (1, 1)})
    first = [it.id for it in sample_items(items, 9, seed=0)[0]]
    assert first == [it.id for it in sample_items(items, 9, seed=0)[0]]
    assert len({tuple(it.id for it in sample_items(items, 9, seed=s)[0]) for s in range(5)}) > 1
    for n in (3, 9, 20, 60):
        picked, _ = sample_items(items, n, seed=1)
        assert len(picked) == n and "tiny" in {it.task for it in picked}
    # Within a task, every image gets one question before any image gets a second one.
    picked, _ = sample_items(items, 25, seed=2)
    per_image = Counter(it.images[0].key for it in picked if it.task == "a")
    assert max(per_image.values()) - min(per_image.values()) <= 1 and len(per_image) == 10
    assert [it.id for it in sample_items(items, 100, seed=0)[0]] == [it.id for it in items]
    with pytest.raises(Invalid, match="at least 1"):
        sample_items(items, 0, seed=0)


def test_docs_example_runs_as_written_and_is_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Catches a doc whose printed output no longer matches the command, and a sample that is not
    kept in the project (the `project_created` event export reads)."""
    files = {m["name"]: m["body"] for m in _BLOCK.finditer(DOC.read_text(encoding="utf-8"))}
    assert set(files) == {"make_bench.py", "run.sh", "output"}
    monkeypatch.chdir(tmp_path)
    (tmp_path / "make_bench.py").write_text(files["make_bench.py"], encoding="utf-8")
    lines = files["run.sh"].splitlines()
    assert lines[0] == "python make_bench.py"
    subprocess.run([sys.executable, "make_bench.py"], check=True)
    argv = lines[1].split()
    assert argv[0] == "scopebench"
    capsys.readouterr()
    assert main(argv[1:]) == 0
    assert capsys.readouterr().out == files["output"]

    from sqlalchemy import select

    from scopebench.review.db import Event, ItemRow, open_database

    with open_database("sample.db")() as db:
        keys = db.scalars(select(ItemRow.key).order_by(ItemRow.position)).all()
        (event,) = db.scalars(select(Event).where(Event.kind == "project_created")).all()
    assert len(keys) == 6 and len({k.rsplit("-", 1)[0] for k in keys}) == 6  # six images
    assert event.payload["sample"]["per_task"] == {"modality": 1, "organelle": 3, "stain": 2}
    assert event.payload["sample"]["seed"] == 1

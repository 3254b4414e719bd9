"""Run directories for the HTML-report tests (imported by ``conftest.py`` and the tests): two hand-built SPUR runs with every outcome.

Items (12, SPUR tasks NP and HI, subsets ``single``/``multi``, metadata ``modality`` on some):

* item 0's question and options hold HTML (``<script>``, ``&``, quotes) to check escaping;
* items 0–9 have a PNG on disk (items 8 and 9 share one), item 10 points to a missing file,
  item 11 has no image at all.

Run ``a`` outcomes: correct 0, 1, 2, 3, 6, 7; wrong 4, 5, 8; unparsed 9; error 10; missing_image 11.
Run ``b`` outcomes: correct 0, 4, 5, 8, 9; wrong 1, 2, 3, 6, 7, 10; missing_response 11.
"""

from __future__ import annotations

import json
from pathlib import Path

from PIL import Image

from scopebench.items import ImageRef, Item, Record
from scopebench.store import RunStore

EVIL_QUESTION = 'Is <b>this</b> & "that" <script>window.__pwned = 1</script> a cell?'
EVIL_OPTION = "<i>mitosis</i> & more"
EVIL_RESPONSE = "I think <maybe> A & B </pre><script>window.__pwned = 2</script>"

A_OUTCOMES = {
    **dict.fromkeys((0, 1, 2, 3, 6, 7), "correct"),
    **dict.fromkeys((4, 5, 8), "wrong"),
    9: "unparsed",
    10: "error",
    11: "missing_image",
}
B_OUTCOMES = {
    **dict.fromkeys((0, 4, 5, 8, 9), "correct"),
    **dict.fromkeys((1, 2, 3, 6, 7, 10), "wrong"),
    11: "missing_response",
}


def _items(img_dir: Path) -> list[Item]:
    img_dir.mkdir(parents=True, exist_ok=True)
    items = []
    for i in range(12):
        images: tuple[ImageRef, ...] = ()
        if i < 10:
            p = img_dir / f"img{min(i, 8)}.png"
            if not p.exists():
                Image.new("RGB", (300, 200), (20 * i, 100, 200 - 10 * i)).save(p)
            images = (ImageRef(key=p.name, path=p),)
        elif i == 10:
            images = (ImageRef(key="gone.png", path=img_dir / "gone.png"),)
        choices = (EVIL_OPTION if i == 0 else "option A", "option B", "option C")
        items.append(
            Item(
                id=f"spur/q{i:02d}",
                benchmark="spur",
                split="test",
                task="NP" if i % 2 == 0 else "HI",
                subset="single" if i < 6 else "multi",
                question=EVIL_QUESTION if i == 0 else f"Question {i}: what is shown?",
                choices=choices,
                answer_index=i % 3,
                images=images,
                metadata={"modality": "light" if i % 3 == 0 else "fluorescence"} if i < 9 else {},
            )
        )
    return items


def _record(item: Item, model: str, outcome: str) -> Record:
    ans = item.answer_index or 0
    base = {"item_id": item.id, "model": model, "task": item.task, "subset": item.subset, "split": item.split}
    base["answer_index"] = ans
    if outcome == "correct":
        return Record(**base, status="ok", choice=ans, correct=True, response=f"The answer is {'ABC'[ans]}")
    if outcome == "wrong":
        return Record(**base, status="ok", choice=(ans + 1) % 3, correct=False, response="The answer is X")
    if outcome == "unparsed":
        return Record(**base, status="unparsed", correct=False, response=EVIL_RESPONSE, error="no option")
    if outcome == "error":
        return Record(**base, status="error", correct=False, error="model call failed: <timeout> & retry")
    return Record(**base, status=outcome, correct=False, error=outcome.replace("_", " "))  # type: ignore[arg-type]


def make_html_run(root: Path, name: str, outcomes: dict[int, str], img_dir: Path) -> Path:
    """A SPUR run directory named ``name`` with the outcomes given per item index."""
    run = root / name
    run.mkdir(parents=True)
    cfg = {
        "benchmark": "spur",
        "model": f"model-{name}",
        "data": None,
        "data_fingerprint": "fp",
        "protocol": "default",
        "parser_version": "choice-1",
    }
    (run / "run.json").write_text(json.dumps(cfg), encoding="utf-8")
    items = _items(img_dir)
    with RunStore(run / "records.sqlite") as store:
        store.add_items(items)
        store.add([_record(it, cfg["model"], outcomes[i]) for i, it in enumerate(items)])
    return run

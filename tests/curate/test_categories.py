"""SPUR's panel categories: `build filter`'s `categories` from a table or a zero-shot CLIP model,
counts in the card, `panel_category` on the exported items, and `scopebench report`'s breakdown."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from scopebench.cli import main
from scopebench.curate import export, split
from scopebench.curate.filtering.categories import SPUR_CATEGORIES
from scopebench.curate.output import read_rows
from scopebench.curate.splits import SplitConfig


def _ids(built: dict) -> list[str]:
    splits, _ = read_rows(built["root"] / "questions")
    return [r["image_id"] for r in splits["test"]]


def test_table_categories_reach_the_card_the_items_and_the_report(built: dict, tmp_path: Path) -> None:
    """Catches categories lost between filter and export, a bad table row dropped silently or an
    image dropped for it, case-sensitive matching, and a report that ignores built categories."""
    ids = _ids(built)
    with (tmp_path / "categories.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["image_id", "category"])
        w.writerows([[ids[0], "Tissue"], [ids[1], "cell"], [ids[2], "diagram"], ["nope", "cell"]])
    doc = (Path(__file__).resolve().parents[2] / "docs" / "build.md").read_text(encoding="utf-8")
    m = re.search(r"<!-- categories-example: filter.yaml -->\n```yaml\n(?P<body>.*?)```", doc, re.S)
    assert m is not None  # docs/build.md's configuration, run as written
    (tmp_path / "filter.yaml").write_text(m["body"])
    argv = ["build", "filter", str(built["root"] / "questions"), "--out", str(tmp_path / "f"),
            "--config", str(tmp_path / "filter.yaml")]  # fmt: skip
    assert main(argv) == 0
    summary = json.loads((tmp_path / "f/build.json").read_text())
    assert summary["dropped"] == {} and summary["kept"] == summary["items_in"]
    counts = summary["stats"]["categories"]["counts"]
    assert counts == {"cell": 1, "tissue": 1, "unknown": len(ids) - 2}
    problems = {
        (p["row"], p["kind"])
        for p in map(json.loads, (tmp_path / "f/problems.jsonl").read_text().splitlines())
    }
    assert {("2", "unknown_category"), ("3", "unknown_image")} <= problems
    assert (ids[2], "uncategorised") in problems
    card = (tmp_path / "f/README.md").read_text()
    assert "## Panel categories (SPUR)" in card and "| tissue | 1 |" in card

    split(tmp_path / "f", tmp_path / "s", SplitConfig())
    export(tmp_path / "s", tmp_path / "e")
    items = [json.loads(x) for x in (tmp_path / "e/local/data.jsonl").read_text().splitlines()]
    by_cat = {i["panel_category"] for i in items if i["id"].startswith(ids[0])}
    assert by_cat == {"tissue"} and {i["panel_category"] for i in items if i["id"].startswith(ids[2])} == {
        "unknown"
    }

    data = str(tmp_path / "e/local/data.jsonl")
    assert (
        main(["run", "--bench", "local", "--data", data, "--model", "random", "--out", str(tmp_path / "r")])
        == 0
    )
    assert main(["report", str(tmp_path / "r"), "--out", str(tmp_path / "rep"), "--resamples", "20"]) == 0
    found = next((tmp_path / "rep").rglob("spur_breakdowns.json"))
    rows = {r["group"]: r["n"] for r in json.loads(found.read_text())["all_by_category"]}
    n_first = sum(i["id"].startswith(ids[0]) for i in items)
    assert rows["category=Tissue"] == n_first and sum(rows.values()) == len(items)


def test_zero_shot_clip_gives_every_image_a_category_with_scores(built: dict, tmp_path: Path) -> None:
    """The tiny random CLIP (no download): catches a categoriser that skips images, returns names
    outside the list, or scores that are not a distribution over the categories."""
    pytest.importorskip("transformers")
    from scopebench.testing.tiny import build_tiny_clip

    clip = build_tiny_clip(tmp_path / "clip", kind="clip", seed=0)
    (tmp_path / "filter.yaml").write_text(f"categories: {{model: 'clip:{clip}'}}\n")
    argv = ["build", "filter", str(built["root"] / "questions"), "--out", str(tmp_path / "f"),
            "--config", str(tmp_path / "filter.yaml")]  # fmt: skip
    assert main(argv) == 0
    records = [json.loads(x) for x in (tmp_path / "f/gates/categories.jsonl").read_text().splitlines()]
    assert sorted(r["image_id"] for r in records) == sorted(_ids(built))
    for r in records:
        assert r["category"] in SPUR_CATEGORIES and r["source"] == f"clip:{clip}"
        assert set(r["scores"]) == set(SPUR_CATEGORIES) and sum(r["scores"].values()) == pytest.approx(
            1, abs=1e-4
        )
        assert r["category"] == max(r["scores"], key=r["scores"].get)

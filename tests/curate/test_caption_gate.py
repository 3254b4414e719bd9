"""The caption gate (SPUR): questions a text-only model answers from the figure's caption are
dropped (`caption_answers`); blind accuracy with and without the caption in stats and card."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from scopebench.cli import main
from scopebench.curate.filtering.caption import CaptionGateConfig, caption_prompt
from scopebench.curate.filtering.step import gate_items
from scopebench.curate.output import read_rows
from scopebench.errors import DataFormatError


def _setup(built: dict, tmp: Path) -> tuple[list, str, str, Path]:
    """Texts for two images (the first caption gives its answers away) and a row naming no image;
    a replay model right on every captioned question of the first image only."""
    splits, _ = read_rows(built["root"] / "questions")
    rows = splits["test"]
    items = [it for r in rows for it in gate_items(r)]
    first, second = rows[0]["image_id"], rows[1]["image_id"]
    with (tmp / "texts.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["image_id", "caption", "context"])
        w.writerow([first, "Brightfield micrograph of an H&E stained section.", "From a pathology atlas."])
        w.writerow([second, "A figure.", ""])
        w.writerow(["no-such-image", "Lost caption.", ""])
    lines = []
    for it in items:
        right, wrong = f"({'ABCD'[it.answer]})", f"({'ABCD'[(it.answer + 1) % len(it.options)]})"
        lines.append({"item_id": it.id, "response": wrong})
        lines.append({"item_id": f"{it.id}#caption", "response": right if it.image_id == first else wrong})
    (tmp / "model.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return items, first, second, tmp / "texts.csv"


def test_caption_gate_drops_what_the_caption_answers(built: dict, tmp_path: Path) -> None:
    """docs/build.md's caption configuration, run as written. Catches a gate that never shows the caption (nothing dropped), drops questions of images
    without a caption, mixes up with/without accuracies, loses the bad texts row, or leaves the
    card without the section."""
    items, first, second, _texts = _setup(built, tmp_path)
    doc = (Path(__file__).resolve().parents[2] / "docs" / "build.md").read_text(encoding="utf-8")
    m = re.search(r"<!-- caption-example: filter.yaml -->\n```yaml\n(?P<body>.*?)```", doc, re.S)
    assert m is not None
    (tmp_path / "filter.yaml").write_text(m["body"], encoding="utf-8")
    argv = ["build", "filter", str(built["root"] / "questions"), "--out", str(tmp_path / "f"),
            "--config", str(tmp_path / "filter.yaml")]  # fmt: skip
    assert main(argv) == 0
    summary = json.loads((tmp_path / "f/build.json").read_text())
    n_first = sum(it.image_id == first for it in items)
    n_second = sum(it.image_id == second for it in items)
    assert n_first > 0 and summary["dropped"] == {"caption_answers": n_first}
    stats = summary["stats"]["caption"]
    assert (stats["with_caption"], stats["without_caption"]) == (
        n_first + n_second,
        len(items) - n_first - n_second,
    )
    assert stats["accuracy_with_caption"] == {
        "entering": pytest.approx(n_first / (n_first + n_second)),
        "kept": 0.0,
    }
    assert stats["accuracy_without_caption"] == {"entering": 0.0, "kept": 0.0}
    records = [json.loads(x) for x in (tmp_path / "f/gates/caption.jsonl").read_text().splitlines()]
    assert len(records) == len(items)
    assert {r["id"] for r in records if r["reason"] == "caption_answers"} == {
        it.id for it in items if it.image_id == first
    }
    problems = [json.loads(x) for x in (tmp_path / "f/problems.jsonl").read_text().splitlines()]
    assert [(p["source"], p["row"], p["kind"]) for p in problems] == [("texts.csv", "2", "unknown_image")]
    card = (tmp_path / "f/README.md").read_text()
    assert (
        "## Caption gate" in card
        and f"| caption + question + options | {100 * n_first / (n_first + n_second):.1f}% | 0.0% |" in card
    )


def test_prompt_and_config_checks(tmp_path: Path) -> None:
    """Catches a prompt that drops the context or the question, and configs the rule cannot apply."""
    assert caption_prompt("Which stain?", "H&E section.", "Atlas.") == (
        "Figure caption: H&E section.\nContext: Atlas.\nQuestion: Which stain?"
    )
    assert caption_prompt("Q?", "C.") == "Figure caption: C.\nQuestion: Q?"
    texts = tmp_path / "t.csv"
    texts.write_text("image_id,caption\n")
    with pytest.raises(DataFormatError, match="min_models"):
        CaptionGateConfig(models=("a",), texts=texts, min_models=2)
    with pytest.raises(DataFormatError, match="no file"):
        CaptionGateConfig(models=("a",), texts=tmp_path / "missing.csv")

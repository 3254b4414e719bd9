"""`build figures` (PathMMU's data step): docs/build.md's example run as written — compound figures
cropped into sub-figures that keep the caption, problem rows, and the crops ingested."""

from __future__ import annotations

import csv
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from scopebench.cli import main
from scopebench.curate.figures import split_figures

DOC = Path(__file__).resolve().parents[2] / "docs" / "build.md"
_BLOCK = re.compile(r"<!-- figures: (?P<name>[\w.]+) -->\n```\w*\n(?P<body>.*?)```", re.S)


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_docs_example_crops_keep_captions_and_ingest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Catches crops that are not the panels' pixels (an off-by-one box), a crop without its
    caption, a texts.csv that does not join with ingest's rows, a silently dropped figure or
    caption row, and a doc whose report no longer matches."""
    files = {m["name"]: m["body"] for m in _BLOCK.finditer(DOC.read_text(encoding="utf-8"))}
    assert set(files) == {"make_figures.py", "run.sh", "crops.csv"}
    monkeypatch.chdir(tmp_path)
    (tmp_path / "make_figures.py").write_text(files["make_figures.py"], encoding="utf-8")
    lines = files["run.sh"].splitlines()
    assert lines[0] == "python make_figures.py"
    subprocess.run([sys.executable, "make_figures.py"], check=True)
    for line in lines[1:]:
        argv = shlex.split(line)
        assert argv[0] == "scopebench" and main(argv[1:]) == 0, argv
    assert (tmp_path / "atlas/crops.csv").read_text().replace("\r\n", "\n") == files["crops.csv"]
    fig = np.asarray(Image.open("figures/fig1.png"))
    for row in _rows(tmp_path / "atlas/crops.csv"):
        y0, x0, y1, x1 = (int(row[k]) for k in ("y0", "x0", "y1", "x1"))
        src = np.asarray(Image.open(f"figures/{row['figure']}"))
        assert np.array_equal(np.asarray(Image.open(f"atlas/images/{row['image']}")), src[y0:y1, x0:x1])
    assert fig[12:92, 12:112].std() > 0  # the panels are textured, not blank
    texts = _rows(tmp_path / "atlas/texts.csv")
    assert [t["caption"][:6] for t in texts] == ["(A-D) "] * 4 + ["Kidney"]
    problems = [json.loads(x) for x in (tmp_path / "atlas/problems.jsonl").read_text().splitlines()]
    assert {(p["row"], p["kind"]) for p in problems} == {
        ("2", "unknown_image"),
        ("fig3.png", "missing_caption"),
    }
    summary = json.loads((tmp_path / "atlas/build.json").read_text())
    assert (summary["items_in"], summary["kept"], summary["dropped"]) == (3, 2, {"missing_caption": 1})
    assert summary["stats"]["crops"] == 4 and summary["stats"]["panels_per_figure"] == {"1": 1, "4": 1}
    ingest = json.loads((tmp_path / "ingest/build.json").read_text())
    assert ingest["kept"] == 5
    from scopebench.curate.output import read_rows

    rows, _ = read_rows(tmp_path / "ingest")
    assert {(r["dataset"], r["source_path"]) for r in rows["test"]} == {
        (t["source"], t["image"]) for t in texts
    }


def test_sidecar_captions_and_unreadable_figures(tmp_path: Path) -> None:
    """Catches sidecar .txt captions being ignored and an unreadable figure crashing the step."""
    figs = tmp_path / "figs"
    figs.mkdir()
    Image.fromarray(np.random.default_rng(1).integers(0, 200, (40, 60, 3), dtype=np.uint8)).save(
        figs / "a.png"
    )
    (figs / "a.txt").write_text("  Lung,\n H&E.  ")
    (figs / "b.png").write_bytes(b"not a png")
    (figs / "b.txt").write_text("Broken.")
    result = split_figures(figs, tmp_path / "out")
    assert (result.kept, dict(result.dropped)) == (1, {"bad_image": 1})
    assert [(p.row, p.kind) for p in result.problems] == [("b.png", "bad_image")]
    assert _rows(tmp_path / "out/texts.csv") == [
        {"source": "figs", "image": "a.png", "caption": "Lung, H&E."}
    ]

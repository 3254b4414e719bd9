from __future__ import annotations

from pathlib import Path

import pytest
from curate_helpers import make_sources

from scopebench.cli import main
from scopebench.curate import run_build
from scopebench.curate.ingestion.step import IngestResult


def _config(root: Path, options: int = 4) -> Path:
    if not (root / "manifest.yaml").exists():
        make_sources(root)
    (root / "build.yaml").write_text(
        f"manifest: manifest.yaml\nout: out\nseed: 5\nquestions: {{options: {options}}}\n"
        "split: {fractions: {train: 0.5, test: 0.5}, tiny: 1}\n"
    )
    return root / "build.yaml"


def test_rerun_redoes_only_what_changed(tmp_path: Path) -> None:
    first = run_build(_config(tmp_path), workers=1)
    # 7 distinct files are read; dup.png has img1.png's bytes, so its conversion is reused.
    assert isinstance(first.steps[0], IngestResult)
    assert (first.steps[0].converted, first.steps[0].reused) == (6, 1)
    assert [s.cached for s in first.steps] == [False] * 4
    assert first.steps[0].kept == 6 and first.steps[-1].stats["local_items"] == 27

    again = run_build(_config(tmp_path))
    assert [s.cached for s in again.steps] == [True] * 4
    assert again.steps[0].dropped == first.steps[0].dropped  # the summary comes back from build.json
    assert len(again.steps[0].problems) == len(first.steps[0].problems)

    changed = run_build(_config(tmp_path, options=3))
    assert [s.cached for s in changed.steps] == [True, False, False, False]

    # Fix the misspelt modality: ingest reruns but converts only the newly valid image (the
    # undecodable one's failure is cached by its bytes too); the rest come from the image cache.
    csv = tmp_path / "a.csv"
    csv.write_text(csv.read_text().replace("light microscpy", "light microscopy"))
    fixed = run_build(_config(tmp_path, options=3))
    assert [s.cached for s in fixed.steps] == [False] * 4
    ingested = fixed.steps[0]
    assert isinstance(ingested, IngestResult) and (ingested.converted, ingested.reused) == (1, 7)
    assert fixed.steps[0].kept == 7 and "unknown_vocabulary" not in fixed.steps[0].dropped


def test_cli_build_run_prints_the_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["build", "run", str(_config(tmp_path))]) == 0
    out = capsys.readouterr().out
    assert "build summary" in out
    assert "missing_image: 1" in out and "unknown_vocabulary: 1" in out
    flat = " ".join(out.split())
    assert (
        "src_a row 2 field modality: modality 'light microscpy' is unknown; "
        "the nearest known values are modality 'light microscopy'." in flat
    )
    assert "(did you mean 'light microscopy'?)" in flat


def test_cli_errors_are_messages(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["build", "ingest", str(tmp_path / "none.yaml"), "--out", str(tmp_path / "o")]) == 2
    assert "manifest not found" in capsys.readouterr().err
    assert main(["build", "split", str(tmp_path), "--out", str(tmp_path / "o"), "--fractions", "train"]) == 2
    assert "name=share" in capsys.readouterr().err
    assert main(["build", "questions", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    assert "not a scopebench build output" in capsys.readouterr().err

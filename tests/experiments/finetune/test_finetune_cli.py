"""``scopebench finetune``: the command line end to end and its user errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("accelerate")

from scopebench.cli import main


def test_finetune_contrastive_command(
    small_demo: Path, tiny_clip: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "ft"
    argv = [
        "finetune",
        "contrastive",
        "--model",
        f"clip:{tiny_clip}",
        "--out",
        str(out),
        "--bench",
        "demo",
        "--split",
        "train",
        "--data",
        str(small_demo),
        "--steps",
        "2",
        "--batch-size",
        "8",
        "--lr",
        "1e-3",
        "--device",
        "cpu",
        "--eval-split",
        "test",
        "--eval-limit",
        "6",
        "--seed",
        "7",
        "--group-batches",
    ]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "trained 2 steps on 60 examples" in text and f"clip:{out / 'model'}" in text
    rec = json.loads((out / "finetune.json").read_text())
    assert rec["seed"] == 7 and rec["hyperparameters"]["group_batches"] is True
    assert rec["hyperparameters"]["freeze_temperature"] is False
    assert rec["evaluation"]["after"]["n"] == 6
    # The same command again resumes the finished fine-tune (no step runs twice).
    assert main(argv) == 0
    assert len((out / "train_log.jsonl").read_text().splitlines()) == 2


def test_finetune_user_errors(tmp_path: Path, tiny_clip: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["finetune", "generative", "--model", str(tiny_clip), "--out", str(tmp_path / "g")])
    assert code != 0 and "--bench" in capsys.readouterr().err
    code = main(
        [
            "finetune",
            "contrastive",
            "--model",
            str(tiny_clip),
            "--out",
            str(tmp_path / "c"),
            "--pairs",
            str(tmp_path / "none.jsonl"),
        ]
    )
    err = capsys.readouterr().err
    assert code != 0 and "does not exist" in err and "Traceback" not in err

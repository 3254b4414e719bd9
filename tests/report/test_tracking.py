"""`report --log-to tensorboard`: the logged scalars read back equal metrics.json."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from scopebench.cli import main
from scopebench.errors import MissingDependencyError, UsageError
from scopebench.report.tracking import log_run, metric_scalars


def read_events(folder: Path) -> tuple[dict[str, float], set[str]]:
    """Scalars and image tags of the TensorBoard event files under ``folder`` (TFRecord framing)."""
    from tensorboardX.proto import event_pb2

    scalars: dict[str, float] = {}
    images: set[str] = set()
    for path in folder.rglob("events.out.tfevents.*"):
        data = path.read_bytes()
        pos = 0
        while pos < len(data):
            (length,) = struct.unpack("<Q", data[pos : pos + 8])
            ev = event_pb2.Event.FromString(data[pos + 12 : pos + 12 + length])
            pos += 12 + length + 4  # length, its CRC, the record, its CRC
            for v in ev.summary.value:
                if v.HasField("simple_value"):
                    scalars[v.tag] = v.simple_value
                elif v.HasField("image"):
                    images.add(v.tag)
    return scalars, images


def test_metric_scalars_by_hand():
    nan = float("nan")
    m = {
        "overall": {"accuracy": 0.5, "ci_low": 0.2, "ci_high": 0.8, "n": 12},
        "by_task": [
            {"group": "task=NP", "accuracy": 1.0, "ci_low": nan, "ci_high": nan, "n": 1},
            {"group": "task=cell (µm)", "accuracy": 0.0, "ci_low": 0.0, "ci_high": 0.5, "n": 2},
        ],
    }
    assert metric_scalars(m) == {
        "overall/accuracy": 0.5,
        "overall/ci_low": 0.2,
        "overall/ci_high": 0.8,
        "overall/n": 12.0,
        "by_task/task-NP/accuracy": 1.0,
        "by_task/task-NP/n": 1.0,
        "by_task/task-cell___m_/accuracy": 0.0,
        "by_task/task-cell___m_/ci_low": 0.0,
        "by_task/task-cell___m_/ci_high": 0.5,
        "by_task/task-cell___m_/n": 2.0,
    }


def test_report_logs_to_tensorboard_and_reads_back(html_runs, tmp_path):
    pytest.importorskip("tensorboardX")
    logs = tmp_path / "tb"
    code = main(
        [
            *("-q", "report", str(html_runs[0]), "--out", str(tmp_path / "rep"), "--resamples", "50"),
            *("--log-to", "tensorboard", "--log-dir", str(logs)),
        ]
    )
    assert code == 0
    metrics = json.loads((tmp_path / "rep" / "a" / "metrics.json").read_text())
    scalars, images = read_events(logs / "a")
    assert scalars["overall/accuracy"] == pytest.approx(6 / 12)  # run a: 6 of 12 correct
    assert scalars["overall/accuracy"] == pytest.approx(metrics["overall"]["accuracy"], abs=1e-7)
    np_row = next(r for r in metrics["by_task"] if r["group"] == "task=NP")
    assert scalars["by_task/task-NP/accuracy"] == pytest.approx(np_row["accuracy"], abs=1e-7)
    assert scalars["by_task/task-NP/ci_low"] == pytest.approx(np_row["ci_low"], abs=1e-7)
    assert scalars["overall/n"] == 12
    assert "accuracy_by_task" in images


def test_missing_library_and_unknown_backend_are_user_errors(tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "mlflow", None)  # import mlflow now raises ImportError
    m = {"overall": {"accuracy": 0.5, "ci_low": 0.2, "ci_high": 0.8, "n": 12}}
    with pytest.raises(MissingDependencyError, match=r"scopebench\[track-mlflow\]"):
        log_run("mlflow", "a", m, tmp_path, tmp_path / "ml")
    with pytest.raises(UsageError, match="one of tensorboard, mlflow, wandb"):
        log_run("neptune", "a", m, tmp_path, tmp_path / "x")

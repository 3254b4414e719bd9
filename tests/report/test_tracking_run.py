"""`run`/`eval --log-to`: each finished run is logged, and W&B gets a table of the samples."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from test_tracking import _wandb_records, read_events

from scopebench.cli import main
from scopebench.store import load_run

RUN = ["-q", "run", "--bench", "unit", "--data", "6", "--model", "frequent"]


def test_run_logs_to_tensorboard(tmp_path: Path) -> None:
    # Catches: `run` without --log-to (click: no such option), or one that logs nothing / other numbers.
    pytest.importorskip("tensorboardX")
    out, logs = tmp_path / "r", tmp_path / "tb"
    assert main([*RUN, "--out", str(out), "--log-to", "tensorboard", "--log-dir", str(logs)]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    scalars, _images = read_events(logs)
    assert scalars["overall/accuracy"] == pytest.approx(metrics["overall"]["accuracy"])
    assert scalars["overall/n"] == 6
    assert [p.name for p in logs.iterdir()] == ["r"]  # named after the run folder


@pytest.mark.slow
def test_eval_logs_each_run_to_mlflow(tmp_path: Path) -> None:
    # Catches: `eval` logging only the last run of its grid, or under the folder path instead of the label.
    pytest.importorskip("mlflow")
    from mlflow.tracking import MlflowClient

    cfg = tmp_path / "eval.yaml"
    models = "[{spec: random, name: Random guess}, frequent]"
    cfg.write_text(f"out: g\nmodels: {models}\nbenchmarks: [{{name: unit, data: '5'}}]\n")
    logs = tmp_path / "ml"
    assert main(["-q", "eval", str(cfg), "--log-to", "mlflow", "--log-dir", str(logs)]) == 0
    client = MlflowClient(tracking_uri=f"sqlite:///{(logs / 'mlflow.db').resolve()}")
    runs = [r for e in client.search_experiments() for r in client.search_runs([e.experiment_id])]
    assert sorted(r.info.run_name for r in runs) == ["Random guess", "frequent"]
    assert {r.data.metrics["overall/n"] for r in runs} == {5.0}


def test_run_logs_a_wandb_samples_table_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Catches: no samples table; rows that do not match the stored records (reply, parsed letter,
    # correct); a table with a row missing; a prompt column read from anywhere but the stored
    # sample (it was empty while the prompt moved from ``extra`` to ``Record.sample``).
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path / "wandb"))
    out = tmp_path / "r"
    assert main([*RUN, "--out", str(out), "--log-to", "wandb", "--log-dir", str(tmp_path / "wandb")]) == 0
    (path,) = (tmp_path / "wandb").rglob("run-*.wandb")
    cap = time.monotonic() + 600  # as in test_tracking: wait for the exit record (the event)
    while not (records := _wandb_records(path.read_bytes()))[2] and time.monotonic() < cap:
        time.sleep(0.2)
    history, _config, complete = records
    assert complete
    assert history["samples/_type"] == "table-file" and history["samples/nrows"] == 6
    (table_file,) = path.parent.rglob("samples_*.table.json")
    table = json.loads(table_file.read_text())
    assert table["columns"] == ["item_id", "prompt", "reply", "parsed", "correct", "status"]
    stored = {r.item_id: r for r in load_run(out).records}
    assert len(table["data"]) == len(stored) == 6
    for item_id, prompt, reply, parsed, correct, status in table["data"]:
        rec = stored[item_id]
        assert rec.sample is not None and rec.sample.prompt
        assert prompt == rec.sample.prompt
        assert (reply, correct, status) == (rec.response or "", rec.correct, rec.status)
        assert parsed == "ABCD"[rec.choice]

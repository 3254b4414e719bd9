"""`report --log-to tensorboard`: the logged scalars read back equal metrics.json."""

from __future__ import annotations

import json
import struct
import time
from pathlib import Path

import pytest

from scopebench.cli import main
from scopebench.errors import MissingDependencyError, UsageError
from scopebench.report.tracking import log_run, metric_scalars, run_params

#: What ``report`` logs as parameters for run ``a`` of ``html_runs`` with ``--resamples 50``.
PARAMS_A = {
    "model": "model-a",
    "benchmark": "spur",
    "protocol": "default",
    "parser_version": "choice-1",
    "data_fingerprint": "fp",
    "policy": "wrong",
    "bootstrap_seed": "0",
    "bootstrap_resamples": "50",
}


def read_events(folder: Path, texts: dict[str, str] | None = None) -> tuple[dict[str, float], set[str]]:
    """Scalars and image tags of the TensorBoard event files under ``folder`` (TFRecord framing).

    Text summaries go into ``texts`` (tag → text) when it is given.
    """
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
                elif texts is not None and v.metadata.plugin_data.plugin_name == "text":
                    texts[v.tag] = v.tensor.string_val[0].decode()
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
    texts: dict[str, str] = {}
    scalars, images = read_events(logs / "a", texts)
    assert scalars["overall/accuracy"] == pytest.approx(6 / 12)  # run a: 6 of 12 correct
    assert scalars["overall/accuracy"] == pytest.approx(metrics["overall"]["accuracy"], abs=1e-7)
    np_row = next(r for r in metrics["by_task"] if r["group"] == "task=NP")
    assert scalars["by_task/task-NP/accuracy"] == pytest.approx(np_row["accuracy"], abs=1e-7)
    assert scalars["by_task/task-NP/ci_low"] == pytest.approx(np_row["ci_low"], abs=1e-7)
    assert scalars["overall/n"] == 12
    assert "accuracy_by_task" in images
    table = next(t for tag, t in texts.items() if tag.startswith("params"))
    assert "| model | model-a |" in table and "| bootstrap_resamples | 50 |" in table


def test_run_params_by_hand(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a relative hub id must not accidentally exist as a folder
    run_json = {
        "benchmark": "pathmmu", "split": "test_tiny", "model": "hf:/data/lab/models/qwen2-vl-2b/",
        "mode": "choice-logprob", "protocol": "owner", "strategy": None, "seed": 7, "n_items": 1156,
        "limit": None, "no_image": False, "judge": "", "parser_version": "choice-8",
        "data_fingerprint": "ab12", "scopebench_version": "0.1.0", "device": "cuda", "created": "x",
    }  # fmt: skip
    metrics = {"model": "ignored", "policy": "exclude", "bootstrap": {"seed": 3, "resamples": 1000}}
    assert run_params(run_json, metrics) == {
        "model": "hf:qwen2-vl-2b",  # the folder is cut: dashboards are shared
        "benchmark": "pathmmu",
        "split": "test_tiny",
        "mode": "choice-logprob",
        "protocol": "owner",
        "seed": "7",
        "n_items": "1156",
        "no_image": "False",
        "parser_version": "choice-8",
        "data_fingerprint": "ab12",
        "scopebench_version": "0.1.0",
        "policy": "exclude",
        "bootstrap_seed": "3",
        "bootstrap_resamples": "1000",
    }
    model = {"model": ""}
    for spec, logged in [
        ("hf:Qwen/Qwen2-VL-2B-Instruct", "hf:Qwen/Qwen2-VL-2B-Instruct"),  # a hub id, not a path
        ("openai:gpt-4o", "openai:gpt-4o"),
        ("random", "random"),
        ("/data/lab/biomedclip", "biomedclip"),  # a bare folder
        ("clip:./runs/ft/model", "clip:model"),
    ]:
        model["model"] = spec
        assert run_params(model, {})["model"] == logged, spec
    (tmp_path / "mine").mkdir()  # an existing relative folder is a path too
    assert run_params({"model": "clip:mine"}, {})["model"] == "clip:mine"
    assert run_params({"model": f"clip:{tmp_path / 'mine'}"}, {})["model"] == "clip:mine"


def test_missing_library_and_unknown_backend_are_user_errors(tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "mlflow", None)  # import mlflow now raises ImportError
    m = {"overall": {"accuracy": 0.5, "ci_low": 0.2, "ci_high": 0.8, "n": 12}}
    with pytest.raises(MissingDependencyError, match=r"scopebench\[track-mlflow\]"):
        log_run("mlflow", "a", m, tmp_path, tmp_path / "ml")
    with pytest.raises(UsageError, match="one of tensorboard, mlflow, wandb"):
        log_run("neptune", "a", m, tmp_path, tmp_path / "x")


def _report_with(backend: str, run: Path, tmp_path: Path) -> dict:
    """Run ``report RUN --log-to backend`` and return run ``a``'s metrics.json."""
    code = main(
        [
            *("-q", "report", str(run), "--out", str(tmp_path / "rep"), "--resamples", "50"),
            *("--log-to", backend, "--log-dir", str(tmp_path / backend)),
        ]
    )
    assert code == 0
    return json.loads((tmp_path / "rep" / "a" / "metrics.json").read_text())


def _assert_same_numbers(logged: dict[str, float], metrics: dict) -> None:
    """The logged scalars equal metrics.json (overall and the task=NP row), all of them present."""
    assert logged["overall/accuracy"] == pytest.approx(6 / 12)  # run a: 6 of 12 correct
    for f in ("accuracy", "ci_low", "ci_high", "n"):
        assert logged[f"overall/{f}"] == pytest.approx(metrics["overall"][f], abs=1e-12)
    np_row = next(r for r in metrics["by_task"] if r["group"] == "task=NP")
    assert logged["by_task/task-NP/accuracy"] == pytest.approx(np_row["accuracy"], abs=1e-12)
    assert logged["by_task/task-NP/ci_low"] == pytest.approx(np_row["ci_low"], abs=1e-12)
    assert set(metric_scalars(metrics)) <= set(logged)  # no scalar dropped


@pytest.mark.slow
def test_report_logs_to_mlflow_and_reads_back(html_runs, tmp_path):
    pytest.importorskip("mlflow")
    from mlflow.tracking import MlflowClient

    metrics = _report_with("mlflow", html_runs[0], tmp_path)
    client = MlflowClient(tracking_uri=f"sqlite:///{(tmp_path / 'mlflow' / 'mlflow.db').resolve()}")
    runs = [r for e in client.search_experiments() for r in client.search_runs([e.experiment_id])]
    assert [r.info.run_name for r in runs] == ["a"]
    (run,) = runs
    _assert_same_numbers(run.data.metrics, metrics)
    assert run.data.params == PARAMS_A
    artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"metrics.csv", "metrics.md", "accuracy_by_task.png"} <= artifacts


def test_report_logs_to_wandb_offline_and_reads_back(html_runs, tmp_path, monkeypatch):
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path / "wandb"))
    metrics = _report_with("wandb", html_runs[0], tmp_path)
    # Offline runs write no wandb-summary.json and wandb 0.31 ships no Python reader, so read the
    # run's .wandb file (LevelDB-log framing: 7-byte file header, 32 KiB blocks, 7-byte record
    # headers) and decode its history records with wandb's own protobuf.
    (path,) = (tmp_path / "wandb").rglob("run-*.wandb")
    # wandb's service process may still be writing after run.finish() returns (seen here: the file
    # without its history about half the time), so read until its closing exit record is there
    # (the event); the cap only stops a hang and is far above any wait a working wandb needs.
    cap = time.monotonic() + 600
    while not (records := _wandb_records(path.read_bytes()))[2] and time.monotonic() < cap:
        time.sleep(0.2)
    history, config, complete = records
    assert complete, f"{path} has no exit record after 600 s: wandb's service hangs"
    _assert_same_numbers(history, metrics)
    assert {k: v for k, v in config.items() if not k.startswith("_")} == PARAMS_A
    assert history["accuracy_by_task/_type"] == "image-file"
    assert history["metrics/_type"] == "table-file"
    files = {p.name for p in path.parent.rglob("*") if p.is_file()}
    assert any(n.startswith("accuracy_by_task") and n.endswith(".png") for n in files), files


def _wandb_records(data: bytes) -> tuple[dict, dict, bool]:
    """History and config keys of a ``.wandb`` file with their last values (JSON-decoded), and
    whether the file is complete (its exit record was written)."""
    from wandb.proto import wandb_internal_pb2

    assert data[:4] == b":W&B"
    out: dict = {}
    config: dict = {}
    complete = False
    pos, buf = 7, b""
    while pos + 7 <= len(data):
        left = 32768 - pos % 32768
        _crc, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        if left < 7 or (kind == 0 and length == 0):  # block trailer padding
            pos += left
            continue
        if pos + 7 + length > len(data):  # a record still being written
            break
        buf += data[pos + 7 : pos + 7 + length]
        pos += 7 + length
        if kind in (1, 4):  # FULL or LAST fragment: one whole record
            rec = wandb_internal_pb2.Record.FromString(buf)
            buf = b""
            for item in rec.history.item:
                out[item.key or "/".join(item.nested_key)] = json.loads(item.value_json)
            # The config given to wandb.init arrives in the run record, later changes as config records.
            for item in (*rec.run.config.update, *rec.config.update):
                config[item.key or "/".join(item.nested_key)] = json.loads(item.value_json)
            complete = complete or rec.WhichOneof("record_type") == "exit"
    return out, config, complete

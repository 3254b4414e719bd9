"""The CLI end to end: exit codes, clear messages without tracebacks, run output."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from scopebench.cli import main


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "scopebench", *args], capture_output=True, text=True)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["validate", "nosuchbench", "--data", "."], "unknown benchmark 'nosuchbench'"),
        (
            ["run", "--bench", "pathmmu", "--data", "/nonexistent/x", "--model", "random", "--out", "o"],
            "not found",
        ),
        (
            ["run", "--bench", "local", "--data", ".", "--model", "gpt5", "--out", "o"],
            "unknown model spec 'gpt5'",
        ),
    ],
)
def test_user_errors_are_one_message(args: list[str], message: str, tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "scopebench", *args], capture_output=True, text=True, cwd=tmp_path
    )
    assert proc.returncode == 2
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr


def test_malformed_replay_file_message(tmp_path: Path) -> None:
    bad = tmp_path / "r.jsonl"
    bad.write_text("{not json\n")
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"question": "q", "choices": ["a", "b"], "answer": 0}) + "\n")
    proc = _cli(
        "run",
        "--bench",
        "local",
        "--data",
        str(data),
        "--model",
        f"replay:{bad}",
        "--out",
        str(tmp_path / "o"),
    )
    assert proc.returncode == 2
    assert "line 1: not valid JSON" in proc.stderr and "Traceback" not in proc.stderr


def test_run_prints_table_and_writes_run_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["-q", "run", "--bench", "unit", "--data", "12", "--model", "frequent", "--out", str(tmp_path / "r")]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "overall" in out and "task=t1" in out and "12 items" in out
    for name in ("run.json", "records.sqlite", "records.jsonl", "metrics.json"):
        assert (tmp_path / "r" / name).is_file(), name
    recs = [json.loads(x) for x in (tmp_path / "r" / "records.jsonl").read_text().splitlines()]
    assert len(recs) == 12
    assert set(recs[0]) >= {"item_id", "model", "response", "scores", "choice", "correct", "error", "status"}
    cfg = json.loads((tmp_path / "r" / "run.json").read_text())
    assert cfg["model"] == "frequent" and cfg["seed"] == 0 and cfg["parser_version"]


def test_config_mismatch_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = str(tmp_path / "r")
    assert main(["-q", "run", "--bench", "unit", "--data", "5", "--model", "random", "--out", out]) == 0
    assert (
        main(
            ["-q", "run", "--bench", "unit", "--data", "5", "--model", "random", "--out", out, "--seed", "2"]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "different configuration" in err and "--fresh" in err


def test_benchmarks_lists_every_builtin(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("scopebench.benchmarks.spur")
    assert main(["benchmarks"]) == 0
    out = capsys.readouterr().out
    for name in ("ubench", "pathmmu", "spur", "microvqa", "local", "demo"):
        assert name in out


def test_demo_command_end_to_end(tmp_path: Path) -> None:
    proc = _cli("-q", "demo", "--data", str(tmp_path / "demo"), "--out", str(tmp_path / "runs"))
    assert proc.returncode == 0, proc.stderr
    assert "demo benchmark:" in proc.stdout and "overall" in proc.stdout
    assert "UNTRAINED" in proc.stdout  # the tiny model is labelled for what it is
    for model in ("random", "frequent", "embed_default", "tiny-clip", "tiny-qwen2-vl"):
        metrics = json.loads((tmp_path / "runs" / model / "metrics.json").read_text())
        assert metrics["overall"]["n"] == 114
        assert (tmp_path / "runs" / model / "records.jsonl").is_file()


def test_validate_and_run_through_the_cli_on_fixtures(tmp_path: Path) -> None:
    from helpers import FIXTURES

    proc = _cli("validate", "pathmmu", "--data", str(FIXTURES / "pathmmu"))
    assert proc.returncode == 0
    assert "120 problem(s): 0 error(s), 120 warning(s)" in proc.stdout
    assert "pathmmu/SocialPath/val/10" in proc.stdout  # each problem names its record
    proc = _cli("-q", "run", "--bench", "pathmmu", "--data", str(FIXTURES / "pathmmu"), "--model", "frequent",
                "--split", "test_tiny", "--out", str(tmp_path / "run"))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["overall"]["n"] == 30


def test_export_parquet_and_jsonl(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import pyarrow.parquet as pq

    data = str(Path(__file__).parent / "fixtures" / "local" / "items.jsonl")
    run = tmp_path / "run"
    assert (
        main(["-q", "run", "--bench", "local", "--data", data, "--model", "random", "--out", str(run)]) == 0
    )
    assert main(["export", str(run)]) == 0
    table = pq.read_table(run / "records.parquet")
    jsonl = [json.loads(x) for x in (run / "records.jsonl").read_text().splitlines()]
    assert table.num_rows == len(jsonl) > 0
    assert table.column("item_id").to_pylist() == [r["item_id"] for r in jsonl]
    assert table.column("choice").to_pylist() == [r["choice"] for r in jsonl]
    assert main(["export", str(run), "--format", "jsonl", "--out", str(tmp_path / "x.jsonl")]) == 0
    assert (tmp_path / "x.jsonl").read_text() == (run / "records.jsonl").read_text()
    assert main(["export", str(tmp_path)]) == 2
    assert "holds no records.sqlite" in capsys.readouterr().err


def test_quiet_and_verbose_work_after_the_subcommand(tmp_path: Path) -> None:
    from scopebench.cli import _hoist_global_flags

    assert _hoist_global_flags(["run", "--bench", "demo", "-q", "--limit", "3"]) == [
        "-q",
        "run",
        "--bench",
        "demo",
        "--limit",
        "3",
    ]
    assert _hoist_global_flags(["run", "-vv", "--", "-q"]) == ["-vv", "run", "--", "-q"]
    data = str(Path(__file__).parent / "fixtures" / "local" / "items.jsonl")
    proc = _cli(
        "run",
        "--bench",
        "local",
        "--data",
        data,
        "--model",
        "random",
        "--out",
        str(tmp_path / "r"),
        "--quiet",
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""  # quiet: no bars, no log lines


def test_fresh_removes_the_discarded_runs_report_files(tmp_path: Path) -> None:
    out = tmp_path / "run"
    base = ["-q", "run", "--bench", "unit", "--data", "12", "--out", str(out)]
    assert main([*base, "--model", "random"]) == 0
    plots = {p.name for p in out.glob("*.png")}
    assert "reliability.png" in plots  # random gives option scores: a reliability diagram
    (out / "stale.svg").write_text("<svg/>")
    assert main([*base, "--model", "frequent", "--fresh"]) == 0
    assert not (out / "reliability.png").exists() and not (out / "stale.svg").exists()
    assert json.loads((out / "run.json").read_text())["model"] == "frequent"

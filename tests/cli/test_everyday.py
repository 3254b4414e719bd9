"""The everyday edges of the CLI: where read-only commands write, pipes, --version, help, paths."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import FIXTURES, REPO
from scopebench.cli import main

DATA = FIXTURES / "local" / "items.jsonl"


def _snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ``folder`` with its bytes and modification time."""
    return {
        p.relative_to(folder).as_posix(): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    out = tmp_path / "runs" / "local-random"
    assert (
        main(["-q", "run", "--bench", "local", "--data", str(DATA), "--model", "random", "--out", str(out)])
        == 0
    )
    return out


def test_report_and_export_with_out_leave_the_run_untouched(run_dir: Path, tmp_path: Path) -> None:
    """README: with --out, `report` and `export` write nothing beside the run.

    Catches `report --out` rewriting the run's own metrics.json as well.
    """
    before = _snapshot(run_dir)
    assert main(["-q", "report", str(run_dir), "--out", str(tmp_path / "rep")]) == 0
    assert (
        main(["-q", "export", str(run_dir), "--out", str(tmp_path / "r.parquet"), "--format", "parquet"]) == 0
    )
    assert _snapshot(run_dir) == before
    assert (tmp_path / "rep" / "local-random" / "metrics.json").is_file()
    assert (tmp_path / "r.parquet").is_file()


def test_report_and_export_without_out_write_what_the_readme_says(run_dir: Path) -> None:
    """Without --out: `report` the metrics files and plots, `export` records.<format>; nothing else.

    Catches a read-only command touching the store or run.json, and docs that
    promise something else.
    """
    before = _snapshot(run_dir)
    assert main(["-q", "report", str(run_dir)]) == 0
    assert main(["-q", "export", str(run_dir)]) == 0
    after = _snapshot(run_dir)
    changed = {name for name in after if after[name] != before.get(name)}
    assert changed and all(
        re.fullmatch(r"metrics\.(json|csv|md|tex)|accuracy_by_task\.(png|svg)|records\.(jsonl|parquet)", n)
        for n in changed
    ), changed
    for kept in ("records.sqlite", "run.json"):
        assert after[kept] == before[kept]
    # What the docs promise, in their words.
    readme = " ".join(REPO.joinpath("README.md").read_text(encoding="utf-8").split())
    assert "`report` and `export` write beside the run only when no `--out` is given" in readme
    engine = " ".join(REPO.joinpath("docs", "engine.md").read_text(encoding="utf-8").split())
    assert "`report` and `export` write there only when no `--out` is given" in engine


def test_closed_pipe_ends_quietly() -> None:
    """`scopebench benchmarks --json | head -1`: no BrokenPipeError traceback.

    The pipe's read end is closed before the command starts, so its first write meets a closed
    pipe whatever the timing.
    """
    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "scopebench", "benchmarks", "--json"],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,
        )
    finally:
        os.close(write)
    assert proc.returncode == 141, proc.stderr
    assert "Traceback" not in proc.stderr and "BrokenPipeError" not in proc.stderr


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    """Catches a missing --version."""
    from importlib.metadata import version

    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"scopebench {version('scopebench')}\n"


@pytest.mark.parametrize("command", ["report", "compare", "export", "validate"])
def test_each_positional_argument_is_listed_once(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Catches help that lists the positional arguments twice (click's own section and ours)."""
    assert main([command, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.count("Arguments:") == 1
    assert "Positional arguments" not in out


def test_paths_shown_as_typed_outside_run_json(tmp_path: Path) -> None:
    """A replay file under the home folder: console, records.jsonl and metrics.json show ``~``.

    Catches absolute home paths in log lines, titles, shared files; run.json keeps the whole spec.
    """
    home = tmp_path / "home"
    shutil.copytree(FIXTURES / "local", home / "bench")
    replies = home / "bench" / "replies.jsonl"
    replies.write_text(json.dumps({"item_id": "local/q1", "response": "A"}) + "\n", encoding="utf-8")
    out = home / "runs" / "replay"
    env = {**os.environ, "HOME": str(home), "COLUMNS": "200"}
    argv = ["run", "--bench", "local", "--data", str(home / "bench" / "items.jsonl")]
    argv += ["--model", f"replay:{replies}", "--out", str(out)]
    proc = subprocess.run([sys.executable, "-m", "scopebench", *argv], capture_output=True, text=True, env=env,
                          timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "~/bench/replies.jsonl" in proc.stdout + proc.stderr  # the title and the warning
    for name in ("records.jsonl", "metrics.json"):
        text = (out / name).read_text(encoding="utf-8")
        assert str(home) not in text and "replay:~/bench/replies.jsonl" in text, name
    assert str(home) not in proc.stdout + proc.stderr
    assert json.loads((out / "run.json").read_text(encoding="utf-8"))["model"] == f"replay:{replies}"


def test_progress_bars_show_the_home_folder_as_tilde(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Catches a bar titled with an absolute home path (a model spec naming a local folder)."""
    import scopebench.display as display

    seen: dict[str, object] = {}

    class Bar:
        def __init__(self, **kwargs: object) -> None:
            seen.update(kwargs)

        def close(self) -> None:
            pass

    monkeypatch.setenv("HOME", str(tmp_path))
    # The bar as tqdm is asked for it, shown or not (display imports tqdm when a bar starts).
    monkeypatch.setattr("tqdm.auto.tqdm", Bar)
    with display.progress(1, desc=f"local × clip:{tmp_path}/models/tiny-clip"):
        pass
    assert seen["desc"] == "local × clip:~/models/tiny-clip"

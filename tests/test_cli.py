"""The CLI end to end: exit codes, clear messages without tracebacks, run output."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

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
        ["run", "--bench", "unit", "--data", "12", "--model", "frequent", "--out", str(tmp_path / "r")]
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


@pytest.mark.slow
def test_demo_command_end_to_end(tmp_path: Path) -> None:
    # Not -q (which prints nothing but errors): the one-screen summary is what is checked.
    proc = _cli("demo", "--data", str(tmp_path / "demo"), "--out", str(tmp_path / "runs"))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "demo benchmark:" in out and "demo: overall accuracy" in out
    assert "UNTRAINED" in out  # the tiny model is labelled for what it is
    # One screen (it was ~180 lines of per-task tables), saying where the tables went.
    assert len(out.splitlines()) <= 40, out
    assert "per-task" not in out.split("demo: overall accuracy")[0]
    assert f"{tmp_path / 'runs'}/<model>/metrics.md" in out.replace("\n", "")
    for model in ("random", "frequent", "embed_default", "tiny-clip", "tiny-qwen2-vl"):
        metrics = json.loads((tmp_path / "runs" / model / "metrics.json").read_text())
        assert metrics["overall"]["n"] == 120
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
    assert proc.stdout == ""  # and no tables: silent except errors


def test_fresh_removes_the_discarded_runs_report_files(tmp_path: Path) -> None:
    out = tmp_path / "run"
    base = ["-q", "run", "--bench", "unit", "--data", "12", "--out", str(out)]
    assert main([*base, "--model", "random"]) == 0
    plots = {p.name for p in out.glob("*.png")}
    # The random baseline's option scores are uniform: no reliability diagram is drawn.
    assert "accuracy_by_task.png" in plots and "reliability.png" not in plots
    (out / "stale.svg").write_text("<svg/>")
    assert main([*base, "--model", "frequent", "--fresh"]) == 0
    assert not (out / "reliability.png").exists() and not (out / "stale.svg").exists()
    assert json.loads((out / "run.json").read_text())["model"] == "frequent"


# Flags that change which items are (re)done ----------------------------------------------------


@pytest.fixture
def flaky(monkeypatch: pytest.MonkeyPatch) -> Callable[[str, str], None]:
    """Register the ``flaky`` model; the returned function sets the ids it fails on and its tag."""
    from scopebench.models import registry

    monkeypatch.setitem(registry._SCHEMES, "flaky", "flaky_backend:FlakyBackend")
    monkeypatch.setattr(registry, "_BARE", registry._BARE | {"flaky"})

    def configure(fail: str, tag: str) -> None:
        monkeypatch.setenv("SCOPEBENCH_FLAKY_FAIL", fail)
        monkeypatch.setenv("SCOPEBENCH_FLAKY_TAG", tag)

    return configure


def _stored(run: Path) -> dict[str, tuple[str, str | None]]:
    """``{item_id: (status, response)}`` of a run directory's exported records."""
    recs = [json.loads(x) for x in (run / "records.jsonl").read_text().splitlines()]
    return {r["item_id"]: (r["status"], r["response"]) for r in recs}


def test_retry_errors_redoes_exactly_the_failed_items(
    tmp_path: Path, flaky: Callable[[str, str], None], monkeypatch: pytest.MonkeyPatch
) -> None:
    run = tmp_path / "run"
    argv = ["-q", "run", "--bench", "unit", "--data", "12", "--model", "flaky", "--out", str(run)]
    flaky("unit/001,unit/004,unit/010", "1")
    # An unparsed reply is an answer, not a failure: --retry-errors must keep it (asking again
    # re-rolls a sampled model's answer and drops a judge's verdict).
    monkeypatch.setenv("SCOPEBENCH_FLAKY_UNPARSED", "unit/007")
    assert main(argv) == 0
    monkeypatch.delenv("SCOPEBENCH_FLAKY_UNPARSED")
    first = _stored(run)
    assert first["unit/007"] == ("unparsed", "no idea in invocation 1")
    assert sorted(k for k, (status, _) in first.items() if status == "error") == [
        "unit/001",
        "unit/004",
        "unit/010",
    ]
    flaky("", "2")  # the server is back
    assert main(argv) == 0
    assert _stored(run) == first  # a plain resume keeps stored errors
    assert main([*argv, "--retry-errors"]) == 0
    second = _stored(run)
    redone = {k for k in second if second[k] != first[k]}
    assert redone == {"unit/001", "unit/004", "unit/010"}
    assert all(second[k] == ("ok", "answered in invocation 2") for k in redone)
    assert all(second[k] == first[k] for k in second if k not in redone)
    assert second["unit/007"] == ("unparsed", "no idea in invocation 1")
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["overall"]["n"] == 12 and metrics["overall"]["errors"] == 0
    assert metrics["overall"]["unparsed"] == 1


def test_fresh_discards_stored_results_and_recomputes(
    tmp_path: Path, flaky: Callable[[str, str], None]
) -> None:
    run = tmp_path / "run"
    argv = ["-q", "run", "--bench", "unit", "--data", "6", "--model", "flaky", "--out", str(run)]
    flaky("unit/002", "1")
    assert main(argv) == 0
    flaky("", "2")
    assert main(argv) == 0
    assert {v for k, v in _stored(run).items() if k != "unit/002"} == {("ok", "answered in invocation 1")}
    assert main([*argv, "--fresh"]) == 0
    assert _stored(run) == {f"unit/{i:03d}": ("ok", "answered in invocation 2") for i in range(6)}


def test_limit_runs_exactly_the_first_n_items_in_loader_order(tmp_path: Path) -> None:
    ids = ["zeta", "alpha", "mu", "beta", "omega"]  # file order, not sorted order
    data = tmp_path / "data.jsonl"
    data.write_text(
        "".join(
            json.dumps({"id": i, "question": "Q?", "choices": ["a", "b"], "answer": 0}) + "\n" for i in ids
        )
    )
    run = tmp_path / "run"
    argv = ["-q", "run", "--bench", "local", "--data", str(data), "--model", "random", "--out", str(run)]
    assert main([*argv, "--limit", "3"]) == 0
    # The first three of the file; the first three by name would be alpha, beta, mu.
    assert set(_stored(run)) == {"local/zeta", "local/alpha", "local/mu"}
    assert json.loads((run / "run.json").read_text())["limit"] == 3
    assert json.loads((run / "metrics.json").read_text())["overall"]["n"] == 3


def test_exclude_leaves_out_exactly_those_ids_and_reports_unknown_ones(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    exclude = tmp_path / "exclude.txt"
    exclude.write_text("unit/003\n\nunit/007\npathmmu/PubMed/val/1\n")
    run = tmp_path / "run"
    argv = ["run", "--bench", "unit", "--data", "10", "--model", "random", "--out", str(run)]
    with caplog.at_level("WARNING", logger="scopebench"):
        assert main([*argv, "--exclude", str(exclude)]) == 0
    assert sorted(_stored(run)) == [f"unit/{i:03d}" for i in range(10) if i not in (3, 7)]
    assert "1 of the 3 excluded item ids are not in unit: pathmmu/PubMed/val/1" in caplog.text
    assert json.loads((run / "metrics.json").read_text())["overall"]["n"] == 8


def test_excluding_every_item_is_an_error_not_an_empty_result(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    exclude = tmp_path / "all.txt"
    exclude.write_text("".join(f"unit/{i:03d}\n" for i in range(4)))
    run = tmp_path / "run"
    argv = ["-q", "run", "--bench", "unit", "--data", "4", "--model", "random", "--out", str(run)]
    assert main([*argv, "--exclude", str(exclude)]) == 2
    err = capsys.readouterr().err
    assert "nothing to evaluate: all 4 items of unit are excluded by --exclude" in err
    assert not run.exists()  # no empty metrics.json passed off as a result


# validate ----------------------------------------------------------------------------------------


def _image_bench(folder: Path, images: dict[str, bytes | None]) -> Path:
    """A local benchmark with one item per image name; ``None`` content: the file is not written."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for i, (name, content) in enumerate(images.items()):
        if content is not None:
            (folder / name).write_bytes(content)
        rows.append({"id": f"q{i}", "question": "Q?", "choices": ["a", "b"], "answer": 0, "image": name})
    (folder / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def _png(seed: int = 0) -> bytes:
    import io

    import numpy as np
    from PIL import Image

    pixels = np.random.default_rng(seed).integers(0, 255, (64, 64, 3), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, format="PNG")
    return buf.getvalue()


def test_validate_decodes_every_image_and_fails_on_undecodable_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = _png()
    data = _image_bench(
        tmp_path / "b",
        {
            "good.png": good,
            "truncated.png": good[: len(good) // 2],
            "text.png": b"not an image",
            "gone.png": None,
        },
    )
    assert main(["validate", "local", "--data", str(data)]) == 1  # errors: exit 1 without --strict
    out = capsys.readouterr().out
    assert "images: 3 opened and decoded, 2 of them undecodable, 1 missing file(s) not opened" in out
    assert "3 problem(s): 2 error(s), 1 warning(s) — bad_image: 2, missing_image: 1" in out
    lines = [x for x in out.splitlines() if x.startswith("error:")]
    assert len(lines) == 2
    assert any(str(data / "truncated.png") in x and "[local/q1]" in x for x in lines)
    assert any(str(data / "text.png") in x and "[local/q2]" in x for x in lines)
    # --no-images: only what loading finds (the missing file, a warning), so exit 0.
    assert main(["validate", "local", "--data", str(data), "--no-images"]) == 0
    out = capsys.readouterr().out
    assert "images: not decoded (--no-images)" in out and "1 problem(s): 0 error(s), 1 warning(s)" in out


def test_validate_names_every_item_sharing_a_bad_image(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "b"
    data.mkdir()
    (data / "x.png").write_bytes(b"garbage")
    rows = [
        {"id": f"q{i}", "question": "Q?", "choices": ["a", "b"], "answer": 0, "image": "x.png"}
        for i in range(3)
    ]
    (data / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["validate", "local", "--data", str(data)]) == 1
    out = capsys.readouterr().out
    assert "images: 1 opened and decoded, 1 of them undecodable" in out  # one file, decoded once
    assert "[local/q0 and 2 other item(s)]" in out


def test_validate_exit_codes_errors_fail_warnings_only_with_strict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clean = _image_bench(tmp_path / "clean", {"a.png": _png()})
    warned = _image_bench(tmp_path / "warned", {"a.png": _png(), "gone.png": None})
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"question": "Q?", "choices": ["a", "b"], "answer": 0}\n{"question": "no choices"}\n')
    base = ["validate", "local", "--data"]
    assert main([*base, str(clean)]) == 0
    assert main([*base, str(clean), "--strict"]) == 0
    assert main([*base, str(warned)]) == 0  # warnings alone pass
    assert main([*base, str(warned), "--strict"]) == 1  # … unless --strict
    assert main([*base, str(broken)]) == 1  # an error fails without --strict
    assert main([*base, str(broken), "--no-images"]) == 1
    assert "no problems found" in capsys.readouterr().out


def test_validate_caps_each_kind_of_problem_and_keeps_every_one_available(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _image_bench(tmp_path / "b", {f"gone{i:02d}.png": None for i in range(25)})
    assert main(["validate", "local", "--data", str(data)]) == 0
    out = capsys.readouterr().out
    listed = [x for x in out.splitlines() if x.startswith("warning:")]
    assert len(listed) == 20 and "gone19.png" in listed[-1]
    assert "… and 5 more (missing_image: 5); --all lists every one" in out
    report = tmp_path / "problems.json"
    assert main(["validate", "local", "--data", str(data), "--all", "--json", str(report)]) == 0
    out = capsys.readouterr().out
    assert len([x for x in out.splitlines() if x.startswith("warning:")]) == 25 and "more" not in out
    saved = json.loads(report.read_text())
    assert saved["n_warnings"] == 25 and saved["n_errors"] == 0 and saved["n_items"] == 25
    assert sorted(p["record"] for p in saved["problems"]) == sorted(f"q{i} (line {i + 1})" for i in range(25))


def test_validate_and_run_with_a_symlinked_cache(tmp_path: Path) -> None:
    """``$SCOPEBENCH_CACHE`` (where the demo lives) may be a symbolic link (it crashed before)."""
    import os

    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real", target_is_directory=True)
    env = {**os.environ, "SCOPEBENCH_CACHE": str(tmp_path / "link")}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "scopebench", *args], capture_output=True, text=True, env=env
        )

    proc = cli("validate", "demo")
    assert proc.returncode == 0, proc.stderr
    assert "no problems found" in proc.stdout and "undecodable" in proc.stdout
    proc = cli("run", "--bench", "demo", "--model", "random", "--limit", "5", "--out", str(tmp_path / "run"))
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "run" / "metrics.json").read_text())["overall"]["n"] == 5


# run: refusals -----------------------------------------------------------------------------------


def test_a_run_with_no_usable_item_fails_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text('{"id": 1, "question": "Q?", "choices": ["a", "b"], "answer": 0}\n{"question": "Q?"}\n')
    run = tmp_path / "run"
    assert (
        main(["-q", "run", "--bench", "local", "--data", str(data), "--model", "random", "--out", str(run)])
        == 2
    )
    err = capsys.readouterr().err
    assert "nothing to evaluate: local has no usable item (2 problem(s) found while loading)" in err
    assert f"scopebench validate local --data {data}" in err
    assert not run.exists()


def test_a_run_whose_items_the_model_cannot_answer_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text('{"question": "Find cells", "boxes": [{"x1": 0, "y1": 0, "x2": 2, "y2": 2}]}\n')
    run = tmp_path / "run"
    assert (
        main(["-q", "run", "--bench", "local", "--data", str(data), "--model", "random", "--out", str(run)])
        == 2
    )
    err = capsys.readouterr().err
    assert "random answers mcq items, and all 1 items of this run are detection items" in err
    assert not run.exists()


@pytest.mark.parametrize("model", ["clip:openai/clip-vit-base-patch32", "biomedclip", "openclip:ViT-B-32"])
def test_no_image_with_a_contrastive_model_is_refused(
    model: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A contrastive model has no text-only mode: --no-image was ignored while run.json said true."""
    run = tmp_path / "run"
    argv = ["-q", "run", "--bench", "unit", "--data", "4", "--model", model, "--no-image", "--out", str(run)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"a text-only run (--no-image, or a text-only probe) cannot use {model}" in err
    assert "no text-only mode" in err
    assert not run.exists()


def test_strategies_builds_the_same_run_config_as_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """`strategies` and `run` share their run options: same flags give the same RunConfig.

    `strategies` once declared its own `--device` without a default, so `--model hf:M` without
    `--device` handed ``device=None`` to the backend (a traceback in `resolve_device`).
    (Through ``main``: the options are click's now, parsed by the commands themselves.)
    """
    from dataclasses import replace

    import scopebench.cli as cli

    seen: dict[str, Any] = {}
    monkeypatch.setattr(cli, "cmd_run", lambda args: seen.setdefault("run", cli._run_config(args)) and 0)
    monkeypatch.setattr(
        cli, "cmd_strategies", lambda args: seen.setdefault("strategies", cli._run_config(args)) and 0
    )
    common = ["--bench", "demo", "--model", "hf:some/model", "--out", "o"]
    assert main(["run", *common]) == 0
    assert main(["strategies", *common]) == 0
    run_cfg, strat_cfg = seen["run"], seen["strategies"]
    assert strat_cfg.device == "auto" and strat_cfg.model == "hf:some/model"
    assert strat_cfg.model_options() == run_cfg.model_options()
    assert replace(strat_cfg, strategy=None) == replace(run_cfg, strategy=None)

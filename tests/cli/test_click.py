"""The click CLI itself: every command's --help, usage errors, shared options, parsed model specs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest

import scopebench.cli as cli
from scopebench.cli import build_cli, main
from scopebench.cli.options import EngineOptions, ModelOptions, RunOptions, expand_greedy
from scopebench.models.registry import ModelSpec


def _walk(group: click.Group, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    for name, command in sorted(group.commands.items()):
        yield (*path, name), command
        if isinstance(command, click.Group):
            yield from _walk(command, (*path, name))


ALL_COMMANDS = [path for path, _ in _walk(build_cli())]


def test_every_command_of_the_argparse_cli_is_still_there() -> None:
    # The commands (and sub-groups' commands) the argparse CLI had, by name: none lost in the port.
    expected = {
        ("benchmarks",), ("validate",), ("run",), ("strategies",), ("models",), ("export",), ("demo",),
        ("compare",), ("report",), ("table",), ("eval",), ("merge",), ("linear-probe",),
        ("probe",), ("probe", "corruptions"), ("probe", "noise"), ("probe", "no-image"), ("probe", "swap"),
        ("probe", "permutation"), ("probe", "shortcut"), ("probe", "matching"),
        ("review",), *(("review", a) for a in ("init", "user", "member", "assign", "serve", "export",
                                                 "baseline", "submissions", "labelstudio")),
        ("build",), *(("build", s) for s in ("ingest", "questions", "generate", "filter", "split", "export",
                                              "localise", "figures", "run")),
        ("finetune",), ("finetune", "generative"), ("finetune", "contrastive"),
    }  # fmt: skip
    assert set(ALL_COMMANDS) == expected


@pytest.mark.parametrize("path", ALL_COMMANDS, ids=" ".join)
def test_help_of_every_command_lists_each_option(
    path: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*path, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"Usage: scopebench {' '.join(path)} ")
    command = dict(_walk(build_cli()))[path]
    for param in command.params:
        if isinstance(param, click.Option):
            for opt in param.opts:
                assert opt in out, f"{opt} missing from `scopebench {' '.join(path)} --help`"
        else:
            assert str(param.human_readable_name) in out  # positionals listed with their help
    assert main([*path, "-h"]) == 0  # argparse's -h still works


def test_usage_errors_exit_2_with_the_message_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--bench", "demo", "--out", "o"]) == 2
    err = capsys.readouterr().err
    assert "Missing option '--model'" in err and "scopebench run --help" in err and "Traceback" not in err
    assert main(["report", "r", "--policy", "nope"]) == 2
    assert "'nope' is not one of 'wrong', 'exclude'" in capsys.readouterr().err
    assert main(["run", "--bench", "demo", "--model", "random", "--out", "o", "--limit", "x"]) == 2
    assert "'x' is not a valid integer" in capsys.readouterr().err
    assert main(["runn"]) == 2
    assert "No such command 'runn'" in capsys.readouterr().err
    assert main([]) == 2  # a command is required, as with argparse
    assert main(["build"]) == 2  # … and a step of a group


def test_model_spec_is_parsed_once_with_did_you_mean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    assert main(["run", "--bench", "demo", "--model", "randon", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "unknown model spec 'randon' (did you mean 'random'?)" in err and "Traceback" not in err
    assert not out.exists()  # refused while parsing: nothing was written


def _capture(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[Any]:
    seen: list[Any] = []
    monkeypatch.setattr(module, name, lambda args: seen.append(args) or 0)
    return seen


def test_run_options_become_one_options_object_per_concern(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    exclude = tmp_path / "ex.txt"
    exclude.write_text("a\n\nb\n")
    seen = _capture(monkeypatch, cli, "cmd_run")
    argv = ["run", "--bench", "demo", "--model", "random", "--out", "o", "--seed", "7", "--limit", "3",
            "--exclude", str(exclude), "--model-arg", "k=3", "--model-arg", "name=x", "--device", "cpu",
            "--executor", "ray", "--workers", "4", "--fresh", "--no-image", "--judge-arg", "device=cpu"]  # fmt: skip
    assert main(argv) == 0
    (args,) = seen
    assert args.run == RunOptions(
        limit=3, seed=7, no_image=True, exclude_ids=frozenset({"a", "b"}), fresh=True
    )
    assert args.model_opts == ModelOptions(device="cpu", model_args={"k": 3, "name": "x"})
    assert args.engine == EngineOptions(executor="ray", workers=4)
    assert args.model == [ModelSpec("random", "random", "")]
    config = cli._run_config(args)
    assert (config.model, config.seed, config.limit, config.device, config.workers) == (
        "random",
        7,
        3,
        "cpu",
        4,
    )
    assert config.exclude_ids == frozenset({"a", "b"}) and config.judge_args == {"device": "cpu"}


def test_defaults_of_the_shared_options_are_the_argparse_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    import scopebench.cli.probe as cli_probe

    strategies = _capture(monkeypatch, cli, "cmd_strategies")
    noise = _capture(monkeypatch, cli_probe, "_cmd_noise")
    common = ["--bench", "demo", "--model", "random", "--out", "o"]
    assert main(["strategies", *common]) == 0 and main(["probe", "noise", *common]) == 0
    for args in (strategies[0], noise[0]):
        assert args.run == RunOptions()  # seed 0, protocol default, max-fail-fraction 0.5 …
        assert args.model_opts == ModelOptions()  # device auto
        assert args.engine == EngineOptions()  # executor local
    assert noise[0].resamples == 1000 and strategies[0].strategies == "direct,step-by-step,vot,ddcot,cantor"


def test_global_flags_anywhere_reach_the_command(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _capture(monkeypatch, cli, "cmd_models")
    assert main(["models", "-q", "-vv"]) == 0
    assert (seen[0].quiet, seen[0].verbose) == (True, 2)


def test_nargs_plus_options_take_every_value_up_to_the_next_option(monkeypatch: pytest.MonkeyPatch) -> None:
    assert expand_greedy(["--models", "a", "b", "--out", "o", "c"], ["--models"]) == [
        "--models", "a", "--models", "b", "--out", "o", "c",
    ]  # fmt: skip
    assert expand_greedy(["--models", "a", "--", "b"], ["--models"]) == ["--models", "a", "--", "b"]
    assert expand_greedy(["--x", "a", "b"], ["--models"]) == ["--x", "a", "b"]
    seen = _capture(monkeypatch, cli, "cmd_demo")
    assert main(["demo", "--models", "random", "frequent", "--seed", "3"]) == 0
    assert (seen[0].models, seen[0].seed) == (("random", "frequent"), 3)


def test_merge_sweep_takes_an_optional_grid(monkeypatch: pytest.MonkeyPatch) -> None:
    import scopebench.cli.tools as tools

    seen = _capture(monkeypatch, tools, "cmd_merge")
    base = ["merge", "a", "b", "--out", "o"]
    assert main([*base, "--sweep", "--bench", "demo"]) == 0  # no grid: the default one
    assert main([*base, "--sweep", "0,0.5", "--bench", "demo"]) == 0
    assert main([*base, "--alpha", "0.5"]) == 0
    assert [(a.sweep, a.alpha, a.bench) for a in seen] == [("", None, "demo"), ("0,0.5", None, "demo"),
                                                          (None, 0.5, None)]  # fmt: skip

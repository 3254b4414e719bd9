"""The click CLI itself: every command's --help, usage errors, shared options, parsed model specs."""

from __future__ import annotations

import dataclasses
import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest

import scopebench.cli as cli
from scopebench.cli import build_cli, main
from scopebench.cli.options import expand_greedy
from scopebench.config import EngineConfig, ModelConfig, RunConfig
from scopebench.models.registry import ModelSpec


def _walk(group: click.Group, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    # Through click's listing contract, not ``group.commands``: the top group loads its commands lazily.
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, f"`{name}` is listed but cannot be loaded"
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


def test_each_command_is_mapped_to_the_module_that_registers_it() -> None:
    """The lazy group finds a command only through ``_COMMAND_MODULES``: a command a module's
    ``register`` adds but the map does not name (or names under another module) would be
    unreachable or load the wrong module; this catches the map drifting from the modules."""
    registered: dict[str, str] = {}
    for module_name in sorted(set(cli._COMMAND_MODULES.values())):
        group = click.Group("probe-of-register")
        importlib.import_module(module_name).register(group)
        assert group.commands, f"{module_name}.register added no command"
        registered.update(dict.fromkeys(group.commands, module_name))
    assert registered == cli._COMMAND_MODULES


def test_an_absent_command_module_is_not_offered_but_a_missing_dependency_is_raised(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Catches the lazy group listing a command whose module this installation lacks (``--help``
    would show it, running it would fail), and swallowing the ModuleNotFoundError of a module that
    is there but misses a dependency (the user must learn what to install)."""
    from scopebench.cli.options import LazyGroup

    monkeypatch.setitem(sys.modules, "scopebench.absent_extension", None)  # importing it fails
    (tmp_path / "extension_with_missing_dep.py").write_text("import no_such_package_for_scopebench_tests\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    group = LazyGroup(
        "scopebench",
        lazy={
            "probe": "scopebench.cli.probe",
            "gone": "scopebench.absent_extension",
            "broken": "extension_with_missing_dep",
        },
    )
    ctx = click.Context(group)
    assert group.list_commands(ctx) == ["broken", "probe"]
    assert group.get_command(ctx, "gone") is None
    assert isinstance(group.get_command(ctx, "probe"), click.Group)
    with pytest.raises(ModuleNotFoundError, match="no_such_package_for_scopebench_tests"):
        group.get_command(ctx, "broken")


def test_usage_errors_exit_2_with_the_message_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--bench", "demo", "--out", "o"]) == 2
    err = capsys.readouterr().err
    assert "Missing option '--model'" in err and "scopebench run --help" in err and "Traceback" not in err
    assert main(["report", "r", "--policy", "nope"]) == 2
    assert "'nope' is not one of 'wrong', 'exclude'" in capsys.readouterr().err
    assert main(["run", "--bench", "demo", "--model", "random", "--out", "o", "--limit", "x"]) == 2
    assert "'x' is neither a number of items (≥ 1) nor a fraction between 0 and 1" in capsys.readouterr().err
    assert main(["runn"]) == 2
    assert "No such command 'runn'" in capsys.readouterr().err
    # The suggestion sees every command, not only the modules loaded so far.
    assert main(["revew"]) == 2
    assert "Did you mean 'review'?" in capsys.readouterr().err
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


def test_run_options_become_one_frozen_run_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    exclude = tmp_path / "ex.txt"
    exclude.write_text("a\n\nb\n")
    seen = _capture(monkeypatch, cli, "cmd_run")
    argv = ["run", "--bench", "demo", "--model", "random", "--out", "o", "--seed", "7", "--limit", "3",
            "--exclude", str(exclude), "--model-arg", "k=3", "--model-arg", "name=x", "--device", "cpu",
            "--executor", "ray", "--workers", "4", "--fresh", "--no-image", "--judge-arg", "device=cpu"]  # fmt: skip
    assert main(argv) == 0
    (args,) = seen
    assert args.fresh is True and args.retry_errors is False
    assert args.model == [ModelSpec("random", "random", "")]
    # Every flag reaches the one RunConfig (a flag dropped on the way, as strategies once lost
    # --device, would leave its default here); the engine settings are its EngineConfig.
    config = cli._run_config(args)
    assert config == RunConfig(
        benchmark="demo", data="", model="random", limit=3, seed=7, no_image=True,
        exclude_ids=frozenset({"a", "b"}), device="cpu", model_args={"k": 3, "name": "x"},
        engine=EngineConfig(executor="ray", workers=4), judge_args={"device": "cpu"},
    )  # fmt: skip
    assert config.model_options() == ModelConfig(
        seed=7, device="cpu", no_image=True, extra={"k": 3, "name": "x"}
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.seed = 8  # type: ignore[misc]


def test_defaults_of_the_shared_options_are_the_argparse_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    import scopebench.cli.probe as cli_probe

    strategies = _capture(monkeypatch, cli, "cmd_strategies")
    noise = _capture(monkeypatch, cli_probe, "_cmd_noise")
    common = ["--bench", "demo", "--model", "random", "--out", "o"]
    assert main(["strategies", *common]) == 0 and main(["probe", "noise", *common]) == 0
    for args in (strategies[0], noise[0]):
        # seed 0, protocol default, max-fail-fraction 0.5, device auto, executor local …
        assert cli._run_config(args) == RunConfig(benchmark="demo", data="", model="random")
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

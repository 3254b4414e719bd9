"""`scopebench models` / `benchmarks`: --json for scripts, and specs/URLs never cut mid-token."""

from __future__ import annotations

import json
import re

import pytest
from rich.console import Console

import scopebench.cli as cli
from scopebench.benchmarks import available_benchmarks
from scopebench.cli import main
from scopebench.models.presets import PRESETS
from scopebench.models.registry import available_schemes


def test_models_json_parses_with_every_preset(capsys):
    assert main(["models", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data["presets"]) == len(PRESETS) > 0
    by_name = {p["name"]: p for p in data["presets"]}
    for name, preset in PRESETS.items():
        assert by_name[name]["spec"] == preset.spec
    assert data["schemes"] == list(available_schemes())


def test_benchmarks_json_parses_with_every_benchmark(capsys):
    assert main(["benchmarks", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in rows] == list(available_benchmarks())
    pathmmu = next(r for r in rows if r["name"] == "pathmmu")
    assert pathmmu["problem"] is None and pathmmu["splits"] and pathmmu["data"]


@pytest.mark.parametrize("width", [80, 100])
def test_specs_and_urls_are_never_wrapped_mid_token(monkeypatch, capsys, width):
    con = Console(width=width, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    monkeypatch.setattr(cli, "console", con)
    assert main(["models"]) == 0
    text = con.export_text()
    for p in PRESETS.values():
        assert p.spec in text, p.spec  # each spec whole on one line
    assert main(["benchmarks"]) == 0
    text = con.export_text()
    urls = {u for r in available_benchmarks() for u in re.findall(r"https?://\S+", cli_data(r))}
    assert urls, "the benchmarks' data help names download URLs"
    for url in urls:
        assert url.rstrip(".,;)") in text, url


def cli_data(name: str) -> str:
    from scopebench.benchmarks import get_benchmark

    return get_benchmark(name).data_help

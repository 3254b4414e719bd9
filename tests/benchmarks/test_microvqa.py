from __future__ import annotations

import ast
import csv
import json
import pickle
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import hf_fixtures as fx
import pytest

from helpers import FIXTURES
from scopebench.benchmarks import get_benchmark
from scopebench.benchmarks.base import LoadedBenchmark
from scopebench.benchmarks.microvqa import HUB_ID, UNSPECIFIED_TASK, MicroVQABenchmark
from scopebench.errors import DataFormatError, DataNotFoundError
from scopebench.items import Item

DEMO = FIXTURES / "microvqa" / "demo_dataset.csv"


@pytest.fixture(scope="module", autouse=True)
def _hf_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Keep the parquet → Arrow conversion cache out of the user's home."""
    import datasets

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path_factory.mktemp("hf-cache")))
        yield


@pytest.fixture(scope="module")
def dataset() -> Any:
    return fx.microvqa_dataset()


@pytest.fixture(scope="module")
def parquet_dir(dataset: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return fx.write_parquet_dir(dataset, tmp_path_factory.mktemp("mvqa"), split="test", shards=2)


@pytest.fixture(scope="module")
def loaded(parquet_dir: Path) -> LoadedBenchmark:
    return MicroVQABenchmark().load(parquet_dir)


@pytest.fixture(scope="module")
def items(loaded: LoadedBenchmark) -> dict[str, Item]:
    return {it.id: it for it in loaded.items}


@pytest.fixture(scope="module")
def demo() -> LoadedBenchmark:
    return MicroVQABenchmark().load(DEMO)


def test_registered_with_help() -> None:
    bench = get_benchmark("microvqa")
    assert isinstance(bench, MicroVQABenchmark)
    assert bench.splits == ("test", "train")
    assert bench.default_split == "test"
    assert bench.tasks == ("1", "2", "3")
    assert HUB_ID in bench.data_help and "demo_dataset.csv" in bench.data_help


# --- Hugging Face format --------------------------------------------------------------------------


def test_items_and_tasks(loaded: LoadedBenchmark) -> None:
    assert [it.id for it in loaded.items] == [
        "microvqa/500",
        "microvqa/501",
        "microvqa/502",
        "microvqa/504",
        "microvqa/505",
    ]
    assert Counter(it.task for it in loaded.items) == {"1": 1, "2": 2, "3": 2}
    assert {it.split for it in loaded.items} == {"test"}


def test_item_fields(items: dict[str, Item]) -> None:
    it = items["microvqa/501"]
    assert it.question == "Question 501 about image set 96?"
    assert it.choices == ("alpha", "beta", "gamma", "delta")
    assert it.answer_index == 2 and it.answer_text == "gamma"
    assert it.subset is None and it.context is None and it.kind == "mcq"
    meta = it.metadata
    assert meta["task_str"] == "hypothesis_generation"
    assert (meta["key_question"], meta["key_image"], meta["key_person"]) == (501, 96, 7)
    assert meta["images_source"] == "author"
    assert meta["image_caption"] == "Caption of image set 96."
    assert meta["context_image_generation"] == "Images were acquired on a confocal microscope."
    assert meta["context_motivation"] == "We study organelle dynamics."
    assert meta["correct_answer"] == "gamma"
    assert meta["choices_1"] == ["alpha", "beta", "gamma", "delta"] and meta["correct_index_1"] == 2
    assert meta["n_images"] == 3
    assert not {"question", "choices", "correct_index", "task", "images_list"} & set(meta)


def test_images_are_lazy_and_sized(items: dict[str, Item]) -> None:
    three = items["microvqa/501"].images
    assert [r.key for r in three] == ["microvqa:96:0", "microvqa:96:1", "microvqa:96:2"]
    assert all(r.path is None and r.data is None and r.loader is not None for r in three)
    assert [r.load().size for r in three] == [(20, 10), (12, 14), (30, 8)]
    (one,) = items["microvqa/500"].images
    assert one.key == "microvqa:97:0" and one.load().size == (20, 10)
    assert one.loader is not None and isinstance(one.loader(), bytes)
    assert pickle.loads(pickle.dumps(three[2])).load().size == (30, 8)


def test_image_sets_are_shared_only_when_consistent(items: dict[str, Item]) -> None:
    # 500 and 502 show image set 97 (one image each): one key, decoded once by the engine.
    assert items["microvqa/502"].images[0].key == items["microvqa/500"].images[0].key
    # Image set 100 has rows with 0 and 1 images, so its keys are per question.
    assert [r.key for r in items["microvqa/505"].images] == ["microvqa:q505:0"]


def test_problems(loaded: LoadedBenchmark) -> None:
    got = [(p.severity, p.kind, p.record, p.message) for p in loaded.problems]
    assert got == [
        (
            "warning",
            "answer_mismatch",
            "key_question 502",
            "correct_answer 'two' differs from choices[correct_index=0] 'one'; correct_index is used",
        ),
        (
            "error",
            "answer_mismatch",
            "key_question 503",
            "correct_index 4 is not a choice index (0–3); the question cannot be scored and was skipped",
        ),
        (
            "warning",
            "missing_image",
            "key_question 504",
            "images_list is empty; the item is kept and counted as missing_image",
        ),
    ]


def test_empty_image_list_keeps_item(items: dict[str, Item]) -> None:
    it = items["microvqa/504"]
    assert it.images == () and it.problems == ("missing_image",)
    assert it.metadata["n_images"] == 0


def test_mismatched_correct_answer_keeps_correct_index(items: dict[str, Item]) -> None:
    it = items["microvqa/502"]
    assert it.answer_index == 0 and len(it.choices) == 5


def test_saved_layout_agrees_with_parquet(dataset: Any, loaded: LoadedBenchmark, tmp_path: Path) -> None:
    dataset.save_to_disk(str(tmp_path / "saved"))
    saved = MicroVQABenchmark().load(tmp_path / "saved")
    key = [(it.to_summary(), [r.size() for r in it.images]) for it in loaded.items]
    assert [(it.to_summary(), [r.size() for r in it.images]) for it in saved.items] == key
    import datasets

    assert saved.fingerprint == datasets.load_from_disk(str(tmp_path / "saved"))._fingerprint
    assert saved.fingerprint != loaded.fingerprint


def test_old_train_split_is_used_with_warning(dataset: Any, tmp_path: Path) -> None:
    fx.write_parquet_dir(dataset, tmp_path, split="train", shards=1)
    got = MicroVQABenchmark().load(tmp_path)
    assert len(got.items) == 5 and {it.split for it in got.items} == {"test"}
    assert got.problems[0].kind == "split_mismatch" and got.problems[0].severity == "warning"
    assert "renamed its split train to test" in got.problems[0].message


def test_dataset_dict_picks_the_asked_split(dataset: Any, tmp_path: Path) -> None:
    import datasets

    datasets.DatasetDict({"test": dataset, "train": dataset.select([0, 1])}).save_to_disk(
        str(tmp_path / "dd")
    )
    assert len(MicroVQABenchmark().load(tmp_path / "dd").items) == 5
    train = MicroVQABenchmark().load(tmp_path / "dd", split="train")
    assert [it.id for it in train.items] == ["microvqa/500", "microvqa/501"]
    assert {it.split for it in train.items} == {"train"}
    assert not any(p.kind == "split_mismatch" for p in train.problems)


def test_hub_fallback_to_train(monkeypatch: pytest.MonkeyPatch, dataset: Any) -> None:
    import datasets

    calls: list[str] = []

    def fake_load_dataset(path: str, *args: Any, **kwargs: Any) -> Any:
        calls.append(path)
        return datasets.DatasetDict({"train": dataset})

    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    got = MicroVQABenchmark().load("")  # no --data: the Hub dataset
    assert calls == [HUB_ID]
    assert len(got.items) == 5
    assert [p.kind for p in got.problems] == [
        "split_mismatch",
        "answer_mismatch",
        "answer_mismatch",
        "missing_image",
    ]


def test_hub_unreachable(monkeypatch: pytest.MonkeyPatch) -> None:
    import datasets

    def offline(*args: Any, **kwargs: Any) -> Any:
        raise ConnectionError("offline")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(DataNotFoundError, match="save_to_disk"):
        MicroVQABenchmark().load(HUB_ID)


def test_not_microvqa_data(tmp_path: Path) -> None:
    import datasets

    datasets.Dataset.from_dict({"question": ["q"]}).save_to_disk(str(tmp_path / "d"))
    with pytest.raises(DataFormatError, match="lacks the column"):
        MicroVQABenchmark().load(tmp_path / "d")


def test_no_image_column_marks_items(tmp_path: Path) -> None:
    import datasets

    rows = {
        "key_question": [1],
        "question": ["q?"],
        "choices": [["a", "b"]],
        "correct_index": [1],
        "task": [2],
    }
    datasets.Dataset.from_dict(rows).save_to_disk(str(tmp_path / "d"))
    got = MicroVQABenchmark().load(tmp_path / "d")
    (it,) = got.items
    assert (it.id, it.task, it.answer_index, it.problems) == ("microvqa/1", "2", 1, ("missing_image",))
    assert [p.kind for p in got.problems] == ["missing_image"]


# --- RefineBot CSV --------------------------------------------------------------------------------


def test_demo_csv_counts(demo: LoadedBenchmark) -> None:
    assert len(demo.items) == 51
    assert all(len(it.choices) == 4 for it in demo.items)
    assert Counter(it.answer_index for it in demo.items) == {0: 7, 1: 33, 2: 10, 3: 1}
    assert len({it.metadata["key_image"] for it in demo.items}) == 11
    assert {it.task for it in demo.items} == {UNSPECIFIED_TASK}


def test_demo_csv_choices_need_literal_eval() -> None:
    with open(DEMO, encoding="utf-8", newline="") as fh:
        cells = [row["choices"] for row in csv.DictReader(fh)]
    assert sum('"' in c for c in cells) == 3
    for cell in cells:
        with pytest.raises(json.JSONDecodeError):
            json.loads(cell)
        assert len(ast.literal_eval(cell)) == 4


def test_demo_csv_quoted_choices_survive(demo: LoadedBenchmark) -> None:
    by_id = {it.id: it for it in demo.items}
    assert by_id["microvqa/521"].choices[1] == (
        "The hollow center of Apoferritin disrupts the particle's center of gravity, hindering automated "
        "identification; the researcher should switch to manual particle picking."
    )
    assert sum(any("'" in c for c in it.choices) for it in demo.items) >= 3


def test_demo_csv_first_item(demo: LoadedBenchmark) -> None:
    it = demo.items[0]
    assert it.id == "microvqa/500"
    assert it.question.startswith("In TIRF microscopy images of HeLa cells expressing mScarlet-CD4-PhoCl-RER")
    assert not any(i.question.startswith("Question:") for i in demo.items)
    assert it.answer_index == 1
    assert it.answer_text is not None and it.answer_text.startswith("Higher laser power provides more energy")
    assert it.metadata["key_image"] == 97 and it.metadata["key_question"] == 500
    assert (
        it.metadata["original_question"]
        == "Why does the increased laser power cause more release of the molecules?"
    )
    assert it.metadata["use_case"] is None and it.metadata["source_format"] == "refinebot_csv"


def test_demo_csv_has_no_images(demo: LoadedBenchmark) -> None:
    assert all(it.images == () and it.problems == ("missing_image",) for it in demo.items)
    assert [(p.kind, p.severity, p.record) for p in demo.problems] == [
        ("missing_image", "warning", "-"),
        ("null_field", "warning", "use_case"),
    ]
    assert demo.fingerprint == MicroVQABenchmark().load(DEMO).fingerprint


def write_csv(path: Path, rows: list[dict[str, Any]], header: list[str] | None = None) -> Path:
    header = header or ["key_question", "key_image", "question", "choices", "correct_index", "use_case"]
    with open(path, "w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=header)
        writer.writeheader()
        writer.writerows(rows)
    return path


def test_csv_row_problems(tmp_path: Path) -> None:
    good = {"key_image": 1, "question": "Question:\nWhy?", "choices": "['a', 'b']", "correct_index": 0}
    rows = [
        {**good, "key_question": 1, "use_case": "2"},
        {**good, "key_question": 2, "choices": "not a list"},
        {**good, "key_question": 3, "correct_index": 5},
        {**good, "key_question": 1},
        {**good, "key_question": 4, "choices": '["x", "y", "z"]', "correct_index": "2"},
    ]
    got = MicroVQABenchmark().load(write_csv(tmp_path / "q.csv", rows))
    assert [(it.id, it.task, it.question, it.answer_index) for it in got.items] == [
        ("microvqa/1", "2", "Why?", 0),
        ("microvqa/4", UNSPECIFIED_TASK, "Why?", 2),
    ]
    assert [(p.kind, p.severity, p.record) for p in got.problems] == [
        ("missing_image", "warning", "-"),
        ("malformed", "error", "key_question 2"),
        ("answer_mismatch", "error", "key_question 3"),
        ("duplicate", "error", "key_question 1"),
        ("null_field", "warning", "use_case"),
    ]


def test_csv_without_required_columns(tmp_path: Path) -> None:
    path = write_csv(
        tmp_path / "q.csv", [{"key_question": 1, "question": "q"}], header=["key_question", "question"]
    )
    with pytest.raises(DataFormatError, match="lacks the column"):
        MicroVQABenchmark().load(path)


def test_missing_csv(tmp_path: Path) -> None:
    with pytest.raises(DataNotFoundError):
        MicroVQABenchmark().load(tmp_path / "absent.csv")


def test_replay_under_the_owner_protocol_reads_numbered_answers(
    parquet_dir: Path, loaded: LoadedBenchmark, tmp_path: Path
) -> None:
    import json

    from scopebench.engine import RunConfig, run_benchmark
    from scopebench.store import load_run

    mcq = [it for it in loaded.items if it.answer_index is not None]
    lines = [
        {"item_id": it.id, "response": f"Thinking... The answer is ({it.answer_index + 1})"} for it in mcq
    ]
    replay = tmp_path / "replay.jsonl"
    replay.write_text("".join(json.dumps(x) + "\n" for x in lines))
    cfg = RunConfig(benchmark="microvqa", data=str(parquet_dir), model=f"replay:{replay}", protocol="owner")
    res = run_benchmark(cfg, tmp_path / "run")
    recs = {r.item_id: r for r in load_run(tmp_path / "run").records}
    assert all(recs[it.id].correct for it in mcq)  # "(2)" is the second option, not unparsed
    assert res.metrics["overall"]["unparsed"] == 0
    # The default protocol letters options, so the same replies name no letter: unparsed.
    res2 = run_benchmark(
        RunConfig(benchmark="microvqa", data=str(parquet_dir), model=f"replay:{replay}"), tmp_path / "r2"
    )
    assert res2.metrics["overall"]["unparsed"] == len(mcq)

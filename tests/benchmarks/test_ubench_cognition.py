"""μ-Bench Cognition rows in μ-Bench's schema, through the ``ubench`` loader."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import hf_fixtures as fx
import pytest

from scopebench.benchmarks.base import LoadedBenchmark
from scopebench.benchmarks.ubench import UbenchBenchmark
from scopebench.items import Record
from scopebench.scoring.metrics import compute_metrics

META = ("modality", "submodality", "domain", "subdomain")


@pytest.fixture(scope="module", autouse=True)
def _hf_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    import datasets

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path_factory.mktemp("hf-cache")))
        yield


def _cognition_dataset(rows: list[dict[str, Any]]) -> Any:
    from datasets import Dataset, Features, Image, List, Value

    entry = {k: Value("string") for k in ("id", "name", "question", "answer_idx", "tags")}
    entry["options"] = List(Value("string"))  # type: ignore[assignment]
    feats = Features({"image_id": Value("string"), "image": Image(), **{m: Value("string") for m in META},
                      "questions": {"cognition": entry}})  # fmt: skip
    cols: dict[str, list[Any]] = {name: [] for name in feats}
    for i, r in enumerate(rows):
        for name in feats:
            cols[name].append(fx.image_cell(8 + i, 8) if name == "image" else r[name])
    return Dataset.from_dict(cols, features=feats)


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> LoadedBenchmark:
    from helpers import FIXTURES

    rows = json.loads((FIXTURES / "ubench" / "cognition_rows.json").read_text(encoding="utf-8"))
    folder = fx.write_saved(_cognition_dataset(rows), tmp_path_factory.mktemp("cog") / "saved")
    return UbenchBenchmark().load(folder)


def test_one_cognition_item_per_valid_row(loaded: LoadedBenchmark) -> None:
    assert [it.id for it in loaded.items] == ["ubench/cog-1/cognition", "ubench/cog-2/cognition",
                                              "ubench/cog-3/cognition"]  # fmt: skip
    first, second, third = loaded.items
    assert {it.task for it in loaded.items} == {"cognition"}
    assert first.answer_index == 2 and first.answer_text == "Melanoma in situ"
    assert len(first.choices) == 6 and first.choices[-1] == "None of the above"
    assert second.answer_text == "None of the above"
    assert third.choices == ("Retroviridae", "Adenoviridae", "Picornaviridae", "Poxviridae", "Reoviridae")
    assert first.metadata["granularity"] == "cognition"
    assert first.metadata["domain"] == "pathology" and first.metadata["question_id"] == "q-cog-1"


def test_contrastive_captions_are_question_plus_option(loaded: LoadedBenchmark) -> None:
    # μ-Bench App. D: for cognition each caption is the question string followed by the option.
    second = loaded.items[1]
    assert second.captions is not None and len(second.captions) == 6
    assert second.captions[0] == (
        "The green channel marks mitochondria and the nuclei are fragmented. Which process is most "
        "likely under way? Mitosis"
    )
    assert second.metadata["caption_source"] == "question + option"


def test_format_problems_are_reported_not_hidden(loaded: LoadedBenchmark) -> None:
    kinds = {(p.record.split()[0], p.kind, p.severity) for p in loaded.problems}
    assert ("cog-3", "cognition_format", "warning") in kinds  # kept, with a warning
    assert ("cog-4", "answer_mismatch", "error") in kinds  # skipped, with an error
    # A cognition-only file is not missing the perception tasks: no warning per absent task.
    assert not [p for p in loaded.problems if p.kind == "missing_field"]
    assert not [p for p in loaded.problems if p.kind == "unknown_task"]
    assert ("cog-1", "cognition_format", "warning") not in kinds


def test_owner_aggregation_reports_the_cognition_column(loaded: LoadedBenchmark) -> None:
    # Correct on cog-1 and cog-2, wrong on cog-3: the cognition macro-average is its one task, 2/3;
    # the pathology view holds cog-1 alone.
    records = [
        Record(item_id=it.id, model="m", status="ok", choice=it.answer_index if i < 2 else 1,
               correct=i < 2, task=it.task, subset=it.subset, split=it.split, answer_index=it.answer_index)
        for i, it in enumerate(loaded.items)
    ]  # fmt: skip
    items = {it.id: it.to_summary() for it in loaded.items}
    metrics = compute_metrics(records, benchmark="ubench", items=items, seed=0, resamples=200)
    rows = {(r["split_or_group"], r["subset_or_task"]): r for r in metrics["owner"]["rows"]}
    assert set(rows) == {("cognition", "all"), ("cognition", "pathology")}
    assert rows[("cognition", "all")]["accuracy"] == pytest.approx(2 / 3)
    assert rows[("cognition", "pathology")]["accuracy"] == 1.0

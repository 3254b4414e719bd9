from __future__ import annotations

import pickle
import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import hf_fixtures as fx
import pytest

from scopebench.benchmarks import get_benchmark
from scopebench.benchmarks._hf import is_hub_id, split_of_file
from scopebench.benchmarks.base import LoadedBenchmark
from scopebench.benchmarks.ubench import (
    CAPTION_QUESTION,
    HUB_ID,
    UbenchBenchmark,
    box_from_bbox,
    box_from_polygon,
    untemplate,
)
from scopebench.errors import DataFormatError, DataNotFoundError
from scopebench.items import Box, Item

# --- data in the three on-disk layouts ------------------------------------------------------------


@pytest.fixture(scope="module", autouse=True)
def _hf_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Keep the parquet → Arrow conversion cache out of the user's home."""
    import datasets

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path_factory.mktemp("hf-cache")))
        yield


@pytest.fixture(scope="module")
def dataset() -> Any:
    return fx.ubench_dataset()


@pytest.fixture(scope="module")
def layouts(dataset: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("ubench")
    single = root / "single" / "ubench.parquet"
    single.parent.mkdir()
    dataset.to_parquet(str(single))
    return {
        "saved": fx.write_saved(dataset, root / "saved"),
        "parquet": fx.write_parquet_dir(dataset, root / "pq"),
        "parquet_file": single,
        "arrow": fx.write_arrow_repo(dataset, root / "repo"),
    }


@pytest.fixture(scope="module")
def loaded(layouts: dict[str, Path]) -> LoadedBenchmark:
    return UbenchBenchmark().load(layouts["saved"])


@pytest.fixture(scope="module")
def items(loaded: LoadedBenchmark) -> dict[str, Item]:
    return {it.id: it for it in loaded.items}


def problems_of(loaded: LoadedBenchmark, record_part: str) -> list[tuple[str, str, str]]:
    return [(p.severity, p.kind, p.message) for p in loaded.problems if record_part in p.record]


# --- registration ---------------------------------------------------------------------------------


def test_registered_with_help() -> None:
    bench = get_benchmark("ubench")
    assert isinstance(bench, UbenchBenchmark)
    assert bench.splits == ("test",)
    assert bench.default_split == "test"
    assert bench.tasks == (
        "modality",
        "submodality",
        "domain",
        "subdomain",
        "stain",
        "classification",
        "cognition",
        "detection",
    )
    assert HUB_ID in bench.data_help and "save_to_disk" in bench.data_help


# --- counts and problems --------------------------------------------------------------------------


def test_item_counts_per_task(loaded: LoadedBenchmark) -> None:
    assert Counter(it.task for it in loaded.items) == {
        "modality": 11,
        "submodality": 11,
        "domain": 11,
        "subdomain": 10,  # erythroblast's answer_idx "7" is out of range
        "stain": 9,  # monocyte and wu: null, no captions; eosinophil: built from captions
        "classification": 11,
        "detection": 3,  # held (bbox), contour (polygon), wu (out of range); texture is malformed
    }
    assert len(loaded.items) == 66
    assert len({it.id for it in loaded.items}) == 66


def test_subsets_are_the_source_dataset(loaded: LoadedBenchmark) -> None:
    per_subset = Counter(it.subset for it in loaded.items)
    assert (
        per_subset["acevedo_et_al_2020"] == 6 * 3 + 5 + 6
    )  # basophil, platelet, eosinophil; monocyte; no-image
    assert per_subset[None] == 5  # erythroblast: dataset null, subdomain skipped
    assert per_subset["held_et_al_2010_h2b"] == 7
    assert per_subset["wu_et_al_2023"] == 6


def test_problem_counts(loaded: LoadedBenchmark) -> None:
    assert Counter((p.severity, p.kind) for p in loaded.problems) == {
        ("warning", "null_field"): 4,  # eosinophil, erythroblast, monocyte, wu
        ("error", "answer_mismatch"): 1,
        ("warning", "caption_mismatch"): 1,
        ("warning", "box_out_of_range"): 1,
        ("error", "malformed"): 1,
        ("warning", "missing_image"): 1,
    }


# --- the real rows --------------------------------------------------------------------------------


def test_basophil_classification_is_the_real_question(items: dict[str, Item]) -> None:
    it = items[f"ubench/{fx.BASOPHIL_ID}/classification"]
    assert it.question == fx.BLOOD_QUESTION
    assert it.choices == (
        "platelet",
        "eosinophil",
        "neutrophil",
        "immature granulocyte",
        "basophil",
        "none of the above",
    )
    assert it.answer_index == 4
    assert it.answer_text == "basophil"
    assert it.kind == "mcq" and it.split == "test" and it.subset == "acevedo_et_al_2020"
    assert it.captions == (
        "A micrograph showing a platelet.",
        "A micrograph showing a eosinophil.",
        "A micrograph showing a neutrophil.",
        "A micrograph showing a immature granulocyte.",
        "A micrograph showing a basophil.",
        "none of the above",
    )
    assert it.metadata["caption_key"] == "classification_0"
    assert it.metadata["granularity"] == "fine"
    assert it.metadata["question_source"] == "questions"


def test_real_classification_answers(items: dict[str, Item]) -> None:
    cls = {image_id: items[f"ubench/{image_id}/classification"] for image_id in fx.REAL_CLASSIFICATION}
    got = {image_id: (it.answer_index, it.answer_text) for image_id, it in cls.items()}
    assert got == {
        fx.BASOPHIL_ID: (4, "basophil"),
        fx.PLATELET_ID: (3, "platelet"),
        fx.EOSINOPHIL_ID: (0, "eosinophil"),
        fx.ERYTHROBLAST_ID: (0, "erythroblast"),
        fx.MONOCYTE_ID: (3, "monocyte"),
    }


def test_metadata_keeps_every_scalar_column(items: dict[str, Item]) -> None:
    meta = dict(items[f"ubench/{fx.LYMPHOCYTE_ID}/domain"].metadata)
    meta.pop("caption_variants")
    assert meta == {
        "image_id": fx.LYMPHOCYTE_ID,
        "label": 0,
        "label_class": "lymphocyte",
        "label_name": "lymphocyte",
        "dataset": "jung_et_al_2022",
        "domain": "pathology",
        "institution": "catholic_univ_korea",
        "license": "CC-BY-NC-4.0",
        "microns_per_pixel": 0.16,  # float32 in the data, shown as written
        "modality": "light microscopy",
        "ncbitaxon_id": "NCBITaxon_synthetic",
        "ncbitaxon_name": "synthetic",
        "pmid": "35596153",
        "split": "test",
        "stain": "Giemsa",
        "subdomain": "hematopathology",
        "submodality": "brightfield microscopy",
        "synthetic": True,
        "granularity": "coarse",
        "question_source": "questions",
        "question_id": "q-domain",
        "caption_key": "domain_0",
    }


def test_modality_captions_use_the_real_template(items: dict[str, Item]) -> None:
    it = items[f"ubench/{fx.BASOPHIL_ID}/modality"]
    assert it.choices == (
        "light microscopy",
        "fluorescence microscopy",
        "electron microscopy",
        "none of the above",
    )
    assert it.answer_index == 0
    assert it.captions == (
        "A micrograph acquired through light microscopy.",
        "A micrograph acquired through fluorescence microscopy.",
        "A micrograph acquired through electron microscopy.",
        "none of the above",
    )
    assert it.metadata["caption_key"] == "modality_0"
    assert it.metadata["caption_variants"] == {
        "modality_0": list(it.captions),
        "modality_1": [
            "An image captured with light microscopy.",
            "An image captured with fluorescence microscopy.",
            "An image captured with electron microscopy.",
            "none of the above",
        ],
    }


def test_first_agreeing_caption_variant_is_attached(items: dict[str, Item]) -> None:
    it = items[f"ubench/{fx.PLATELET_ID}/modality"]
    assert it.metadata["caption_key"] == "modality_1"  # modality_0 says answer 2, the question 0
    assert it.captions is not None and it.captions[0] == "An image captured with light microscopy."


def test_null_question_with_captions_is_built_from_them(
    loaded: LoadedBenchmark, items: dict[str, Item]
) -> None:
    it = items[f"ubench/{fx.EOSINOPHIL_ID}/stain"]
    assert it.question == CAPTION_QUESTION
    assert it.choices == ("H&E", "Giemsa", "DAPI", "none of the above")
    assert it.answer_index == 1
    assert it.captions == (
        "A micrograph of a sample stained with H&E.",
        "A micrograph of a sample stained with Giemsa.",
        "A micrograph of a sample stained with DAPI.",
        "none of the above",
    )
    assert it.metadata["question_source"] == "captions"
    assert it.metadata["caption_template"] == "A micrograph of a sample stained with {class}."
    assert problems_of(loaded, fx.EOSINOPHIL_ID) == [
        ("warning", "null_field", "null fields: questions['stain'] (item built from its captions)")
    ]


def test_out_of_range_answer_skips_only_that_item(loaded: LoadedBenchmark, items: dict[str, Item]) -> None:
    assert f"ubench/{fx.ERYTHROBLAST_ID}/subdomain" not in items
    assert sorted(i.split("/")[-1] for i in items if fx.ERYTHROBLAST_ID in i) == [
        "classification",
        "domain",
        "modality",
        "stain",
        "submodality",
    ]
    assert problems_of(loaded, fx.ERYTHROBLAST_ID) == [
        (
            "error",
            "answer_mismatch",
            "answer_idx '7' is not an option index (0–3); the item cannot be scored and was skipped",
        ),
        ("warning", "null_field", "null fields: dataset (subset left empty)"),
    ]
    assert items[f"ubench/{fx.ERYTHROBLAST_ID}/modality"].subset is None


def test_null_captions_and_null_question(loaded: LoadedBenchmark, items: dict[str, Item]) -> None:
    mine = [it for it in loaded.items if fx.MONOCYTE_ID in it.id]
    assert [it.task for it in mine] == ["modality", "submodality", "domain", "subdomain", "classification"]
    assert all(it.captions is None and "caption_key" not in it.metadata for it in mine)
    assert problems_of(loaded, fx.MONOCYTE_ID) == [
        (
            "warning",
            "null_field",
            "null fields: captions (items have no captions); questions['stain'] (no stain item)",
        )
    ]


def test_caption_count_mismatch_leaves_no_captions(loaded: LoadedBenchmark, items: dict[str, Item]) -> None:
    it = items[f"ubench/{fx.LYMPHOCYTE_ID}/classification"]
    assert it.captions is None
    assert len(it.metadata["caption_variants"]["classification_0"]) == 4
    assert problems_of(loaded, fx.LYMPHOCYTE_ID) == [
        (
            "warning",
            "caption_mismatch",
            "none of the classification captions (classification_0) has 6 options with answer 0; "
            "the item has no captions",
        )
    ]


# --- detection ------------------------------------------------------------------------------------


def test_bbox_detection_item(items: dict[str, Item]) -> None:
    it = items[f"ubench/{fx.HELD_ID}/detection"]
    assert it.kind == "detection"
    assert it.answer_index is None and it.choices == ()
    assert it.targets == (Box(2, 3, 10, 12, "metaphase"), Box(15, 4, 30, 20, "metaphase"))
    assert it.metadata["class_name"] == "nucleus"  # the official class prompt for held_et_al_2010
    assert it.metadata["box_source"] == "bbox" and it.metadata["n_boxes"] == 2
    assert it.question == "Locate every nucleus in the image."
    assert it.images[0].key == f"ubench:{fx.HELD_ID}"


def test_polygon_detection_is_its_bounding_box(items: dict[str, Item]) -> None:
    it = items[f"ubench/{fx.CONTOUR_ID}/detection"]
    assert it.targets == (Box(1, 1, 8, 9, "irregular_contours"),)
    assert it.metadata["class_name"] == "irregular_contours"
    assert it.metadata["box_source"] == "polygon"


def test_box_outside_image_is_kept_with_warning(loaded: LoadedBenchmark, items: dict[str, Item]) -> None:
    it = items[f"ubench/{fx.WU_ID}/detection"]
    assert it.targets == (Box(0, 0, 50, 10, "cardiac_muscle"),)
    assert it.metadata["class_name"] == "mitochondria"
    assert ("warning", "box_out_of_range") in {(s, k) for s, k, _ in problems_of(loaded, fx.WU_ID)}
    assert f"ubench/{fx.WU_ID}/stain" not in items


def test_malformed_box_skips_detection_only(loaded: LoadedBenchmark, items: dict[str, Item]) -> None:
    assert f"ubench/{fx.TEXTURE_ID}/detection" not in items
    assert sum(fx.TEXTURE_ID in i for i in items) == 6
    assert problems_of(loaded, fx.TEXTURE_ID) == [
        (
            "error",
            "malformed",
            "bbox: box (10.0, 0.0, 5.0, 4.0) needs x1 <= x2 and y1 <= y2; the detection item was "
            "skipped (the row's questions are kept)",
        )
    ]


# --- images ---------------------------------------------------------------------------------------


def test_images_are_lazy_refs_of_the_right_size(loaded: LoadedBenchmark) -> None:
    for it in loaded.items:
        image_id = it.id.split("/")[1]
        size = fx.UBENCH_SIZES[image_id]
        if size is None:
            continue
        (ref,) = it.images
        assert ref.key == f"ubench:{image_id}"
        assert ref.path is None and ref.data is None and ref.loader is not None
        assert ref.exists()
    seen: dict[str, tuple[int, int]] = {}
    for it in loaded.items:
        if it.images and it.images[0].key not in seen:
            ref = it.images[0]
            assert ref.loader is not None and isinstance(ref.loader(), bytes)  # encoded, not decoded
            img = ref.load()
            seen[ref.key] = img.size
            assert img.mode == "RGB"
    assert seen == {f"ubench:{k}": v for k, v in fx.UBENCH_SIZES.items() if v is not None}


def test_items_of_a_row_share_one_image_ref(loaded: LoadedBenchmark) -> None:
    refs = {id(it.images[0]) for it in loaded.items if fx.HELD_ID in it.id}
    assert len(refs) == 1


def test_image_refs_survive_pickling(items: dict[str, Item]) -> None:
    ref = pickle.loads(pickle.dumps(items[f"ubench/{fx.BASOPHIL_ID}/modality"].images[0]))
    assert ref.load().size == (40, 30)


def test_row_without_image_keeps_items(loaded: LoadedBenchmark) -> None:
    mine = [it for it in loaded.items if fx.NO_IMAGE_ID in it.id]
    assert len(mine) == 6
    assert all(it.images == () and it.problems == ("missing_image",) for it in mine)
    assert problems_of(loaded, fx.NO_IMAGE_ID) == [
        ("warning", "missing_image", "the row has no image; its items are kept and counted as missing_image")
    ]


# --- the load paths agree -------------------------------------------------------------------------


def summary(loaded: LoadedBenchmark) -> list[tuple[Any, ...]]:
    return [(it.to_summary(), it.captions, it.images[0].size() if it.images else None) for it in loaded.items]


@pytest.mark.parametrize("layout", ["parquet", "parquet_file", "arrow"])
def test_every_layout_gives_identical_items(
    layout: str, layouts: dict[str, Path], loaded: LoadedBenchmark
) -> None:
    other = UbenchBenchmark().load(layouts[layout])
    assert summary(other) == summary(loaded)
    assert [(p.record, p.message) for p in other.problems] == [(p.record, p.message) for p in loaded.problems]
    assert other.fingerprint and other.fingerprint != loaded.fingerprint


def test_arrow_repo_root_is_found_recursively(layouts: dict[str, Path], loaded: LoadedBenchmark) -> None:
    repo_root = layouts["arrow"].parent.parent  # the folder holding perception/0.1.0/
    assert summary(UbenchBenchmark().load(repo_root)) == summary(loaded)


def test_fingerprints(layouts: dict[str, Path], dataset: Any, tmp_path: Path) -> None:
    bench = UbenchBenchmark()
    assert bench.load(layouts["arrow"]).fingerprint == bench.load(layouts["arrow"]).fingerprint
    copy = tmp_path / "copy"
    shutil.copytree(layouts["arrow"], copy)
    assert bench.load(copy).fingerprint == bench.load(layouts["arrow"]).fingerprint  # names + sizes
    fx.ubench_dataset(fx.ubench_rows()[:3]).save_to_disk(str(tmp_path / "fewer"))
    assert bench.load(tmp_path / "fewer").fingerprint != bench.load(layouts["saved"]).fingerprint


def test_hub_id_goes_through_load_dataset(
    monkeypatch: pytest.MonkeyPatch, dataset: Any, loaded: LoadedBenchmark
) -> None:
    import datasets

    calls: list[str] = []

    def fake_load_dataset(path: str, *args: Any, **kwargs: Any) -> Any:
        calls.append(path)
        return datasets.DatasetDict({"test": dataset})

    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    got = UbenchBenchmark().load(HUB_ID)
    assert calls == [HUB_ID]
    assert summary(got) == summary(loaded)
    assert got.fingerprint == dataset._fingerprint


def test_hub_unreachable_says_how_to_download(monkeypatch: pytest.MonkeyPatch) -> None:
    import datasets

    def offline(*args: Any, **kwargs: Any) -> Any:
        raise ConnectionError("Couldn't reach 'jnirschl/uBench' on the Hub (LocalEntryNotFoundError)")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(DataNotFoundError, match=r"save_to_disk\(DIR\)") as info:
        UbenchBenchmark().load(HUB_ID)
    assert "parquet/arrow" in str(info.value)


# --- wrong data -----------------------------------------------------------------------------------


def test_missing_path_is_not_sent_to_the_hub(tmp_path: Path) -> None:
    with pytest.raises(DataNotFoundError, match="not found"):
        UbenchBenchmark().load(tmp_path / "absent")


def test_folder_without_data_files(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(DataNotFoundError, match=r"no \.parquet or \.arrow files"):
        UbenchBenchmark().load(tmp_path)


def test_mixed_formats_are_refused(layouts: dict[str, Path], tmp_path: Path) -> None:
    shutil.copytree(layouts["arrow"], tmp_path / "a")
    shutil.copy(layouts["parquet_file"], tmp_path / "a" / "extra.parquet")
    with pytest.raises(DataFormatError, match=r"both \.parquet and \.arrow"):
        UbenchBenchmark().load(tmp_path / "a")


def test_not_ubench_data(tmp_path: Path) -> None:
    import datasets

    datasets.Dataset.from_dict({"text": ["a"]}).save_to_disk(str(tmp_path / "d"))
    with pytest.raises(DataFormatError, match="no 'image' column"):
        UbenchBenchmark().load(tmp_path / "d")


def test_unknown_split_is_refused(layouts: dict[str, Path]) -> None:
    with pytest.raises(DataFormatError, match="no split 'val'"):
        UbenchBenchmark().load(layouts["saved"], split="val")


def test_data_naming_another_split_load_with_warning(tmp_path: Path) -> None:
    from datasets import Dataset

    rows = fx.ubench_rows()[:1]
    feats = fx.ubench_features()
    ds = Dataset.from_dict({n: [r[n] for r in rows] for n in feats}, features=feats, split="validation")
    ds.save_to_disk(str(tmp_path / "d"))
    got = UbenchBenchmark().load(tmp_path / "d")
    assert len(got.items) == 6 and {it.split for it in got.items} == {"test"}
    assert [(p.kind, p.severity) for p in got.problems] == [("split_mismatch", "warning")]


def test_duplicate_image_id_skips_the_later_row(tmp_path: Path) -> None:
    rows = fx.ubench_rows()[:2]
    rows[1]["image_id"] = rows[0]["image_id"]
    fx.ubench_dataset(rows).save_to_disk(str(tmp_path / "d"))
    got = UbenchBenchmark().load(tmp_path / "d")
    assert len(got.items) == 6
    assert [(p.kind, p.record) for p in got.problems] == [("duplicate", fx.BASOPHIL_ID)]


def test_null_image_id_and_null_questions(tmp_path: Path) -> None:
    rows = fx.ubench_rows()[:1]
    rows[0]["image_id"] = None
    rows[0]["questions"] = None
    fx.ubench_dataset(rows).save_to_disk(str(tmp_path / "d"))
    got = UbenchBenchmark().load(tmp_path / "d")
    # Every task has captions, so each item is built from them.
    assert [it.id for it in got.items] == [f"ubench/row-0/{t}" for t in fx.COARSE] + [
        "ubench/row-0/classification"
    ]
    assert all(it.metadata["question_source"] == "captions" for it in got.items)
    assert got.items[-1].choices == tuple(fx.REAL_CLASSIFICATION[fx.BASOPHIL_ID][0])
    assert [(p.kind, p.message) for p in got.problems] == [
        (
            "null_field",
            "null fields: image_id (items are named after the row number); "
            "questions (only caption items are built)",
        )
    ]


# --- older revision: `instances` ------------------------------------------------------------------


def test_old_revision_instances(tmp_path: Path) -> None:
    fx.ubench_dataset(old_revision=True).save_to_disk(str(tmp_path / "old"))
    got = UbenchBenchmark().load(tmp_path / "old")
    by_id = {it.id: it for it in got.items}
    assert sorted(by_id) == sorted(
        [
            f"ubench/{fx.OLD_ID}/modality",
            f"ubench/{fx.OLD_ID}/classification",
            f"ubench/{fx.OLD_DET_ID}/modality",
            f"ubench/{fx.OLD_DET_ID}/classification",
            f"ubench/{fx.OLD_DET_ID}/detection/nucleus",
            f"ubench/{fx.OLD_DET_ID}/detection/golgi",
        ]
    )
    assert by_id[f"ubench/{fx.OLD_DET_ID}/detection/nucleus"].targets == (
        Box(1, 1, 5, 6, "nucleus"),
        Box(9, 1, 14, 5, "nucleus"),
    )
    assert by_id[f"ubench/{fx.OLD_DET_ID}/detection/golgi"].targets == (Box(8, 8, 12, 14, "golgi"),)
    assert by_id[f"ubench/{fx.OLD_DET_ID}/detection/golgi"].metadata["box_source"] == "instances"
    # label 5 is platelet, label_name says monocyte (as in the source): both kept.
    meta = by_id[f"ubench/{fx.OLD_ID}/modality"].metadata
    assert (meta["label"], meta["label_class"], meta["label_name"]) == (5, "platelet", "monocyte")
    assert sorted(p.record for p in got.problems if p.kind == "missing_field") == [
        "questions['domain']",
        "questions['stain']",
        "questions['subdomain']",
        "questions['submodality']",
    ]
    assert len(got.problems) == 4


# --- helpers --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("entry", "box"),
    [
        ({"x1": 1, "y1": 2, "x2": 3, "y2": 4}, Box(1, 2, 3, 4, "cell")),
        (
            {"points": {"x1": 1, "y1": 2, "x2": 3, "y2": 4}, "className": "nucleus"},
            Box(1, 2, 3, 4, "nucleus"),
        ),
        ([1, 2, 3.5, 4], Box(1, 2, 3.5, 4, "cell")),
        ('{"x1": 0, "y1": 0, "x2": 2, "y2": 2}', Box(0, 0, 2, 2, "cell")),
    ],
)
def test_box_from_bbox(entry: Any, box: Box) -> None:
    assert box_from_bbox(entry, "cell") == box


@pytest.mark.parametrize(
    "entry",
    [{"x1": 1, "y1": 2}, [1, 2, 3], {"x1": 3, "y1": 0, "x2": 1, "y2": 1}, [0, 0, float("nan"), 1], "x"],
)
def test_box_from_bbox_rejects(entry: Any) -> None:
    with pytest.raises(ValueError):
        box_from_bbox(entry, "cell")


@pytest.mark.parametrize(
    ("entry", "box"),
    [
        ([1, 5, 4, 2, 3, 9], Box(1, 2, 4, 9, "cell")),
        ([[1, 5], [4, 2], [3, 9]], Box(1, 2, 4, 9, "cell")),
        ([{"x": 1, "y": 5}, {"x": 4, "y": 2}], Box(1, 2, 4, 5, "cell")),
        ({"points": [0, 0, 2, 3], "className": "golgi"}, Box(0, 0, 2, 3, "golgi")),
    ],
)
def test_box_from_polygon(entry: Any, box: Box) -> None:
    assert box_from_polygon(entry, "cell") == box


@pytest.mark.parametrize("entry", [[1, 2, 3], [], [[1, 2, 3]], {"points": None}])
def test_box_from_polygon_rejects(entry: Any) -> None:
    with pytest.raises(ValueError):
        box_from_polygon(entry, "cell")


def test_untemplate() -> None:
    t = "A micrograph acquired through {class}."
    assert untemplate(t, "A micrograph acquired through light microscopy.") == "light microscopy"
    assert untemplate(t, "none of the above") == "none of the above"
    assert untemplate(None, "plain") == "plain"


@pytest.mark.parametrize(
    ("name", "split"),
    [
        ("test-00000-of-00005.parquet", "test"),
        ("ubench-test-00003-of-00007.arrow", "test"),
        ("train-00000-of-00001.parquet", "train"),
        ("data-00000-of-00002.arrow", None),
        ("test.parquet", "test"),
        ("ubench.parquet", None),
    ],
)
def test_split_of_file(name: str, split: str | None) -> None:
    assert split_of_file(Path(name)) == split


def test_is_hub_id(tmp_path: Path) -> None:
    assert is_hub_id("jnirschl/uBench")
    assert not is_hub_id("ubench")
    assert not is_hub_id("./a/b")
    assert not is_hub_id(str(tmp_path))


def test_no_data_means_the_hub_dataset(monkeypatch: pytest.MonkeyPatch, dataset: Any) -> None:
    import datasets

    calls: list[str] = []

    def fake_load_dataset(path: str, *args: Any, **kwargs: Any) -> Any:
        calls.append(path)
        return datasets.DatasetDict({"test": dataset})

    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    assert len(UbenchBenchmark().load("").items) == 66
    assert calls == [HUB_ID]


def test_metadata_file_names_its_folder(layouts: dict[str, Path], loaded: LoadedBenchmark) -> None:
    got = UbenchBenchmark().load(layouts["arrow"] / "dataset_info.json")
    assert summary(got) == summary(loaded)


def test_files_naming_no_split_beside_split_files_are_reported(
    layouts: dict[str, Path], loaded: LoadedBenchmark, tmp_path: Path
) -> None:
    shutil.copytree(layouts["parquet"], tmp_path / "pq")
    shutil.copy(layouts["parquet_file"], tmp_path / "pq" / "data" / "extra.parquet")
    got = UbenchBenchmark().load(tmp_path / "pq")
    assert summary(got) == summary(loaded)
    assert [(p.kind, p.severity) for p in got.problems if p.kind == "unread_files"] == [
        ("unread_files", "warning")
    ]
    assert "extra.parquet" in got.problems[0].message

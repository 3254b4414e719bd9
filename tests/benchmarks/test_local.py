from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from scopebench.benchmarks import get_benchmark
from scopebench.benchmarks.base import LoadedBenchmark
from scopebench.benchmarks.local import LocalBenchmark, find_data_file, resolve_answer
from scopebench.errors import DataFormatError, DataNotFoundError
from scopebench.items import Box

WriteJsonl = Callable[[Path, list[Any]], Path]


def load(data: Path | str, split: str | None = None) -> LoadedBenchmark:
    return LocalBenchmark().load(data, split)


def row(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"question": "Which?", "choices": ["a", "b", "c"], "answer": 0}
    base.update(fields)
    return {k: v for k, v in base.items() if v is not None}


def errors(lb: LoadedBenchmark) -> list[tuple[str, str]]:
    return [(p.record, p.kind) for p in lb.problems if p.severity == "error"]


# --- the fixture files, one per format ----------------------------------------------------------


def test_registered_with_help() -> None:
    bench = get_benchmark("local")
    assert isinstance(bench, LocalBenchmark)
    assert "data.jsonl" in bench.data_help
    assert bench.default_split is None


def test_jsonl(local_dir: Path) -> None:
    lb = load(local_dir / "items.jsonl")
    assert lb.name == "local"
    assert [it.id for it in lb.items] == [
        "local/q1",
        "local/q2",
        "local/q3",
        "local/items-3",
        "local/items-4",
    ]
    q1, q2, q3, counting, det = lb.items
    assert q1.benchmark == "local"
    assert (q1.split, q1.task, q1.subset) == ("test", "stain", "lab-A")
    assert q1.choices == ("H&E", "Masson trichrome", "PAS", "Giemsa")
    assert q1.answer_index == 0
    assert [ref.key for ref in q1.images] == ["images/cell1.png"]
    assert q1.images[0].path == (local_dir / "images" / "cell1.png").resolve()
    assert q1.images[0].load().size == (16, 16)
    assert dict(q1.metadata) == {"modality": "brightfield"}
    assert q1.problems == ()

    assert q2.answer_index == 1  # letter "b"
    assert [ref.key for ref in q2.images] == ["images/cell1.png", "images/cell2.png"]
    assert q2.context == "Two channels of the same field."
    assert q2.captions == (
        "a fluorescence image of the nucleus",
        "a fluorescence image of mitochondria",
        "a fluorescence image of the Golgi apparatus",
    )
    assert (q2.task, q2.subset) == ("organelle", None)

    assert q3.answer_index == 2  # text " 40X " matches "40x"
    assert (q3.split, q3.task) == ("val", "default")
    assert q3.problems == ("missing_image",)
    assert dict(q3.metadata) == {"difficulty": 2, "tags": ["scale", "optics"]}  # null "note" omitted

    assert counting.choices == ("1", "2", "3")
    assert counting.answer_index == 1  # "2" is a choice's text before it is an index
    assert counting.images == ()

    assert det.kind == "detection"
    assert det.choices == ()
    assert det.answer_index is None
    assert det.targets == (Box(1.0, 2.0, 8.0, 9.0, "nucleus"), Box(10.0, 10.0, 15.5, 15.0, "nucleus"))
    assert dict(det.metadata) == {"class_name": "nucleus"}

    assert [(p.record, p.kind, p.severity) for p in lb.problems] == [
        ("q3 (line 3)", "missing_image", "warning")
    ]


def test_csv_with_json_choices(local_dir: Path) -> None:
    lb = load(local_dir / "items.csv")
    assert [it.id for it in lb.items] == ["local/c1", "local/c2", "local/007"]
    c1, c2, c007 = lb.items
    assert c1.choices == ("H&E", "PAS", "Giemsa")
    assert c1.answer_index == 2
    assert [ref.key for ref in c1.images] == ["images/cell1.png", "images/cell2.png"]  # "a;b"
    assert dict(c1.metadata) == {"stain": "HE"}
    assert c2.question == "Which cell type, given the morphology?"
    assert (c2.choices, c2.answer_index, c2.task) == (("Neutrophil", "Lymphocyte"), 1, "default")
    assert dict(c2.metadata) == {}  # empty cells are omitted
    assert (c007.answer_index, [r.key for r in c007.images]) == (0, ["images/cell1.png"])  # JSON array cell
    assert lb.problems == []


def test_csv_with_letter_columns(local_dir: Path) -> None:
    lb = load(local_dir / "letters.csv")
    assert [it.id for it in lb.items] == ["local/letters-0", "local/letters-1", "local/letters-2"]
    assert [it.choices for it in lb.items] == [
        ("Prophase", "Metaphase", "Anaphase", "Telophase"),
        ("1", "2", "3", "4", "5"),
        ("Yes", "No"),
    ]
    assert [it.answer_index for it in lb.items] == [1, 4, 0]
    assert lb.items[2].question == 'Is the cell, "as shown", dividing?'
    assert all(dict(it.metadata) == {} for it in lb.items)  # letter columns are not metadata
    assert lb.items[1].images == ()


def test_json_list(local_dir: Path) -> None:
    lb = load(local_dir / "items.json")
    assert [it.id for it in lb.items] == ["local/1", "local/2"]
    assert lb.items[0].answer_index == 2
    assert dict(lb.items[0].metadata) == {"source": {"dataset": "demo", "year": 2024}}
    assert (lb.items[1].answer_index, lb.items[1].subset) == (1, "breast")


def test_parquet(tmp_path: Path, png: Any) -> None:
    png(tmp_path / "img" / "a.png")
    frame = pd.DataFrame(
        {
            "question": ["Q0?", "Q1?", "Q2?"],
            "choices": [["x", "y"], ["p", "q", "r"], ["m", "n"]],
            "answer": [1, 2, 0],
            "images": [["img/a.png"], [], ["img/a.png", "img/b.png"]],
            "score": [0.5, np.nan, 2.0],
            "count": np.array([1, 2, 3], dtype=np.int64),
            "boxes": [None, None, [{"x1": 0, "y1": 0, "x2": 4, "y2": 4, "label": "cell"}]],
        }
    )
    frame.to_parquet(tmp_path / "bench.parquet")
    lb = load(tmp_path / "bench.parquet")
    assert [it.id for it in lb.items] == ["local/bench-0", "local/bench-1", "local/bench-2"]
    assert [it.choices for it in lb.items] == [("x", "y"), ("p", "q", "r"), ("m", "n")]
    assert [it.answer_index for it in lb.items] == [1, 2, 0]
    assert [[r.key for r in it.images] for it in lb.items] == [["img/a.png"], [], ["img/a.png", "img/b.png"]]
    assert [dict(it.metadata) for it in lb.items] == [
        {"score": 0.5, "count": 1},
        {"count": 2},  # NaN omitted
        {"score": 2.0, "count": 3, "boxes": [{"x1": 0.0, "y1": 0.0, "x2": 4.0, "y2": 4.0, "label": "cell"}]},
    ]
    assert type(lb.items[0].metadata["count"]) is int
    assert lb.items[2].problems == ("missing_image",)
    json.dumps([it.to_summary() for it in lb.items])  # metadata is JSON-safe


def test_folder_with_one_data_file(tmp_path: Path, write_jsonl: WriteJsonl) -> None:
    write_jsonl(tmp_path / "data.jsonl", [row(), row(answer="c")])
    lb = load(tmp_path)
    assert [it.id for it in lb.items] == ["local/data-0", "local/data-1"]
    assert [it.answer_index for it in lb.items] == [0, 2]
    assert find_data_file(tmp_path) == tmp_path / "data.jsonl"


def test_folder_with_several_or_no_data_files(tmp_path: Path, write_jsonl: WriteJsonl) -> None:
    with pytest.raises(DataNotFoundError, match=r"data\.jsonl"):
        load(tmp_path)
    write_jsonl(tmp_path / "data.jsonl", [row()])
    (tmp_path / "data.csv").write_text("question\nQ\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"data\.jsonl, data\.csv"):
        load(tmp_path)


def test_reuse_under_another_name(local_dir: Path) -> None:
    lb = LocalBenchmark().load_file(local_dir / "items.jsonl", "demo", None)
    assert lb.name == "demo"
    assert lb.items[0].id == "demo/q1"
    assert {it.benchmark for it in lb.items} == {"demo"}
    with pytest.raises(DataNotFoundError, match="no data file"):
        LocalBenchmark().load_file(local_dir, "demo", None)  # the fixture folder has no data.* file


def test_split_filter(local_dir: Path) -> None:
    assert [it.id for it in load(local_dir / "items.jsonl", "val").items] == ["local/q3"]
    assert len(load(local_dir / "items.jsonl", "test").items) == 4
    with pytest.raises(DataFormatError, match="its splits are: test, val"):
        load(local_dir / "items.jsonl", "dev")


def test_fingerprint(tmp_path: Path, write_jsonl: WriteJsonl) -> None:
    path = write_jsonl(tmp_path / "b.jsonl", [row()])
    first = load(path).fingerprint
    assert load(path).fingerprint == first
    write_jsonl(path, [row(answer=1)])
    assert load(path).fingerprint != first


# --- answers --------------------------------------------------------------------------------------


CHOICES = ("Nucleus", "Golgi apparatus", "Mitochondria", "Ribosome")


@pytest.mark.parametrize(
    ("answer", "index"),
    [
        (0, 0),
        (3, 3),
        (2.0, 2),
        ("c", 2),
        ("C", 2),
        (" golgi   APPARATUS ", 1),
        ("Ribosome", 3),
        ("1", 1),
        (np.int64(2).item(), 2),
    ],
)
def test_resolve_answer_forms(answer: Any, index: int) -> None:
    assert resolve_answer(answer, CHOICES) == (index, "")


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (4, "answer index 4 is out of range for 4 choices (A–D, 0–3)"),
        (-1, "answer index -1 is out of range"),
        ("E", "answer letter 'E' is out of range"),
        ("7", "answer index 7 is out of range"),
        ("Lysosome", "answer 'Lysosome' matches no choice's text"),
        (True, "neither an index, a letter nor a choice's text"),
        (1.5, "neither an index, a letter nor a choice's text"),
        ([1], "neither an index, a letter nor a choice's text"),
    ],
)
def test_resolve_answer_failures(answer: Any, reason: str) -> None:
    index, why = resolve_answer(answer, CHOICES)
    assert index is None
    assert why.startswith(reason) or reason in why


def test_numeric_choices_text_before_index() -> None:
    assert resolve_answer("2", ("1", "2", "3")) == (1, "")
    assert resolve_answer(2, ("1", "2", "3")) == (2, "")
    assert resolve_answer("same", ("same", "Same", "other"))[0] is None  # ambiguous text


# --- problems --------------------------------------------------------------------------------------


def test_bad_answers_skip_the_row(tmp_path: Path, write_jsonl: WriteJsonl) -> None:
    path = write_jsonl(
        tmp_path / "b.jsonl",
        [
            row(id="ok"),
            row(id="letter", answer="Z"),
            row(id="index", answer=3),
            row(id="text", answer="d"),
            row(id="none", answer=None),
        ],
    )
    lb = load(path)
    assert [it.id for it in lb.items] == ["local/ok"]
    assert errors(lb) == [
        ("letter (line 2)", "answer_mismatch"),
        ("index (line 3)", "answer_mismatch"),
        ("text (line 4)", "answer_mismatch"),
        ("none (line 5)", "answer_mismatch"),
    ]
    assert all("cannot be scored" in p.message for p in lb.problems)


def test_malformed_lines_are_reported_by_number(tmp_path: Path, write_jsonl: WriteJsonl) -> None:
    path = write_jsonl(tmp_path / "b.jsonl", [row(), '{"question": "broken",', "", "[1, 2]", row()])
    lb = load(path)
    # Blank lines take no index; malformed ones do, so ids do not shift when a line is fixed.
    assert [it.id for it in lb.items] == ["local/b-0", "local/b-3"]
    assert errors(lb) == [("line 2", "malformed"), ("line 4", "malformed")]
    assert "not valid JSON" in lb.problems[0].message


def test_row_shape_problems(tmp_path: Path, write_jsonl: WriteJsonl) -> None:
    path = write_jsonl(
        tmp_path / "b.jsonl",
        [
            row(question=" "),
            row(choices="not a list"),
            row(choices=["only"]),
            row(choices=["a", ""]),
            {"question": "no choices, no boxes"},
            {"question": "bad box", "boxes": [{"x1": 5, "y1": 0, "x2": 1, "y2": 3}]},
            {"question": "bad box 2", "boxes": [{"x1": "left"}]},
            row(images=[3]),
            row(),
        ],
    )
    lb = load(path)
    assert [it.id for it in lb.items] == ["local/b-8"]
    assert errors(lb) == [(f"line {n}", "malformed") for n in range(1, 9)]


def test_duplicate_ids(tmp_path: Path, write_jsonl: WriteJsonl) -> None:
    lb = load(
        write_jsonl(tmp_path / "b.jsonl", [row(id="x"), row(id="x", answer=1), row(id="7"), row(id=" 7 ")])
    )
    assert [(it.id, it.answer_index) for it in lb.items] == [("local/x", 0), ("local/7", 0)]
    assert errors(lb) == [("x (line 2)", "duplicate"), ("7 (line 4)", "duplicate")]


def test_non_text_ids_are_refused_not_stringified(tmp_path: Path, write_jsonl: WriteJsonl) -> None:
    """A number, boolean, null or empty id is a data problem naming the row and the value.

    Before, 7 became "7" (and true became "True"), so an id 7 and an id "7" silently became one
    item, and a null id silently got an automatic one.
    """
    rows = [row(id=7), row(id="7"), row(id=True), {**row(), "id": None}, row(id=""), row(id=7.5), row()]
    lb = load(write_jsonl(tmp_path / "b.jsonl", rows))
    assert [it.id for it in lb.items] == ["local/7", "local/b-6"]
    assert errors(lb) == [(f"line {n}", "bad_id") for n in (1, 3, 4, 5, 6)]
    messages = [p.message for p in lb.problems]
    assert messages[0].startswith("id is 7, a number, not text") and "row skipped" in messages[0]
    assert messages[1].startswith("id is true, a boolean")
    assert messages[2].startswith("id is empty or null") and messages[3].startswith("id is empty or null")
    assert all(p.file == str(tmp_path / "b.jsonl") for p in lb.problems)


def test_parquet_integer_ids_are_refused_csv_ids_are_text(tmp_path: Path) -> None:
    frame = pd.DataFrame(
        {"id": [1, 2], "question": ["Q1", "Q2"], "choices": [["a", "b"]] * 2, "answer": [0, 1]}
    )
    frame.to_parquet(tmp_path / "d.parquet")
    lb = load(tmp_path / "d.parquet")
    assert lb.items == [] and errors(lb) == [("row 0", "bad_id"), ("row 1", "bad_id")]
    # CSV has no types: "007" stays text; an empty id cell is refused, not replaced by a row number.
    (tmp_path / "d.csv").write_text(
        'id,question,choices,answer\n007,Q,"[""a"",""b""]",0\n,Q2,"[""a"",""b""]",1\n'
    )
    lb = load(tmp_path / "d.csv")
    assert [it.id for it in lb.items] == ["local/007"] and errors(lb) == [("row 1", "bad_id")]


def test_a_symlinked_data_folder_loads_like_the_real_one(tmp_path: Path, png: Any) -> None:
    """The data folder (or the cache holding it) may itself be a symbolic link.

    Before, image keys were taken relative to the *resolved* folder while the paths were not
    resolved: "… is not in the subpath of …" crashed validate and run.
    """
    real = tmp_path / "real"
    png(real / "images" / "cell.png")
    (real / "data.jsonl").write_text(json.dumps(row(id="q1", image="images/cell.png")) + "\n")
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    via_link, direct = load(link), load(real)
    assert via_link.problems == [] and [it.id for it in via_link.items] == ["local/q1"]
    ref = via_link.items[0].images[0]
    assert ref.key == "images/cell.png" == direct.items[0].images[0].key
    assert ref.load().size == (16, 16)
    assert via_link.fingerprint == direct.fingerprint
    # Escaping the folder is still refused when the folder is reached through the link.
    (real / "data.jsonl").write_text(json.dumps(row(id="q2", image="../real/images/cell.png")) + "\n")
    assert errors(load(link)) == [("q2 (line 1)", "unsafe_path")]


def test_path_escapes_are_refused(tmp_path: Path, write_jsonl: WriteJsonl, png: Any) -> None:
    data = tmp_path / "data"
    outside = png(tmp_path / "x.png")
    inside = png(data / "in.png")
    path = write_jsonl(
        data / "b.jsonl",
        [
            row(id="up", image="../x.png"),
            row(id="abs", image=str(outside)),
            row(id="list", images=["in.png", "sub/../../x.png"]),
            row(id="abs-inside", image=str(inside)),
        ],
    )
    lb = load(path)
    assert [it.id for it in lb.items] == ["local/abs-inside"]
    assert lb.items[0].images[0].key == "in.png"
    assert errors(lb) == [
        ("up (line 1)", "unsafe_path"),
        ("abs (line 2)", "unsafe_path"),
        ("list (line 3)", "unsafe_path"),
    ]


def test_missing_images_kept(tmp_path: Path, write_jsonl: WriteJsonl, png: Any) -> None:
    png(tmp_path / "here.png")
    lb = load(write_jsonl(tmp_path / "b.jsonl", [row(images=["here.png", "gone.png", "gone2.jpg"])]))
    (item,) = lb.items
    assert [r.key for r in item.images] == ["here.png", "gone.png", "gone2.jpg"]
    assert item.problems == ("missing_image",)
    assert [(p.kind, p.severity) for p in lb.problems] == [("missing_image", "warning")] * 2


def test_captions_must_match_choices(tmp_path: Path, write_jsonl: WriteJsonl) -> None:
    lb = load(
        write_jsonl(tmp_path / "b.jsonl", [row(captions=["one", "two"]), row(captions=["p", "q", "r"])])
    )
    assert [it.captions for it in lb.items] == [None, ("p", "q", "r")]
    assert [(p.record, p.kind, p.severity) for p in lb.problems] == [
        ("line 1", "captions_mismatch", "warning")
    ]


def test_boxes_on_mcq_rows_are_metadata(tmp_path: Path, write_jsonl: WriteJsonl) -> None:
    lb = load(write_jsonl(tmp_path / "b.jsonl", [row(boxes=[{"x1": 1, "y1": 1, "x2": 2, "y2": 2}])]))
    (item,) = lb.items
    assert item.kind == "mcq"
    assert item.targets == ()
    assert item.metadata["boxes"] == [{"x1": 1.0, "y1": 1.0, "x2": 2.0, "y2": 2.0, "label": ""}]


def test_csv_letter_column_gap(tmp_path: Path) -> None:
    (tmp_path / "g.csv").write_text("question,A,B,C,answer\nQ1,x,,z,A\nQ2,x,y,,B\n", encoding="utf-8")
    lb = load(tmp_path / "g.csv")
    assert [(it.id, it.choices) for it in lb.items] == [("local/g-1", ("x", "y"))]
    assert errors(lb) == [("row 0", "malformed")]
    assert "choice column B is empty" in lb.problems[0].message


def test_csv_detection_rows(tmp_path: Path) -> None:
    boxes = json.dumps([{"x1": 0, "y1": 1, "x2": 2, "y2": 3}]).replace('"', '""')
    (tmp_path / "d.csv").write_text(
        f'question,boxes,class_name,image\nFind cells,"{boxes}",cell,a.png\n', encoding="utf-8"
    )
    (item,) = load(tmp_path / "d.csv").items
    assert item.kind == "detection"
    assert item.targets == (Box(0.0, 1.0, 2.0, 3.0, "cell"),)
    assert item.problems == ("missing_image",)


# --- unreadable files ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "content", "match"),
    [
        ("b.json", "[{", "cannot read"),
        ("b.json", '{"question": "x"}', "JSON list"),
        ("b.csv", "id,prompt\n1,x\n", "no 'question' column"),
        ("b.csv", "", "is empty"),
        ("b.parquet", "not parquet", "cannot read"),
        ("b.jsonl", "\n\n", "has no rows"),
        ("b.txt", "question", "unknown data file type"),
    ],
)
def test_unreadable_files(tmp_path: Path, name: str, content: str, match: str) -> None:
    (tmp_path / name).write_text(content, encoding="utf-8")
    with pytest.raises(DataFormatError, match=match):
        load(tmp_path / name)


def test_not_utf8(tmp_path: Path) -> None:
    (tmp_path / "b.jsonl").write_bytes(b'{"question": "\xff"}\n')
    with pytest.raises(DataFormatError, match="UTF-8"):
        load(tmp_path / "b.jsonl")


def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(DataNotFoundError):
        load(tmp_path / "absent.jsonl")


def test_binary_metadata_column_reported(tmp_path: Path) -> None:
    pd.DataFrame(
        {"question": ["Q"], "choices": [["a", "b"]], "answer": ["b"], "blob": [b"\x00\x01"]}
    ).to_parquet(tmp_path / "b.parquet")
    lb = load(tmp_path / "b.parquet")
    assert lb.items[0].answer_index == 1
    assert "blob" not in lb.items[0].metadata
    assert [(p.record, p.kind, p.severity) for p in lb.problems] == [("blob", "binary_metadata", "warning")]


def test_fixture_folder_copy_as_data_file(tmp_path: Path, local_dir: Path) -> None:
    shutil.copy(local_dir / "items.csv", tmp_path / "data.csv")
    shutil.copytree(local_dir / "images", tmp_path / "images")
    lb = load(tmp_path)
    assert [it.id for it in lb.items] == ["local/c1", "local/c2", "local/007"]
    assert lb.problems == []


@pytest.mark.parametrize(
    ("choices", "answer", "index"),
    [
        (("T", "F"), "F", 1),  # letter F is out of range: the text reading holds
        (("I", "II", "III"), "I", 0),
        (("x", "y", "z"), "z", 2),
        (("B", "A"), "A", 0),  # both readings possible: the letter wins, as documented
    ],
)
def test_one_letter_option_texts(choices: tuple[str, ...], answer: str, index: int) -> None:
    assert resolve_answer(answer, choices) == (index, "")


def test_out_of_range_letter_that_is_no_text_names_both(tmp_path: Path) -> None:
    index, why = resolve_answer("Q", ("T", "F"))
    assert (
        index is None
        and why == "answer letter 'Q' is out of range for 2 choices (A–B, 0–1) and matches no choice's text"
    )


def test_symlinked_image_folders_are_the_data_owners_choice(tmp_path: Path) -> None:
    from PIL import Image

    from scopebench.errors import UnsafePathError
    from scopebench.items import safe_join

    shared = tmp_path / "shared-storage"
    shared.mkdir()
    Image.new("RGB", (8, 8)).save(shared / "cell.png")
    data = tmp_path / "bench"
    data.mkdir()
    (data / "images").symlink_to(shared, target_is_directory=True)
    (data / "data.jsonl").write_text(
        '{"id": "q1", "question": "Q?", "choices": ["a", "b"], "answer": 0, "image": "images/cell.png"}\n'
    )
    loaded = get_benchmark("local").load(str(data))
    assert [it.id for it in loaded.items] == ["local/q1"] and loaded.problems == []
    assert loaded.items[0].images[0].load().size == (8, 8)
    # What the data file writes is still checked: no climbing out, no absolute paths elsewhere.
    for bad in (
        "../shared-storage/cell.png",
        "images/../../shared-storage/cell.png",
        str(shared / "cell.png"),
    ):
        with pytest.raises(UnsafePathError, match="points outside the data folder"):
            safe_join(data, bad)

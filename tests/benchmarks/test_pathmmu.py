from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from scopebench.benchmarks import get_benchmark
from scopebench.benchmarks._options import ParsedAnswer, parse_answer_label, strip_label
from scopebench.benchmarks.base import LoadedBenchmark
from scopebench.benchmarks.pathmmu import PathMMUBenchmark
from scopebench.errors import DataFormatError, DataNotFoundError


def load(data: Path | str, split: str | None = None) -> LoadedBenchmark:
    return PathMMUBenchmark().load(data, split)


def by_id(lb: LoadedBenchmark) -> dict[str, Any]:
    return {it.id: it for it in lb.items}


def record(no: int, options: list[str], answer: str, img: str = "x.jpg", **extra: Any) -> dict[str, Any]:
    return {"No": no, "img": img, "question": f"Q{no}?", "options": options, "answer": answer, **extra}


def write_data(
    folder: Path, records: list[dict[str, Any]], subset: str = "PubMed", split: str = "val"
) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "data.json").write_text(json.dumps({subset: {split: records}}), encoding="utf-8")
    return folder


FOUR = ["A) alpha", "B) beta", "C) gamma", "D) delta"]


# --- the real fixture ---------------------------------------------------------------------------


def test_registered_with_help() -> None:
    bench = get_benchmark("pathmmu")
    assert isinstance(bench, PathMMUBenchmark)
    assert bench.splits == ("val", "test", "test_tiny")
    assert bench.tasks == ("PubMed", "SocialPath", "EduContent", "Atlas", "PathCLS")
    assert bench.default_split is None
    assert "https://huggingface.co/datasets/jamessyx/PathMMU" in bench.data_help
    assert "PathMMU-Benchmark/PathMMU" in bench.data_help


def test_fixture_counts_every_split(pathmmu_dir: Path) -> None:
    lb = load(pathmmu_dir)
    assert len(lb.items) == 130
    assert lb.counts() == {
        ("test", "SocialPath", "SocialPath"): 60,
        ("test_tiny", "SocialPath", "SocialPath"): 30,
        ("val", "SocialPath", "SocialPath"): 40,
    }
    assert lb.items[0].id == "pathmmu/SocialPath/val/0"
    assert len({it.id for it in lb.items}) == 130
    assert {it.benchmark for it in lb.items} == {"pathmmu"}


@pytest.mark.parametrize(("split", "n"), [("val", 40), ("test", 60), ("test_tiny", 30)])
def test_split_filter(pathmmu_dir: Path, split: str, n: int) -> None:
    lb = load(pathmmu_dir, split)
    assert len(lb.items) == n
    assert {it.split for it in lb.items} == {split}


def test_unknown_split_refused(pathmmu_dir: Path) -> None:
    with pytest.raises(DataFormatError, match="no split 'dev'"):
        load(pathmmu_dir, "dev")


def test_first_item_fields(pathmmu_dir: Path) -> None:
    item = load(pathmmu_dir).items[0]
    assert item.question.startswith("Based on the observed tissue morphology")
    assert item.choices == (
        "Random distribution",
        "Palisading arrangement",
        "Rosette formation",
        "Whorled pattern",
    )
    assert item.answer_index == 3
    assert item.task == item.subset == "SocialPath"
    assert item.metadata["tw_id"] == "810991493825576961"
    assert item.metadata["img_position"] == 2
    assert item.metadata["ref_web"] == "https://x.com/abc/status/810991493825576961"
    assert item.metadata["explanation"].startswith("The elongated spindle-shaped cells")
    assert item.metadata["answer_raw"] == "D) Whorled pattern"


def test_three_option_items(pathmmu_dir: Path) -> None:
    items = by_id(load(pathmmu_dir))
    three = sorted(i for i, it in items.items() if len(it.choices) == 3)
    assert three == ["pathmmu/SocialPath/val/23", "pathmmu/SocialPath/val/24", "pathmmu/SocialPath/val/25"]
    assert items["pathmmu/SocialPath/val/23"].choices == ("Image A", "Image C", "Image B")
    assert [items[i].answer_index for i in three] == [0, 1, 0]


def test_missing_images_are_kept_and_reported(pathmmu_dir: Path) -> None:
    lb = load(pathmmu_dir)
    missing = [it for it in lb.items if it.problems == ("missing_image",)]
    present = [it for it in lb.items if not it.problems]
    assert len(missing) == 120
    assert [it.id for it in present] == [f"pathmmu/SocialPath/val/{n}" for n in range(10)]
    assert Counter((p.kind, p.severity) for p in lb.problems) == {("missing_image", "warning"): 120}
    # Ten questions share six images; the key is the same for questions on the same image.
    assert len({it.images[0].key for it in present}) == 6
    assert present[0].images[0].load().size == (16, 16)
    assert not missing[0].images[0].exists()


def test_image_key_is_relative_path(pathmmu_dir: Path) -> None:
    item = load(pathmmu_dir).items[0]
    name = "f0446d74e1428791a7f049a8169891ef39f6490d9bb25b8fd779adec573b53c7.jpg"
    assert item.images[0].key == f"images/{name}"
    assert item.images[0].path == (pathmmu_dir / "images" / name).resolve()


def test_path_to_data_json_accepted(pathmmu_dir: Path) -> None:
    a, b = load(pathmmu_dir), load(pathmmu_dir / "data.json")
    assert [it.id for it in a.items] == [it.id for it in b.items]
    assert a.fingerprint == b.fingerprint


def test_per_subset_mapping_file(pathmmu_dir: Path) -> None:
    lb = load(pathmmu_dir / "socialpath_mapping.json")
    assert lb.counts() == {
        ("test", "SocialPath", "SocialPath"): 1620,
        ("test_tiny", "SocialPath", "SocialPath"): 235,
        ("val", "SocialPath", "SocialPath"): 155,
    }
    assert Counter(len(it.choices) for it in lb.items) == {4: 2004, 3: 6}
    # Five records give the answer as a bare letter "A"; they resolve without any mismatch problem.
    items = by_id(lb)
    for key in ("val/149", "val/150", "test/1439", "test/1613", "test/1614"):
        assert items[f"pathmmu/SocialPath/{key}"].answer_index == 0
        assert items[f"pathmmu/SocialPath/{key}"].metadata["answer_raw"] == "A"
    assert {p.kind for p in lb.problems} == {"missing_image"}
    assert items["pathmmu/SocialPath/val/149"].choices[0] == "SMA (Smooth Muscle Actin) and Desmin"


def test_per_subset_file_with_unknown_name(tmp_path: Path, pathmmu_dir: Path) -> None:
    shutil.copy(pathmmu_dir / "socialpath_mapping.json", tmp_path / "mine.json")
    with pytest.raises(DataFormatError, match=r"data\.json"):
        load(tmp_path / "mine.json")


def test_fingerprint_depends_on_content_and_split(tmp_path: Path) -> None:
    folder = write_data(tmp_path / "d", [record(0, FOUR, "A) alpha")])
    first = load(folder).fingerprint
    assert load(folder).fingerprint == first
    assert load(folder, "val").fingerprint != first
    write_data(folder, [record(0, FOUR, "B) beta")])
    assert load(folder).fingerprint != first


# --- constructed records -------------------------------------------------------------------------


def test_bare_letter_and_label_styles(tmp_path: Path) -> None:
    folder = write_data(
        tmp_path,
        [
            record(1, FOUR, "D"),
            record(2, ["(A) one", "(B) two", "(C) three"], "(C)"),
            record(3, ["A. one", "B.  two", "C.three"], "B. two"),
            record(4, ["A )  spaced", "B)tight", "C) x"], "b) tight"),
        ],
    )
    items = load(folder).items
    assert [it.answer_index for it in items] == [3, 2, 1, 1]
    assert items[1].choices == ("one", "two", "three")
    assert items[2].choices == ("one", "two", "C.three")
    assert items[3].choices == ("spaced", "tight", "x")


def test_option_text_with_parentheses(tmp_path: Path) -> None:
    options = [
        "A) CD20 (B-cell marker)",
        "B) Loss of E-cadherin) staining",
        "C) (None of these)",
        "D) Ki-67 > 20%",
    ]
    folder = write_data(tmp_path, [record(1, options, "B) Loss of E-cadherin) staining")])
    lb = load(folder)
    (item,) = lb.items
    assert item.choices == (
        "CD20 (B-cell marker)",
        "Loss of E-cadherin) staining",
        "(None of these)",
        "Ki-67 > 20%",
    )
    assert item.answer_index == 1
    assert lb.problems[0].kind == "missing_image"
    assert len(lb.problems) == 1


def test_answer_text_mismatch_keeps_letter(tmp_path: Path) -> None:
    lb = load(write_data(tmp_path, [record(7, FOUR, "C) delta")]))
    (item,) = lb.items
    assert item.answer_index == 2
    (problem,) = [p for p in lb.problems if p.kind == "answer_mismatch"]
    assert problem.severity == "warning"
    assert problem.record == "pathmmu/PubMed/val/7"
    assert "letter C is kept" in problem.message


def test_unresolvable_answers_are_skipped(tmp_path: Path) -> None:
    lb = load(
        write_data(
            tmp_path, [record(1, FOUR, "E) epsilon"), record(2, FOUR, "omega"), record(3, FOUR, "delta")]
        )
    )
    assert [it.id for it in lb.items] == ["pathmmu/PubMed/val/3"]
    assert lb.items[0].answer_index == 3  # an unlabelled answer matched by its text
    errors = [p for p in lb.problems if p.severity == "error"]
    assert [(p.record, p.kind) for p in errors] == [
        ("pathmmu/PubMed/val/1", "answer_mismatch"),
        ("pathmmu/PubMed/val/2", "answer_mismatch"),
    ]
    assert "cannot be scored" in errors[0].message


def test_unsafe_image_reference_skipped(tmp_path: Path, png: Any) -> None:
    png(tmp_path / "images" / "ok.jpg")
    png(tmp_path / "secret.jpg")
    folder = write_data(
        tmp_path / "data",
        [
            record(1, FOUR, "A", img="../../secret.jpg"),
            record(2, FOUR, "A", img="/etc/passwd"),
            record(3, FOUR, "A"),
        ],
    )
    lb = load(folder)
    assert [it.id for it in lb.items] == ["pathmmu/PubMed/val/3"]
    unsafe = [p for p in lb.problems if p.kind == "unsafe_path"]
    assert [p.record for p in unsafe] == ["pathmmu/PubMed/val/1", "pathmmu/PubMed/val/2"]
    assert all(p.severity == "error" for p in unsafe)


def test_malformed_and_duplicate_records(tmp_path: Path) -> None:
    records: list[Any] = [
        record(1, FOUR, "A"),
        record(1, FOUR, "B"),
        {"No": 2, "img": "x.jpg", "question": "Q?", "options": FOUR},
        record(3, ["A) only one"], "A"),
        "not a record",
        record(4, ["A) a", "C) c"], "A", img=""),
    ]
    lb = load(write_data(tmp_path, records))
    assert [it.id for it in lb.items] == ["pathmmu/PubMed/val/1", "pathmmu/PubMed/val/4"]
    kinds = [(p.record, p.kind, p.severity) for p in lb.problems if p.kind != "missing_image"]
    assert kinds == [
        ("pathmmu/PubMed/val/1", "duplicate", "error"),
        ("PubMed/val[2]", "malformed", "error"),
        ("pathmmu/PubMed/val/3", "malformed", "error"),
        ("PubMed/val[4]", "malformed", "error"),
        ("pathmmu/PubMed/val/4", "malformed", "warning"),  # option 2 labelled C, used as B
    ]
    last = lb.items[1]
    assert last.choices == ("a", "c")
    assert last.images == ()
    assert last.problems == ("missing_image",)


def test_unknown_subset_loaded_with_warning(tmp_path: Path) -> None:
    lb = load(write_data(tmp_path, [record(1, FOUR, "A")], subset="NewSource"))
    assert lb.items[0].task == "NewSource"
    assert [p.kind for p in lb.problems if p.kind != "missing_image"] == ["unknown_subset"]


def test_missing_and_unreadable_data(tmp_path: Path) -> None:
    with pytest.raises(DataNotFoundError):
        load(tmp_path / "nowhere")
    with pytest.raises(DataNotFoundError, match=r"no data\.json"):
        load(tmp_path)
    (tmp_path / "data.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(DataFormatError, match="cannot read"):
        load(tmp_path)
    (tmp_path / "data.json").write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(DataFormatError, match="top level"):
        load(tmp_path)


# --- label helpers -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "expected", "out"),
    [
        ("A) Whorled pattern", "A", ("A", "Whorled pattern")),
        ("  B.   spaced  ", "B", ("B", "spaced")),
        ("(C) bracketed", "C", ("C", "bracketed")),
        ("[D] square", "D", ("D", "square")),
        ("A: colon", None, ("A", "colon")),
        ("B cells", "B", (None, "B cells")),
        ("A.5 mg", "A", (None, "A.5 mg")),
        ("I. roman", "B", (None, "I. roman")),
        ("C) x (y)", None, ("C", "x (y)")),
    ],
)
def test_strip_label(option: str, expected: str | None, out: tuple[str | None, str]) -> None:
    assert strip_label(option, expected) == out


@pytest.mark.parametrize(
    ("answer", "parsed"),
    [
        ("D", ParsedAnswer("D", None)),
        (" (b) ", ParsedAnswer("B", None)),
        ("C.", ParsedAnswer("C", None)),
        ("D) Whorled pattern", ParsedAnswer("D", "Whorled pattern")),
        ("Whorled pattern", ParsedAnswer(None, "Whorled pattern")),
    ],
)
def test_parse_answer_label(answer: str, parsed: ParsedAnswer) -> None:
    assert parse_answer_label(answer) == parsed


def test_non_integer_no_is_refused_not_stringified(tmp_path: Path) -> None:
    """Upstream numbers records with an int; a boolean, float or list "No" is a named data problem.

    Before, str() made ids such as "pathmmu/PubMed/val/True" and ".../2.5" without a word.
    """
    records = [record(1, FOUR, "A) alpha"), record(2, FOUR, "A) alpha"), record(3, FOUR, "A) alpha")]
    records += [record(4, FOUR, "A) alpha"), record(5, FOUR, "A) alpha")]
    records[0]["No"], records[1]["No"], records[2]["No"], records[4]["No"] = True, 2.5, [3], "5"
    lb = load(write_data(tmp_path, records))
    assert sorted(by_id(lb)) == ["pathmmu/PubMed/val/4", "pathmmu/PubMed/val/5"]
    bad = [(p.record, p.kind, p.message.split(",")[0]) for p in lb.problems if p.severity == "error"]
    assert bad == [
        ("PubMed/val[0]", "bad_id", "No is true"),
        ("PubMed/val[1]", "bad_id", "No is 2.5"),
        ("PubMed/val[2]", "bad_id", "No is [3]"),
    ]

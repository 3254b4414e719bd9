from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from scopebench.benchmarks import get_benchmark
from scopebench.benchmarks._options import split_labelled_options
from scopebench.benchmarks.base import LoadedBenchmark
from scopebench.benchmarks.spur import SpurBenchmark, figure_id_of, normalize_tag
from scopebench.errors import DataFormatError, DataNotFoundError


def load(data: Path | str, split: str | None = None) -> LoadedBenchmark:
    return SpurBenchmark().load(data, split)


def rec(
    index: str, tag: str = "[Single-image - Numerical]", answer: str = "A", **extra: Any
) -> dict[str, Any]:
    return {
        "QUESTION_INDEX": index,
        "QUESTION_TAG": tag,
        "QUESTION": f"Question {index}?",
        "OPTION": "A. one B. two C. three D. four",
        "ANSWER": answer,
        "EVIDENCE": "because",
        **extra,
    }


def write(folder: Path, name: str, records: list[Any]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(json.dumps(records), encoding="utf-8")
    return folder


SINGLE = "single-panel_qa_pair.json"
MULTI = "multi-panel_qa_pair.json"
REASON = "reason_qa_pair.json"


@pytest.fixture(scope="module")
def spur() -> LoadedBenchmark:
    from helpers import FIXTURES

    return load(FIXTURES / "spur")


@pytest.fixture(scope="module")
def items(spur: LoadedBenchmark) -> dict[str, Any]:
    return {it.id: it for it in spur.items}


# --- the real fixture ---------------------------------------------------------------------------


def test_registered_with_help() -> None:
    bench = get_benchmark("spur")
    assert isinstance(bench, SpurBenchmark)
    assert bench.splits == ("test",)
    assert bench.default_split == "test"
    assert bench.tasks == ("NP", "MP", "IL", "TA", "HI", "Qual", "Quant")
    assert "BUPT-Reasoning-Lab/SPUR" in bench.data_help


def test_counts_per_file_and_task(spur: LoadedBenchmark) -> None:
    assert len(spur.items) == 154
    assert spur.counts() == {
        ("test", "single", "NP"): 17,
        ("test", "single", "MP"): 18,
        ("test", "single", "IL"): 18,
        ("test", "multi", "TA"): 49,
        ("test", "multi", "HI"): 4,
        ("test", "reason", "Qual"): 16,
        ("test", "reason", "Quant"): 32,
    }


def test_truncated_source_records_are_reported(spur: LoadedBenchmark) -> None:
    # Two single-panel records of the source carry only option A while answering C and B.
    errors = [p for p in spur.problems if p.severity == "error"]
    assert [(p.record, p.kind) for p in errors] == [
        ("2010096149_0_1", "malformed"),
        ("2010096149_0_2", "malformed"),
    ]
    assert all(p.file.endswith(SINGLE) and "cannot be scored" in p.message for p in errors)
    # 55 + 53 + 48 records: every one is an item or an error problem.
    assert len(spur.items) + len(errors) == 156


def test_every_item_has_four_or_five_options_and_a_valid_answer(spur: LoadedBenchmark) -> None:
    assert Counter((it.subset, len(it.choices)) for it in spur.items) == {
        ("single", 4): 53,
        ("multi", 5): 44,
        ("multi", 4): 9,
        ("reason", 5): 48,
    }
    for it in spur.items:
        assert it.answer_index is not None and 0 <= it.answer_index < len(it.choices)
        assert all(c and c == c.strip() for c in it.choices)
        assert not any(
            c.startswith(("[", "A. ", "B. ")) or c.endswith("]") or "<br>" in c for c in it.choices
        )


@pytest.mark.parametrize(
    ("item_id", "choices", "answer"),
    [
        # "[A. … B. …]" without final periods
        (
            "spur/multi/2010184710_1_2",
            (
                "p65 is mostly cytoplasmic",
                "p65 is distributed equally between nucleus and cytoplasm",
                "p65 is mostly nuclear",
                "Insufficient detail",
            ),
            2,
        ),
        ("spur/reason/2010096049_1_1", ("0%", "50%", "100%", "Cannot be calculated", "74%"), 4),
        (
            "spur/reason/2010041597_4_1",
            (
                "90% for mRNA and 80% for protein",
                "95% for mRNA and 70% for protein",
                "80% for mRNA and 60% for protein",
                "70% for mRNA and 50% for protein",
                "Cannot be determined",
            ),
            1,
        ),
        # "<br>"
        (
            "spur/single/2010030854_0_1",
            (
                "At 1.25 μM, the cell survival of Calu-1 is significantly higher than at 5 μM.",
                "A concentration increase to 2.5 μM decreases survival for all cell lines observed.",
                "The survival rate of A549 cells remains above 80% at 1.25 μM.",
                "No differences in survival rates are observed between control and treatment groups at 0 μM.",
            ),
            1,
        ),
        # newlines with trailing spaces
        (
            "spur/reason/2010095497_1_1",
            (
                "40% inhibition",
                "60% inhibition",
                "75% inhibition",
                "Cannot be calculated due to missing data",
                "20% inhibition",
            ),
            1,
        ),
        # newlines, and option B ends with "in Panel C." just before the real "C."
        (
            "spur/multi/2010184710_3_1",
            (
                "K1 group has a higher angiogenic index than the Mock group in both panels.",
                "The Mock + Soluble Tat group shows a lower angiogenic index than the Tat group in Panel C.",
                "The significance marked in Panel A for Mock vs. K1 is present in Panel C.",
                "The pCDH group has the lowest angiogenic index in both panels.",
                "The angiogenic index of K1 + Soluble Tat is significantly higher than Mock in Panel A.",
            ),
            1,
        ),
        # spaces only
        (
            "spur/single/2010027917_6_1",
            (
                "The average length of fibrils in the control group is less than that with 20% EGCG.",
                "The average length of fibrils with 80% EGCG is significantly reduced "
                "compared to the control.",
                "The average length of fibrils decreases with increasing concentrations of EGCG.",
                "The average length of fibrils in the control group is 1088.0 ± 120.1 nm.",
            ),
            0,
        ),
        # "[… D. text. ]" with a space before the closing bracket
        (
            "spur/single/2010096084_5_3",
            (
                "The SRSF4 band intensity decreases after heat shock in both groups.",
                "SRSF10 shows a more pronounced recovery in the FR901464 pretreatment group.",
                "Recovery of SRSF6 is delayed in the FR901464 pretreatment group compared to controls.",
                "SRSF5 levels remain consistent across all time points.",
            ),
            1,
        ),
    ],
)
def test_real_option_strings(
    items: dict[str, Any], item_id: str, choices: tuple[str, ...], answer: int
) -> None:
    assert items[item_id].choices == choices
    assert items[item_id].answer_index == answer


def test_same_question_index_in_three_files(items: dict[str, Any]) -> None:
    ids = {f"spur/{kind}/2010027917_6_1" for kind in ("single", "multi", "reason")}
    assert ids <= set(items)
    assert {items[i].metadata["figure_id"] for i in ids} == {"2010027917_6"}
    assert [
        items[f"spur/{k}/2010027917_6_1"].metadata["perception_level"] for k in ("single", "multi", "reason")
    ] == [
        "perception",
        "understanding",
        "reasoning",
    ]


def test_metadata_keeps_tag_and_leftovers(items: dict[str, Any]) -> None:
    multi = items["spur/multi/2010027917_6_1"]
    assert multi.metadata["tag"] == "Multi-image - Numerical"
    assert multi.metadata["is_success"] is True
    assert multi.metadata["relation_number"] == "3"
    assert multi.metadata["raw_response"] == "<ANSWER> 3 </ANSWER>"
    assert multi.metadata["evidence"].startswith("Panel (g) indicates")
    single = items["spur/single/2010027917_6_1"]
    assert single.metadata["figure_type"] == "Cell Staining Image"
    assert items["spur/reason/2010027917_6_1"].metadata["experiment_type"] == "Observational Study"
    assert items["spur/reason/2010027917_6_1"].task == "Qual"


def test_images_found_in_folder_and_images_subfolder(spur: LoadedBenchmark, spur_dir: Path) -> None:
    present = [it for it in spur.items if not it.problems]
    assert Counter(it.subset for it in present) == {"single": 9, "multi": 9, "reason": 3}
    assert Counter(it.images[0].key for it in present) == {
        "images/2010027917_6.png": 7,
        "2010027936_8.jpg": 7,
        "images/2010028694_4.jpeg": 7,
    }
    assert present[0].images[0].path == (spur_dir / "images" / "2010027917_6.png").resolve()
    assert present[0].images[0].load().size == (16, 16)


def test_missing_images_kept(spur: LoadedBenchmark, items: dict[str, Any]) -> None:
    missing = [it for it in spur.items if it.problems == ("missing_image",)]
    assert len(missing) == 133
    assert Counter(p.kind for p in spur.problems if p.severity == "warning") == {"missing_image": 133}
    assert items["spur/reason/2010030787_4_1"].images[0].key == "images/2010030787_4.png"


# --- constructed data ----------------------------------------------------------------------------


def test_only_some_files_present(tmp_path: Path, spur_dir: Path) -> None:
    shutil.copy(spur_dir / REASON, tmp_path / REASON)
    lb = load(tmp_path)
    assert len(lb.items) == 48
    missing_files = [p for p in lb.problems if p.kind == "missing_file"]
    assert [Path(p.file).name for p in missing_files] == [SINGLE, MULTI]
    assert all(p.severity == "warning" for p in missing_files)


def test_no_files_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(DataNotFoundError, match="no SPUR question files"):
        load(tmp_path)
    with pytest.raises(DataNotFoundError):
        load(tmp_path / "absent")


def test_not_a_list_is_a_format_error(tmp_path: Path) -> None:
    (tmp_path / SINGLE).write_text('{"a": 1}', encoding="utf-8")
    with pytest.raises(DataFormatError, match="JSON list"):
        load(tmp_path)


def test_only_test_split(spur_dir: Path) -> None:
    with pytest.raises(DataFormatError, match="no split 'val'"):
        load(spur_dir, "val")


def test_unknown_tag_skipped(tmp_path: Path) -> None:
    lb = load(write(tmp_path, SINGLE, [rec("1_0_1"), rec("1_0_2", tag="[Single-image - Colour]")]))
    assert [it.id for it in lb.items] == ["spur/single/1_0_1"]
    (problem,) = [p for p in lb.problems if p.kind == "unknown_tag"]
    assert problem.severity == "error"
    assert problem.record == "1_0_2"
    assert "'[Single-image - Colour]'" in problem.message


def test_tag_of_another_file_kind_is_unknown(tmp_path: Path) -> None:
    lb = load(write(tmp_path, REASON, [rec("1_0_1", tag="[Single-image - Graphical]")]))
    assert lb.items == []
    assert [p.kind for p in lb.problems if p.severity == "error"] == ["unknown_tag"]


def test_answer_out_of_range_and_malformed(tmp_path: Path) -> None:
    records: list[Any] = [
        rec("1_0_1", answer="E"),
        rec("1_0_2", answer="maybe"),
        rec("1_0_3", answer="(b)"),
        {"QUESTION_INDEX": "1_0_4"},
        [1, 2],
        rec("1_0_3"),
    ]
    lb = load(write(tmp_path, SINGLE, records))
    assert [it.id for it in lb.items] == ["spur/single/1_0_3"]
    assert lb.items[0].answer_index == 1
    errors = [(p.record, p.kind) for p in lb.problems if p.severity == "error"]
    assert errors == [
        ("1_0_1", "answer_mismatch"),
        ("1_0_2", "answer_mismatch"),
        ("record 3", "malformed"),
        ("record 4", "malformed"),
        ("1_0_3", "duplicate"),
    ]


def test_unsafe_figure_name_skipped(tmp_path: Path) -> None:
    lb = load(write(tmp_path, SINGLE, [rec("../../outside_1"), rec("/etc/passwd_1"), rec("ok_1")]))
    assert [it.id for it in lb.items] == ["spur/single/ok_1"]
    assert [p.record for p in lb.problems if p.kind == "unsafe_path"] == ["../../outside_1", "/etc/passwd_1"]


def test_two_digit_question_number_and_image_lookup(tmp_path: Path, png: Any) -> None:
    png(tmp_path / "images" / "2010027917_6.jpg")
    png(tmp_path / "images" / "2010027917_6.png")  # .png wins over .jpg
    png(tmp_path / "7_1.jpg")
    png(tmp_path / "images" / "7_1.JPEG")  # images/ wins over the folder itself
    write(
        tmp_path,
        MULTI,
        [rec("2010027917_6_12", tag="Multi-image - Spatial"), rec("7_1_3", tag="Cross-Modality relation")],
    )
    lb = load(tmp_path)
    assert [(it.task, it.metadata["figure_id"], it.images[0].key) for it in lb.items] == [
        ("TA", "2010027917_6", "images/2010027917_6.png"),
        ("HI", "7_1", "images/7_1.JPEG"),
    ]
    assert all(it.problems == () for it in lb.items)


def test_index_without_number_warns(tmp_path: Path) -> None:
    lb = load(write(tmp_path, SINGLE, [rec("figure")]))
    assert lb.items[0].metadata["figure_id"] == "figure"
    assert ("figure", "malformed", "warning") in [(p.record, p.kind, p.severity) for p in lb.problems]


def test_fingerprint_covers_files_read(tmp_path: Path) -> None:
    write(tmp_path, SINGLE, [rec("1_0_1")])
    first = load(tmp_path).fingerprint
    write(tmp_path, REASON, [rec("1_0_1", tag="[Reason_Quantitative]")])
    assert load(tmp_path).fingerprint != first


# --- tags and figure ids -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tag", "norm"),
    [
        ("[Single-image - Numerical]", "numerical"),
        ("Multi-image - Spatial", "spatial"),
        ("Multi-image - Cross-Modality relation", "cross-modality relation"),
        ("Cross-Modality relation", "cross-modality relation"),
        ("[Reason_Quantitative]", "quantitative"),
        ("  [Reason_Qualitative] ", "qualitative"),
        ("single-panel: Graphical", "graphical"),
    ],
)
def test_normalize_tag(tag: str, norm: str) -> None:
    assert normalize_tag(tag) == norm


@pytest.mark.parametrize(
    ("index", "figure"),
    [
        ("2010027917_6_1", "2010027917_6"),
        ("2010027917_6_12", "2010027917_6"),
        ("a_b", None),
        ("x_7", "x"),
        ("nodigits", None),
    ],
)
def test_figure_id_of(index: str, figure: str | None) -> None:
    assert figure_id_of(index) == figure


# --- the option splitter on adversarial strings ---------------------------------------------------


@pytest.mark.parametrize(
    ("text", "options"),
    [
        ("A. 1 B. 2", ["1", "2"]),
        ("[A. x  B. y]", ["x", "y"]),
        ("A. one<br>B. two<BR/>C. three", ["one", "two", "three"]),
        ("A. one \nB. two  \n C. three \n", ["one", "two", "three"]),
        # a reference to another panel or option that is not the next label
        (
            "A. Higher than in D. B. Lower C. Same D. Cannot tell",
            ["Higher than in D.", "Lower", "Same", "Cannot tell"],
        ),
        ("A. Panel A. shows more B. Panel B. shows less", ["Panel A. shows more", "Panel B. shows less"]),
        # the next label's letter inside the text, after a reference word
        ("A. See Fig. B. for details B. Second C. Third", ["See Fig. B. for details", "Second", "Third"]),
        ("A. As in Fig. B. B. Cells die", ["As in Fig. B.", "Cells die"]),
        (
            "A. Only grows in B. subtilis B. Grows in E. coli",
            ["Only grows in B. subtilis", "Grows in E. coli"],
        ),
        ("A. Values, e.g. 5%, rise. B. Fall", ["Values, e.g. 5%, rise.", "Fall"]),
        # on lines, only a line start can open an option
        ("A. B. subtilis grows\nB. None", ["B. subtilis grows", "None"]),
        ("A. compare with option\nB. here B. there", ["compare with option", "here B. there"]),
        # labels must come in order; a skipped letter ends the list
        ("A. one C. two", ["one C. two"]),
        ("A.B. C", []),
        ("Options: A. x B. y", []),
        ("", []),
    ],
)
def test_split_labelled_options(text: str, options: list[str]) -> None:
    assert split_labelled_options(text) == options


def test_figures_in_the_repos_oringin_images_folder(tmp_path: Path, png: Any) -> None:
    # The SPUR GitHub repo keeps its figures in dataset/oringin_images/ (sic).
    png(tmp_path / "oringin_images" / "2010027917_6.png")
    write(tmp_path, SINGLE, [rec("2010027917_6_1")])
    lb = load(tmp_path)
    assert [it.images[0].key for it in lb.items] == ["oringin_images/2010027917_6.png"]
    assert lb.items[0].problems == () and lb.items[0].images[0].exists()


def test_non_text_question_index_is_refused_not_stringified(tmp_path: Path) -> None:
    """A boolean, float or list QUESTION_INDEX is a named data problem (str() made "True", "1.5")."""
    records: list[Any] = [rec("1_0_1"), rec("x"), rec("y"), rec("z"), rec("w")]
    records[1]["QUESTION_INDEX"], records[2]["QUESTION_INDEX"] = True, 1.5
    records[3]["QUESTION_INDEX"], records[4]["QUESTION_INDEX"] = ["1_0_2"], 7
    lb = load(write(tmp_path, SINGLE, records))
    assert [it.id for it in lb.items] == ["spur/single/1_0_1", "spur/single/7"]
    bad = [(p.record, p.kind) for p in lb.problems if p.severity == "error"]
    assert bad == [("record 1", "bad_id"), ("record 2", "bad_id"), ("record 3", "bad_id")]
    assert (
        "QUESTION_INDEX is true, which is not text"
        in next(p for p in lb.problems if p.kind == "bad_id").message
    )

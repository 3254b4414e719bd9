"""Metadata as labs write it: μ-Bench's own words ingest cleanly; mistakes are rows naming source and row."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from scopebench.curate import ingest
from scopebench.curate.manifest import Record, normalise_licence
from scopebench.curate.taxonomy import load_taxonomy

# μ-Bench's metadata for one image, as its paper prints it (Figure 18, `custom_metadata`), with a
# second image of the same dataset in the same form.
FIGURE_18 = {
    "age": 47.0,
    "classes_to_idx": {"not_chronic_heart_failure": 0, "chronic_heart_failure": 1},
    "cvdo_id": ["CVD0_0000569"], "cvdo_name": ["cardiomyopathy"],
    "dataset_name": "nirschl_et_al_2018", "dataset_slug": "nirschl_et_al_2018",
    "domain": "pathology", "ethnicity": "Caucasian",
    "filename": "01145_6de79663_33375_split-test_chronic-heart-failure.png", "file_size": 141080,
    "institution": ["upenn"], "image_id": "6de79663-0392-4f20-b2ea-16ddf4e3b4e4",
    "image_md5": "97ee369881fcbfd18fb4fb8dcfe2ca17", "label": 1, "label_name": "chronic_heart_failure",
    "label_subname": "cardiomyopathy",
    "label_task": "classification of heart failure using cardiac histopathology images",
    "last_updated": "2024-05-27T17:39:08.868Z", "license": "CC-BY-4.0", "microns_per_pixel": 2.0,
    "modality": "light microscopy", "ncbitaxon_id": ["NCBITaxon_9606"], "ncbitaxon_name": ["Homo sapiens"],
    "ncit_id": ["NCIT_C50577"], "normal_or_abnormal": "abnormal", "original_filename": "33375_0_fal_20_0.png",
    "patient_id": "33375", "pato_id": ["PATO_0000384"], "sex": "male", "snomedct_id": ["SCTID_48447003"],
    "split": "test", "stain": "H&E", "subdomain": "cardiovascular pathology",
    "submodality": "brightfield microscopy", "supported_tasks": ["multi_class"],
    "uberon_id": ["UBERON_0000948"], "uberon_name": ["heart"], "questions": None,
}  # fmt: skip
FIGURE_18_B = {
    **FIGURE_18,
    "filename": "00007_1a2b3c4d_11111_split-test_not-chronic-heart-failure.png",
    "label": 0, "label_name": "not_chronic_heart_failure", "normal_or_abnormal": "normal",
}  # fmt: skip

# A lab's spreadsheet in the words of μ-Bench's paper tables (title case, hyphens, brackets as printed
# there; Tables 10, 11 and 13), a bare NCBI id and a licence written with spaces.
BLOOD_CSV = """image,modality,submodality,domain,subdomain,stain,ncbitaxon_id,label_name,microns_per_pixel,license,institution,pmid
BA_100102.jpg,Light Microscopy,Brightfield Microscopy,Pathology,Hemato-pathology,Giemsa,9606,basophil,0.1,CC BY 4.0,hosp_barcelona,32346559
LY_100237.jpg,Light Microscopy,Brightfield Microscopy,Pathology,Hemato-pathology,Giemsa,9606,lymphocyte,0.1,CC BY 4.0,hosp_barcelona,32346559
"""
# Three more labs' rows, one JSON line each, values as Tables 10, 11 and 13 print them.
OTHER_ROWS = [
    {"image": "plaque_01.png", "modality": "Light Microscopy", "submodality": "Brightfield Microscopy",
     "domain": "Pathology", "subdomain": "Neuro-pathology", "stain": "IHC (DAB)",
     "ncbitaxon_id": "NCBITaxon:9606", "label_name": "cored", "license": "cc by 4.0"},
    {"image": "hela_h2b.png", "modality": "Fluorescence Microscopy", "submodality": "Epifluorescence Microscopy",
     "domain": "Biology", "subdomain": "Cell Biology", "stain": "H2B-mCherry", "organism": "Homo sapiens",
     "label_name": "metaphase", "license": "CC-BY-4.0"},
    {"image": "sbfsem_01.png", "modality": "Electron Microscopy",
     "submodality": "Serial Blockface Scanning Electron Microscopy", "domain": "Biology",
     "subdomain": "Cell Biology", "stain": "Uranyl Acetate", "ncbitaxon_id": 10090, "license": "CC0 1.0"},
    {"image": "mito_cryoet.png", "modality": "Electron Microscopy", "submodality": "Cryo-electron Tomography",
     "domain": "Biology", "subdomain": "Neurobiology", "stain": "No Stain", "license": "CC BY-NC 4.0"},
]  # fmt: skip


def _images(folder: Path, names: list[str], seed: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for k, name in enumerate(names):
        px = np.random.default_rng(seed + k).integers(0, 255, (24, 32, 3), dtype=np.uint8)
        Image.fromarray(px).save(folder / name, format="PNG")


def _labs(root: Path) -> Path:
    """Three sources in μ-Bench's own vocabulary, as three labs would hand them over."""
    _images(root / "heart", [FIGURE_18["filename"], FIGURE_18_B["filename"]], 0)
    (root / "heart.json").write_text(json.dumps([FIGURE_18, FIGURE_18_B]))
    _images(root / "blood", ["BA_100102.jpg", "LY_100237.jpg"], 10)
    (root / "blood.csv").write_text(BLOOD_CSV)
    _images(root / "other", [r["image"] for r in OTHER_ROWS], 20)
    (root / "other.jsonl").write_text("".join(json.dumps(r) + "\n" for r in OTHER_ROWS))
    (root / "manifest.yaml").write_text(
        "name: three-labs\nsources:\n"
        "  - {name: nirschl_et_al_2018, images: heart, metadata: heart.json, columns: {filename: image}}\n"
        "  - {name: acevedo_et_al_2020, images: blood, metadata: blood.csv}\n"
        "  - {name: other_labs, images: other, metadata: other.jsonl}\n"
    )
    return root / "manifest.yaml"


def _rows(folder: Path) -> dict[str, dict]:
    from datasets import load_from_disk

    return {r["source_path"]: r for r in load_from_disk(str(folder))["test"]}


def test_mu_benchs_own_words_ingest_without_refusals(tmp_path: Path) -> None:
    """Catches vocabulary, taxon ids or licences in μ-Bench's and labs' usual forms being refused row by row."""
    res = ingest(_labs(tmp_path), tmp_path / "out")
    assert (res.items_in, res.kept, dict(res.dropped)) == (8, 8, {})
    # The only notes: Figure 18's columns that μ-Bench's published schema has no place for.
    assert {(p.source, p.kind, p.severity) for p in res.problems} == {
        ("nirschl_et_al_2018", "ignored_column", "warning")
    }
    rows = _rows(tmp_path / "out")
    heart = rows[FIGURE_18["filename"]]
    assert (heart["ncbitaxon_id"], heart["ncbitaxon_name"], heart["institution"]) == (
        "NCBITaxon_9606", "Homo sapiens", "upenn",
    )  # fmt: skip
    assert (heart["subdomain"], heart["stain"], heart["submodality_id"]) == (
        "cardiovascular pathology", "H&E", "FBbi:00000243",
    )  # fmt: skip
    blood = rows["BA_100102.jpg"]
    assert (blood["modality"], blood["submodality"], blood["domain"], blood["subdomain"]) == (
        "light microscopy", "brightfield microscopy", "pathology", "hematopathology",
    )  # fmt: skip
    assert (blood["ncbitaxon_id"], blood["ncbitaxon_name"], blood["license"], blood["pmid"]) == (
        "NCBITaxon_9606", "Homo sapiens", "CC-BY-4.0", "32346559",
    )  # fmt: skip
    assert (rows["plaque_01.png"]["stain"], rows["plaque_01.png"]["license"]) == ("IHC(DAB)", "CC-BY-4.0")
    assert rows["plaque_01.png"]["subdomain"] == "neuropathology"
    sbf = rows["sbfsem_01.png"]
    assert (sbf["submodality"], sbf["submodality_id"], sbf["stain"]) == (
        "serial blockface scanning electron microscopy", "FBbi:00000585", "uranyl acetate",
    )  # fmt: skip
    assert (sbf["ncbitaxon_id"], sbf["ncbitaxon_name"], sbf["license"]) == (
        "NCBITaxon_10090",
        "Mus musculus",
        "CC0-1.0",
    )
    assert rows["mito_cryoet.png"]["license"] == "CC-BY-NC-4.0"
    assert rows["hela_h2b.png"]["stain"] == "H2B-mCherry"


BAD_CSV = """image,modality,submodality,domain,subdomain,stain,organism,ncbitaxon_id,license
a.png,light microscopy,brightfield microscopy,pathology,hematopathology,Giemsa,Homo sapiens,,CC-BY-4.0
b.png,fluorescence microscopy,,cell biology,,DAPI,,9606,CC-BY-4.0
c.png,light microscopy,,pathology,,Giemza,,9606,CC-BY-4.0
d.png,light microscopy,confocal microscopy,biology,,,,9606,CC-BY-4.0
e.png,light microscopy,,pathology,,H&E,,human,CC-BY-4.0
f.png,light microscopy,,pathology,,H&E,,9606,lab internal use only
g.png,light microscopy,,pathology,,H&E,Homo sapien,,CC-BY-4.0
h.png,light microscopy,,pathology,hematopathalogy,Giemsa,,9606,CC-BY-4.0
"""


def test_mistakes_are_problem_rows_with_good_suggestions(tmp_path: Path) -> None:
    """Catches a mistake dropped without a row, a row or source not named, or a suggestion that misleads."""
    names = [line.split(",")[0] for line in BAD_CSV.splitlines()[1:]]
    _images(tmp_path / "img", names, 40)
    (tmp_path / "meta.csv").write_text(BAD_CSV)
    (tmp_path / "manifest.yaml").write_text("sources:\n  - {name: lab_x, images: img, metadata: meta.csv}\n")
    res = ingest(tmp_path / "manifest.yaml", tmp_path / "out")
    got = [(p.source, p.row, p.field, p.kind, p.severity, p.suggestion) for p in res.problems]
    assert got == [
        ("lab_x", "1", "domain", "unknown_vocabulary", "error", "biology"),
        ("lab_x", "2", "stain", "unknown_vocabulary", "error", "Giemsa"),
        ("lab_x", "3", "submodality", "invalid_value", "error", None),
        ("lab_x", "4", "ncbitaxon_id", "invalid_value", "error", None),
        ("lab_x", "5", "license", "unrecognised_licence", "warning", None),
        ("lab_x", "6", "organism", "unknown_vocabulary", "error", "Homo sapiens"),
        ("lab_x", "7", "subdomain", "unknown_vocabulary", "error", "hematopathology"),
    ]
    assert (res.kept, dict(res.dropped)) == (2, {"unknown_vocabulary": 4, "invalid_value": 2})
    msg = {p.row: p.message for p in res.problems}
    assert (
        "'cell biology' is a subdomain of 'biology'. Write domain: biology and subdomain: cell biology"
        in msg["1"]
    )
    assert "stain 'Giemsa' used with 'light microscopy'" in msg["2"]
    assert "belongs to modality 'fluorescence microscopy', not 'light microscopy'" in msg["3"]
    assert "write its number (9606) or NCBITaxon_9606" in msg["4"]
    assert "'lab internal use only' is not an SPDX licence id" in msg["5"]
    assert "organism 'Homo sapiens'" in msg["6"] and "Give its ncbitaxon_id" in msg["6"]
    assert "subdomain 'hematopathology' of 'pathology'" in msg["7"]
    kept = _rows(tmp_path / "out")
    assert kept["f.png"]["license"] == "lab internal use only"  # kept as written, with the warning


@pytest.mark.parametrize(
    ("written", "spdx"),
    [
        ("CC BY 4.0", "CC-BY-4.0"),
        ("cc by-nc-sa 4.0", "CC-BY-NC-SA-4.0"),
        ("CC-BY-SA-4.0", "CC-BY-SA-4.0"),
        ("Apache 2.0", "Apache-2.0"),
        ("MIT OR Apache 2.0", "MIT OR Apache-2.0"),
        ("(MIT OR CC BY 4.0) AND CC0 1.0", "(MIT OR CC-BY-4.0) AND CC0-1.0"),
        ("GPL-2.0+", "GPL-2.0-or-later"),
        ("LicenseRef-lab-internal", "LicenseRef-lab-internal"),
        ("proprietary", None),
        ("other", None),
        ("CC BY 4.0 International", None),
    ],
)
def test_licences_normalise_to_spdx(written: str, spdx: str | None) -> None:
    """Catches 'CC BY 4.0' passing unnormalised, or a non-licence turned into some SPDX id."""
    assert normalise_licence(written) == spdx


def test_record_reads_mu_benchs_list_cells_and_refuses_longer_lists() -> None:
    """Catches μ-Bench's one-element lists refused, or two taxa silently reduced to the first."""
    tax = load_taxonomy()
    base = {"image": "x.png", "license": "CC BY 4.0", "modality": "light microscopy", "domain": "pathology"}
    rec = Record.model_validate(
        {**base, "ncbitaxon_id": ["9606"], "institution": ["upenn"]}, context={"taxonomy": tax}
    )
    assert (rec.ncbitaxon_id, rec.institution, rec.license, rec.notes) == (
        "NCBITaxon_9606",
        "upenn",
        "CC-BY-4.0",
        [],
    )
    rec = Record.model_validate({**base, "ncbitaxon_name": "homo sapiens"}, context={"taxonomy": tax})
    assert (rec.organism, rec.ncbitaxon_id) == ("Homo sapiens", "NCBITaxon_9606")
    with pytest.raises(ValueError, match="ncbitaxon_id holds 2 values"):
        Record.model_validate({**base, "ncbitaxon_id": ["9606", "10090"]}, context={"taxonomy": tax})
    with pytest.raises(ValueError, match=r"organism 'Homo sapiens' is NCBITaxon_9606, not NCBITaxon_10090"):
        Record.model_validate(
            {**base, "organism": "Homo sapiens", "ncbitaxon_id": 10090}, context={"taxonomy": tax}
        )


def test_built_questions_use_table_16_and_a_sources_own_template(tmp_path: Path) -> None:
    """Catches the questions step ignoring the shipped templates, or a source's template reaching other sources."""
    from scopebench.curate import make_questions
    from scopebench.curate.questions import QuestionConfig

    ingest(_labs(tmp_path), tmp_path / "ingest")
    (tmp_path / "t.yaml").write_text(
        "templates:\n  sources:\n    nirschl_et_al_2018:\n"
        "      questions: {classification: 'H&E stained light micrograph of human cardiac tissue. Based on the "
        "image, what is the most likely clinical chronic heart diagnosis?'}\n"
        "      captions: {classification: 'H&E stained light microscopy image of human cardiac tissue with "
        "{class} texture.'}\n"
    )
    cfg = QuestionConfig(tasks=("modality", "stain", "classification"), taxonomy=str(tmp_path / "t.yaml"))
    make_questions(tmp_path / "ingest", tmp_path / "q", cfg)
    rows = _rows(tmp_path / "q")
    blood = rows["BA_100102.jpg"]
    q, cap = blood["questions"]["modality"], blood["captions"]["modality_0"]
    assert q["question"] == "What is the most likely microscopy modality used to acquire this image?"
    assert cap["question"] == "A microscopy image obtained through {class}."
    assert cap["options"] == [f"A microscopy image obtained through {o}." for o in q["options"]]
    stain = blood["questions"]["stain"]
    assert stain["options"][int(stain["answer_idx"])] == "Giemsa"
    assert blood["captions"]["stain_0"]["options"] == [
        f"A microscopy image stained with {o}." for o in stain["options"]
    ]
    heart = rows[FIGURE_18["filename"]]["questions"]["classification"]
    assert heart["question"].startswith("H&E stained light micrograph of human cardiac tissue.")
    assert rows[FIGURE_18["filename"]]["captions"]["classification_0"]["options"][
        int(heart["answer_idx"])
    ] == ("H&E stained light microscopy image of human cardiac tissue with chronic_heart_failure texture.")
    generic = "Which of the following best describes the main content of this image?"
    assert rows["BA_100102.jpg"]["questions"]["classification"]["question"] == generic

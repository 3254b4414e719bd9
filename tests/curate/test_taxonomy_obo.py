"""A user's OBO ontology as the concept tree (``obo:`` in a taxonomy file, read with pronto)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from scopebench.curate.taxonomy import load_taxonomy
from scopebench.errors import DataFormatError, DataNotFoundError

pytest.importorskip("pronto", reason="pronto (the build extra) is needed to read OBO ontologies")

OBO = Path(__file__).parents[1] / "fixtures" / "obo" / "imaging_methods.obo"


def _tax_file(tmp_path: Path, root: str = "FBbi:00000222", obo: str = "imaging_methods.obo") -> Path:
    shutil.copy(OBO, tmp_path / "imaging_methods.obo")
    path = tmp_path / "t.yaml"
    path.write_text(f'obo:\n  - {{file: {obo}, attribute: modality, root: "{root}"}}\n')
    return path


def _from_obo(tax: object) -> dict[str, tuple[str, tuple[str, ...], str | None, tuple[str, ...]]]:
    """Concepts whose id is one of the fixture's made-up FBbi:9000xxxx ids."""
    return {
        c.name: (c.attribute, c.parents, c.ontology_id, c.aliases)
        for t in tax.concepts.values()  # type: ignore[attr-defined]
        for c in t.values()
        if (c.ontology_id or "").startswith("FBbi:9000")
    }


def test_obo_subtree_becomes_concepts_with_ids_and_synonyms(tmp_path: Path) -> None:
    tax = load_taxonomy(_tax_file(tmp_path))
    assert _from_obo(tax) == {
        "X-ray microscopy": ("modality", (), "FBbi:90000010", ("XRM",)),
        "confocal microscopy": (
            "submodality",
            ("fluorescence microscopy",),
            "FBbi:90000001",
            ("CLSM", "laser scanning confocal microscopy"),  # the RELATED synonym is not an alias
        ),
        "expansion microscopy": ("submodality", ("fluorescence microscopy",), "FBbi:90000002", ()),
        # two is_a parents: the one with the smaller id wins, on every run
        "correlative light and X-ray microscopy": (
            "submodality",
            ("fluorescence microscopy",),
            "FBbi:90000014",
            (),
        ),
        "soft X-ray tomography": ("submodality", ("X-ray microscopy",), "FBbi:90000011", ("SXT",)),
        "X-ray fluorescence microscopy": (  # the NARROW synonym is not an alias
            "submodality",
            ("X-ray microscopy",),
            "FBbi:90000012",
            ("XRF microscopy",),
        ),
        "hard X-ray nanotomography": ("submodality", ("X-ray microscopy",), "FBbi:90000013", ()),
    }
    # Not read: the obsolete term, the level-3 term, terms outside the root's subtree. (μ-Bench's own
    # epifluorescence microscopy is shipped; the obsolete OBO term gives it no id.)
    for name in ("spinning disk confocal microscopy", "cryofixation"):
        assert all(tax.get(a, name) is None for a in ("modality", "submodality"))
    epi = tax.get("submodality", "epifluorescence microscopy")
    assert epi is not None and epi.ontology_id is None
    # A term already in the shipped tree keeps its place and takes the OBO synonyms.
    fluo = tax.get("modality", "fluorescence microscopy")
    assert fluo is not None and fluo.ontology_id == "FBbi:00000246"
    assert fluo.aliases == ("fluorescence light microscopy",)
    assert tax.sources[-1] == str(tmp_path / "t.yaml")
    assert tax.fingerprint() != load_taxonomy().fingerprint()


def test_a_synonym_normalises_to_its_term_and_suggests_it(tmp_path: Path) -> None:
    tax = load_taxonomy(_tax_file(tmp_path))
    assert tax.get("submodality", "sxt").name == "soft X-ray tomography"  # type: ignore[union-attr]
    assert tax.get("submodality", " CLSM ").name == "confocal microscopy"  # type: ignore[union-attr]
    assert tax.get("modality", "XRM").name == "X-ray microscopy"  # type: ignore[union-attr]
    assert tax.get("submodality", "optical sectioning") is None  # RELATED: no
    assert tax.closest("submodality", "XRF microscopie") == "X-ray fluorescence microscopy"
    assert load_taxonomy().get("submodality", "SXT") is None


def test_hard_distractors_are_obo_siblings(tmp_path: Path) -> None:
    tax = load_taxonomy(_tax_file(tmp_path))
    assert tax.siblings("submodality", "SXT") == [
        "X-ray fluorescence microscopy",
        "hard X-ray nanotomography",
    ]
    assert tax.siblings("modality", "X-ray microscopy") == [
        "light microscopy",
        "fluorescence microscopy",
        "electron microscopy",
    ]
    conf = tax.siblings("submodality", "confocal microscopy")
    assert {"expansion microscopy", "correlative light and X-ray microscopy"} <= set(conf)
    assert "soft X-ray tomography" not in conf


def test_ingest_and_questions_carry_the_obo_ids(tmp_path: Path) -> None:
    import json

    from datasets import load_from_disk

    from scopebench.curate import ingest, make_questions

    _tax_file(tmp_path)
    (tmp_path / "img").mkdir()
    for i in range(3):
        Image.new("RGB", (16, 12), (40 * i, 90, 200)).save(tmp_path / "img" / f"{i}.png")
    (tmp_path / "meta.json").write_text(
        json.dumps(
            [
                {"image": "0.png", "modality": "XRM", "submodality": "SXT"},
                {"image": "1.png", "modality": "X-ray microscopy", "submodality": "XRF microscopy"},
                {"image": "2.png", "modality": "fluorescence microscopy", "submodality": "CLSM"},
            ]
        )
    )
    (tmp_path / "manifest.yaml").write_text(
        "name: obo\ntaxonomy: t.yaml\nsources:\n"
        "  - name: s\n    images: img\n    metadata: meta.json\n    license: CC0-1.0\n"
        "    defaults: {domain: biology}\n"
    )
    res = ingest(tmp_path / "manifest.yaml", tmp_path / "ingest")
    assert res.kept == 3, [p.message for p in res.problems]
    from scopebench.curate.questions import QuestionConfig

    cfg = QuestionConfig(tasks=("submodality",), options=3, taxonomy=str(tmp_path / "t.yaml"))
    make_questions(tmp_path / "ingest", tmp_path / "q", cfg)
    rows = {r["source_path"]: r for r in load_from_disk(str(tmp_path / "q"))["test"]}
    got = {
        k: (r["modality"], r["modality_id"], r["submodality"], r["submodality_id"]) for k, r in rows.items()
    }
    assert got == {
        "0.png": ("X-ray microscopy", "FBbi:90000010", "soft X-ray tomography", "FBbi:90000011"),
        "1.png": ("X-ray microscopy", "FBbi:90000010", "X-ray fluorescence microscopy", "FBbi:90000012"),
        "2.png": ("fluorescence microscopy", "FBbi:00000246", "confocal microscopy", "FBbi:90000001"),
    }
    q = rows["0.png"]["questions"]["submodality"]
    assert q["options"][int(q["answer_idx"])] == "soft X-ray tomography"
    assert set(q["options"]) == {
        "soft X-ray tomography",
        "X-ray fluorescence microscopy",
        "hard X-ray nanotomography",
    }


def test_missing_root_bad_file_missing_file_and_cycle(tmp_path: Path) -> None:
    with pytest.raises(
        DataFormatError, match=r"imaging_methods\.obo: root term FBbi:00000001 is not in the file"
    ):
        load_taxonomy(_tax_file(tmp_path, root="FBbi:00000001"))
    with pytest.raises(DataFormatError, match=r"root term FBbi:90000003 is obsolete"):
        load_taxonomy(_tax_file(tmp_path, root="FBbi:90000003"))
    with pytest.raises(DataNotFoundError, match=r"OBO file not found: .*nope\.obo"):
        load_taxonomy(_tax_file(tmp_path, obo="nope.obo"))
    (tmp_path / "bad.obo").write_text("this is not [Term\nid: ::\n")
    with pytest.raises(DataFormatError, match=r"bad\.obo cannot be read as an OBO ontology"):
        load_taxonomy(_tax_file(tmp_path, obo="bad.obo"))
    (tmp_path / "cyc.obo").write_text(
        "format-version: 1.2\n\n[Term]\nid: X:1\nname: root\n\n"
        "[Term]\nid: X:2\nname: a\nis_a: X:1\nis_a: X:3\n\n[Term]\nid: X:3\nname: b\nis_a: X:2\n"
    )
    with pytest.raises(DataFormatError, match=r"cyc\.obo: is_a cycle through X:2 \(a\)"):
        load_taxonomy(_tax_file(tmp_path, obo="cyc.obo", root="X:1"))
    (tmp_path / "t.yaml").write_text('obo:\n  - {file: imaging_methods.obo, attribute: stain, root: "X:1"}\n')
    with pytest.raises(DataFormatError, match=r"obo attribute 'stain' is not one of"):
        load_taxonomy(tmp_path / "t.yaml")
    (tmp_path / "t.yaml").write_text("obo: {file: imaging_methods.obo}\n")
    with pytest.raises(DataFormatError, match=r"obo must be a list"):
        load_taxonomy(tmp_path / "t.yaml")


def test_import_scopebench_does_not_import_pronto() -> None:
    code = "import sys, scopebench, scopebench.curate.taxonomy; print('pronto' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"

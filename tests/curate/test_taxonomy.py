from __future__ import annotations

from pathlib import Path

import pytest

from scopebench.curate.taxonomy import load_taxonomy
from scopebench.errors import DataFormatError, DataNotFoundError


def test_shipped_tree_shape_and_ids() -> None:
    tax = load_taxonomy()
    assert tax.names("modality") == ["light microscopy", "fluorescence microscopy", "electron microscopy"]
    conf = tax.get("submodality", "Confocal Microscopy")  # case-insensitive lookup
    assert conf is not None and conf.parent == "fluorescence microscopy"
    assert "light sheet microscopy" in tax.siblings("submodality", "confocal microscopy")
    assert "brightfield microscopy" not in tax.siblings("submodality", "confocal microscopy")
    assert tax.siblings("stain", "DAPI") == [
        "Hoechst",
        "GFP",
        "MitoTracker",
        "phalloidin",
        "immunofluorescence",
    ]
    # Only ids we are sure of are filled in.
    ids = {c.name: c.ontology_id for t in tax.concepts.values() for c in t.values() if c.ontology_id}
    assert ids == {"brightfield microscopy": "FBbi:00000243", "fluorescence microscopy": "FBbi:00000246"}
    assert tax.organisms["Homo sapiens"] == "NCBITaxon_9606"


def test_closest_concept_for_a_typo() -> None:
    tax = load_taxonomy()
    assert tax.closest("modality", "light microscpy") == "light microscopy"
    assert tax.closest("organism", "Homo sapien") == "Homo sapiens"
    assert tax.closest("stain", "zzzz") is None


def test_user_file_adds_concepts_and_keeps_ids(tmp_path: Path) -> None:
    (tmp_path / "t.yaml").write_text(
        "modality:\n  fluorescence microscopy:\n    children:\n      expansion microscopy: {id: null}\n"
        "stain:\n  fluorescence microscopy: [ER-Tracker]\n"
        "templates:\n  questions:\n    stain: Which dye?\n"
    )
    base = load_taxonomy()
    tax = load_taxonomy(tmp_path / "t.yaml")
    assert tax.get("modality", "fluorescence microscopy").ontology_id == "FBbi:00000246"  # type: ignore[union-attr]
    assert "expansion microscopy" in tax.siblings("submodality", "confocal microscopy")
    assert "ER-Tracker" in tax.siblings("stain", "DAPI")
    assert tax.templates["questions"]["stain"] == "Which dye?"
    assert tax.templates["questions"]["modality"] == base.templates["questions"]["modality"]
    assert tax.fingerprint() != base.fingerprint()


def test_bad_user_files(tmp_path: Path) -> None:
    with pytest.raises(DataNotFoundError):
        load_taxonomy(tmp_path / "none.yaml")
    (tmp_path / "t.yaml").write_text("stain:\n  light microscopy: H&E\n")
    with pytest.raises(DataFormatError, match=r"stain\.light microscopy must be a list"):
        load_taxonomy(tmp_path / "t.yaml")

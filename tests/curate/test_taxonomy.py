"""The shipped taxonomy is μ-Bench's own; matching, suggestions and merges behave as documented."""

from __future__ import annotations

from pathlib import Path

import pytest

from scopebench.curate.taxonomy import load_taxonomy, match_key, taxon_id
from scopebench.errors import DataFormatError, DataNotFoundError

# The values μ-Bench's release and cognition set use, as its paper prints them (Tables 10, 11, 13,
# 14 and 15: title case, hyphens and brackets as typeset there).
PAPER_TABLES = {
    "domain": ["Biology", "Pathology"],
    "subdomain": [
        "Cell Biology", "Gastrointestinal and Liver Pathology", "Hemato-pathology", "Molecular Biology",
        "Neuro-pathology", "Botany", "Cardiovascular Pathology", "Neurobiology", "Gynecologic Cytology",
        "Parasitology", "Developmental Biology", "Biophysics", "Cell and molecular biology", "Immunology",
        "Neuropathology", "Gastrointestinal pathology", "Virology", "Genetics",
    ],
    "modality": ["Light Microscopy", "Fluorescence Microscopy", "Electron Microscopy"],
    "submodality": [
        "Brightfield Microscopy", "Epifluorescence Microscopy", "Synthetic", "Confocal Microscopy",
        "Darkfield Microscopy", "Serial Blockface Scanning Electron Microscopy",
        "Total Internal Reflection Fluorescence Microscopy", "Cryo-electron Tomography",
        "Scanning electron microscopy", "Transmission electron microscopy",
        "Differential interference contrast microscopy", "Mixed", "Transmission electron microscopy (TEM)",
        "Lattice light sheet", "Lattice light-sheet microscopy",
    ],
    "stain": [
        "H&E", "Giemsa", "Synthetic", "No Stain", "DAPI", "H2B-mCherry", "Propidium Iodide", "Basic Fuchsin",
        "IHC(DAB)", "Uranyl Acetate", "IHC(HDab)", "AlexaFluor-tubulin", "Papanicolaou", "IHC(Red)",
        "Hoechst 33342", "GalT-EGFP", "CellMask", "Tetraspeck Beads", "Lysotracker", "Fluorescent Beads",
        "Phal", "GalT-GFP", "Soluble GFP", "Uniform Test Slide", "LifeAct",
    ],
}  # fmt: skip


def test_every_value_the_paper_prints_is_known() -> None:
    """Catches a shipped vocabulary that refuses μ-Bench's own words (the invented one did: 'biology')."""
    tax = load_taxonomy()
    missing = [(a, v) for a, values in PAPER_TABLES.items() for v in values if tax.get(a, v) is None]
    assert missing == []
    assert len(PAPER_TABLES["stain"]) == 25  # Table 13 lists the release's 25 stains


def test_the_three_vocabularies_have_the_figures_shape() -> None:
    """Catches a tree that is not Figures 13–15's: wrong roots, a lost subdomain, a stain under the wrong modality."""
    tax = load_taxonomy()
    assert tax.names("modality") == ["light microscopy", "fluorescence microscopy", "electron microscopy"]
    assert tax.names("domain") == [
        "biology",
        "dermatology",
        "ophthalmology",
        "cytology",
        "pathology",
        "radiology",
    ]
    per_domain = {
        d: [c.name for c in tax.concepts["subdomain"].values() if d in c.parents] for d in tax.names("domain")
    }
    # Figure 14's counts, plus molecular biology (biology) and gastrointestinal and liver pathology
    # and gynecologic cytology (pathology), which the release uses (Table 10).
    assert {d: len(v) for d, v in per_domain.items()} == {
        "biology": 25, "dermatology": 3, "ophthalmology": 7, "cytology": 3, "pathology": 28, "radiology": 13,
    }  # fmt: skip
    assert tax.get("subdomain", "cell biology").parents == ("biology",)  # type: ignore[union-attr]
    assert tax.get("subdomain", "gynecologic cytology").parents == ("cytology", "pathology")  # type: ignore[union-attr]
    assert tax.get("submodality", "synthetic").parents == (  # type: ignore[union-attr]
        "light microscopy", "fluorescence microscopy", "electron microscopy",
    )  # fmt: skip
    assert tax.get("stain", "uranyl acetate").parents == ("electron microscopy",)  # type: ignore[union-attr]
    assert tax.get("stain", "None").name == "No Stain"  # type: ignore[union-attr]
    assert tax.organisms["Homo sapiens"] == "NCBITaxon_9606"


def test_ontology_ids_are_the_checked_fbbi_terms() -> None:
    """Catches an invented or mistyped id (every id was checked against fbbi.obo 2020-11-06)."""
    tax = load_taxonomy()
    ids = {c.name: c.ontology_id for t in tax.concepts.values() for c in t.values() if c.ontology_id}
    assert ids == {
        "light microscopy": "FBbi:00000345", "fluorescence microscopy": "FBbi:00000246",
        "electron microscopy": "FBbi:00000256", "brightfield microscopy": "FBbi:00000243",
        "phase contrast microscopy": "FBbi:00000247",
        "differential interference contrast microscopy": "FBbi:00000245",
        "darkfield microscopy": "FBbi:00000244", "polarized light microscopy": "FBbi:00000248",
        "confocal microscopy": "FBbi:00000251", "stimulated emission depletion microscopy": "FBbi:00000334",
        "fluorescence recovery after photobleaching": "FBbi:00000366",
        "fluorescence resonance energy transfer": "FBbi:00000367", "atomic force microscopy": "FBbi:00000259",
        "scanning electron microscopy": "FBbi:00000257",
        "serial blockface scanning electron microscopy": "FBbi:00000585",
        "transmission electron microscopy": "FBbi:00000258",
        "Giemsa": "FBbi:00000040", "Toluidine Blue": "FBbi:00000049", "DAPI": "FBbi:00000056",
        "Hoechst 33342": "FBbi:00000052", "propidium iodide": "FBbi:00000047", "FITC": "FBbi:00000451",
        "Cy2": "FBbi:00000448", "Alexa Fluor 488": "FBbi:00000440", "Cy3": "FBbi:00000449",
        "Texas Red": "FBbi:00000453", "Alexa Fluor 555": "FBbi:00000443", "Alexa Fluor 568": "FBbi:00000442",
        "Cy5": "FBbi:00000450", "Alexa Fluor 647": "FBbi:00000447", "osmium tetroxide": "FBbi:00000571",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("attribute", "written", "name"),
    [
        ("stain", "IHC (DAB)", "IHC(DAB)"),
        ("stain", "ihc-dab", "IHC(DAB)"),
        ("stain", "IHC (HDab)", "IHC(HDab)"),
        ("stain", "h2b mcherry", "H2B-mCherry"),
        ("subdomain", "Hemato-pathology", "hematopathology"),
        ("subdomain", "cell_biology", "cell biology"),
        ("modality", "  LIGHT   Microscopy ", "light microscopy"),
        ("submodality", "Bright-field microscopy", "brightfield microscopy"),
        ("submodality", "TIRF", "total internal reflection fluorescence microscopy"),
        (
            "submodality",
            "total internal reflection fluorescence microscopy (TIRF)",
            "total internal reflection fluorescence microscopy",
        ),
        ("submodality", "cryo–electron tomography", "cryo-electron tomography"),  # an en dash
    ],
)
def test_matching_ignores_case_spacing_brackets_and_hyphens(attribute: str, written: str, name: str) -> None:
    """Catches exact-string matching that refuses a lab's spelling of a known value."""
    concept = load_taxonomy().get(attribute, written)
    assert concept is not None and concept.name == name


def test_matching_keeps_distinct_values_apart() -> None:
    """Catches a normalisation so loose that two different stains become one."""
    tax = load_taxonomy()
    assert match_key("IHC(HDab)") != match_key("IHC(DAB)")
    assert tax.get("stain", "IHC") is None and tax.get("stain", "Hoechst").name == "Hoechst"  # type: ignore[union-attr]


def test_suggestions_search_every_level_and_say_where() -> None:
    """Catches a suggestion that ignores the word being a known concept at another level."""
    tax = load_taxonomy()
    msg = tax.unknown_message("domain", "cell biology")
    assert "'cell biology' is a subdomain of 'biology'" in msg
    assert "Write domain: biology and subdomain: cell biology" in msg
    assert tax.closest("domain", "Cell Biology") == "biology"
    assert "'confocal microscopy' is a submodality of 'fluorescence microscopy'" in tax.unknown_message(
        "modality", "confocal microscopy"
    )
    assert "'pathology' is a domain" in tax.unknown_message("subdomain", "pathology")
    assert tax.closest("subdomain", "pathology") is None  # the fix is the domain column, not a respelling


def test_misspellings_show_the_nearest_values() -> None:
    """Catches a message that gives one guess, or none, for a typo."""
    tax = load_taxonomy()
    msg = tax.unknown_message("stain", "IHC")
    for name in ("IHC(DAB)", "IHC(HDab)", "IHC(Red)"):
        assert f"stain {name!r} used with 'light microscopy'" in msg
    assert tax.closest("subdomain", "hematopathalogy") == "hematopathology"
    assert "subdomain 'hematopathology' of 'pathology'" in tax.unknown_message("subdomain", "hematopathalogy")
    assert tax.closest("modality", "light microscpy") == "light microscopy"
    assert tax.closest("organism", "Homo sapien") == "Homo sapiens"
    assert tax.closest("stain", "zzzz") is None
    assert "no known value is close" in tax.unknown_message("stain", "zzzz")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("9606", "NCBITaxon_9606"),
        (9606, "NCBITaxon_9606"),
        ("NCBITaxon:9606", "NCBITaxon_9606"),
        ("NCBITaxon_10090", "NCBITaxon_10090"),
        ("ncbitaxon_7955", "NCBITaxon_7955"),
        ("txid562", "NCBITaxon_562"),
        ("NCBITaxon_synthetic", "NCBITaxon_synthetic"),
        ("human", None),
        ("96O6", None),
        (True, None),
        (9606.5, None),
    ],
)
def test_taxon_ids_in_ncbis_forms(value: object, expected: str | None) -> None:
    """Catches a bare NCBI id (NCBI's own form) refused, or a non-id accepted."""
    assert taxon_id(value) == expected


def test_user_file_extends_the_vocabulary(tmp_path: Path) -> None:
    """Catches a user file that drops shipped concepts, ids or templates instead of adding to them."""
    (tmp_path / "t.yaml").write_text(
        "modality:\n  fluorescence microscopy:\n    children:\n      expansion microscopy: {id: null}\n"
        "domain:\n  biology: [organelle biology]\n"
        "stain:\n  fluorescence microscopy: [ER-Tracker, {MitoTracker Red: {aliases: [CMXRos]}}]\n"
        "organism:\n  Xenopus laevis: 8355\n"
        "templates:\n  questions:\n    stain: Which dye?\n"
    )
    base = load_taxonomy()
    tax = load_taxonomy(tmp_path / "t.yaml")
    assert tax.get("modality", "fluorescence microscopy").ontology_id == "FBbi:00000246"  # type: ignore[union-attr]
    assert "expansion microscopy" in tax.siblings("submodality", "confocal microscopy")
    assert "organelle biology" in tax.siblings("subdomain", "cell biology")
    assert {"ER-Tracker", "MitoTracker Red"} <= set(tax.siblings("stain", "DAPI"))
    assert tax.get("stain", "cmxros").name == "MitoTracker Red"  # type: ignore[union-attr]
    assert tax.organisms["Xenopus laevis"] == "NCBITaxon_8355"
    assert tax.templates.question("stain") == "Which dye?"
    assert tax.templates.question("modality") == base.templates.question("modality")
    assert tax.fingerprint() != base.fingerprint()


def test_user_file_replaces_what_it_lists(tmp_path: Path) -> None:
    """Catches `replace:` being ignored (the shipped stains would stay distractors) or leaking into other parts."""
    (tmp_path / "t.yaml").write_text(
        "replace: [stain, templates]\n"
        "stain:\n  light microscopy: [H&E, Masson trichrome, PAS]\n"
        "templates:\n  questions: {stain: 'Which stain?'}\n"
    )
    tax = load_taxonomy(tmp_path / "t.yaml")
    assert tax.names("stain") == ["H&E", "Masson trichrome", "PAS"]
    assert tax.get("stain", "Giemsa") is None
    assert tax.templates.question("stain") == "Which stain?"
    assert tax.templates.question("modality") == "What is the modality of this image?"  # no shipped text left
    assert tax.get("subdomain", "hematopathology") is not None  # domains were not replaced
    (tmp_path / "t.yaml").write_text("replace: [stains]\n")
    with pytest.raises(DataFormatError, match=r"replace must be a list of modality, domain, stain"):
        load_taxonomy(tmp_path / "t.yaml")


def test_a_name_at_two_levels_is_an_error_naming_both_places(tmp_path: Path) -> None:
    """Catches a merge that silently keeps 'cell biology' as a domain and a subdomain (two right options)."""
    (tmp_path / "t.yaml").write_text("domain:\n  cell biology: [organelle biology]\n")
    with pytest.raises(DataFormatError) as err:
        load_taxonomy(tmp_path / "t.yaml")
    msg = str(err.value)
    assert f"'cell biology' cannot be a domain ({tmp_path / 't.yaml'})" in msg
    assert "'cell biology' is a subdomain of 'biology' (scopebench/curate/data/vocabulary/domain.yaml)" in msg
    # An alias counts as a name: here a submodality would answer to a modality's name.
    (tmp_path / "t.yaml").write_text(
        "modality:\n  light microscopy:\n    children:\n      widefield: {aliases: [Electron-Microscopy]}\n"
    )
    with pytest.raises(DataFormatError, match=r"'widefield' cannot be a submodality of 'light microscopy'.*"
                       r"'electron microscopy' is a modality"):  # fmt: skip
        load_taxonomy(tmp_path / "t.yaml")
    # One name on one level under two parents is allowed (μ-Bench lists 'synthetic' under every modality).
    (tmp_path / "t.yaml").write_text("domain:\n  pathology: [cell biology]\n")
    assert load_taxonomy(tmp_path / "t.yaml").get("subdomain", "cell biology").parents == (
        "biology",
        "pathology",
    )  # type: ignore[union-attr]


def test_an_entry_naming_two_concepts_is_an_error(tmp_path: Path) -> None:
    """Catches an entry whose aliases name two known stains being merged into one of them silently."""
    (tmp_path / "t.yaml").write_text(
        "stain:\n  light microscopy: [{Hematoxylin: {aliases: [giemsa, PAS]}}]\n"
    )
    with pytest.raises(DataFormatError, match=r"stain 'Giemsa' has a name or alias matching stain 'PAS'"):
        load_taxonomy(tmp_path / "t.yaml")
    # One alias naming a known concept makes the entry that concept (as an OBO synonym does).
    (tmp_path / "t.yaml").write_text(
        "stain:\n  light microscopy: [{May-Grunwald Giemsa: {aliases: [Giemsa]}}]\n"
    )
    tax = load_taxonomy(tmp_path / "t.yaml")
    assert tax.get("stain", "may grunwald giemsa").name == "Giemsa"  # type: ignore[union-attr]


def test_bad_user_files(tmp_path: Path) -> None:
    """Catches malformed files read as empty instead of refused with a message naming the place."""
    with pytest.raises(DataNotFoundError):
        load_taxonomy(tmp_path / "none.yaml")
    cases = {
        "stain:\n  light microscopy: H&E\n": r"stain\.light microscopy must be a list",
        "stains:\n  light microscopy: [H&E]\n": r"unknown key\(s\) \['stains'\]",
        "modality:\n  x:\n    children: {y: {aliases: z}}\n": r"aliases must be a list",
        "modality:\n  x: {ids: 1}\n": r"modality\.x: unknown key\(s\) \['ids'\]",
        "organism:\n  Xenopus laevis: frog\n": r"'frog' is not an NCBI taxon id",
        "templates:\n  captions: {stain: 'stained with {stian}'}\n": r"unknown placeholder\(s\) \['stian'\]",
        "templates:\n  questions: {stain: 'Which {stain}?'}\n": r"takes no placeholder",
        "templates:\n  questions: {stains: 'Which?'}\n": r"unknown task 'stains'",
        "- a\n- b\n": r"must be a YAML mapping",
    }
    for text, pattern in cases.items():
        (tmp_path / "t.yaml").write_text(text)
        with pytest.raises(DataFormatError, match=pattern):
            load_taxonomy(tmp_path / "t.yaml")


def test_templates_are_mu_benchs_table_16() -> None:
    """Catches shipped templates that are not μ-Bench's coarse perception templates word for word."""
    t = load_taxonomy().templates
    assert t.question("modality") == "What is the most likely microscopy modality used to acquire this image?"
    assert (
        t.question("subdomain")
        == "What is the most likely subfield of study this micrograph would be used for?"
    )
    assert t.question("stain") == "What is the most likely technique used to stain this micrograph?"
    assert (
        t.render(t.caption("modality"), "light microscopy")
        == "A microscopy image obtained through light microscopy."
    )
    assert t.render(t.caption("domain"), "pathology") == "A microscopy image frequently studied in pathology."
    assert t.render(t.caption("stain"), "H&E") == "A microscopy image stained with H&E."
    assert (
        t.caption("submodality") == "A microscopy image obtained through {class}."
    )  # written as the release stores it


def test_a_source_can_have_its_own_templates(tmp_path: Path) -> None:
    """Catches per-source templates (μ-Bench's fine-grained ones are per dataset) applied to every source or none."""
    (tmp_path / "t.yaml").write_text(
        "templates:\n  sources:\n    acevedo_et_al_2020:\n"
        "      questions: {classification: 'A Giemsa-stained light micrograph displaying human peripheral blood "
        "cells. As a blood cell recognition system, identify the correct cell type:'}\n"
        "      captions: {classification: 'A brightfield microscopy image of a peripheral blood smear stained "
        "with giemsa displaying {article} {class}.'}\n"
    )
    t = load_taxonomy(tmp_path / "t.yaml").templates
    cap = t.caption("classification", "acevedo_et_al_2020")
    assert t.render(cap, "eosinophil").endswith("stained with giemsa displaying an eosinophil.")
    assert t.render(cap, "basophil").endswith("displaying a basophil.")
    assert t.question("classification", "acevedo_et_al_2020").startswith("A Giemsa-stained")
    assert t.question("classification", "other_source") == t.question("classification")

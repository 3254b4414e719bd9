"""The ingest manifest and the metadata record, validated with pydantic.

A manifest (YAML) lists sources; each source is a folder of images and a metadata table with one
row per image. Paths are relative to the manifest's folder. See docs/build.md.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from scopebench.curate.taxonomy import Taxonomy, taxon_id
from scopebench.errors import DataFormatError, DataNotFoundError, MissingDependencyError

__all__ = ["Manifest", "Record", "Source", "load_manifest", "normalise_licence", "read_table"]

_SOURCE_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")
#: Operators and brackets of an SPDX expression; the text between them names one licence.
_SPDX_SPLIT = re.compile(r"(\s+(?:AND|OR|WITH)\s+|[()])", re.IGNORECASE)


class Source(BaseModel):
    """One source dataset of a manifest.

    Attributes:
        name: Short name, written to the ``dataset`` column (``acevedo_et_al_2020``).
        images: Folder of the images (relative to the manifest).
        metadata: CSV, JSON, JSONL or Parquet table, one row per image.
        license: The source's licence (SPDX id such as ``CC-BY-4.0``); a row may override it.
        citation: How to cite the source.
        url: Where the source comes from.
        institution: Written to the ``institution`` column when rows give none.
        pmid: PubMed id, written to ``pmid`` when rows give none.
        defaults: Column values applied to every row that leaves them empty.
        columns: Renames from the table's column names to ours (``{file: image}``).
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    name: str
    images: str
    metadata: str
    license: str | None = Field(default=None, alias="licence")
    citation: str | None = None
    url: str | None = None
    institution: str | None = None
    pmid: str | None = None
    defaults: dict[str, Any] = Field(default_factory=dict)
    columns: dict[str, str] = Field(default_factory=dict)

    @field_validator("license")
    @classmethod
    def _spdx(cls, value: str | None, info: ValidationInfo) -> str | None:
        # The source's default licence is written like a row's: as an SPDX id when it reads as one
        # (a row that uses it carries the warning when it does not).
        if value is None or not (info.context or {}).get("licences", True):
            return value
        return normalise_licence(value) or value

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _SOURCE_NAME.match(value):
            raise ValueError("use letters, digits, '_', '-' and '.' only (it names folders and ids)")
        return value


class Manifest(BaseModel):
    """A manifest: the benchmark's name, an optional taxonomy file and the sources.

    Attributes:
        name: The benchmark's name (dataset card title).
        description: One paragraph for the dataset card.
        taxonomy: A YAML taxonomy merged into the shipped one (relative to the manifest).
        near_duplicate_bits: dHash Hamming distance at or below which a pair of images is proposed
            as near-duplicates.
        near_duplicate_similarity: Pixel similarity (block-minimum SSIM) at or above which a
            proposed pair is confirmed.
        sources: The source datasets.
        root: The manifest's folder (set by :func:`load_manifest`).
    """

    model_config = ConfigDict(extra="forbid")

    name: str = "scopebench-build"
    description: str = ""
    taxonomy: str | None = None
    near_duplicate_bits: int = Field(default=6, ge=0, le=64)
    near_duplicate_similarity: float = Field(default=0.85, ge=-1.0, le=1.0)
    sources: list[Source]
    root: Path = Path(".")

    def path(self, rel: str) -> Path:
        """``rel`` resolved against the manifest's folder."""
        p = Path(rel).expanduser()
        return p if p.is_absolute() else self.root / p


def load_manifest(path: str | Path, *, licences: bool = True) -> Manifest:
    """Read and validate a manifest YAML file.

    Args:
        path: The manifest.
        licences: Write each source's licence as an SPDX id when it reads as one; ``False`` keeps
            it as written and spares building the SPDX licence index (``build run`` lists the
            input files of a manifest that way: the licences are not among them).

    Raises:
        DataNotFoundError: When the file does not exist.
        DataFormatError: When it is not a valid manifest (every violation listed), or two sources
            share a name.
    """
    import yaml

    p = Path(path)
    if not p.is_file():
        raise DataNotFoundError(f"manifest not found: {p}")
    try:
        raw = yaml.safe_load(p.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise DataFormatError(f"{p} is not valid YAML: {exc}") from exc
    if not isinstance(raw, dict):
        raise DataFormatError(f"{p}: a manifest is a YAML mapping with a 'sources' list (see docs/build.md)")
    try:
        manifest = Manifest.model_validate({**raw, "root": p.parent}, context={"licences": licences})
    except ValidationError as exc:
        lines = [f"  {'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()]
        raise DataFormatError(f"{p} is not a valid manifest:\n" + "\n".join(lines)) from exc
    names = [s.name for s in manifest.sources]
    dups = sorted({n for n in names if names.count(n) > 1})
    if dups:
        raise DataFormatError(f"{p}: source names must be unique; repeated: {', '.join(dups)}")
    return manifest


@functools.cache
def _licensing() -> Any:
    try:
        from license_expression import get_spdx_licensing
    except ModuleNotFoundError as exc:
        raise MissingDependencyError("license-expression", "build", "licence normalisation") from exc
    return get_spdx_licensing()


def normalise_licence(text: str) -> str | None:
    """``text`` as an SPDX licence id or expression (``CC BY 4.0`` → ``CC-BY-4.0``), else ``None``.

    ``license-expression`` resolves case, SPDX's own aliases (``GPL-2.0+``) and expressions
    (``MIT OR Apache-2.0``); labs often write the words of an id with spaces, so each licence of the
    expression is also tried with its words joined by hyphens. ``LicenseRef-…`` ids (SPDX's form
    for a licence not on its list) are kept as written.
    """
    licensing = _licensing()
    pieces = _SPDX_SPLIT.split(text.strip())
    hyphenated = "".join(p if _SPDX_SPLIT.fullmatch(p) else "-".join(p.split()) for p in pieces)
    for candidate in dict.fromkeys((text.strip(), hyphenated)):
        result = licensing.validate(candidate)
        if not result.errors:
            return str(result.normalized_expression)
        if result.invalid_symbols and all(str(s).startswith("LicenseRef-") for s in result.invalid_symbols):
            return candidate
    return None


def read_table(path: Path) -> list[dict[str, Any]]:
    """The rows of a CSV, JSON (list of objects), JSONL or Parquet metadata table.

    CSV cells are read as text (empty cells as missing), so ``007`` stays ``007``.

    Raises:
        DataNotFoundError: When the file does not exist.
        DataFormatError: When it cannot be read as a table of objects.
    """
    if not path.is_file():
        raise DataNotFoundError(f"metadata table not found: {path}")
    suffix = path.suffix.lower()
    try:
        if suffix == ".csv":
            import pandas as pd

            frame = pd.read_csv(path, dtype=str, keep_default_na=False)
            return [
                {str(k): (v if v != "" else None) for k, v in row.items()} for row in frame.to_dict("records")
            ]
        if suffix == ".parquet":
            import pyarrow.parquet as pq

            return list(pq.read_table(path).to_pylist())
        text = path.read_text(encoding="utf-8")
        if suffix == ".jsonl":
            rows = [json.loads(line) for line in text.splitlines() if line.strip()]
        elif suffix == ".json":
            rows = json.loads(text)
        else:
            raise DataFormatError(f"{path}: a metadata table is .csv, .json, .jsonl or .parquet")
    except (ValueError, OSError, UnicodeDecodeError) as exc:
        raise DataFormatError(f"cannot read metadata table {path}: {exc}") from exc
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise DataFormatError(f"{path}: the JSON must be a list of objects, one per image")
    return rows


class Record(BaseModel):
    """One image's metadata, normalised to μ-Bench's names; validated against the taxonomy.

    Validation needs ``context={"taxonomy": Taxonomy}``. Vocabulary is written in the taxonomy's
    spelling; an unknown value fails with where else the word is known or the nearest known values
    (:meth:`Taxonomy.unknown_message`). The taxon id is written ``NCBITaxon_<n>`` whatever form it
    came in, the licence as an SPDX id when it can be read as one (else it is kept, and
    :attr:`notes` holds a warning naming it). μ-Bench's one-element lists (``ncbitaxon_id:
    [NCBITaxon_9606]``) are read as their element, and ``ncbitaxon_name`` as ``organism``.
    """

    model_config = ConfigDict(extra="allow")

    image: str
    license: str
    modality: str
    submodality: str | None = None
    domain: str
    subdomain: str | None = None
    stain: str | None = None
    organism: str | None = Field(default=None, validation_alias=AliasChoices("organism", "ncbitaxon_name"))
    ncbitaxon_id: str | None = None
    microns_per_pixel: float | None = Field(default=None, gt=0)
    label_name: str | None = None
    institution: str | None = None
    pmid: str | None = None
    synthetic: bool = False
    _notes: list[tuple[str, str, str]] = PrivateAttr(default_factory=list)

    @property
    def notes(self) -> list[tuple[str, str, str]]:
        """Warnings about values kept as written: ``(field, kind, message)``."""
        return self._notes

    @field_validator("organism", "institution", mode="before")
    @classmethod
    def _one(cls, value: Any, info: ValidationInfo) -> Any:
        return _single(value, info.field_name or "")

    @field_validator("ncbitaxon_id", mode="before")
    @classmethod
    def _taxon(cls, value: Any) -> Any:
        value = _single(value, "ncbitaxon_id")
        if value is None:
            return None
        taxon = taxon_id(value)
        if taxon is None:
            raise ValueError(
                f"ncbitaxon_id {value!r} is not an NCBI taxon id; write its number (9606) or NCBITaxon_9606"
            )
        return taxon

    @field_validator("modality", "submodality", "domain", "subdomain", "stain")
    @classmethod
    def _known(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None:
            return None
        tax: Taxonomy = (info.context or {})["taxonomy"]
        attribute = info.field_name or ""
        concept = tax.get(attribute, value)
        if concept is None:
            raise ValueError(tax.unknown_message(attribute, value))
        return concept.name

    @field_validator("pmid", mode="before")
    @classmethod
    def _pmid(cls, value: Any) -> Any:
        # μ-Bench stores pmid as a string; a number read from JSON/Parquet becomes its digits (a
        # Parquet integer column with nulls arrives as floats: 123.0 → "123").
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value

    @model_validator(mode="after")
    def _licence(self) -> Record:
        spdx = normalise_licence(self.license)
        if spdx is not None:
            self.license = spdx
        else:
            self._notes.append(
                (
                    "license",
                    "unrecognised_licence",
                    f"licence {self.license!r} is not an SPDX licence id or expression; it is kept as "
                    "written. Write its SPDX id (https://spdx.org/licenses/, e.g. CC-BY-4.0) or "
                    "LicenseRef-<name> for a licence not on SPDX's list",
                )
            )
        return self

    @model_validator(mode="after")
    def _consistent(self, info: ValidationInfo) -> Record:
        tax: Taxonomy = (info.context or {})["taxonomy"]
        for child, parent in (("submodality", "modality"), ("subdomain", "domain")):
            value = getattr(self, child)
            concept = tax.get(child, value) if value else None
            if concept is not None and getattr(self, parent) not in concept.parents:
                known = " or ".join(repr(p) for p in concept.parents)
                raise ValueError(
                    f"{child} {value!r} belongs to {parent} {known}, not {getattr(self, parent)!r}"
                )
        if self.organism is not None:
            self._organism(tax)
        return self

    def _organism(self, tax: Taxonomy) -> None:
        """Spell a known organism the taxonomy's way and fill or check its taxon id."""
        organism = str(self.organism)
        if self.ncbitaxon_id is None and taxon_id(organism) is not None:
            self.organism, self.ncbitaxon_id = None, taxon_id(organism)  # an id in the name column
            return
        hit = tax.organism(organism)
        if hit is not None:
            self.organism, taxon = hit
            if self.ncbitaxon_id is None:
                self.ncbitaxon_id = taxon
            elif self.ncbitaxon_id != taxon:
                raise ValueError(f"organism {self.organism!r} is {taxon}, not {self.ncbitaxon_id}")
        elif self.ncbitaxon_id is None:
            fix = "Give its ncbitaxon_id (NCBI's number, e.g. 9606) or add it to a taxonomy file"
            raise ValueError(tax.unknown_message("organism", organism, fix=fix))


def _single(value: Any, name: str) -> Any:
    """A one-element list (μ-Bench's form for ids and names) as its element; longer lists are errors."""
    if isinstance(value, list | tuple):
        if len(value) > 1:
            raise ValueError(f"{name} holds {len(value)} values; μ-Bench's schema has one per image")
        return value[0] if value else None
    return value

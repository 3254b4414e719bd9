"""The microscopy concept tree: vocabulary for validation and siblings for distractors.

The shipped tree is ``build/data/taxonomy.yaml``; a user file given with ``taxonomy:`` is merged
into it (new concepts are added, an existing concept's id is replaced only when the user gives one).
Attributes: ``modality`` → ``submodality`` and ``domain`` → ``subdomain`` are two-level trees,
``stain`` is grouped by modality, ``organism`` maps a name to its NCBITaxon id. A user file may
also name OBO ontologies under ``obo:`` whose subtrees become concepts (``build/ontology.py``).
"""

from __future__ import annotations

import difflib
import hashlib
import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from scopebench.curate.ontology import read_obo_concepts
from scopebench.errors import DataFormatError, DataNotFoundError, MissingDependencyError

__all__ = ["ATTRIBUTES", "Concept", "Taxonomy", "load_taxonomy"]

#: The metadata attributes the tree covers, with the attribute their parent concept belongs to.
ATTRIBUTES: dict[str, str | None] = {
    "modality": None,
    "submodality": "modality",
    "domain": None,
    "subdomain": "domain",
    "stain": "modality",
}


@dataclass(frozen=True, slots=True)
class Concept:
    """One concept of the tree.

    Attributes:
        name: Its name as written in metadata (μ-Bench spelling).
        attribute: ``modality``, ``submodality``, ``domain``, ``subdomain`` or ``stain``.
        parent: The parent concept's name (``None`` for a root).
        ontology_id: An ontology id (FBbi for imaging methods) when known, else ``None``.
        aliases: Other names that normalise to this one (an OBO term's exact synonyms).
    """

    name: str
    attribute: str
    parent: str | None = None
    ontology_id: str | None = None
    aliases: tuple[str, ...] = ()


def _yaml() -> Any:
    try:
        import yaml
    except ModuleNotFoundError as exc:  # pragma: no cover - pyyaml comes with the build extra
        raise MissingDependencyError("pyyaml", "build", "scopebench build") from exc
    return yaml


@dataclass
class Taxonomy:
    """The concept tree (see the module docstring).

    Attributes:
        concepts: Concepts per attribute, by name.
        organisms: Organism name → NCBITaxon id.
        templates: ``questions`` and ``captions`` templates per task.
        sources: The files it was read from, in merge order.
    """

    concepts: dict[str, dict[str, Concept]] = field(default_factory=dict)
    organisms: dict[str, str] = field(default_factory=dict)
    templates: dict[str, dict[str, str]] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)

    def names(self, attribute: str) -> list[str]:
        """Every concept name of ``attribute``, in file order."""
        return list(self.concepts.get(attribute, {}))

    def get(self, attribute: str, name: str) -> Concept | None:
        """The concept ``name`` of ``attribute``: exactly, case-insensitively, then by an alias."""
        table = self.concepts.get(attribute, {})
        if name in table:
            return table[name]
        key = name.strip().casefold()
        folded = {k.casefold(): v for k, v in table.items()}
        if key in folded:
            return folded[key]
        return next((c for c in table.values() if key in {a.casefold() for a in c.aliases}), None)

    def closest(self, attribute: str, name: str) -> str | None:
        """The known concept closest to ``name`` or to an alias (difflib ratio ≥ 0.6), for messages."""
        names = self.names(attribute) if attribute != "organism" else list(self.organisms)
        by_fold = {n.casefold(): n for n in names}
        for c in self.concepts.get(attribute, {}).values() if attribute != "organism" else ():
            by_fold.update({a.casefold(): c.name for a in c.aliases if a.casefold() not in by_fold})
        hit = difflib.get_close_matches(name.casefold(), list(by_fold), n=1, cutoff=0.6)
        return by_fold[hit[0]] if hit else None

    def siblings(self, attribute: str, name: str) -> list[str]:
        """Concepts of ``attribute`` sharing ``name``'s parent (hard distractors), ``name`` excluded."""
        concept = self.get(attribute, name)
        if concept is None:
            return []
        return [
            c.name
            for c in self.concepts.get(attribute, {}).values()
            if c.parent == concept.parent and c.name != concept.name
        ]

    def fingerprint(self) -> str:
        """SHA-256 of the merged tree, for caches and provenance."""
        blob = json.dumps(
            {
                "concepts": {a: [vars_of(c) for c in t.values()] for a, t in self.concepts.items()},
                "organisms": self.organisms,
                "templates": self.templates,
            },
            sort_keys=True,
        )
        return hashlib.sha256(blob.encode()).hexdigest()

    def merge(self, raw: Any, source: str, base: Path | None = None) -> None:
        """Add the concepts of one parsed YAML document.

        Args:
            raw: The parsed document.
            source: Where it was read from, for messages and ``sources``.
            base: The folder its ``obo:`` file paths are relative to (default: the current one).

        Raises:
            DataFormatError: When the document is not a taxonomy, or an OBO entry is bad.
        """
        if not isinstance(raw, dict):
            raise DataFormatError(f"{source}: a taxonomy file must be a YAML mapping (see docs/build.md)")
        for root_attr, child_attr in (("modality", "submodality"), ("domain", "subdomain")):
            for name, body in _mapping(raw.get(root_attr), source, root_attr).items():
                body = body or {}
                self._add(Concept(str(name), root_attr, None, body.get("id")))
                for child, cbody in _mapping(body.get("children"), source, f"{root_attr}.{name}").items():
                    self._add(Concept(str(child), child_attr, str(name), (cbody or {}).get("id")))
        for modality, stains in _mapping(raw.get("stain"), source, "stain").items():
            if not isinstance(stains, list):
                raise DataFormatError(f"{source}: stain.{modality} must be a list of stain names")
            for stain in stains:
                self._add(Concept(str(stain), "stain", str(modality), None))
        for name, taxon in _mapping(raw.get("organism"), source, "organism").items():
            self.organisms[str(name)] = str(taxon)
        obo = raw.get("obo")
        if obo is not None and not isinstance(obo, list):
            raise DataFormatError(f"{source}: obo must be a list of {{file, attribute, root}} entries")
        for entry in obo or []:
            for term in read_obo_concepts(entry, base or Path(), source):
                self._add(Concept(*term))
        for kind, table in _mapping(raw.get("templates"), source, "templates").items():
            self.templates.setdefault(str(kind), {}).update(
                {str(k): str(v) for k, v in _mapping(table, source, f"templates.{kind}").items()}
            )
        self.sources.append(source)

    def _add(self, concept: Concept) -> None:
        table = self.concepts.setdefault(concept.attribute, {})
        old = table.get(concept.name)
        if old is not None and concept.ontology_id is None:
            concept = Concept(
                concept.name, concept.attribute, concept.parent, old.ontology_id, concept.aliases
            )
        table[concept.name] = concept


def vars_of(concept: Concept) -> dict[str, Any]:
    """A concept as a plain dict (JSON-able).

    ``aliases`` appears only when there are some, so a tree without aliases keeps the fingerprint
    (and cache keys) it had before aliases existed.
    """
    out: dict[str, Any] = {
        "name": concept.name,
        "attribute": concept.attribute,
        "parent": concept.parent,
        "id": concept.ontology_id,
    }
    if concept.aliases:
        out["aliases"] = list(concept.aliases)
    return out


def _mapping(value: Any, source: str, where: str) -> dict[Any, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise DataFormatError(f"{source}: {where} must be a mapping of names (see docs/build.md)")
    return value


def load_taxonomy(extra: str | Path | None = None) -> Taxonomy:
    """The shipped taxonomy, with the user's YAML file ``extra`` merged in when given.

    Raises:
        DataNotFoundError: When ``extra`` does not exist.
        DataFormatError: When a file is not valid taxonomy YAML.
    """
    yaml = _yaml()
    tax = Taxonomy()
    text = resources.files("scopebench.curate").joinpath("data/taxonomy.yaml").read_text(encoding="utf-8")
    tax.merge(yaml.safe_load(text), "scopebench/curate/data/taxonomy.yaml")
    if extra is not None:
        path = Path(extra)
        if not path.is_file():
            raise DataNotFoundError(f"taxonomy file not found: {path}")
        try:
            raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        except yaml.YAMLError as exc:
            raise DataFormatError(f"{path} is not valid YAML: {exc}") from exc
        tax.merge(raw, str(path), path.parent)
    return tax

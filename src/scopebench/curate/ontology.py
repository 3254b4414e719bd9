"""A user's OBO ontology as the concept tree of one attribute (read with ``pronto``).

A taxonomy YAML file may name OBO files under ``obo:``; each entry's subtree becomes concepts::

    obo:
      - file: imaging.obo          # relative to the taxonomy file
        attribute: modality        # modality (→ submodality) or domain (→ subdomain)
        root: "FBbi:00000222"

The root's direct subclasses become ``modality`` concepts, their direct subclasses ``submodality``
concepts (parent = the modality); deeper terms are not read (the tree has two levels). Term ids
become ontology ids, exact synonyms become aliases. Obsolete terms are skipped. A term reached
from two parents keeps the parent with the smallest id, so the tree is the same on every run.
``pronto`` is imported only here, and only when a file names an OBO ontology.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

from scopebench.errors import DataFormatError, DataNotFoundError, MissingDependencyError

__all__ = ["OBO_ATTRIBUTES", "OboConcept", "read_obo_concepts"]

#: The attributes an OBO subtree can fill, with the attribute of their children.
OBO_ATTRIBUTES: dict[str, str] = {"modality": "submodality", "domain": "subdomain"}


class OboConcept(NamedTuple):
    """One term read as a concept (its parent becomes the concept's only parent)."""

    name: str
    attribute: str
    parent: str | None
    ontology_id: str
    aliases: tuple[str, ...]


def _pronto() -> Any:
    try:
        import pronto
    except ModuleNotFoundError as exc:
        raise MissingDependencyError("pronto", "build", "an OBO taxonomy") from exc
    return pronto


def _load(path: Path) -> Any:
    """The parsed ontology, or our error naming the file."""
    if not path.is_file():
        raise DataNotFoundError(f"OBO file not found: {path} (paths are relative to the taxonomy file)")
    pronto = _pronto()
    try:
        # pronto raises many types (fastobo SyntaxError, ValueError, UnicodeDecodeError...);
        # every one means the same thing to the user: this file cannot be read as OBO.
        return pronto.Ontology(str(path))
    except Exception as exc:
        raise DataFormatError(f"{path} cannot be read as an OBO ontology: {exc}") from exc


def _children(term: Any, path: Path, seen: set[str]) -> list[Any]:
    """Live direct subclasses of ``term`` by id; a cycle back to an ancestor is an error."""
    out = []
    for child in sorted(term.subclasses(distance=1, with_self=False), key=lambda t: t.id):
        if child.obsolete:
            continue
        if child.id in seen or _in_cycle(child):
            raise DataFormatError(
                f"{path}: is_a cycle through {child.id} ({child.name}); an OBO taxonomy must be a tree"
            )
        out.append(child)
    return out


def _in_cycle(term: Any) -> bool:
    """Whether ``term`` is its own ancestor.

    pronto's walk never yields the start term itself, so look for it above each direct parent.
    """
    return any(
        term.id in {a.id for a in parent.superclasses(with_self=False)}
        for parent in term.superclasses(distance=1, with_self=False)
    )


def _concept(term: Any, attribute: str, parent: str | None, path: Path) -> OboConcept:
    if not term.name:
        raise DataFormatError(f"{path}: term {term.id} has no name; give it one (name: ...)")
    aliases = sorted({s.description for s in term.synonyms if s.scope == "EXACT"} - {term.name})
    return OboConcept(str(term.name), attribute, parent, str(term.id), tuple(aliases))


def read_obo_concepts(entry: Any, base: Path, source: str) -> list[OboConcept]:
    """The concepts of one ``obo:`` entry of taxonomy file ``source`` (see the module docstring).

    Args:
        entry: The parsed entry: ``file``, ``attribute``, ``root``.
        base: The folder relative ``file`` paths start from.
        source: The taxonomy file, for messages.

    Returns:
        Level-1 concepts by term id, then each one's children by term id.

    Raises:
        DataFormatError: A malformed entry, an unreadable file, a root not in the file, an
            obsolete root, or an ``is_a`` cycle.
        DataNotFoundError: When the OBO file does not exist.
        MissingDependencyError: When ``pronto`` is not installed.
    """
    if not isinstance(entry, dict) or not {"file", "attribute", "root"} <= set(entry):
        raise DataFormatError(f"{source}: each obo entry needs file, attribute and root (see docs/build.md)")
    attribute, root_id = str(entry["attribute"]), str(entry["root"])
    if attribute not in OBO_ATTRIBUTES:
        raise DataFormatError(f"{source}: obo attribute {attribute!r} is not one of {sorted(OBO_ATTRIBUTES)}")
    path = base / str(entry["file"])
    ontology = _load(path)
    try:
        root = ontology[root_id]
    except KeyError:
        raise DataFormatError(f"{path}: root term {root_id} is not in the file; check the id") from None
    if root.obsolete:
        raise DataFormatError(f"{path}: root term {root_id} is obsolete; pick its replacement")
    top = _children(root, path, {root.id})
    concepts = [_concept(t, attribute, None, path) for t in top]
    placed = {root.id, *(t.id for t in top)}
    child_attr = OBO_ATTRIBUTES[attribute]
    for parent in top:
        for term in _children(parent, path, {root.id, parent.id}):
            if term.id in placed:
                continue  # reached from a parent with a smaller id already (multiple is_a)
            placed.add(term.id)
            concepts.append(_concept(term, child_attr, str(parent.name), path))
    return concepts

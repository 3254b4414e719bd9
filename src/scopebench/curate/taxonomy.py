"""The microscopy concept tree: vocabulary for validation and siblings for distractors.

The shipped vocabulary is μ-Bench's own, in ``curate/data/vocabulary/``: ``modality.yaml``,
``domain.yaml`` and ``stain.yaml`` (its paper's Figures 13–15, with the values its release uses)
and ``organism.yaml``. The question and caption templates are ``curate/data/templates.yaml``
(:mod:`scopebench.curate.question_templates`). A user file given with ``taxonomy:`` extends them,
or replaces the parts it lists under ``replace:`` (``modality``, ``domain``, ``stain``,
``organism``, ``templates``); it may also name OBO ontologies under ``obo:``
(:mod:`scopebench.curate.ontology`).

``modality`` → ``submodality`` and ``domain`` → ``subdomain`` are two-level trees, ``stain`` is
grouped by modality, ``organism`` maps a name to its NCBITaxon id. Names match ignoring case,
spacing, hyphens, underscores and brackets (:func:`match_key`: ``IHC (DAB)`` is ``IHC(DAB)``). One
name sits at one level of a tree: a merge that makes a subdomain also a domain is an error naming
both places. A name may have several parents on one level (μ-Bench lists ``synthetic`` under every
modality).
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import json
import re
import unicodedata
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from scopebench.curate.ontology import read_obo_concepts
from scopebench.curate.question_templates import QuestionTemplates
from scopebench.errors import DataFormatError, DataNotFoundError, MissingDependencyError

__all__ = [
    "ATTRIBUTES",
    "REPLACEABLE",
    "Concept",
    "Taxonomy",
    "load_taxonomy",
    "match_key",
    "taxon_id",
]

#: The metadata attributes the tree covers, with the attribute their parent concept belongs to.
ATTRIBUTES: dict[str, str | None] = {
    "modality": None,
    "submodality": "modality",
    "domain": None,
    "subdomain": "domain",
    "stain": "modality",
}
#: The other level of each two-level tree (one name may not sit on both).
_OTHER_LEVEL = {
    "modality": "submodality",
    "submodality": "modality",
    "domain": "subdomain",
    "subdomain": "domain",
}
#: The shipped vocabulary files (``data/vocabulary/<name>.yaml``), in merge order.
_VOCABULARIES: tuple[str, ...] = ("modality", "domain", "stain", "organism")
#: What a user file may replace instead of extend (``replace: [...]``).
REPLACEABLE: tuple[str, ...] = (*_VOCABULARIES, "templates")
_TOP_KEYS = {"version", "replace", "obo", "templates", *_VOCABULARIES}
_SEPARATORS = re.compile(r"[\s\-_‐‑‒–—()\[\]{}]+")
_TAXON = re.compile(r"^(?:ncbitaxon[:_]?|ncbi:?txid|txid|taxon:)?\s*(\d+|synthetic)$", re.IGNORECASE)


def match_key(text: str) -> str:
    """The form names are compared in: NFKC, case-folded, without spaces, hyphens, underscores, brackets."""
    return _SEPARATORS.sub("", unicodedata.normalize("NFKC", text).casefold())


def taxon_id(value: Any) -> str | None:
    """An NCBI taxon id in μ-Bench's form (``NCBITaxon_9606``), or ``None`` when ``value`` is not one.

    Accepts NCBI's bare number (``9606``, also as an int), ``NCBITaxon:9606``, ``NCBITaxon_9606``,
    ``txid9606`` and μ-Bench's ``NCBITaxon_synthetic``.
    """
    if isinstance(value, bool):
        return None
    match = _TAXON.match(str(value).strip()) if isinstance(value, int | str) else None
    return f"NCBITaxon_{match.group(1).lower()}" if match else None


@dataclass(frozen=True, slots=True)
class Concept:
    """One concept of the tree.

    Attributes:
        name: Its name as written in the dataset (μ-Bench's spelling).
        attribute: ``modality``, ``submodality``, ``domain``, ``subdomain`` or ``stain``.
        parents: The parent concepts' names (empty for a root; stains: their modalities).
        ontology_id: An ontology id (FBbi for imaging methods) when known, else ``None``.
        aliases: Other names that normalise to this one (abbreviations, an OBO term's exact synonyms).
    """

    name: str
    attribute: str
    parents: tuple[str, ...] = ()
    ontology_id: str | None = None
    aliases: tuple[str, ...] = ()

    def match_keys(self) -> set[str]:
        """The match keys of its name and aliases."""
        return {match_key(n) for n in (self.name, *self.aliases)}


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
        templates: The question and caption templates.
        sources: The files it was read from, in merge order.
    """

    concepts: dict[str, dict[str, Concept]] = field(default_factory=dict)
    organisms: dict[str, str] = field(default_factory=dict)
    templates: QuestionTemplates = field(default_factory=QuestionTemplates)
    sources: list[str] = field(default_factory=list)
    _index: dict[str, dict[str, str]] = field(default_factory=dict, repr=False)
    _origin: dict[tuple[str, str], str] = field(default_factory=dict, repr=False)
    # nearest() compares against every known name (~10 ms); a source repeating one typo on
    # thousands of rows asks the same question each time.
    _near_memo: dict[tuple[str, str, int], list[Concept]] = field(default_factory=dict, repr=False)

    def names(self, attribute: str) -> list[str]:
        """Every concept name of ``attribute`` (organism names for ``organism``), in file order."""
        return list(self.organisms) if attribute == "organism" else list(self.concepts.get(attribute, {}))

    def get(self, attribute: str, name: str) -> Concept | None:
        """The concept ``name`` of ``attribute``, matched by :func:`match_key` on names and aliases."""
        table = self.concepts.get(attribute, {})
        if name in table:
            return table[name]
        hit = self._index.get(attribute, {}).get(match_key(name))
        return table[hit] if hit is not None else None

    def organism(self, name: str) -> tuple[str, str] | None:
        """``(name as the taxonomy spells it, NCBITaxon id)`` of a known organism, else ``None``."""
        hit = self._index.get("organism", {}).get(match_key(name))
        return (hit, self.organisms[hit]) if hit is not None else None

    def siblings(self, attribute: str, name: str) -> list[str]:
        """Concepts of ``attribute`` sharing a parent with ``name`` (hard distractors), ``name`` excluded.

        Roots (modalities, domains) are each other's siblings.
        """
        concept = self.get(attribute, name)
        if concept is None:
            return []
        mine = set(concept.parents)
        return [
            c.name
            for c in self.concepts.get(attribute, {}).values()
            if c.name != concept.name and (bool(mine & set(c.parents)) if mine else not c.parents)
        ]

    def places(self, name: str) -> list[Concept]:
        """Every concept, at any level, that ``name`` matches (organisms as ``organism`` concepts)."""
        key = match_key(name)
        out = [
            self.concepts[a][n]
            for a, index in self._index.items()
            if a != "organism"
            for k, n in index.items()
            if k == key
        ]
        found = self.organism(name)
        if found is not None:
            out.append(Concept(found[0], "organism", (), found[1]))
        return out

    def nearest(self, attribute: str, name: str, n: int = 4) -> list[Concept]:
        """Up to ``n`` known values near ``name`` in spelling, at every level, nearest first.

        ``attribute``'s own level counts a match from a ratio of 0.6 (difflib), other levels from 0.8,
        so a typo finds its own level's word and another level's word only when it is close; values
        more than 0.1 below the nearest one are left out.
        """
        memo = (attribute, name, n)
        if memo in self._near_memo:
            return list(self._near_memo[memo])
        key = match_key(name)
        scored: dict[tuple[str, str], float] = {}
        for attr, index in self._index.items():
            cutoff = 0.6 if attr == attribute else 0.8
            for k, canonical in index.items():
                ratio = difflib.SequenceMatcher(None, key, k).ratio()
                if ratio >= cutoff and ratio > scored.get((attr, canonical), 0.0):
                    scored[(attr, canonical)] = ratio
        ranked = sorted(scored.items(), key=lambda kv: (-kv[1], kv[0][0] != attribute, kv[0]))
        # Only values about as near as the nearest: a clear best match is shown alone.
        best = [kv for kv in ranked if kv[1] >= ranked[0][1] - 0.1][:n] if ranked else []
        self._near_memo[memo] = [
            Concept(c, "organism", (), self.organisms[c]) if a == "organism" else self.concepts[a][c]
            for (a, c), _ in best
        ]
        return list(self._near_memo[memo])

    def closest(self, attribute: str, name: str) -> str | None:
        """The value to suggest for an unknown ``name`` of ``attribute`` (``None`` when none is close).

        A known child concept given as its parent level (domain ``cell biology``) suggests its parent
        (``biology``); otherwise the nearest name of ``attribute`` in spelling.
        """
        child = next((a for a, p in ATTRIBUTES.items() if p == attribute and a in _OTHER_LEVEL), None)
        hit = self.get(child, name) if child is not None else None
        if hit is not None and hit.parents:
            return hit.parents[0]
        if any(c.attribute != attribute for c in self.places(name)):
            return None  # a known word of another level: the fix is another column, not a respelling
        near = [c for c in self.nearest(attribute, name) if c.attribute == attribute]
        return near[0].name if near else None

    def unknown_message(self, attribute: str, name: str, fix: str | None = None) -> str:
        """Why ``name`` is not a known ``attribute``, and what to do.

        Says where else the word is known ("'cell biology' is a subdomain of 'biology'"), or else
        shows the nearest known values at every level, then ``fix`` (default: correct the spelling
        or add the value to a taxonomy file).
        """
        head = f"{attribute} {name!r} is unknown"
        elsewhere = [c for c in self.places(name) if c.attribute != attribute]
        if elsewhere:
            where = "; ".join(_describe(c) for c in elsewhere)
            return f"{head}: {where}. {_fix(attribute, elsewhere[0])}"
        near = self.nearest(attribute, name)
        shown = "; ".join(f"{c.attribute} {c.name!r}" + _of(c) for c in near)
        hint = f"; the nearest known values are {shown}" if near else "; no known value is close"
        fix = fix or (
            "Correct the spelling, or, if it is right, add it to a taxonomy file "
            "(`taxonomy:` in the manifest; see docs/build.md)"
        )
        return f"{head}{hint}. {fix}"

    def fingerprint(self) -> str:
        """SHA-256 of the merged tree and templates, for caches and provenance."""
        blob = json.dumps(
            {
                "concepts": {a: [vars_of(c) for c in t.values()] for a, t in self.concepts.items()},
                "organisms": self.organisms,
                "templates": self.templates.as_dict(),
            },
            sort_keys=True,
        )
        return hashlib.sha256(blob.encode()).hexdigest()

    def merge(self, raw: Any, source: str, base: Path | None = None) -> None:
        """Add the concepts and templates of one parsed taxonomy document.

        Args:
            raw: The parsed document.
            source: Where it was read from, for messages and ``sources``.
            base: The folder its ``obo:`` file paths are relative to (default: the current one).

        Raises:
            DataFormatError: When the document is not a taxonomy, an OBO entry is bad, or it places
                a name at two levels of a tree.
        """
        if not isinstance(raw, dict):
            raise DataFormatError(f"{source}: a taxonomy file must be a YAML mapping (see docs/build.md)")
        self._near_memo.clear()
        unknown = sorted(str(k) for k in set(raw) - _TOP_KEYS)
        if unknown:
            raise DataFormatError(
                f"{source}: unknown key(s) {unknown}; a taxonomy file has {sorted(_TOP_KEYS)}"
            )
        self._tree(raw, source, "modality", "submodality")
        self._tree(raw, source, "domain", "subdomain")
        for modality, stains in _mapping(raw.get("stain"), source, "stain").items():
            if not isinstance(stains, list):
                raise DataFormatError(f"{source}: stain.{modality} must be a list of stain names")
            for name, body in _entries(stains, source, f"stain.{modality}"):
                self._add(
                    _concept(name, "stain", (str(modality),), body, f"{source}: stain.{modality}"), source
                )
        for name, value in _mapping(raw.get("organism"), source, "organism").items():
            self._add_organism(str(name), value, source)
        obo = raw.get("obo")
        if obo is not None and not isinstance(obo, list):
            raise DataFormatError(f"{source}: obo must be a list of {{file, attribute, root}} entries")
        for entry in obo or []:
            for t in read_obo_concepts(entry, base or Path(), source):
                self._add(
                    Concept(t.name, t.attribute, (t.parent,) if t.parent else (), t.ontology_id, t.aliases),
                    source,
                )
        if raw.get("templates") is not None:
            self.templates.merge(raw["templates"], source)
        self.sources.append(source)

    def _tree(self, raw: dict[str, Any], source: str, root: str, child: str) -> None:
        for name, body in _mapping(raw.get(root), source, root).items():
            body = {"children": body} if isinstance(body, list) else _mapping(body, source, f"{root}.{name}")
            self._add(_concept(name, root, (), body, f"{source}: {root}.{name}", children=True), source)
            for sub, sbody in _entries(body.get("children"), source, f"{root}.{name}.children"):
                self._add(_concept(sub, child, (str(name),), sbody, f"{source}: {root}.{name}.{sub}"), source)

    def _add(self, concept: Concept, source: str) -> None:
        """Add ``concept``, or merge it into the concept of the same attribute it names.

        Merging keeps the first spelling, adds parents and aliases, and takes the new id when one is
        given. A name (or alias) already at the tree's other level is an error naming both places.
        """
        attr = concept.attribute
        other = _OTHER_LEVEL.get(attr)
        for key in concept.match_keys() if other else ():
            clash = self._index.get(other or "", {}).get(key)
            if clash is not None:
                raise DataFormatError(self._two_levels(concept, source, self.concepts[other or ""][clash]))
        table, index = self.concepts.setdefault(attr, {}), self._index.setdefault(attr, {})
        same = next(
            (index[k] for k in [match_key(concept.name), *sorted(concept.match_keys())] if k in index), None
        )
        if same is not None:
            old = table[same]
            names = (*old.aliases, concept.name, *concept.aliases)  # a respelling of the name is no alias
            concept = Concept(
                old.name,
                attr,
                old.parents + tuple(p for p in concept.parents if p not in old.parents),
                concept.ontology_id or old.ontology_id,
                tuple(dict.fromkeys(a for a in names if match_key(a) != match_key(old.name))),
            )
        else:
            self._origin[(attr, concept.name)] = source
        for key in concept.match_keys():
            if index.get(key, concept.name) != concept.name:
                raise DataFormatError(
                    f"{source}: {attr} {concept.name!r} has a name or alias matching {attr} {index[key]!r}; "
                    "two concepts cannot share a name: merge them or drop the alias"
                )
            index[key] = concept.name
        table[concept.name] = concept

    def _two_levels(self, new: Concept, source: str, old: Concept) -> str:
        first = self._origin.get((old.attribute, old.name), "?")
        return (
            f"{new.name!r} cannot be a {new.attribute}{_of(new)} ({source}): {_describe(old)} "
            f"({first}). A name sits at one level of the tree only; rename or remove one of them"
        )

    def _add_organism(self, name: str, value: Any, source: str) -> None:
        taxon = taxon_id(value)
        if taxon is None:
            raise DataFormatError(
                f"{source}: organism {name!r}: {value!r} is not an NCBI taxon id (e.g. 9606)"
            )
        index = self._index.setdefault("organism", {})
        known = index.get(match_key(name), name)
        self.organisms[known] = taxon
        index[match_key(name)] = known


def vars_of(concept: Concept) -> dict[str, Any]:
    """A concept as a plain dict (JSON-able); ``aliases`` only when there are some."""
    out: dict[str, Any] = {
        "name": concept.name,
        "attribute": concept.attribute,
        "parents": list(concept.parents),
        "id": concept.ontology_id,
    }
    if concept.aliases:
        out["aliases"] = list(concept.aliases)
    return out


def _of(concept: Concept) -> str:
    if not concept.parents:
        return ""
    joined = " and ".join(repr(p) for p in concept.parents)
    return f" used with {joined}" if concept.attribute == "stain" else f" of {joined}"


def _describe(concept: Concept) -> str:
    if concept.attribute == "organism":
        return f"{concept.name!r} is an organism ({concept.ontology_id})"
    return f"{concept.name!r} is a {concept.attribute}{_of(concept)}"


def _fix(attribute: str, found: Concept) -> str:
    """What to write instead, for a value known at another level than ``attribute``."""
    if ATTRIBUTES.get(found.attribute) == attribute and found.attribute in _OTHER_LEVEL:
        return f"Write {attribute}: {found.parents[0]} and {found.attribute}: {found.name}"
    if ATTRIBUTES.get(attribute) == found.attribute:
        return f"Write {found.attribute}: {found.name}, and a {attribute} of it or none"
    return f"Write it as the {found.attribute}"


def _mapping(value: Any, source: str, where: str) -> dict[Any, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise DataFormatError(f"{source}: {where} must be a mapping of names (see docs/build.md)")
    return value


def _entries(value: Any, source: str, where: str) -> list[tuple[str, dict[str, Any]]]:
    """``(name, body)`` pairs of a mapping ``{name: body}`` or a list of names or ``{name: body}``."""
    if value is None:
        return []
    if isinstance(value, dict):
        return [(str(k), _mapping(v, source, f"{where}.{k}")) for k, v in value.items()]
    if not isinstance(value, list):
        raise DataFormatError(f"{source}: {where} must be a list or a mapping of names")
    out = []
    for item in value:
        if isinstance(item, dict) and len(item) == 1:
            ((name, body),) = item.items()
            out.append((str(name), _mapping(body, source, f"{where}.{name}")))
        elif isinstance(item, str | int | float) and not isinstance(item, bool):
            out.append((str(item), {}))
        else:
            raise DataFormatError(
                f"{source}: {where}: {item!r} is not a name or a {{name: {{id, aliases}}}} entry"
            )
    return out


def _concept(
    name: Any,
    attribute: str,
    parents: tuple[str, ...],
    body: dict[str, Any],
    where: str,
    *,
    children: bool = False,
) -> Concept:
    allowed = {"id", "aliases", *(("children",) if children else ())}
    extra = sorted(str(k) for k in set(body) - allowed)
    if extra:
        raise DataFormatError(f"{where}: unknown key(s) {extra}; a concept has {', '.join(sorted(allowed))}")
    aliases = body.get("aliases") or []
    if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
        raise DataFormatError(f"{where}: aliases must be a list of names")
    oid = body.get("id")
    if oid is not None and not isinstance(oid, str):
        raise DataFormatError(f'{where}: id must be a quoted string such as "FBbi:00000243"')
    return Concept(str(name), attribute, parents, oid, tuple(aliases))


@functools.cache
def _shipped(rel: str) -> Any:
    text = resources.files("scopebench.curate").joinpath(f"data/{rel}").read_text(encoding="utf-8")
    return _yaml().safe_load(text)


def _replaced(raw: dict[str, Any], source: str) -> set[str]:
    value = raw.get("replace") or []
    if not isinstance(value, list) or not set(value) <= set(REPLACEABLE):
        raise DataFormatError(f"{source}: replace must be a list of {', '.join(REPLACEABLE)}")
    return set(value)


def load_taxonomy(extra: str | Path | None = None) -> Taxonomy:
    """The shipped taxonomy and templates, with the user's YAML file ``extra`` merged in when given.

    Raises:
        DataNotFoundError: When ``extra`` does not exist.
        DataFormatError: When a file is not valid taxonomy YAML, or the merge places a name at two
            levels of a tree.
    """
    yaml = _yaml()
    raw: Any = None
    path = Path(extra) if extra is not None else None
    if path is not None:
        if not path.is_file():
            raise DataNotFoundError(f"taxonomy file not found: {path}")
        try:
            raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        except yaml.YAMLError as exc:
            raise DataFormatError(f"{path} is not valid YAML: {exc}") from exc
        if not isinstance(raw, dict):
            raise DataFormatError(f"{path}: a taxonomy file must be a YAML mapping (see docs/build.md)")
    replaced = _replaced(raw, str(path)) if raw is not None else set()
    tax = Taxonomy()
    for name in _VOCABULARIES:
        if name not in replaced:
            tax.merge(_shipped(f"vocabulary/{name}.yaml"), f"scopebench/curate/data/vocabulary/{name}.yaml")
    if "templates" not in replaced:
        tax.templates.merge(_shipped("templates.yaml"), "scopebench/curate/data/templates.yaml")
    if raw is not None and path is not None:
        tax.merge(raw, str(path), path.parent)
    return tax

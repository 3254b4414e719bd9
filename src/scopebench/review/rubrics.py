"""Rubrics as data: the criteria a reviewer rates an item on, and what flags the item.

A rubric is a JSON object (docs/review.md, "Rubric file format")::

    {"name": "spur", "title": "…",
     "criteria": [{"key": "scientific_validity", "label": "Scientific Validity",
                   "type": "scale", "min": 1, "max": 5, "flag_below": 3},
                  {"key": "key_wrong", "label": "…", "type": "choice",
                   "options": ["no", "yes"], "flag": ["yes"]}],
     "verdicts": ["problem", "answer", "rationale"]}

``scale`` criteria take integers in ``[min, max]`` and flag the item below ``flag_below``;
``choice`` criteria take one of ``options`` and flag the item on a value in ``flag``. Each verdict
(HLE's protocol) is judged ``valid``, ``invalid`` or ``uncertain``. Shipped rubrics: ``pathmmu``
(PathMMU's four validation criteria), ``spur`` (SPUR's three 1–5 scores), ``hle`` (verdicts only)
and ``spur-hle`` (both).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from scopebench.review.errors import Invalid

__all__ = ["VERDICT_VALUES", "Criterion", "Decision", "Rubric", "builtin_rubrics", "load_rubric"]

VERDICT_VALUES = ("valid", "invalid", "uncertain")
Decision = Literal["keep", "drop", "uncertain"]


@dataclass(frozen=True, slots=True)
class Criterion:
    """One rated criterion.

    Attributes:
        key: Identifier (letters, digits, ``_``), used in exports and the API.
        label: What the reviewer reads.
        type: ``scale`` (integers) or ``choice`` (one of ``options``).
        options: The values of a ``choice`` criterion.
        flag: Values of a ``choice`` criterion that flag the item.
        min: Lowest value of a ``scale``.
        max: Highest value of a ``scale``.
        flag_below: A ``scale`` value below this flags the item (``None``: never).
    """

    key: str
    label: str
    type: Literal["scale", "choice"]
    options: tuple[str, ...] = ()
    flag: tuple[str, ...] = ()
    min: int = 1
    max: int = 5
    flag_below: int | None = None

    def check(self, value: Any) -> int | str:
        """The value in its canonical type.

        Raises:
            Invalid: When the value is not allowed.
        """
        if self.type == "scale":
            if isinstance(value, str) and value.strip().lstrip("-").isdigit():
                value = int(value)
            if isinstance(value, bool) or not isinstance(value, int) or not self.min <= value <= self.max:
                raise Invalid(f"{self.key} must be an integer from {self.min} to {self.max} (got {value!r})")
            return value
        if value not in self.options:
            raise Invalid(f"{self.key} must be one of {', '.join(self.options)} (got {value!r})")
        return str(value)

    def flags(self, value: int | str) -> bool:
        """Whether ``value`` flags the item."""
        if self.type == "scale":
            return self.flag_below is not None and int(value) < self.flag_below
        return value in self.flag

    @property
    def values(self) -> list[int | str]:
        """Every allowed value, in order (ordinal order for scales)."""
        if self.type == "scale":
            return list(range(self.min, self.max + 1))
        return list(self.options)


@dataclass(frozen=True, slots=True)
class Rubric:
    """A project's rating rubric.

    Attributes:
        name: Short name.
        title: One line shown above the form.
        criteria: Rated criteria, in order.
        verdicts: Parts judged valid/invalid/uncertain (e.g. problem, answer, rationale).
    """

    name: str
    title: str = ""
    criteria: tuple[Criterion, ...] = ()
    verdicts: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (what the database and exports keep)."""
        crit = []
        for c in self.criteria:
            d: dict[str, Any] = {"key": c.key, "label": c.label, "type": c.type}
            if c.type == "scale":
                d.update(min=c.min, max=c.max, flag_below=c.flag_below)
            else:
                d.update(options=list(c.options), flag=list(c.flag))
            crit.append(d)
        return {"name": self.name, "title": self.title, "criteria": crit, "verdicts": list(self.verdicts)}

    @classmethod
    def from_dict(cls, data: Any) -> Rubric:
        """Parse and check a rubric's JSON form.

        Raises:
            Invalid: With what to fix, for any malformed part.
        """
        if not isinstance(data, dict) or not isinstance(data.get("name"), str):
            raise Invalid('a rubric is a JSON object with at least "name" (text) and "criteria" (a list)')
        raw = data.get("criteria", [])
        verdicts = data.get("verdicts", [])
        if not isinstance(raw, list) or not isinstance(verdicts, list):
            raise Invalid(f'rubric {data["name"]!r}: "criteria" and "verdicts" must be lists')
        criteria = tuple(_criterion(c, data["name"]) for c in raw)
        keys = [c.key for c in criteria] + [str(v) for v in verdicts]
        if len(set(keys)) != len(keys):
            raise Invalid(f"rubric {data['name']!r}: criterion and verdict keys must be unique ({keys})")
        if not criteria and not verdicts:
            raise Invalid(f"rubric {data['name']!r} has neither criteria nor verdicts; give at least one")
        return cls(
            name=data["name"],
            title=str(data.get("title", "")),
            criteria=criteria,
            verdicts=tuple(_key(v, data["name"]) for v in verdicts),
        )

    def rate(self, scores: dict[str, Any], verdicts: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
        """Check one reviewer's rating against the rubric; returns the canonical values.

        Raises:
            Invalid: For a missing, unknown or out-of-range value.
        """
        unknown = (set(scores) - {c.key for c in self.criteria}) | (set(verdicts) - set(self.verdicts))
        if unknown:
            raise Invalid(f"unknown rubric field(s) {sorted(unknown)}; this rubric has {self.keys()}")
        out: dict[str, Any] = {}
        for c in self.criteria:
            if c.key not in scores or scores[c.key] in (None, ""):
                raise Invalid(f"rate every criterion: {c.key} ({c.label}) is missing")
            out[c.key] = c.check(scores[c.key])
        vout: dict[str, str] = {}
        for v in self.verdicts:
            if verdicts.get(v) not in VERDICT_VALUES:
                raise Invalid(
                    f"verdict {v} must be one of {', '.join(VERDICT_VALUES)} (got {verdicts.get(v)!r})"
                )
            vout[v] = str(verdicts[v])
        return out, vout

    def decide(self, scores: dict[str, Any], verdicts: dict[str, str]) -> tuple[Decision, list[str]]:
        """One reviewer's decision on the item and its reasons.

        ``uncertain`` when any verdict is uncertain (the item goes to a senior whatever else was
        said), else ``drop`` when any criterion flags or any verdict is invalid, else ``keep``.
        """
        flagged = [f"{c.key}={scores[c.key]}" for c in self.criteria if c.flags(scores[c.key])]
        invalid = [f"{v}=invalid" for v in self.verdicts if verdicts.get(v) == "invalid"]
        uncertain = [f"{v}=uncertain" for v in self.verdicts if verdicts.get(v) == "uncertain"]
        if uncertain:
            return "uncertain", uncertain + flagged + invalid
        if flagged or invalid:
            return "drop", flagged + invalid
        return "keep", []

    def keys(self) -> list[str]:
        """Every criterion and verdict key."""
        return [c.key for c in self.criteria] + list(self.verdicts)


def _key(value: Any, rubric: str) -> str:
    if not isinstance(value, str) or not value or not value.replace("_", "").isalnum():
        raise Invalid(f"rubric {rubric!r}: keys must be letters, digits and _ (got {value!r})")
    return value


def _criterion(raw: Any, rubric: str) -> Criterion:
    if not isinstance(raw, dict):
        raise Invalid(f"rubric {rubric!r}: each criterion is an object with key, label and type")
    key = _key(raw.get("key"), rubric)
    kind = raw.get("type")
    label = str(raw.get("label", key))
    if kind == "scale":
        lo, hi, below = raw.get("min", 1), raw.get("max", 5), raw.get("flag_below")
        if not (isinstance(lo, int) and isinstance(hi, int) and lo < hi):
            raise Invalid(f"rubric {rubric!r}: scale {key} needs integer min < max")
        if below is not None and not isinstance(below, int):
            raise Invalid(f"rubric {rubric!r}: flag_below of {key} must be an integer or null")
        return Criterion(key, label, "scale", min=lo, max=hi, flag_below=below)
    if kind == "choice":
        options, flag = raw.get("options"), raw.get("flag", [])
        if not isinstance(options, list) or len(options) < 2 or not all(isinstance(o, str) for o in options):
            raise Invalid(f"rubric {rubric!r}: choice {key} needs at least two text options")
        if not isinstance(flag, list) or not set(flag) <= set(options):
            raise Invalid(f"rubric {rubric!r}: flag of {key} must list some of its options {options}")
        return Criterion(key, label, "choice", options=tuple(options), flag=tuple(flag))
    raise Invalid(f"rubric {rubric!r}: criterion {key} has type {kind!r}; use 'scale' or 'choice'")


def builtin_rubrics() -> list[str]:
    """Names of the rubrics shipped with scopebench."""
    folder = resources.files("scopebench.review") / "rubrics"
    return sorted(p.name.removesuffix(".json") for p in folder.iterdir() if p.name.endswith(".json"))


def load_rubric(name_or_path: str) -> Rubric:
    """A shipped rubric by name (``pathmmu``, ``spur``, ``hle``, ``spur-hle``) or a JSON file.

    Raises:
        Invalid: For an unknown name, an unreadable file or a malformed rubric.
    """
    path = Path(name_or_path)
    if name_or_path in builtin_rubrics():
        text = (resources.files("scopebench.review") / "rubrics" / f"{name_or_path}.json").read_text("utf-8")
    elif path.is_file():
        text = path.read_text(encoding="utf-8")
    else:
        raise Invalid(
            f"no rubric {name_or_path!r}: give a shipped rubric ({', '.join(builtin_rubrics())}) "
            "or the path of a rubric JSON file (docs/review.md describes the format)"
        )
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise Invalid(f"rubric {name_or_path} is not valid JSON: {exc}") from exc
    return Rubric.from_dict(data)

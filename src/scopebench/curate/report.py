"""What a build step found wrong and what it kept: problems and step tallies."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

__all__ = ["MARKER", "BuildProblem", "StepResult", "read_problems", "write_problems"]

#: The file that marks a folder as a build output (so a re-run may replace it): the step's
#: :class:`StepResult` as JSON, with the cache key ``build run`` compares.
MARKER = "build.json"


@dataclass(frozen=True, slots=True)
class BuildProblem:
    """One problem, naming where it is so the user can fix it.

    Attributes:
        step: The build step (``ingest``, ``questions``, ``split``, ``export``).
        source: The manifest source (or file) concerned.
        row: The metadata row (0-based, header excluded) or record key.
        field: The field at fault (``image``, ``modality``, ``license``…), ``""`` for the whole row.
        kind: A short category, used for the drop counts (``unknown_vocabulary``, ``bad_image``…).
        message: What is wrong and what to do.
        severity: ``error`` keeps the row out of the output; ``warning`` keeps it in.
        suggestion: The closest known concept for unknown vocabulary, else ``None``.
    """

    step: str
    source: str
    row: str
    field: str
    kind: str
    message: str
    severity: Literal["error", "warning"] = "error"
    suggestion: str | None = None

    def __str__(self) -> str:
        where = f"{self.source} row {self.row}" + (f" field {self.field}" if self.field else "")
        hint = (
            f" (did you mean {self.suggestion!r}?)"
            if self.suggestion and "did you mean" not in self.message
            else ""
        )
        return f"{self.severity}: {where}: {self.message}{hint}"


@dataclass
class StepResult:
    """What one step did: items in, kept, dropped by reason, problems and outputs.

    Attributes:
        step: The step's name.
        items_in: Rows or items the step read.
        kept: Rows or items it wrote.
        dropped: Items kept out, by reason (a problem ``kind``); ``items_in == kept + sum(dropped)``
            unless the step creates items (``questions``), whose ``items_in`` counts images.
        problems: Every problem found.
        out: The step's output folder.
        cached: ``True`` when the output was reused from an earlier identical run.
        stats: Step-specific numbers (chi-square of answer positions, split sizes…).
    """

    step: str
    items_in: int = 0
    kept: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    problems: list[BuildProblem] = field(default_factory=list)
    out: str = ""
    cached: bool = False
    stats: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """A JSON-able summary (problems are written separately)."""
        return {
            "step": self.step,
            "items_in": self.items_in,
            "kept": self.kept,
            "dropped": dict(sorted(self.dropped.items())),
            "problems": len(self.problems),
            "out": self.out,
            "stats": self.stats,
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any], problems: list[BuildProblem]) -> StepResult:
        """Rebuild a summary written by :meth:`to_json` (for a cached step)."""
        return cls(
            step=raw["step"],
            items_in=raw["items_in"],
            kept=raw["kept"],
            dropped=Counter(raw["dropped"]),
            problems=problems,
            out=raw["out"],
            cached=True,
            stats=raw.get("stats", {}),
        )


def write_problems(problems: list[BuildProblem], path: Path) -> None:
    """Write one JSON object per problem (``problems.jsonl``)."""
    with path.open("w", encoding="utf-8") as fh:
        for p in problems:
            fh.write(json.dumps(asdict(p), ensure_ascii=False) + "\n")


def read_problems(path: Path) -> list[BuildProblem]:
    """Read a ``problems.jsonl`` written by :func:`write_problems` (empty when absent)."""
    if not path.is_file():
        return []
    return [
        BuildProblem(**json.loads(line)) for line in path.read_text(encoding="utf-8").splitlines() if line
    ]

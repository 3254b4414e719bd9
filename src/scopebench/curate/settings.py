"""The settings of the steps every ``build.yaml`` runs (ingest, questions, split), apart from the steps.

``build run`` validates each step's section before it decides which steps to reuse. These classes
live here, away from the step modules (NumPy, the image codecs, the Ray executor, the answer-position
statistics), so that a re-run that reuses every step loads none of them; each step module re-exports
its own class. The generate and filter sections are validated against classes in their step
modules, which load only when build.yaml has those sections.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from scopebench.curate.schema import QUESTION_TASKS
from scopebench.errors import DataFormatError

__all__ = ["DEFAULT_MAX_PIXELS", "IngestConfig", "QuestionConfig", "SplitConfig"]

#: Default pixel limit (width × height × planes): 8192 × 8192 (a worker's peak is measured in docs/build.md).
DEFAULT_MAX_PIXELS = 8192 * 8192


@dataclass(frozen=True)
class IngestConfig:
    """The ingest step's settings (``build.yaml``'s ``ingest:`` section).

    Attributes:
        max_pixels: Images declaring more pixels are ``oversized_image`` problems, refused from
            the header before anything is decoded; 0: no limit.
    """

    max_pixels: int = DEFAULT_MAX_PIXELS


@dataclass(frozen=True)
class QuestionConfig:
    """How questions are made.

    Attributes:
        seed: Seed of every random choice (recorded in the output).
        options: Options per question before "none of the above" (answer included), at least 2.
        difficulty: ``hard`` (sibling distractors first) or ``easy`` (across the tree first).
        none_of_the_above: Append "none of the above" as a last, never-correct option.
        tasks: Which tasks to make.
        taxonomy: A user taxonomy YAML merged into the shipped one.
    """

    seed: int = 0
    options: int = 4
    difficulty: Literal["hard", "easy"] = "hard"
    none_of_the_above: bool = False
    tasks: tuple[str, ...] = QUESTION_TASKS
    taxonomy: str | None = None

    def __post_init__(self) -> None:
        if self.options < 2:
            raise DataFormatError(f"questions need at least 2 options, got options={self.options}")
        if self.difficulty not in ("hard", "easy"):
            raise DataFormatError(f"difficulty is 'hard' or 'easy', not {self.difficulty!r}")
        unknown = [t for t in self.tasks if t not in QUESTION_TASKS]
        if unknown:
            raise DataFormatError(
                f"unknown question task(s) {unknown}; choose from {', '.join(QUESTION_TASKS)}"
            )


@dataclass(frozen=True)
class SplitConfig:
    """How to split.

    Attributes:
        seed: Seed of the shuffles (recorded).
        fractions: Split name → share of images; shares must sum to 1 (default: all ``test``, as μ-Bench).
        tiny: Images in ``test_tiny`` (a sample of ``test``; 0 for none).
    """

    seed: int = 0
    fractions: dict[str, float] = field(default_factory=lambda: {"test": 1.0})
    tiny: int = 0

    def __post_init__(self) -> None:
        if not self.fractions or any(v < 0 for v in self.fractions.values()):
            raise DataFormatError("split fractions must be a non-empty mapping of non-negative shares")
        if abs(sum(self.fractions.values()) - 1.0) > 1e-9:
            raise DataFormatError(f"split fractions must sum to 1, got {sum(self.fractions.values())}")
        if "test_tiny" in self.fractions:
            raise DataFormatError("test_tiny is drawn from test; set `tiny: N` instead of a fraction")
        if self.tiny < 0:
            raise DataFormatError("tiny must be 0 or more images")
        if self.tiny and not self.fractions.get("test"):
            raise DataFormatError(
                "test_tiny is drawn from the test split: give `test` a share, or set tiny to 0"
            )

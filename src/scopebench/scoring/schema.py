"""Typed views of ``metrics.json`` (docs/metrics-schema.md): rows, owner tables and sections.

:func:`~scopebench.scoring.compute_metrics` builds the metrics as a dict and the run writes that
dict, so ``metrics.json`` is what it always was, byte for byte. These pydantic models are how the
rest of the package *reads* metrics (the report, comparisons, :class:`scopebench.Results`):
validated once, then attributes instead of string keys. ``null`` in the file (an undefined
accuracy, no interval) and NaN in memory are both NaN here.

Each model keeps the mapping it was read from: :meth:`MetricsModel.to_dict` gives it back with its
keys in their original order, so output built from a typed object (``compare.json``, report
tables) is the output built from the dict.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Annotated, Any, Self

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    ModelWrapValidatorHandler,
    PrivateAttr,
    model_validator,
)

__all__ = [
    "AccuracyRow",
    "BaselineSection",
    "CalibrationBin",
    "CalibrationSection",
    "JudgeSection",
    "LeaderboardEntry",
    "LocalizationRow",
    "Metrics",
    "MetricsModel",
    "OwnerRow",
    "OwnerTable",
]


def _nan_for_null(value: Any) -> Any:
    return math.nan if value is None else value


#: A number that may be undefined: ``null`` in metrics.json, NaN in memory and here.
Num = Annotated[float, BeforeValidator(_nan_for_null)]


def _zero_for_null(value: Any) -> Any:
    return 0 if value is None else value


#: A count; a missing or ``null`` count is 0.
Count = Annotated[int, BeforeValidator(_zero_for_null)]


class MetricsModel(BaseModel):
    """Base of every typed metrics object: immutable; unknown keys are kept, not rejected."""

    # extra="allow": a newer metrics.json (or a benchmark's own row fields) still reads.
    # defer_build: the validators are built on first use, not when `scopebench --help` imports this.
    model_config = ConfigDict(frozen=True, extra="allow", defer_build=True)
    _source: dict[str, Any] | None = PrivateAttr(default=None)

    @model_validator(mode="wrap")
    @classmethod
    def _keep_source(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        # Every level keeps its own mapping, so a nested row's to_dict() is the row as read.
        obj = handler(data)
        if isinstance(data, Mapping):
            obj._source = dict(data)
        return obj

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        """Validate ``data`` (a metrics.json section, or compute_metrics' dict) into this type."""
        return cls.model_validate(data)

    def to_dict(self) -> dict[str, Any]:
        """The mapping this object was read from (keys in their order), else its fields."""
        if self._source is not None:
            return dict(self._source)
        return self.model_dump()


class AccuracyRow(MetricsModel):
    """One accuracy row (docs/metrics-schema.md, "Accuracy row").

    Attributes:
        group: The row's label (``overall``, ``task=NP``, ``subset=PubMed``…).
        n: Records in the group.
        correct: Correct answers (under policy ``exclude``: among the answered records).
        accuracy: ``correct / denominator``; NaN for an empty group.
        denominator: ``n`` (policy ``wrong``) or the answered records (policy ``exclude``).
        ci_low: Lower bound of the 95% interval (NaN when there is none).
        ci_high: Upper bound of the 95% interval.
        ci_method: How the interval was computed (``wilson``, ``stratified-bootstrap-percentile``…).
        policy: ``wrong`` or ``exclude``: what unscorable records count as.
        unparsed: Responses that commit to no single option.
        errors: Failed model calls.
        missing_image: Items whose image is missing from the data.
        missing_response: Items a replay file has no answer for.
        resamples: Bootstrap resamples of the interval (0 for Wilson's, which draws nothing).
        seed: Bootstrap seed (``None`` for Wilson's).
        n_judge: Answers that came from the answer-extraction judge.
        judge_free_accuracy: The accuracy with the judge's answers counted as unparsed.
        truncated: Replies the token limit cut (read only by an explicit answer before the cut).
    """

    group: str
    n: Count
    correct: Count
    accuracy: Num
    denominator: Count
    ci_low: Num = math.nan
    ci_high: Num = math.nan
    ci_method: str = "none"
    policy: str = "wrong"
    unparsed: Count = 0
    errors: Count = 0
    missing_image: Count = 0
    missing_response: Count = 0
    resamples: Count = 0
    seed: int | None = None
    n_judge: Count = 0
    judge_free_accuracy: Num = math.nan
    truncated: Count = 0

    @property
    def interval(self) -> tuple[float, float]:
        """``(ci_low, ci_high)``."""
        return (self.ci_low, self.ci_high)


class OwnerRow(AccuracyRow):
    """A row of the benchmark owners' aggregation, keyed like their published table.

    Attributes:
        split_or_group: The published table's first key (μ-Bench ``coarse``, PathMMU ``test``…).
        subset_or_task: Its second key (``all``, ``PubMed``, ``NP``, ``overall``…).
        weighting: ``macro over tasks`` (μ-Bench) or instance-weighted.
        tasks: μ-Bench macro rows: each task's accuracy (``None`` elsewhere).
        pooled_splits: PathMMU ``ALL`` rows: the splits pooled (``None`` elsewhere).
        ci_owner_unclipped: μ-Bench under ``--protocol owner``: the basic interval before clipping
            to ``[0, 1]``, where clipping changed it.
    """

    split_or_group: str = ""
    subset_or_task: str = ""
    weighting: str = ""
    tasks: dict[str, Num] | None = None
    pooled_splits: list[str] | None = None
    ci_owner_unclipped: list[Num] | None = None


class OwnerTable(MetricsModel):
    """The ``owner`` section: the benchmark owners' aggregation.

    Attributes:
        benchmark: The benchmark whose owners defined it.
        description: How it aggregates (shown under the report's owner table).
        rows: Its rows, in table order.
    """

    benchmark: str = ""
    description: str = ""
    rows: tuple[OwnerRow, ...] = ()

    def row(self, split_or_group: str, subset_or_task: str) -> OwnerRow | None:
        """The row keyed ``(split_or_group, subset_or_task)``, or ``None``."""
        for r in self.rows:
            if (r.split_or_group, r.subset_or_task) == (split_or_group, subset_or_task):
                return r
        return None


class LocalizationRow(MetricsModel):
    """A GRIT localization row (detection items; a score, not an accuracy).

    Attributes:
        group: ``class=<name>``, ``split=easy``, ``split=hard`` or ``overall``.
        n: (image, class) pairs scored.
        score: Mean GRIT localization score.
        ci_low: Lower bound of the 95% bootstrap interval (NaN when there is none).
        ci_high: Upper bound.
        ci_method: How the interval was computed.
    """

    group: str
    n: Count
    score: Num
    ci_low: Num = math.nan
    ci_high: Num = math.nan
    ci_method: str = "none"


class CalibrationBin(MetricsModel):
    """One reliability-diagram bin: confidence range, records, mean confidence, accuracy."""

    low: float
    high: float
    n: Count
    confidence: Num
    accuracy: Num


class CalibrationSection(MetricsModel):
    """The ``calibration`` section (records with per-option scores).

    Attributes:
        n: Records with scores.
        brier: Multi-class Brier score.
        ece: Expected calibration error over ``n_bins`` equal-width bins.
        n_bins: Number of bins.
        bins: The bins, low to high.
    """

    n: Count
    brier: Num
    ece: Num
    n_bins: Count
    bins: tuple[CalibrationBin, ...] = ()


class BaselineSection(MetricsModel):
    """One chance baseline (``random`` or ``frequent``) on the run's own items.

    Attributes:
        model: The baseline's model spec.
        seed: Its seed.
        n_skipped: Items without options or answer, left out.
        overall: Its overall row.
        by_task: Its rows per task.
        owner: Its owner rows.
        expected_accuracy: ``random`` only: the mean of 1 / (number of options).
        reference: ``frequent`` only: per task, the split and letter counts it used.
    """

    model: str = ""
    seed: int | None = None
    n_skipped: Count = 0
    overall: AccuracyRow
    by_task: tuple[AccuracyRow, ...] = ()
    owner: tuple[OwnerRow, ...] = ()
    expected_accuracy: Num | None = None
    reference: dict[str, Any] | None = None


class JudgeSection(MetricsModel):
    """The ``judge`` section: what the answer-extraction judge did (docs/metrics-schema.md)."""

    specs: list[str] = []
    asked: Count = 0
    answered: Count = 0
    none: Count = 0
    unreadable: Count = 0
    failed: Count = 0
    judge_free: AccuracyRow


class Metrics(MetricsModel):
    """A whole ``metrics.json`` (or :func:`~scopebench.scoring.compute_metrics`' dict), typed.

    Attributes:
        schema_version: ``METRICS_SCHEMA_VERSION`` of the writer (``None`` when absent).
        benchmark: The benchmark name.
        model: The model spec (present once the report has written the file).
        policy: ``wrong`` or ``exclude``.
        bootstrap: Options of every bootstrap interval (method, confidence, resamples, seed).
        intervals: Which interval each kind of row carries.
        overall: The headline row.
        by_task: Rows by task.
        by_subset: Rows by subset.
        by_split: Rows by split.
        by_metadata: Rows by item-metadata field (``modality``, ``stain``…).
        owner: The owners' aggregation, or ``None`` for benchmarks without one.
        localization: GRIT rows of detection items.
        calibration: Calibration of per-option scores, or ``None``.
        baselines: ``{"random": …, "frequent": …}`` (empty without item summaries).
        counts: ``{"records": N, "mcq": …, "detection": …}``.
        judge: The judge section, or ``None`` without a judge.
    """

    # Labels default (a hand-built or partial dict still reads); the numbers of every row do not.
    schema_version: int | None = None
    benchmark: str = ""
    model: str | None = None
    policy: str = "wrong"
    bootstrap: dict[str, Any] = {}
    intervals: dict[str, str] = {}
    overall: AccuracyRow
    by_task: tuple[AccuracyRow, ...] = ()
    by_subset: tuple[AccuracyRow, ...] = ()
    by_split: tuple[AccuracyRow, ...] = ()
    by_metadata: dict[str, tuple[AccuracyRow, ...]] = {}
    owner: OwnerTable | None = None
    localization: tuple[LocalizationRow, ...] = ()
    calibration: CalibrationSection | None = None
    baselines: dict[str, BaselineSection] = {}
    counts: dict[str, int] = {}
    judge: JudgeSection | None = None

    @property
    def groups(self) -> tuple[AccuracyRow, ...]:
        """Rows by task, subset, split, then each metadata field, in metrics.json order."""
        rows = [*self.by_task, *self.by_subset, *self.by_split]
        for field_rows in self.by_metadata.values():
            rows.extend(field_rows)
        return tuple(rows)

    @property
    def owner_rows(self) -> tuple[OwnerRow, ...]:
        """The owner rows (empty for a benchmark without an owner aggregation)."""
        return self.owner.rows if self.owner is not None else ()


class LeaderboardEntry(MetricsModel):
    """One entry of a comparison's leaderboard or baselines (``compare.json``).

    Attributes:
        model: The model spec (``random baseline``… for a baseline).
        source: ``this run``, or where a baseline was computed.
        run: The run directory (``None`` for a baseline).
        overall: The entry's overall row.
        by_task: Rows by task (runs only).
        by_subset: Rows by subset (runs only).
        owner: Owner rows.
        config: The run's data fingerprint, protocol, parser version and seed (runs only).
    """

    model: str = ""
    source: str = ""
    run: str | None = None
    overall: AccuracyRow
    by_task: tuple[AccuracyRow, ...] = ()
    by_subset: tuple[AccuracyRow, ...] = ()
    owner: tuple[OwnerRow, ...] = ()
    config: dict[str, Any] = {}

    def owner_by_column(self) -> dict[str, OwnerRow]:
        """Owner rows keyed ``"<split_or_group>/<subset_or_task>"`` (the leaderboard's columns)."""
        return {f"{r.split_or_group}/{r.subset_or_task}": r for r in self.owner}

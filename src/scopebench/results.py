"""Typed results of a run: what :func:`scopebench.evaluate` and :func:`scopebench.load_run` return.

Every number comes from the run's ``metrics.json`` (docs/metrics-schema.md), the same file
``scopebench run`` and ``scopebench report`` write, so a notebook and the CLI can never disagree;
``null`` there (an undefined accuracy, no interval) is ``nan`` here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from scopebench.errors import ScopebenchError
from scopebench.items import Record
from scopebench.report import json_safe
from scopebench.scoring import compute_metrics

if TYPE_CHECKING:  # pandas is a core dependency, imported only when a frame is asked for
    import pandas as pd

    from scopebench.store.rundir import RunData

__all__ = ["AccuracyRow", "LocalizationRow", "OwnerRow", "Results"]


def _num(value: Any) -> float:
    """A metrics.json number; ``null`` (undefined) is NaN."""
    return math.nan if value is None else float(value)


@dataclass(frozen=True, slots=True)
class AccuracyRow:
    """One accuracy row of ``metrics.json`` (docs/metrics-schema.md, "Accuracy row").

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
    """

    group: str
    n: int
    correct: int
    accuracy: float
    denominator: int
    ci_low: float
    ci_high: float
    ci_method: str
    policy: str
    unparsed: int = 0
    errors: int = 0
    missing_image: int = 0
    missing_response: int = 0

    @classmethod
    def from_dict(cls, row: Mapping[str, Any]) -> Self:
        """Build a row from its ``metrics.json`` dict (unknown keys are ignored)."""
        return cls(**_row_fields(cls, row))

    @property
    def interval(self) -> tuple[float, float]:
        """``(ci_low, ci_high)``."""
        return (self.ci_low, self.ci_high)


@dataclass(frozen=True, slots=True)
class OwnerRow(AccuracyRow):
    """A row of the benchmark owners' aggregation, keyed like their published table.

    Attributes:
        split_or_group: The published table's first key (μ-Bench ``coarse``, PathMMU ``test``…).
        subset_or_task: Its second key (``all``, ``PubMed``, ``NP``, ``overall``…).
        weighting: ``macro`` (μ-Bench: mean over tasks) or ``instance``.
    """

    split_or_group: str = ""
    subset_or_task: str = ""
    weighting: str = ""


@dataclass(frozen=True, slots=True)
class LocalizationRow:
    """A GRIT localization row of ``metrics.json`` (detection items; not an accuracy).

    Attributes:
        group: ``class=<name>``, ``split=easy``, ``split=hard`` or ``overall``.
        n: (image, class) pairs scored.
        score: Mean GRIT localization score.
        ci_low: Lower bound of the 95% bootstrap interval (NaN when there is none).
        ci_high: Upper bound.
        ci_method: How the interval was computed.
    """

    group: str
    n: int
    score: float
    ci_low: float
    ci_high: float
    ci_method: str

    @classmethod
    def from_dict(cls, row: Mapping[str, Any]) -> LocalizationRow:
        """Build a row from its ``metrics.json`` dict."""
        return cls(**_row_fields(cls, row))


def _row_fields(cls: type, row: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in fields(cls):
        if f.name not in row:
            continue
        value = row[f.name]
        if f.type == "float":
            value = _num(value)
        elif f.type == "int":
            value = int(value or 0)
        elif f.type == "str":
            value = "" if value is None else str(value)
        out[f.name] = value
    return out


@dataclass(frozen=True)
class Results:
    """A run's results: headline accuracy, group and owner rows, counts, records.

    Attributes:
        run_dir: The run directory (``run.json``, ``records.sqlite``, ``metrics.json``…).
        benchmark: The benchmark name (as given to the run).
        model: The model spec.
        overall: The headline row (every multiple-choice record; 95% Wilson interval).
        groups: Rows by task, subset, split and item metadata, in ``metrics.json`` order; the
            section of each is the prefix of its group (``task=``, ``subset=``…).
        owner: The benchmark owners' aggregation (empty for benchmarks without one).
        localization: GRIT rows of detection items (empty without detection items).
        counts: ``{"records": N, "mcq": …, "detection": …}``.
        config: ``run.json``: provenance (data fingerprint, seed, protocol, package versions…).
        metrics: ``metrics.json`` as read (for fields without a typed view: calibration,
            baselines, judge).
        records: Every stored record, ordered by item id.
    """

    run_dir: Path
    benchmark: str
    model: str
    overall: AccuracyRow
    groups: tuple[AccuracyRow, ...]
    owner: tuple[OwnerRow, ...]
    localization: tuple[LocalizationRow, ...]
    counts: Mapping[str, int]
    config: Mapping[str, Any]
    metrics: Mapping[str, Any]
    records: tuple[Record, ...]

    @classmethod
    def from_run(cls, run: RunData) -> Results:
        """Type a run read by :func:`scopebench.store.rundir.load_run`.

        A run whose ``metrics.json`` is missing (stopped before its end) gets its metrics computed
        in memory, as ``scopebench run`` would write them; nothing is written into the run.
        """
        metrics = run.metrics
        if metrics is None:
            metrics = json_safe(
                compute_metrics(
                    run.records,
                    benchmark=run.benchmark,
                    items=run.items,
                    seed=int(run.config.get("seed") or 0),
                    protocol=str(run.config.get("protocol") or "default"),
                )
            )
        assert metrics is not None
        groups = [*metrics.get("by_task", []), *metrics.get("by_subset", []), *metrics.get("by_split", [])]
        for rows in (metrics.get("by_metadata") or {}).values():
            groups.extend(rows)
        return cls(
            run_dir=run.path,
            benchmark=run.benchmark,
            model=run.model,
            overall=AccuracyRow.from_dict(metrics["overall"]),
            groups=tuple(AccuracyRow.from_dict(r) for r in groups),
            owner=tuple(OwnerRow.from_dict(r) for r in (metrics.get("owner") or {}).get("rows", [])),
            localization=tuple(LocalizationRow.from_dict(r) for r in metrics.get("localization") or []),
            counts={k: int(v) for k, v in (metrics.get("counts") or {}).items()},
            config=run.config,
            metrics=metrics,
            records=tuple(run.records),
        )

    @property
    def accuracy(self) -> float:
        """The headline accuracy (``overall.accuracy``)."""
        return self.overall.accuracy

    @property
    def interval(self) -> tuple[float, float]:
        """The headline 95% interval ``(low, high)``."""
        return self.overall.interval

    def group(self, label: str) -> AccuracyRow:
        """The group row labelled ``label`` (``"task=t1"``, ``"subset=PubMed"``…).

        Raises:
            ScopebenchError: When the run has no such group; the message lists the ones it has.
        """
        for row in self.groups:
            if row.group == label:
                return row
        raise ScopebenchError(
            f"no group {label!r} in this run; it has: {', '.join(r.group for r in self.groups)}"
        )

    def to_pandas(self) -> pd.DataFrame:
        """Every record as one row (the fields of :class:`~scopebench.items.Record`)."""
        import pandas as pd

        columns = [f.name for f in fields(Record)]
        return pd.DataFrame([r.to_dict() for r in self.records], columns=columns)

    def metrics_frame(self) -> pd.DataFrame:
        """The accuracy rows as one table.

        Columns: ``section`` (overall, task, subset, split, a metadata field, owner), then the
        :class:`AccuracyRow` fields, and the owner keys for owner rows.
        GRIT localization scores are not accuracies and are left out (see :attr:`localization`).
        """
        import pandas as pd

        rows: list[dict[str, Any]] = [{"section": "overall", **_as_dict(self.overall)}]
        rows += [{"section": r.group.partition("=")[0], **_as_dict(r)} for r in self.groups]
        rows += [{"section": "owner", **_as_dict(r)} for r in self.owner]
        return pd.DataFrame(rows)

    def __repr__(self) -> str:
        low, high = self.interval
        return (
            f"Results({self.benchmark} — {self.model}: {_pct(self.accuracy)} "
            f"[{_pct(low, sign=False)}, {_pct(high, sign=False)}], n={self.overall.n}, "
            f"run_dir={str(self.run_dir)!r})"
        )


def _as_dict(row: AccuracyRow) -> dict[str, Any]:
    return {f.name: getattr(row, f.name) for f in fields(row)}


def _pct(x: float, *, sign: bool = True) -> str:
    if math.isnan(x):
        return "n/a"
    return f"{100 * x:.1f}" + ("%" if sign else "")


def results_frame(results: Sequence[Results]) -> pd.DataFrame:
    """One row per run: model, benchmark, n, correct, accuracy and its interval."""
    import pandas as pd

    return pd.DataFrame(
        [
            {
                "model": r.model,
                "benchmark": r.benchmark,
                "n": r.overall.n,
                "correct": r.overall.correct,
                "accuracy": r.accuracy,
                "ci_low": r.overall.ci_low,
                "ci_high": r.overall.ci_high,
                "run_dir": str(r.run_dir),
            }
            for r in results
        ]
    )

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
from typing import TYPE_CHECKING, Any

from scopebench.errors import ScopebenchError
from scopebench.items import SAMPLE_COLUMNS, Record
from scopebench.report import json_safe
from scopebench.scoring import compute_metrics
from scopebench.scoring.schema import AccuracyRow, LocalizationRow, Metrics, OwnerRow

if TYPE_CHECKING:  # pandas is a core dependency, imported only when a frame is asked for
    import pandas as pd

    from scopebench.store.rundir import RunData

__all__ = ["AccuracyRow", "LocalizationRow", "Metrics", "OwnerRow", "Results"]


#: The columns of :meth:`Results.metrics_frame` after ``section``, in order (owner keys follow).
_FRAME_FIELDS = (
    "group", "n", "correct", "accuracy", "denominator", "ci_low", "ci_high", "ci_method", "policy",
    "unparsed", "errors", "missing_image", "missing_response",
)  # fmt: skip
_OWNER_FRAME_FIELDS = ("split_or_group", "subset_or_task", "weighting")


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
        metrics: ``metrics.json`` as read (a mapping, as in the file).
        records: Every stored record, ordered by item id.
        sections: ``metrics.json`` typed: every section (calibration, baselines, judge, the owner
            table with its description…) as a :class:`~scopebench.scoring.schema.Metrics`.
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
    sections: Metrics

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
        typed = Metrics.from_dict(metrics)
        return cls(
            run_dir=run.path,
            benchmark=run.benchmark,
            model=run.model,
            overall=typed.overall,
            groups=typed.groups,
            owner=typed.owner_rows,
            localization=typed.localization,
            counts=dict(typed.counts),
            config=run.config,
            metrics=metrics,
            records=tuple(run.records),
            sections=typed,
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
        """Every record as one row: the fields of :class:`~scopebench.items.Record`.

        What the model was shown (prompt, question, options, answer key, image ids) has columns of
        its own (:data:`~scopebench.items.SAMPLE_COLUMNS`), empty for runs stored without samples.
        """
        import pandas as pd

        columns = [f.name for f in fields(Record) if f.name != "sample"] + list(SAMPLE_COLUMNS)
        return pd.DataFrame([r.to_flat() for r in self.records], columns=columns)

    def metrics_frame(self) -> pd.DataFrame:
        """The accuracy rows as one table.

        Columns: ``section`` (overall, task, subset, split, a metadata field, owner), then the
        :class:`AccuracyRow` fields, and the owner keys for owner rows.
        GRIT localization scores are not accuracies and are left out (see :attr:`localization`).
        """
        import pandas as pd

        rows: list[dict[str, Any]] = [{"section": "overall", **_frame_row(self.overall)}]
        rows += [{"section": r.group.partition("=")[0], **_frame_row(r)} for r in self.groups]
        rows += [{"section": "owner", **_frame_row(r)} for r in self.owner]
        return pd.DataFrame(rows)

    def __repr__(self) -> str:
        low, high = self.interval
        return (
            f"Results({self.benchmark} — {self.model}: {_pct(self.accuracy)} "
            f"[{_pct(low, sign=False)}, {_pct(high, sign=False)}], n={self.overall.n}, "
            f"run_dir={str(self.run_dir)!r})"
        )


def _frame_row(row: AccuracyRow) -> dict[str, Any]:
    names = _FRAME_FIELDS + (_OWNER_FRAME_FIELDS if isinstance(row, OwnerRow) else ())
    return {name: getattr(row, name) for name in names}


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

"""The benchmark contract: a loader turns a data location into :class:`~scopebench.items.Item` s.

A loader never drops a record silently. Anything odd it meets (a missing image, a malformed
record, an answer that is not among the options) becomes a :class:`Problem` naming the file and the
record; the item is kept (marked in :attr:`Item.problems`) whenever it can still be scored, and
skipped only when it cannot be built at all — and then the problem says so.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from scopebench.errors import DataFormatError, DataNotFoundError
from scopebench.items import Item

if TYPE_CHECKING:
    from collections.abc import Mapping

    from scopebench.items import Record
    from scopebench.scoring.aggregate import OwnerRows

__all__ = ["Benchmark", "Labels", "LoadedBenchmark", "OwnerPrompt", "Problem", "fingerprint_files"]

Severity = Literal["error", "warning"]
#: How a prompt labels its options: ``letters`` (A, B…) or ``numbers`` (1, 2…).
Labels = Literal["letters", "numbers"]


@dataclass(frozen=True, slots=True)
class OwnerPrompt:
    """A benchmark's own published prompt for one item (its ``owner`` protocol).

    Attributes:
        text: The user message text, byte for byte as the owner's code builds it.
        system: The owner's system message, if it has one.
        labels: How the owner labels the options (the parser reads answers with the same labels).
    """

    text: str
    system: str | None = None
    labels: Labels = "letters"


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing found wrong in the data.

    Attributes:
        file: The data file (or image) concerned.
        record: Which record: its id, index or key, as the user would search for it.
        message: What is wrong, in words a user can act on.
        severity: ``error`` when the record could not be used as intended (skipped or unscorable),
            ``warning`` when it was loaded with a recorded caveat.
        kind: A short machine-readable category (``missing_image``, ``malformed``,
            ``answer_mismatch``, ``null_field``, …) used for counts.
    """

    file: str
    record: str
    message: str
    severity: Severity = "error"
    kind: str = "malformed"

    def __str__(self) -> str:
        return f"{self.severity}: {self.file} [{self.record}]: {self.message}"


@dataclass(slots=True)
class LoadedBenchmark:
    """What a loader returns: the items, every problem found, and what was read.

    Attributes:
        name: Benchmark name.
        data: The data location as given by the user.
        items: Every item, in a deterministic order.
        problems: Every problem found while loading.
        fingerprint: A hash of the data actually read (file contents or dataset fingerprints), so a
            run can tell whether it is looking at the same data as before.
    """

    name: str
    data: str
    items: list[Item]
    problems: list[Problem] = field(default_factory=list)
    fingerprint: str = ""

    def counts(self) -> dict[tuple[str, str, str], int]:
        """Item counts per (split, subset, task)."""
        c: Counter[tuple[str, str, str]] = Counter((it.split, it.subset or "-", it.task) for it in self.items)
        return dict(sorted(c.items()))


class Benchmark(ABC):
    """Base class of every registered benchmark loader.

    Subclasses set the class attributes (shown by ``scopebench benchmarks``) and implement
    :meth:`load`.
    """

    name: ClassVar[str]
    title: ClassVar[str]
    splits: ClassVar[tuple[str, ...]]
    tasks: ClassVar[tuple[str, ...]]
    #: The split used when the user names none.
    default_split: ClassVar[str | None] = None
    #: What data the loader needs, and where to get it (shown to users verbatim).
    data_help: ClassVar[str]

    # The owner protocol: everything below is optional; a benchmark without an owner protocol
    # runs under the shared ``default`` prompt and gets no ``owner`` section in its metrics.

    #: Text the model's answer starts with under the owner protocol (choice-logprob mode scores the
    #: option labels right after it: MicroVQA's ``The answer is (``, SPUR's ``<ANSWER>``).
    answer_prefix: ClassVar[str] = ""
    #: The ``benchmark`` column of this benchmark's rows in the shipped published-results table
    #: (``None``: no published numbers; a plugin re-packaging a public benchmark may name its key).
    published_key: ClassVar[str | None] = None
    #: What :meth:`owner_rows` computes, shown as ``metrics["owner"]["description"]``.
    owner_description: ClassVar[str] = ""
    #: Whether :meth:`owner_rows` has macro-average rows, whose interval under ``--protocol owner``
    #: is the owner's basic bootstrap (μ-Bench; recorded in ``metrics["intervals"]``).
    owner_macro_rows: ClassVar[bool] = False

    def owner_prompt(self, item: Item) -> OwnerPrompt | None:
        """The benchmark owner's own prompt for ``item`` (``--protocol owner``).

        Returns:
            The prompt, or ``None`` when the benchmark has no owner protocol (the default).
        """
        return None

    def has_owner_protocol(self) -> bool:
        """Whether :meth:`owner_prompt` is implemented (``--protocol owner`` is then allowed)."""
        return type(self).owner_prompt is not Benchmark.owner_prompt

    def owner_rows(
        self, records: Sequence[Record], *, items: Mapping[str, Mapping[str, Any]], rows: OwnerRows
    ) -> list[dict[str, Any]] | None:
        """The benchmark owners' headline aggregation of its multiple-choice records.

        Args:
            records: The run's multiple-choice records.
            items: Item summaries by id (metadata for views such as μ-Bench's pathology rows).
            rows: Row builders bound to the run's policy, seed, resamples and protocol
                (:class:`~scopebench.scoring.aggregate.OwnerRows`: ``instance``, ``macro``,
                ``per_task``), so the benchmark needs no import of the scoring layer.

        Returns:
            Rows with ``split_or_group`` and ``subset_or_task`` (the keys of the published table),
            or ``None`` when the benchmark has no owner aggregation (the default).
        """
        return None

    @abstractmethod
    def load(self, data: str | Path, split: str | None = None) -> LoadedBenchmark:
        """Load the benchmark.

        Args:
            data: Where the data is (a folder, a file, or a dataset id; each loader documents which).
            split: Keep only this split; ``None`` keeps the default split if the benchmark has
                one, else every split.

        Returns:
            The items and problems.

        Raises:
            DataNotFoundError: When ``data`` does not exist.
            DataFormatError: When the data cannot be read as this benchmark's format at all.
        """

    # Shared helpers -----------------------------------------------------------------------------

    def check_split(self, split: str | None) -> str | None:
        """Resolve the split to keep, refusing names the benchmark does not have."""
        chosen = split if split is not None else self.default_split
        if chosen is not None and chosen not in self.splits and self.splits:
            raise DataFormatError(
                f"benchmark {self.name!r} has no split {chosen!r}; choose one of: {', '.join(self.splits)}"
            )
        return chosen

    @staticmethod
    def require_path(data: str | Path, what: str) -> Path:
        """Return ``data`` as an existing path or raise a :class:`DataNotFoundError` saying so."""
        path = Path(data).expanduser()
        if not path.exists():
            raise DataNotFoundError(f"{what} not found: {path}")
        return path


def fingerprint_files(paths: Iterable[Path], extra: Sequence[str] = ()) -> str:
    """SHA-256 over the bytes of the given files (in the given order) and extra strings.

    Images are deliberately not hashed here (too slow for 17k files); their names are part of the
    records that are hashed, and a run records image load errors per item.
    """
    h = hashlib.sha256()
    for p in paths:
        h.update(str(p.name).encode())
        with open(p, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    for s in extra:
        h.update(s.encode())
    return h.hexdigest()[:16]

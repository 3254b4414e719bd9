"""MicroVQA (``jmhb/microvqa``): research-level microscopy questions in three tasks.

Hugging Face data (schema in ``tests/fixtures/microvqa/SCHEMA.md``): one row per question with
``question``, ``choices``, a 0-based ``correct_index``, ``images_list`` (1–8 images), ``task``
(1 expert visual understanding, 2 hypothesis generation, 3 experiment proposal; ``task_str``
names it), the keys ``key_question`` / ``key_image`` / ``key_person`` and context fields. An item
is ``microvqa/<key_question>`` with task ``"1"``, ``"2"`` or ``"3"``, one lazy image reference per
image (``microvqa:<key_image>:<n>``: questions on the same image set share them), and every other
column in metadata. ``correct_answer`` is checked against ``choices[correct_index]``; a mismatch is
a warning and ``correct_index`` is kept, as the official evaluation scores with it.

The split is ``test`` (the card's older revision called it ``train``); when the data hold only the
other name, it is used with a ``split_mismatch`` warning.

RefineBot CSV (``refinebot/demo_dataset.csv`` in ``jmhb0/microvqa``): ``key_question, key_image,
original_question, question, choices, correct_index, use_case``, where ``choices`` is a Python list
repr (read with :func:`ast.literal_eval`; JSON cannot read single-quoted strings) and the question
starts with a ``"Question:"`` line, which is dropped. The format has no images: items have none and
are marked ``missing_image`` (image models record them as such; ``--no-image`` runs them), with one
warning per file. ``use_case`` becomes the task when it is 1, 2 or 3, else the task is
``"unspecified"``.
"""

from __future__ import annotations

import ast
import csv
import logging
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scopebench.benchmarks._hf import (
    HFData,
    ImageColumn,
    LazyImage,
    gc_paused,
    open_hf_data,
    read_text_columns,
    source_problems,
)
from scopebench.benchmarks._options import normalize_text
from scopebench.benchmarks.base import (
    Benchmark,
    LoadedBenchmark,
    OwnerPrompt,
    Problem,
    Severity,
    fingerprint_files,
)
from scopebench.benchmarks.registry import register_benchmark
from scopebench.errors import DataFormatError
from scopebench.items import LETTERS, ImageRef, Item, Record

if TYPE_CHECKING:
    from scopebench.scoring.aggregate import OwnerRows

__all__ = ["HUB_ID", "MICROVQA_TASKS", "TASK_NAMES", "UNSPECIFIED_TASK", "MicroVQABenchmark"]

#: MicroVQA's tasks (the owner aggregation's rows).
MICROVQA_TASKS: tuple[str, ...] = ("1", "2", "3")

logger = logging.getLogger(__name__)

#: The Hugging Face dataset id of MicroVQA.
HUB_ID = "jmhb/microvqa"
#: Task number → what it tests (the ``task_str`` of the data says the same).
TASK_NAMES: dict[str, str] = {
    "1": "expert visual understanding",
    "2": "hypothesis generation",
    "3": "experiment proposal",
}
#: The task of a question whose data do not say which task it belongs to.
UNSPECIFIED_TASK = "unspecified"

_IMAGES = "images_list"
# Columns turned into Item fields; every other column goes to metadata.
_CORE = ("question", "choices", "correct_index", "task")
_OTHER_SPLIT = {"test": ("train",), "train": ("test",)}
_QUESTION_LABEL = re.compile(r"^\s*question\s*:\s*", re.IGNORECASE)
_CSV_REQUIRED = ("question", "choices", "correct_index")


@register_benchmark("microvqa")
class MicroVQABenchmark(Benchmark):
    """Loader for MicroVQA from the Hub, ``save_to_disk``, parquet/arrow files, or a RefineBot CSV."""

    title = "MicroVQA — expert visual understanding, hypothesis generation, experiment proposal"
    splits = ("test", "train")
    tasks = ("1", "2", "3")
    default_split = "test"
    data_help = (
        f"The Hugging Face dataset {HUB_ID} (1,042 questions, split test — called train in older "
        "revisions; CC-BY-SA-4.0). Pass the id itself (needs internet), a folder written by "
        f"datasets.load_dataset({HUB_ID!r}).save_to_disk(DIR), or its parquet files (the folder "
        "holding data/test-0000N-of-0000M.parquet, e.g. from `huggingface-cli download jmhb/microvqa "
        "--repo-type dataset --local-dir DIR`). A RefineBot .csv (refinebot/demo_dataset.csv of "
        "https://github.com/jmhb0/microvqa) loads too, without images."
    )

    # Owner protocol (jmhb0/microvqa eval code) ----------------------------------------------------

    published_key = "microvqa"
    answer_prefix = "The answer is ("
    owner_description = "MicroVQA: accuracy per task (1, 2, 3) and instance-weighted overall"

    def owner_prompt(self, item: Item) -> OwnerPrompt:
        """MicroVQA's MMLU-Pro style prompt for ``item``, byte for byte (options numbered)."""
        # jmhb0/microvqa eval/eval.py PROMPT_TEMPLATE (MMLU-Pro style), byte for byte: the template
        # ends "{{CHOICES}}\n" and every choice line "  (n): text\n" ends in a newline, so the prompt
        # ends in two newlines. The question goes in as is (no context block).
        opts = "".join(f"  ({i + 1}): {c}\n" for i, c in enumerate(item.choices))
        text = (
            "The following is a multiple choice question (with answers). \n"
            'Think step by step and then output the answer in the format of "The answer is (X)" at the end.'
            f"\n\n{item.question}\n\nOptions:\n{opts}\n"
        )
        return OwnerPrompt(text, labels="numbers")

    def owner_rows(
        self, records: Sequence[Record], *, items: Mapping[str, Mapping[str, Any]], rows: OwnerRows
    ) -> list[dict[str, Any]]:
        """Accuracy per task 1, 2, 3 and instance-weighted ``overall``."""
        return rows.per_task(records, MICROVQA_TASKS)

    def load(self, data: str | Path, split: str | None = None) -> LoadedBenchmark:
        """Load MicroVQA questions, images left lazy.

        Args:
            data: A Hub dataset id, a ``save_to_disk`` folder, parquet/arrow files, or a RefineBot
                ``.csv``.
            split: ``test`` (default) or ``train``; either is used when the data hold only the other.

        Returns:
            One item per question, in data order, with every problem found.

        Raises:
            DataNotFoundError: When the data cannot be found (or the Hub reached).
            DataFormatError: When the data lack the question columns or cannot be read.
        """
        chosen = self.check_split(split) or "test"
        if not str(data).strip():
            data = HUB_ID  # no --data: the official `load_dataset("jmhb/microvqa")`
        path = Path(str(data)).expanduser()
        if path.suffix.lower() == ".csv":
            return self._load_csv(self.require_path(data, "MicroVQA CSV file"), str(data), chosen)
        src = open_hf_data(
            data,
            chosen,
            what="MicroVQA data",
            hub_help=self.data_help,
            fallbacks=_OTHER_SPLIT.get(chosen, ()),
        )
        problems = source_problems(src, chosen, why=" (MicroVQA renamed its split train to test)")
        items = _HFRows(src, chosen, problems).build_all()
        logger.info("MicroVQA: %d items from %d rows of %s", len(items), len(src.dataset), src.source)
        return LoadedBenchmark(
            name=self.name, data=str(data), items=items, problems=problems, fingerprint=src.fingerprint
        )

    def _load_csv(self, path: Path, data: str, split: str) -> LoadedBenchmark:
        problems: list[Problem] = []
        rows = _read_csv(path)
        problems.append(
            Problem(
                str(path),
                "-",
                "the RefineBot CSV format has no images: its items have none and are counted as "
                f"missing_image (run with --no-image, or use the Hugging Face data {HUB_ID} for images)",
                severity="warning",
                kind="missing_image",
            )
        )
        builder = _Checker(str(path), problems)
        items: list[Item] = []
        unspecified = 0
        for line, row in rows:
            record = builder.record_id(row.get("key_question"), line, where=f"line {line}")
            if record is None:
                continue
            item_key, where = record
            question = _QUESTION_LABEL.sub("", row.get("question") or "", count=1).strip()
            choices = builder.choices(_literal_list(row.get("choices")), where)
            if choices is None:
                continue
            if not question:
                builder.problem(where, "the row has no question text; skipped")
                continue
            answer = builder.answer(_int(row.get("correct_index")), row.get("correct_index"), choices, where)
            if answer is None:
                continue
            use_case = (row.get("use_case") or "").strip()
            task = use_case if use_case in TASK_NAMES else UNSPECIFIED_TASK
            unspecified += task == UNSPECIFIED_TASK
            metadata: dict[str, Any] = {
                "key_question": _int(row.get("key_question")),
                "key_image": _int(row.get("key_image")),
                "original_question": row.get("original_question"),
                "use_case": use_case or None,
                "source_format": "refinebot_csv",
            }
            extra = {
                k: v for k, v in row.items() if k not in metadata and k not in (*_CSV_REQUIRED, "use_case")
            }
            metadata.update(extra)
            items.append(
                Item(
                    id=f"microvqa/{item_key}",
                    benchmark="microvqa",
                    split=split,
                    task=task,
                    question=question,
                    choices=choices,
                    answer_index=answer,
                    metadata=metadata,
                    problems=("missing_image",),
                )
            )
        if unspecified:
            problems.append(
                Problem(
                    str(path),
                    "use_case",
                    f"{unspecified} rows have no use_case of 1, 2 or 3; their task is {UNSPECIFIED_TASK!r}",
                    severity="warning",
                    kind="null_field",
                )
            )
        return LoadedBenchmark(
            name=self.name, data=data, items=items, problems=problems, fingerprint=fingerprint_files([path])
        )


# --- shared checks --------------------------------------------------------------------------------


def _int(value: Any) -> int | None:
    """An integer cell (int, integral float or digit string), else ``None``."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"\s*[+-]?\d+\s*", value):
        return int(value)
    return None


def _literal_list(text: str | None) -> Any:
    """A Python list repr as a list (``None`` when it is not one)."""
    if not text:
        return None
    try:
        value = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, (list, tuple)) else None


class _Checker:
    """Validation shared by the HF and CSV paths; records problems against one data source."""

    def __init__(self, source: str, problems: list[Problem]) -> None:
        self.source = source
        self.problems = problems
        self.seen: set[str] = set()

    def problem(
        self, record: str, message: str, *, severity: Severity = "error", kind: str = "malformed"
    ) -> None:
        """Record one problem."""
        self.problems.append(Problem(self.source, record, message, severity=severity, kind=kind))

    def record_id(self, key: Any, position: int, *, where: str) -> tuple[str, str] | None:
        """``(item key, record name)``; ``None`` (after an error) when the key repeats."""
        number = _int(key)
        if number is None:
            item_key = f"row-{position}"
            self.problem(
                where,
                f"key_question {key!r} is not an integer; the item is named {item_key!r}",
                severity="warning",
                kind="null_field",
            )
        else:
            item_key = str(number)
        record = f"key_question {item_key}" if number is not None else where
        if item_key in self.seen:
            self.problem(
                record, "key_question repeats an earlier row; this row was skipped", kind="duplicate"
            )
            return None
        self.seen.add(item_key)
        return item_key, record

    def choices(self, value: Any, record: str) -> tuple[str, ...] | None:
        """The choices as stripped texts, or ``None`` after recording why the row is skipped."""
        if not isinstance(value, (list, tuple)) or not all(isinstance(c, str) and c.strip() for c in value):
            self.problem(record, "choices must be a list of non-empty texts; skipped")
            return None
        if not 2 <= len(value) <= len(LETTERS):
            self.problem(record, f"the row has {len(value)} choices; 2–{len(LETTERS)} are needed; skipped")
            return None
        return tuple(c.strip() for c in value)

    def answer(self, index: int | None, raw: Any, choices: tuple[str, ...], record: str) -> int | None:
        """The 0-based answer index, or ``None`` after recording why the row is skipped."""
        if index is None or not 0 <= index < len(choices):
            self.problem(
                record,
                f"correct_index {raw!r} is not a choice index (0–{len(choices) - 1}); "
                "the question cannot be scored and was skipped",
                kind="answer_mismatch",
            )
            return None
        return index


def _read_csv(path: Path) -> list[tuple[int, dict[str, str]]]:
    """``(line number, row)`` pairs of a RefineBot CSV (quoted fields may span lines)."""
    try:
        with open(path, encoding="utf-8-sig", newline="") as fh:
            reader = csv.DictReader(fh)
            header = reader.fieldnames or []
            missing = [c for c in _CSV_REQUIRED if c not in header]
            if missing:
                raise DataFormatError(
                    f"{path} is not a MicroVQA RefineBot CSV: it lacks the column(s) {', '.join(missing)} "
                    f"(header: {', '.join(header) or 'empty'})"
                )
            out = []
            for row in reader:
                out.append((reader.line_num, {k: v for k, v in row.items() if k is not None}))
            return out
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise DataFormatError(f"cannot read {path} as CSV: {exc}") from exc


# --- Hugging Face rows ----------------------------------------------------------------------------


class _HFRows:
    """Turns MicroVQA dataset rows into items."""

    def __init__(self, src: HFData, split: str, problems: list[Problem]) -> None:
        self.src = src
        self.split = split
        self.check = _Checker(src.source, problems)
        columns = list(src.dataset.column_names)
        missing = [c for c in ("question", "choices", "correct_index") if c not in columns]
        if missing:
            raise DataFormatError(
                f"{src.source} is not MicroVQA data: it lacks the column(s) {', '.join(missing)} "
                f"(columns: {', '.join(columns)}); pass {HUB_ID} or a copy of it"
            )
        self.text_columns = [c for c in columns if c != _IMAGES]
        self.images = ImageColumn(src.dataset, _IMAGES) if _IMAGES in columns else None
        if self.images is None:
            self.check.problem(
                "-",
                f"the data have no {_IMAGES!r} column: items have no images and are counted as missing_image",
                severity="warning",
                kind="missing_image",
            )

    def build_all(self) -> list[Item]:
        """Every row's item, in data order."""
        rows = read_text_columns(self.src.dataset, self.text_columns)
        counts: list[int | None] = self.images.list_lengths() if self.images is not None else [0] * len(rows)
        shared = self._shareable_keys(rows, counts)
        items: list[Item] = []
        with gc_paused():
            for i, row in enumerate(rows):
                item = self.build_row(i, row, counts[i] or 0, shared)
                if item is not None:
                    items.append(item)
        return items

    @staticmethod
    def _shareable_keys(rows: list[dict[str, Any]], counts: list[int | None]) -> set[int]:
        """``key_image`` values whose rows all have the same number of images.

        Image references of one ``key_image`` are shared across its questions (each image is then
        decoded once); a key whose rows disagree cannot name one image set, so its rows get
        per-question references instead.
        """
        sizes: dict[int, set[int | None]] = {}
        for row, n in zip(rows, counts, strict=True):
            key = _int(row.get("key_image"))
            if key is not None:
                sizes.setdefault(key, set()).add(n)
        return {k for k, v in sizes.items() if len(v) == 1}

    def build_row(self, i: int, row: Mapping[str, Any], n_images: int, shared: set[int]) -> Item | None:
        """Row ``i``'s item, or ``None`` after recording why it cannot be built."""
        check = self.check
        record = check.record_id(row.get("key_question"), i, where=f"row {i}")
        if record is None:
            return None
        item_key, where = record
        question = row.get("question")
        if not isinstance(question, str) or not question.strip():
            check.problem(where, "the row has no question text; skipped")
            return None
        choices = check.choices(row.get("choices"), where)
        if choices is None:
            return None
        answer = check.answer(_int(row.get("correct_index")), row.get("correct_index"), choices, where)
        if answer is None:
            return None
        task_number = _int(row.get("task"))
        task = str(task_number) if task_number is not None else UNSPECIFIED_TASK
        if task_number is None:
            check.problem(
                where,
                f"task is {row.get('task')!r}; the item's task is {UNSPECIFIED_TASK!r}",
                severity="warning",
                kind="null_field",
            )
        correct = row.get("correct_answer")
        if isinstance(correct, str) and normalize_text(correct) != normalize_text(choices[answer]):
            check.problem(
                where,
                f"correct_answer {correct!r} differs from choices[correct_index={answer}] "
                f"{choices[answer]!r}; correct_index is used",
                severity="warning",
                kind="answer_mismatch",
            )
        metadata = {k: v for k, v in row.items() if k not in _CORE}
        metadata["n_images"] = n_images
        images: tuple[ImageRef, ...] = ()
        flags: tuple[str, ...] = ()
        if self.images is None:
            flags = ("missing_image",)
        elif n_images == 0:
            flags = ("missing_image",)
            check.problem(
                where,
                "images_list is empty; the item is kept and counted as missing_image",
                severity="warning",
                kind="missing_image",
            )
        else:
            key_image = _int(row.get("key_image"))
            prefix = f"microvqa:{key_image}" if key_image in shared else f"microvqa:q{item_key}"
            images = tuple(
                ImageRef(key=f"{prefix}:{n}", loader=LazyImage(self.images, i, n, what=f"{prefix}:{n}"))
                for n in range(n_images)
            )
        return Item(
            id=f"microvqa/{item_key}",
            benchmark="microvqa",
            split=self.split,
            task=task,
            question=question.strip(),
            choices=choices,
            answer_index=answer,
            images=images,
            metadata=metadata,
            problems=flags,
        )

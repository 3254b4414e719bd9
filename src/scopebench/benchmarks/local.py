"""A user's own benchmark from one JSONL, JSON, CSV or Parquet file (the ``local`` format).

One row per item. ``question`` is required; multiple-choice rows need ``choices`` and ``answer``;
detection rows have ``boxes`` and no choices. Images are paths relative to the data file's folder.
Every other column is kept in :attr:`Item.metadata`. The full description, with an example, is in
``docs/local-format.md``.

:class:`LocalBenchmark` is meant to be reused: :meth:`LocalBenchmark.load_file` takes the benchmark
name that goes into item ids, so another registered benchmark (``demo``) can load files in this
format under its own name.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any

from scopebench.benchmarks._hf import is_hub_id
from scopebench.benchmarks._options import describe_cell, resolve_answer
from scopebench.benchmarks.base import Benchmark, LoadedBenchmark, Problem, Severity, fingerprint_files
from scopebench.benchmarks.hf import DatasetSpec, load_dataset_items
from scopebench.benchmarks.registry import register_benchmark
from scopebench.errors import DataFormatError, DataNotFoundError, UnsafePathError
from scopebench.items import LETTERS, Box, ImageRef, Item, ItemKind, safe_join

__all__ = [
    "DATA_FILE_NAMES",
    "ITEM_COLUMNS",
    "SUFFIXES",
    "LocalBenchmark",
    "find_data_file",
    "resolve_answer",
]

logger = logging.getLogger(__name__)

#: File names looked for when ``--data`` is a folder.
DATA_FILE_NAMES: tuple[str, ...] = ("data.jsonl", "data.csv", "data.parquet", "data.json")
#: Accepted file suffixes and the reader each one uses.
SUFFIXES: dict[str, str] = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "json",
    ".csv": "csv",
    ".parquet": "parquet",
}

#: Columns of the local format that become Item fields; every other column goes to the item's
#: metadata (writers of the format must keep metadata keys out of this set).
ITEM_COLUMNS = frozenset(
    {
        "id",
        "question",
        "choices",
        "answer",
        "image",
        "images",
        "task",
        "subset",
        "split",
        "context",
        "captions",
        "boxes",
    }
)
_LETTER_COLUMN = re.compile(r"^[A-Z]$")


def find_data_file(path: Path) -> Path:
    """Return the data file ``path`` names: the file itself, or the one ``data.*`` file in a folder.

    Raises:
        DataNotFoundError: When ``path`` does not exist or the folder has no data file.
        DataFormatError: When the folder has several data files, or the file's type is unknown.
    """
    if not path.exists():
        raise DataNotFoundError(f"local benchmark data not found: {path}")
    if path.is_dir():
        present = [path / name for name in DATA_FILE_NAMES if (path / name).is_file()]
        if not present:
            raise DataNotFoundError(
                f"no data file in {path}; put your items in one of {', '.join(DATA_FILE_NAMES)} "
                "(see docs/local-format.md) or point --data at the file itself"
            )
        if len(present) > 1:
            raise DataFormatError(
                f"{path} holds several data files ({', '.join(p.name for p in present)}); "
                "keep one, or point --data at the file to use"
            )
        return present[0]
    if path.suffix.lower() not in SUFFIXES:
        raise DataFormatError(
            f"{path.name}: unknown data file type {path.suffix!r}; use one of {', '.join(sorted(SUFFIXES))}"
        )
    return path


@dataclass(slots=True)
class _Row:
    """One raw row: its 0-based index, where to find it (for messages) and its non-null cells.

    ``null_id`` says the row has an ``id`` cell that is null or empty (JSON ``null``, an empty CSV
    cell), which the cleaned ``values`` no longer show.
    """

    index: int
    where: str
    values: dict[str, Any]
    null_id: bool = False


def _row(index: int, where: str, raw: Mapping[Any, Any]) -> _Row:
    """A :class:`_Row` of the raw cells ``raw``."""
    values = _clean_cells(raw)
    return _Row(index, where, values, null_id="id" in raw and "id" not in values)


@register_benchmark("local")
class LocalBenchmark(Benchmark):
    """Your own benchmark from a JSONL/JSON/CSV/Parquet file (see ``docs/local-format.md``)."""

    title = "Your own benchmark: one JSONL, JSON, CSV or Parquet file of questions, choices and images"
    splits = ()  # any split name a row gives is accepted
    tasks = ()
    default_split = None
    data_help = (
        "A .jsonl, .json (a list of objects), .csv or .parquet file with one row per item, or a folder "
        "holding exactly one data.jsonl / data.csv / data.parquet / data.json. Columns: question "
        "(required); choices and answer (multiple choice: answer as 0-based index, letter or the "
        "choice's text); image or images (paths relative to the file's folder); optional id, task, "
        "subset, split, context, captions, boxes (detection); other columns are kept as metadata. "
        "See docs/local-format.md."
    )

    def load(self, data: str | Path, split: str | None = None) -> LoadedBenchmark:
        """Load the file (or the folder's one data file) under this benchmark's name.

        Args:
            data: A data file or a folder holding one ``data.*`` file.
            split: Keep only rows of this split; ``None`` keeps every row.

        Returns:
            The items in file order and every problem found.

        Raises:
            DataNotFoundError: When the path or the folder's data file does not exist.
            DataFormatError: When the file cannot be read, or has no row (of ``split``).
        """
        path = Path(data).expanduser()
        if _is_hf_dataset(str(data), path):
            # The local format's column names are the mapping; `--bench hf` takes any other.
            spec = DatasetSpec(dataset=str(data), question="question", options="choices", id=None)
            try:
                return load_dataset_items(spec, self.name, split)
            except DataNotFoundError as exc:
                if path.exists():
                    raise
                # `my-bench/data` is also a mistyped folder: say that first.
                raise DataNotFoundError(
                    f"local benchmark data not found: {path} is no file or folder; read as a Hugging "
                    f"Face dataset id instead: {exc}"
                ) from exc
        return self.load_file(path, self.name, split)

    def load_file(self, path: Path, benchmark_name: str, split: str | None) -> LoadedBenchmark:
        """Load a file in the local format under any benchmark name.

        Args:
            path: A data file, or a folder holding exactly one ``data.*`` file.
            benchmark_name: Goes into :attr:`Item.benchmark` and the item ids (``"<name>/<id>"``).
            split: Keep only rows of this split; ``None`` keeps every row.

        Returns:
            The items in file order and every problem found.

        Raises:
            DataNotFoundError: When the path or the folder's data file does not exist.
            DataFormatError: When the file cannot be read, or has no row (of ``split``).
        """
        file = find_data_file(path)
        problems: list[Problem] = []
        rows, letter_columns = _read_rows(file, problems)
        if not rows and not problems:
            raise DataFormatError(f"{file} has no rows; add one row per item (see docs/local-format.md)")
        builder = _RowBuilder(file, benchmark_name, letter_columns, problems)
        items: list[Item] = []
        splits_seen: set[str] = set()
        for row in rows:
            row_split = _text(row.values.get("split")) or "test"
            splits_seen.add(row_split)
            if split is not None and row_split != split:
                continue
            item = builder.build(row, row_split)
            if item is not None:
                items.append(item)
        if split is not None and split not in splits_seen and rows:
            raise DataFormatError(
                f"{file} has no rows of split {split!r}; its splits are: {', '.join(sorted(splits_seen))}"
            )
        builder.report_binary_columns()
        missing = sum(1 for it in items if "missing_image" in it.problems)
        if missing:
            logger.warning("%s: %d of %d items have a missing image file", file.name, missing, len(items))
        return LoadedBenchmark(
            name=benchmark_name,
            data=str(path),
            items=items,
            problems=problems,
            fingerprint=fingerprint_files([file], extra=[f"split={split}"]),
        )


# Reading --------------------------------------------------------------------------------------


def _is_hf_dataset(text: str, path: Path) -> bool:
    """Whether ``--data`` is a Hub id or a folder written by ``save_to_disk`` (read as a dataset)."""
    if path.is_dir():
        return (path / "state.json").is_file() or (path / "dataset_dict.json").is_file()
    # A missing `bench/items.jsonl` is a missing file (said so), not a Hub id to download.
    return is_hub_id(text) and path.suffix.lower() not in SUFFIXES


def _read_rows(file: Path, problems: list[Problem]) -> tuple[list[_Row], tuple[str, ...]]:
    """Read every row of ``file``; also return CSV/Parquet choice columns ``A``, ``B``, … in order."""
    kind = SUFFIXES[file.suffix.lower()]
    if kind == "jsonl":
        return list(_read_jsonl(file, problems)), ()
    if kind == "json":
        return _read_json(file, problems), ()
    return _read_table(file, kind)


def _read_jsonl(file: Path, problems: list[Problem]) -> Iterator[_Row]:
    try:
        with open(file, encoding="utf-8-sig") as fh:
            lines = fh.read().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise DataFormatError(f"cannot read {file}: {exc}; save it as UTF-8 JSON Lines") from exc
    index = 0
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue  # blank lines are no records (trailing newlines are common)
        where = f"line {lineno}"
        # Blank lines aside, every line takes an index, so fixing one bad line renumbers nothing.
        row_index, index = index, index + 1
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(
                Problem(str(file), where, f"not valid JSON ({exc.msg}); line skipped", kind="malformed")
            )
            continue
        if not isinstance(value, dict):
            problems.append(
                Problem(str(file), where, "line is not a JSON object ({...}); line skipped", kind="malformed")
            )
            continue
        yield _row(row_index, where, value)


def _read_json(file: Path, problems: list[Problem]) -> list[_Row]:
    try:
        with open(file, encoding="utf-8-sig") as fh:
            raw = json.load(fh)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataFormatError(f"cannot read {file} as JSON: {exc}") from exc
    if not isinstance(raw, list):
        raise DataFormatError(f"{file} must hold a JSON list of objects, one per item (or use JSON Lines)")
    rows = []
    for i, value in enumerate(raw):
        if not isinstance(value, dict):
            problems.append(
                Problem(str(file), f"row {i}", "element is not a JSON object; skipped", kind="malformed")
            )
            continue
        rows.append(_row(i, f"row {i}", value))
    return rows


def _read_table(file: Path, kind: str) -> tuple[list[_Row], tuple[str, ...]]:
    import pandas as pd  # imported here so JSONL users never pay for pandas

    try:
        if kind == "csv":
            # Every cell as text: CSV has no types, and guessing would turn id "007" into 7.
            frame = pd.read_csv(file, dtype=str, keep_default_na=False, na_values=[""], encoding="utf-8-sig")
        else:
            frame = pd.read_parquet(file)
    except pd.errors.EmptyDataError as exc:
        raise DataFormatError(f"{file} is empty; add a header row and one row per item") from exc
    except Exception as exc:  # pandas/pyarrow raise many types for unreadable files; keep the reason
        raise DataFormatError(f"cannot read {file} as {kind.upper()}: {exc}") from exc
    columns = [str(c) for c in frame.columns]
    if "question" not in columns:
        raise DataFormatError(
            f"{file} has no 'question' column (columns found: {', '.join(columns) or 'none'}); "
            "see docs/local-format.md"
        )
    letters = tuple(c for c in LETTERS if c in columns)
    # Only a run A, B, C… counts as choice columns (a lone column "X" is ordinary metadata).
    letters = tuple(c for i, c in enumerate(letters) if c == LETTERS[i])
    frame.columns = columns
    rows = [_row(i, f"row {i}", rec) for i, rec in enumerate(frame.to_dict(orient="records"))]
    return rows, letters


def _plain(value: Any) -> Any:
    """Convert pandas/numpy/pyarrow values to plain JSON-safe Python (NaN → ``None``)."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return None if math.isnan(value) else value
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    tolist = getattr(value, "tolist", None)  # numpy arrays and scalars
    if callable(tolist):
        return _plain(tolist())
    isoformat = getattr(value, "isoformat", None)  # pandas Timestamp
    if callable(isoformat):
        return str(isoformat())
    try:
        import pandas as pd

        if pd.isna(value):
            return None
    except (TypeError, ValueError):
        pass
    return str(value)


def _clean_cells(values: Mapping[Any, Any]) -> dict[str, Any]:
    """Plain values with null cells (JSON null, pandas NaN) left out."""
    out = {}
    for key, value in values.items():
        plain = _plain(value)
        if plain is not None:
            out[str(key)] = plain
    return out


def _text(value: Any) -> str | None:
    """A cell as stripped text (integral numbers without ".0"); ``None`` for empty cells."""
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = str(value).strip()
    return text or None


def _embedded_bytes(cell: Any) -> bytes | None:
    """The encoded image of an embedded image cell (bytes, or ``{"bytes": …}``), else ``None``."""
    if isinstance(cell, (bytes, bytearray)) and cell:
        return bytes(cell)
    if isinstance(cell, Mapping) and isinstance(cell.get("bytes"), (bytes, bytearray)) and cell["bytes"]:
        return bytes(cell["bytes"])
    return None


def _json_type(value: Any) -> str:
    """The JSON type name of a plain value, for messages."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, list):
        return "list"
    return "object" if isinstance(value, dict) else type(value).__name__


def _list_cell(value: Any, *, semicolons: bool = False) -> list[Any] | None:
    """A list cell: a list, or text holding a JSON array (or ``a;b`` when ``semicolons``).

    Returns ``None`` when the value is not a list in any accepted form.
    """
    if isinstance(value, list):
        return value
    if not isinstance(value, str):
        return None
    text = value.strip()
    if text.startswith("["):
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError:
            return None
        return parsed if isinstance(parsed, list) else None
    if semicolons:
        return [part.strip() for part in text.split(";") if part.strip()]
    return None


# Building items -------------------------------------------------------------------------------


class _RowBuilder:
    """Turns rows into items, recording problems; keeps the ids seen to refuse duplicates."""

    def __init__(self, file: Path, benchmark: str, letter_columns: tuple[str, ...], problems: list[Problem]):
        self.file = file
        self.root = file.parent
        self.benchmark = benchmark
        self.letter_columns = letter_columns
        self.problems = problems
        self.seen: set[str] = set()
        self.binary_columns: set[str] = set()
        # Per image reference: (path, key, exists). μ-Bench asks 5–6 questions per image, so the
        # path checks and the stat are done once per image, not once per row.
        self._refs: dict[str, tuple[Path, str, bool]] = {}

    def problem(self, record: str, message: str, *, kind: str, severity: Severity = "error") -> None:
        """Record a problem about this file."""
        self.problems.append(Problem(str(self.file), record, message, severity=severity, kind=kind))

    def build(self, row: _Row, split: str) -> Item | None:
        """Build the row's item, or record why it cannot be built and return ``None``."""
        v = row.values
        if not self._id_is_text(row):
            return None
        raw_id = _text(v.get("id"))
        local_id = raw_id or f"{self.file.stem}-{row.index}"
        record = f"{local_id} ({row.where})" if raw_id else row.where
        item_id = f"{self.benchmark}/{local_id}"
        if item_id in self.seen:
            self.problem(
                record, f"id {local_id!r} is used by an earlier row; this row was skipped", kind="duplicate"
            )
            return None
        question = v.get("question")
        if not isinstance(question, str) or not question.strip():
            self.problem(
                record,
                "row has no question text; skipped (the 'question' column is required)",
                kind="malformed",
            )
            return None

        choices = self._choices(v, record)
        if choices is None:
            return None
        found_boxes = self._boxes(v, record)
        if found_boxes is None:
            return None
        has_boxes, boxes = found_boxes
        kind_answer = self._kind_and_answer(v, choices, has_boxes, record)
        if kind_answer is None:
            return None
        kind, answer_index = kind_answer
        found = self._images(v, record)
        if found is None:
            return None
        images, missing = found
        captions = self._captions(v, choices, record)
        metadata = self._metadata(v, kind)
        if kind == "mcq" and has_boxes:
            # Boxes on a multiple-choice row are context, not targets: kept for probes and reports.
            metadata["boxes"] = [
                {"x1": b.x1, "y1": b.y1, "x2": b.x2, "y2": b.y2, "label": b.label} for b in boxes
            ]
        self.seen.add(item_id)
        return Item(
            id=item_id,
            benchmark=self.benchmark,
            split=split,
            task=_text(v.get("task")) or "default",
            subset=_text(v.get("subset")),
            question=question.strip(),
            choices=choices,
            answer_index=answer_index,
            images=images,
            context=_text(v.get("context")),
            captions=captions,
            metadata=metadata,
            kind=kind,
            targets=boxes if kind == "detection" else (),
            problems=("missing_image",) if missing else (),
        )

    def _kind_and_answer(
        self, v: Mapping[str, Any], choices: tuple[str, ...], has_boxes: bool, record: str
    ) -> tuple[ItemKind, int | None] | None:
        """The row's kind and (multiple choice) answer index, or record why it has none."""
        if choices:
            if "answer" not in v:
                self.problem(
                    record,
                    "row has choices but no answer; it cannot be scored and was skipped",
                    kind="answer_mismatch",
                )
                return None
            answer_index, reason = resolve_answer(v["answer"], choices)
            if answer_index is None:
                self.problem(
                    record, f"{reason}; the row cannot be scored and was skipped", kind="answer_mismatch"
                )
                return None
            return "mcq", answer_index
        if has_boxes:
            return "detection", None
        self.problem(
            record,
            "row has neither choices (multiple choice) nor boxes (detection); skipped",
            kind="malformed",
        )
        return None

    def _id_is_text(self, row: _Row) -> bool:
        """Whether the row's ``id`` (when it has one) is non-empty text; else record why not.

        A number, boolean or null id is refused rather than turned into text: ``7`` and ``"7"``
        (or ``7`` and ``7.0``) would silently become one id, and ``true`` would become ``"True"``.
        """
        value = row.values.get("id")
        if row.null_id or (isinstance(value, str) and not value.strip()):
            reason = "is empty or null"
        elif "id" in row.values and not isinstance(value, str):
            reason = f"is {json.dumps(value)}, a {_json_type(value)}, not text"
        else:
            return True
        self.problem(
            row.where,
            f'id {reason}; ids must be non-empty text (write "id": "7", not 7), or leave the '
            "id column out to number rows automatically; row skipped",
            kind="bad_id",
        )
        return False

    def _choices(self, v: Mapping[str, Any], record: str) -> tuple[str, ...] | None:
        """The choices (``()`` when the row has none), or ``None`` after recording a problem."""
        raw: list[Any] | None
        if "choices" in v:
            raw = _list_cell(v["choices"])
            if raw is None:
                self.problem(
                    record,
                    'choices must be a list of strings (in CSV, a JSON array such as ["a", "b"], '
                    "or columns A, B, C…); skipped",
                    kind="malformed",
                )
                return None
        elif self.letter_columns:
            cells = [v.get(col) for col in self.letter_columns]
            while cells and cells[-1] is None:
                cells.pop()  # fewer options than columns: trailing empty cells
            if any(c is None for c in cells):
                gap = self.letter_columns[cells.index(None)]
                self.problem(
                    record, f"choice column {gap} is empty but a later one is not; skipped", kind="malformed"
                )
                return None
            raw = cells
        else:
            return ()
        if any(c is None or isinstance(c, (list, dict, bool)) or not str(c).strip() for c in raw):
            self.problem(record, "every choice must be non-empty text; skipped", kind="malformed")
            return None
        if len(raw) == 1:
            self.problem(
                record, "row has a single choice; a question needs at least two; skipped", kind="malformed"
            )
            return None
        if len(raw) > len(LETTERS):
            self.problem(
                record,
                f"row has {len(raw)} choices; at most {len(LETTERS)} are supported; skipped",
                kind="malformed",
            )
            return None
        return tuple(str(_text(c)) for c in raw)

    def _boxes(self, v: Mapping[str, Any], record: str) -> tuple[bool, tuple[Box, ...]] | None:
        """``(present, boxes)``, or ``None`` after recording a problem."""
        if "boxes" not in v:
            return False, ()
        raw = _list_cell(v["boxes"])
        default_label = _text(v.get("class_name")) or ""
        out = []
        for entry in raw if raw is not None else [None]:
            try:
                if not isinstance(entry, Mapping):
                    raise ValueError("not an object")
                box = Box(
                    x1=float(entry["x1"]),
                    y1=float(entry["y1"]),
                    x2=float(entry["x2"]),
                    y2=float(entry["y2"]),
                    label=_text(entry.get("label")) or default_label,
                )
            except (KeyError, TypeError, ValueError):
                self.problem(
                    record,
                    'boxes must be a list of {"x1", "y1", "x2", "y2", "label"} objects with numeric '
                    "pixel coordinates; skipped",
                    kind="malformed",
                )
                return None
            if not (box.x2 >= box.x1 and box.y2 >= box.y1) or any(
                math.isnan(c) or math.isinf(c) for c in (box.x1, box.y1, box.x2, box.y2)
            ):
                self.problem(
                    record,
                    f"box {entry} needs x1 <= x2 and y1 <= y2 (finite pixels); skipped",
                    kind="malformed",
                )
                return None
            out.append(box)
        return True, tuple(out)

    def _images(self, v: Mapping[str, Any], record: str) -> tuple[tuple[ImageRef, ...], bool] | None:
        """``(refs, any missing)``, or ``None`` after recording why the row is skipped."""
        refs: list[Any] = []
        if "image" in v:
            one = v["image"]
            refs.extend(one if isinstance(one, list) else [one])
        if "images" in v:
            many = _list_cell(v["images"], semicolons=True)
            if many is None:
                self.problem(
                    record,
                    "images must be a list of paths (in CSV: a JSON array or a;b); skipped",
                    kind="malformed",
                )
                return None
            refs.extend(many)
        out: list[ImageRef] = []
        missing = False
        for n, ref in enumerate(refs):
            embedded = _embedded_bytes(ref)
            if embedded is not None:
                # A Parquet `Image` cell ({"bytes", "path"}), as `datasets` writes them.
                out.append(ImageRef(key=f"{self.benchmark}:{record}:{n}", data=embedded))
                continue
            if not isinstance(ref, str) or not ref.strip():
                self.problem(
                    record,
                    f"image reference {describe_cell(ref)} is neither a path nor an embedded image; skipped",
                    kind="malformed",
                )
                return None
            try:
                path, key, exists = self._file_ref(ref.strip())
            except UnsafePathError as exc:
                self.problem(record, f"{exc}; row skipped", kind="unsafe_path")
                return None
            if not exists:
                missing = True
                self.problem(
                    record,
                    f"image {describe_cell(ref.strip())} not found in {self.root}; "
                    "the item is kept and counted as missing_image",
                    kind="missing_image",
                    severity="warning",
                )
            out.append(ImageRef(key=key, path=path))
        return tuple(out), missing

    def _file_ref(self, ref: str) -> tuple[Path, str, bool]:
        """``(path, key, exists)`` of an image reference (cached per reference).

        Raises:
            UnsafePathError: When the reference leaves the data folder.
        """
        known = self._refs.get(ref)
        if known is None:
            path = safe_join(self.root, ref)
            # Relative to the folder as given (not resolved): safe_join checks references as
            # written, so a data folder or cache that is itself a symlink keeps working.
            key = path.relative_to(os.path.abspath(self.root)).as_posix()
            known = self._refs[ref] = (path, key, path.is_file())
        return known

    def _captions(
        self, v: Mapping[str, Any], choices: tuple[str, ...], record: str
    ) -> tuple[str, ...] | None:
        if "captions" not in v:
            return None
        raw = _list_cell(v["captions"])
        if raw is None or not all(isinstance(c, str) for c in raw) or len(raw) != len(choices):
            got = f"{len(raw)} captions" if raw is not None else f"{v['captions']!r}"
            self.problem(
                record,
                f"captions must be a list of one text per choice ({len(choices)}), got {got}; "
                "captions dropped",
                kind="captions_mismatch",
                severity="warning",
            )
            return None
        return tuple(c.strip() for c in raw)

    def _metadata(self, v: Mapping[str, Any], kind: ItemKind) -> dict[str, Any]:
        out: dict[str, Any] = {}
        letters = set(self.letter_columns) if "choices" not in v else set()
        for key, value in v.items():
            if key in ITEM_COLUMNS or key in letters:
                continue
            if isinstance(value, bytes):
                self.binary_columns.add(key)
                continue
            out[key] = value
        if kind == "detection" and "answer" in v:
            out["answer"] = v["answer"]  # a detection row's answer cell is kept, not interpreted
        return out

    def report_binary_columns(self) -> None:
        """Record one warning per column whose binary cells could not be kept in metadata."""
        for column in sorted(self.binary_columns):
            self.problem(
                column,
                f"column {column!r} holds binary data, which metadata cannot keep; it was left out",
                kind="binary_metadata",
                severity="warning",
            )

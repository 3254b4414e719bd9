r"""Any Hugging Face dataset as a benchmark, from a column mapping (``--bench hf``) — no Python.

``--data`` names the dataset and, optionally, which column holds what. Two forms:

* a small YAML file (``mmmu-art.yaml``)::

      dataset: MMMU/MMMU          # a Hub id, a save_to_disk folder, or parquet/arrow files
      subset: Art                 # the Hub configuration (or a sub-folder of a local copy)
      split: validation
      id: id
      question: question
      options: options            # one list column, or lettered columns: [A, B, C, D]
      answer: answer              # an index, a letter or the option's text
      images: [image_1, image_2, image_3, image_4, image_5, image_6, image_7]
      template: "{{ question }}\n{{ options_block }}\nAnswer with the option's letter."

* the same keys after the location, as a URL query:
  ``--data 'MMMU/MMMU?subset=Art&split=validation&images=image_1,image_2'``.

Every key but ``dataset`` is optional; left out, the usual column names are looked for
(:data:`GUESSES`; lettered option columns ``A``, ``B``…; image columns ``image_1``, ``image_2``…).
Image columns may hold embedded images (the ``datasets`` ``Image`` feature, one or a list per
row), raw bytes, paths relative to a local copy, or ``http(s)`` URLs, which are fetched once into
the ``datasets`` download cache and read from it afterwards (also offline). Images stay lazy: no
pixel is read while loading.

``template`` is the dataset's own prompt, a Jinja2 text (lmms-eval's ``doc_to_text``) over the
row's columns and ``question``, ``options``, ``letters`` and ``options_block``; the answer
column is withheld from it. ``--protocol owner`` sends it; ``--protocol default`` keeps the shared
prompt, comparable with every other benchmark.

The full description, with examples, is in ``docs/hf-datasets.md``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import parse_qsl

from pydantic import BaseModel, ConfigDict, ValidationError

from scopebench.benchmarks._hf import (
    HFData,
    ImageColumn,
    LazyImage,
    gc_paused,
    open_hf_data,
    read_text_columns,
    source_problems,
)
from scopebench.benchmarks._options import describe_cell, resolve_answer
from scopebench.benchmarks.base import Benchmark, LoadedBenchmark, OwnerPrompt, Problem, Severity
from scopebench.benchmarks.registry import register_benchmark
from scopebench.errors import (
    DataFormatError,
    DataNotFoundError,
    ImageLoadError,
    MissingDependencyError,
    UnsafePathError,
)
from scopebench.items import LETTERS, ImageRef, Item, safe_join

if TYPE_CHECKING:
    from datasets import Dataset

__all__ = ["GUESSES", "PROMPT_KEY", "DatasetSpec", "HFBenchmark", "load_dataset_items", "read_spec"]

#: Column names looked for, in order, when the mapping leaves a role out.
GUESSES: dict[str, tuple[str, ...]] = {
    "id": ("id", "question_id", "qid", "index"),
    "question": ("question", "query", "prompt"),
    "options": ("options", "choices"),
    "answer": ("answer", "correct_index", "answer_idx", "label"),
    "images": ("image", "images", "images_list"),
    "task": ("task",),
    "context": ("context", "hint"),
}
#: The metadata key of an item's rendered template prompt (what ``--protocol owner`` sends).
PROMPT_KEY = "template_prompt"

_NUMBERED_IMAGE = re.compile(r"^image_(\d+)$")
_URL = re.compile(r"^https?://", re.IGNORECASE)
_BASE64 = re.compile(r"[A-Za-z0-9+/]+={0,2}")
# PNG, JPEG, GIF, BMP and TIFF (both byte orders); WebP is RIFF….WEBP.
_IMAGE_SIGNATURES = (b"\x89PNG", b"\xff\xd8\xff", b"GIF8", b"BM", b"II*\x00", b"MM\x00*")
_LIST_KEYS = ("options", "images")


class DatasetSpec(BaseModel):
    """Where a dataset is and which column plays which role (the YAML keys, all but one optional).

    Attributes:
        dataset: A Hub id (``owner/name``), a ``save_to_disk`` folder, or parquet/arrow files.
        subset: The Hub configuration (MMMU's ``Art``), or a sub-folder of a local copy.
        split: The split to read (``--split`` overrides it).
        id: The column of item ids (default: the row number).
        question: The question column.
        options: One column holding a list of options, or several columns, one option each.
        answer: The answer column: a 0-based index, a letter or the option's text.
        images: Image columns: one, several (MMMU's ``image_1``…``image_7``), or one of lists.
        task: The column of task names (per-task accuracy).
        context: A column of text shown before the question.
        template: The dataset's own prompt (Jinja2), sent under ``--protocol owner``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    dataset: str
    subset: str | None = None
    split: str | None = None
    id: str | None = None
    question: str | None = None
    options: str | tuple[str, ...] | None = None
    answer: str | None = None
    images: str | tuple[str, ...] | None = None
    task: str | None = None
    context: str | None = None
    template: str | None = None


def read_spec(data: str | Path) -> DatasetSpec:
    """The :class:`DatasetSpec` that ``--data`` gives: a YAML file, or ``LOCATION?key=value&…``.

    A relative ``dataset`` path in a YAML file is read from the YAML file's folder when it lies
    there, so a mapping can sit beside its data.

    Raises:
        DataNotFoundError: When a ``.yaml`` file does not exist.
        DataFormatError: For unknown keys, a malformed query or YAML that is no mapping.
    """
    text = str(data)
    if text.lower().endswith((".yaml", ".yml")):
        return _read_yaml(Path(text).expanduser())
    location, sep, query = text.partition("?")
    fields: dict[str, Any] = {"dataset": location}
    if sep:
        try:
            pairs = parse_qsl(query, keep_blank_values=False, strict_parsing=True)
        except ValueError as exc:
            raise DataFormatError(
                f"cannot read the column mapping {query!r}: write it as key=value pairs joined by & "
                "(e.g. question=Question&answer=label&images=image_1,image_2)"
            ) from exc
        for key, value in pairs:
            fields[key] = tuple(v.strip() for v in value.split(",")) if key in _LIST_KEYS else value
    return _validate(fields, f"--data {text!r}")


def _read_yaml(path: Path) -> DatasetSpec:
    import yaml

    if not path.is_file():
        raise DataNotFoundError(f"dataset mapping not found: {path}")
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise DataFormatError(f"cannot read {path} as YAML: {exc}") from exc
    if not isinstance(raw, dict) or "dataset" not in raw:
        raise DataFormatError(f"{path} must be a YAML mapping with at least a 'dataset:' key (see docs)")
    for key in _LIST_KEYS:
        if isinstance(raw.get(key), list):
            raw[key] = tuple(raw[key])
    beside = path.parent / str(raw["dataset"])
    if beside.exists():
        raw["dataset"] = str(beside)
    return _validate(raw, str(path))


def _validate(fields: Mapping[str, Any], where: str) -> DatasetSpec:
    try:
        return DatasetSpec.model_validate(fields)
    except ValidationError as exc:
        known = ", ".join(DatasetSpec.model_fields)
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or '-'}: {e['msg']}" for e in exc.errors())
        raise DataFormatError(f"{where}: {problems}. The keys are: {known}") from exc


# Columns ---------------------------------------------------------------------------------------

ImageKind = Literal["embedded", "embedded_list", "text"]


@dataclass(frozen=True, slots=True)
class _Columns:
    """The mapping resolved against the dataset's columns."""

    question: str
    options: tuple[str, ...]  # one list column, or several lettered columns
    options_listed: bool
    answer: str
    images: dict[str, ImageKind]
    id: str | None
    task: str | None
    context: str | None

    def roles(self) -> set[str]:
        """Every mapped column (these do not go to the item's metadata)."""
        named = {self.question, self.answer, *self.options, *self.images, self.id, self.task, self.context}
        return {c for c in named if c is not None}


def _pick(spec_value: str | None, role: str, columns: Sequence[str], where: str) -> str | None:
    """The column of ``role``: the one mapped (which must exist) or the first usual name found."""
    if spec_value is not None:
        if spec_value not in columns:
            raise DataFormatError(
                f"{where}: {role}={spec_value!r} names no column; its columns are: {', '.join(columns)}"
            )
        return spec_value
    return next((c for c in GUESSES[role] if c in columns), None)


def _option_columns(spec: DatasetSpec, columns: Sequence[str], where: str) -> tuple[tuple[str, ...], bool]:
    """``(columns, listed)``: one list column (``listed``), or lettered columns ``A``, ``B``…."""
    if isinstance(spec.options, tuple) and len(spec.options) > 1:
        missing = [c for c in spec.options if c not in columns]
        if missing:
            raise DataFormatError(f"{where}: option column(s) {', '.join(missing)} not found")
        return spec.options, False
    one = spec.options[0] if isinstance(spec.options, tuple) else spec.options
    found = _pick(one, "options", columns, where)
    if found is not None:
        return (found,), True
    lettered = []
    for letter_ in LETTERS:
        if letter_ not in columns:
            break
        lettered.append(letter_)
    if len(lettered) >= 2:
        return tuple(lettered), False
    raise DataFormatError(
        f"{where}: no options column found (looked for {', '.join(GUESSES['options'])} and lettered "
        f"columns A, B…); map one with options=COLUMN or options=A,B,C. Columns: {', '.join(columns)}"
    )


def _image_kind(dataset: Dataset, column: str, where: str) -> ImageKind:
    """How ``column`` holds images; refuses columns that cannot hold any."""
    from datasets import Image, LargeList, List, Sequence, Value

    feature = dataset.features[column]
    inner = feature.feature if isinstance(feature, (List, LargeList, Sequence)) else None
    if isinstance(feature, Image) or (isinstance(feature, Value) and "binary" in feature.dtype):
        return "embedded"
    if isinstance(inner, Image):
        return "embedded_list"
    if (isinstance(feature, Value) and feature.dtype in ("string", "large_string")) or (
        isinstance(inner, Value) and inner.dtype in ("string", "large_string")
    ):
        return "text"
    raise DataFormatError(
        f"{where}: column {column!r} holds {feature}, not images (an Image feature, bytes, paths or "
        "URLs); map images= to the image columns"
    )


def _resolve_columns(spec: DatasetSpec, dataset: Dataset, where: str) -> _Columns:
    columns = list(dataset.column_names)
    question = _pick(spec.question, "question", columns, where)
    answer = _pick(spec.answer, "answer", columns, where)
    if question is None or answer is None:
        role = "question" if question is None else "answer"
        raise DataFormatError(
            f"{where}: no {role} column found (looked for {', '.join(GUESSES[role])}); map it with "
            f"{role}=COLUMN. Columns: {', '.join(columns)}"
        )
    options, listed = _option_columns(spec, columns, where)
    if spec.images is not None:
        wanted = spec.images if isinstance(spec.images, tuple) else (spec.images,)
        for name in wanted:
            _pick(name, "images", columns, where)
    else:
        numbered = sorted(
            (c for c in columns if _NUMBERED_IMAGE.match(c)), key=lambda c: int(c.split("_")[1])
        )
        wanted = tuple(c for c in GUESSES["images"] if c in columns) + tuple(numbered)
    return _Columns(
        question=question,
        options=options,
        options_listed=listed,
        answer=answer,
        images={c: _image_kind(dataset, c, where) for c in wanted},
        id=_pick(spec.id, "id", columns, where),
        task=_pick(spec.task, "task", columns, where),
        context=_pick(spec.context, "context", columns, where),
    )


# Images ----------------------------------------------------------------------------------------


class CachedURL:
    """An :class:`~scopebench.items.ImageRef` loader reading a URL through the ``datasets`` cache.

    The first read downloads into ``HF_DATASETS_CACHE/downloads``; later reads (also offline)
    come from that copy without any request. A class, not a closure, so items stay picklable.
    """

    __slots__ = ("url",)

    def __init__(self, url: str) -> None:
        self.url = url

    def __getstate__(self) -> str:
        return self.url

    def __setstate__(self, state: str) -> None:
        self.url = state

    def __call__(self) -> bytes:
        """The encoded image.

        Raises:
            ImageLoadError: When the URL is neither cached nor reachable.
        """
        import importlib.util

        from datasets import DownloadConfig
        from datasets.utils.file_utils import cached_path

        if importlib.util.find_spec("aiohttp") is None:  # fsspec's HTTP file system needs it
            raise MissingDependencyError("aiohttp", "urls", f"reading the image {self.url}")
        try:
            # Without ETags a cached copy is read with no request at all (offline too): an image
            # behind a URL is treated as immutable, as datasets treats data files.
            config = DownloadConfig(use_etag=False, disable_tqdm=True)
            return Path(cached_path(self.url, download_config=config)).read_bytes()
        except Exception as exc:  # connection, offline and HTTP errors come in many types
            raise ImageLoadError(
                f"image {self.url} is neither in the datasets cache nor reachable "
                f"({type(exc).__name__}: {exc}); fetch it once while online"
            ) from exc


# Building items ----------------------------------------------------------------------------------


class _Builder:
    """Turns a dataset's rows into items, recording a problem (naming row and column) for each."""

    def __init__(self, spec: DatasetSpec, src: HFData, benchmark: str, problems: list[Problem]) -> None:
        self.spec = spec
        self.src = src
        self.benchmark = benchmark
        self.problems = problems
        self.cols = _resolve_columns(spec, src.dataset, src.source)
        self.root = _local_root(src)
        self.embedded = {
            c: ImageColumn(src.dataset, c) for c, kind in self.cols.images.items() if kind != "text"
        }
        self.text_columns = [c for c in src.dataset.column_names if c not in self.embedded]
        self.template = _compile(spec.template) if spec.template else None
        self.seen: set[str] = set()

    def problem(self, where: str, message: str, *, kind: str, severity: Severity = "error") -> None:
        """Record a problem about this dataset."""
        self.problems.append(Problem(self.src.source, where, message, severity=severity, kind=kind))

    def build_all(self, split: str) -> list[Item]:
        """Every row's item, in data order."""
        rows = read_text_columns(self.src.dataset, self.text_columns)
        counts = {
            c: (col.list_lengths() if self.cols.images[c] == "embedded_list" else col.nulls())
            for c, col in self.embedded.items()
        }
        items: list[Item] = []
        with gc_paused():
            for i, row in enumerate(rows):
                item = self.build(i, row, {c: v[i] for c, v in counts.items()}, split)
                if item is not None:
                    items.append(item)
        return items

    def build(self, i: int, row: Mapping[str, Any], counts: Mapping[str, Any], split: str) -> Item | None:
        """Row ``i``'s item, or ``None`` after recording why it cannot be built."""
        cols = self.cols
        raw_id = row.get(cols.id) if cols.id else None
        local_id = str(raw_id).strip() if raw_id is not None and str(raw_id).strip() else str(i)
        where = f"row {i}" + (f" (id {local_id!r})" if cols.id and raw_id is not None else "")
        item_id = f"{self.benchmark}/{local_id}"
        if item_id in self.seen:
            self.problem(
                where,
                f"column {cols.id!r}: id {local_id!r} is used by an earlier row; row skipped",
                kind="duplicate",
            )
            return None
        question = row.get(cols.question)
        if not isinstance(question, str) or not question.strip():
            self.problem(
                where,
                f"column {cols.question!r}: no question text ({describe_cell(question)}); row skipped",
                kind="malformed",
            )
            return None
        choices = self._choices(row, where)
        if choices is None:
            return None
        answer, reason = resolve_answer(row.get(cols.answer), choices)
        if answer is None:
            self.problem(
                where,
                f"column {cols.answer!r}: {reason}; the row cannot be scored and was skipped",
                kind="answer_mismatch",
            )
            return None
        found = self._images(i, local_id, row, counts, where)
        if found is None:
            return None
        images, missing = found
        metadata = {k: v for k, v in row.items() if k not in cols.roles() and _plain_value(v)}
        if self.template is not None:
            metadata[PROMPT_KEY] = self._render(row, question.strip(), choices, where)
        self.seen.add(item_id)
        return Item(
            id=item_id,
            benchmark=self.benchmark,
            split=split,
            task=_cell_text(row.get(cols.task)) if cols.task else "default",
            subset=self.spec.subset,
            question=question.strip(),
            choices=choices,
            answer_index=answer,
            images=images,
            context=_cell_text(row.get(cols.context)) or None if cols.context else None,
            metadata=metadata,
            problems=("missing_image",) if missing else (),
        )

    def _choices(self, row: Mapping[str, Any], where: str) -> tuple[str, ...] | None:
        cols = self.cols
        if cols.options_listed:
            column = cols.options[0]
            raw = _list_cell(row.get(column))
        else:
            column = ",".join(cols.options)
            cells = [row.get(c) for c in cols.options]
            while cells and (cells[-1] is None or str(cells[-1]).strip() == ""):
                cells.pop()  # fewer options than lettered columns
            raw = cells
        if raw is None or len(raw) < 2 or len(raw) > len(LETTERS):
            got = describe_cell(row.get(column)) if cols.options_listed else f"{len(raw or [])} options"
            self.problem(
                where,
                f"column {column!r}: needs a list of 2–{len(LETTERS)} options, got {got}; "
                "row skipped (open questions cannot be scored as multiple choice)",
                kind="malformed",
            )
            return None
        if any(c is None or isinstance(c, (list, dict, bytes)) or not str(c).strip() for c in raw):
            self.problem(
                where,
                f"column {column!r}: every option must be non-empty text, "
                f"got {describe_cell(raw)}; "
                "row skipped",
                kind="malformed",
            )
            return None
        return tuple(_cell_text(c) for c in raw)

    def _images(
        self, i: int, local_id: str, row: Mapping[str, Any], counts: Mapping[str, Any], where: str
    ) -> tuple[tuple[ImageRef, ...], bool] | None:
        """``(refs, any missing)`` over every image column, or ``None`` after recording a problem."""
        out: list[ImageRef] = []
        missing = False
        for column, kind in self.cols.images.items():
            prefix = f"{self.benchmark}:{local_id}:{column}"
            what = f"row {i}, column {column!r}"
            if kind == "embedded":
                if not counts[column]:  # not null
                    out.append(ImageRef(prefix, loader=LazyImage(self.embedded[column], i, what=what)))
                continue
            if kind == "embedded_list":
                col = self.embedded[column]
                out.extend(
                    ImageRef(f"{prefix}:{n}", loader=LazyImage(col, i, n, what=f"{what}, image {n}"))
                    for n in range(counts[column] or 0)
                )
                continue
            value = row.get(column)
            refs = value if isinstance(value, list) else [] if value is None else [value]
            for n, ref in enumerate(refs):
                got = self._text_image(ref, column, where, f"{prefix}:{n}")
                if got is None:
                    return None
                out.append(got)
                missing = missing or (got.path is not None and not got.path.is_file())
        return tuple(out), missing

    def _text_image(self, ref: Any, column: str, where: str, key: str) -> ImageRef | None:
        """The image a text cell holds or names, or ``None`` after recording why the row is skipped.

        The cell is a URL, base64 (VLMEvalKit's TSV layout stores images so), or a path.
        """
        text = ref.strip() if isinstance(ref, str) else ""
        if _URL.match(text):
            return ImageRef(text, loader=CachedURL(text))
        encoded = _base64_image(text)
        if encoded is not None:
            return ImageRef(key, data=encoded)
        if not text or self.root is None:
            why = "is empty" if not text else "is a path, but a Hub dataset has no folder to read it from"
            self.problem(
                where,
                f"column {column!r}: image reference {describe_cell(ref)} {why}; row skipped",
                kind="malformed",
            )
            return None
        try:
            path = safe_join(self.root, text)
        except UnsafePathError as exc:
            self.problem(where, f"column {column!r}: {exc}; row skipped", kind="unsafe_path")
            return None
        if not path.is_file():
            self.problem(
                where,
                f"column {column!r}: image {describe_cell(text)} not found in {self.root}; the item is "
                "kept and counted as missing_image",
                kind="missing_image",
                severity="warning",
            )
        return ImageRef(path.relative_to(Path(self.root).absolute()).as_posix(), path=path)

    def _render(self, row: Mapping[str, Any], question: str, choices: tuple[str, ...], where: str) -> str:
        """The template's text for this row (the answer column withheld: no prompt leaks it)."""
        import jinja2

        assert self.template is not None
        values = {k: v for k, v in row.items() if k != self.cols.answer}
        letters = [LETTERS[n] for n in range(len(choices))]
        values.update(
            question=question,
            options=list(choices),
            letters=letters,
            options_block="\n".join(f"{a}. {c}" for a, c in zip(letters, choices, strict=True)),
        )
        try:
            return str(self.template.render(values))
        except jinja2.TemplateError as exc:
            raise DataFormatError(
                f"{self.src.source} {where}: the template fails ({exc}); it may use the columns "
                f"{', '.join(sorted(values))}"
            ) from exc


def _base64_image(text: str) -> bytes | None:
    """The bytes of a base64-encoded image cell, else ``None`` (a path or a name is no base64).

    Only text of base64's alphabet that decodes to a known image signature counts, so a file
    name such as ``cell1`` is never taken for an image.
    """
    import base64
    import binascii

    if len(text) < 16 or len(text) % 4 or _BASE64.fullmatch(text) is None:
        return None
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None
    return data if data.startswith(_IMAGE_SIGNATURES) or data[8:12] == b"WEBP" else None


def _compile(template: str) -> Any:
    """The template compiled in Jinja2's sandbox (a mapping file is input, and input is hostile)."""
    import jinja2
    from jinja2.sandbox import SandboxedEnvironment

    env = SandboxedEnvironment(
        undefined=jinja2.StrictUndefined, keep_trailing_newline=False, autoescape=False
    )
    try:
        return env.from_string(template)
    except jinja2.TemplateSyntaxError as exc:
        raise DataFormatError(f"the template is no valid Jinja2 text: {exc}") from exc


def _local_root(src: HFData) -> Path | None:
    """The folder relative image paths are read from (``None`` for a Hub dataset)."""
    if src.kind == "hub":
        return None
    path = Path(src.source).expanduser()
    return path if path.is_dir() else path.parent


def _plain_value(value: Any) -> bool:
    """Whether a cell can go to metadata (JSON-safe text and numbers; never bytes)."""
    if isinstance(value, (list, tuple)):
        return all(_plain_value(v) for v in value)
    if isinstance(value, dict):
        return all(_plain_value(v) for v in value.values())
    return value is None or isinstance(value, (str, int, float, bool))


def _cell_text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value).strip() if value is not None else ""


def _list_cell(value: Any) -> list[Any] | None:
    """A list cell: a list, or text holding one (MMMU stores ``"['a', 'b']"``)."""
    if isinstance(value, list):
        return value
    if isinstance(value, str) and value.strip().startswith("["):
        try:
            parsed = ast.literal_eval(value.strip())  # literals only: no code runs
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return None
        return list(parsed) if isinstance(parsed, (list, tuple)) else None
    return None


def load_dataset_items(spec: DatasetSpec, benchmark: str, split: str | None) -> LoadedBenchmark:
    """Load the dataset ``spec`` describes as items named ``<benchmark>/<id>``.

    Args:
        spec: The dataset and its column mapping.
        benchmark: Goes into :attr:`Item.benchmark` and the item ids.
        split: The split wanted; ``None``: the mapping's, else the dataset's only split.

    Raises:
        DataNotFoundError: When the dataset cannot be found (or, offline, is not cached).
        DataFormatError: When a mapped column is missing or cannot hold its role.
    """
    wanted = split or spec.split
    src = open_hf_data(
        spec.dataset,
        wanted,
        what="dataset",
        hub_help="See docs/hf-datasets.md for the forms --data takes.",
        subset=spec.subset,
    )
    problems: list[Problem] = source_problems(src, wanted) if wanted else []
    builder = _Builder(spec, src, benchmark, problems)
    label = src.split or wanted or "test"
    items = builder.build_all(label)
    if not items and not problems:
        raise DataFormatError(f"{src.source} has no rows{f' in split {label!r}' if wanted else ''}")
    return LoadedBenchmark(
        name=benchmark,
        data=spec.dataset,
        items=items,
        problems=problems,
        fingerprint=f"{src.fingerprint}:{hash_spec(spec)}",
    )


def hash_spec(spec: DatasetSpec) -> str:
    """A short hash of the mapping: another mapping of the same data is other items."""
    import hashlib

    return hashlib.sha256(spec.model_dump_json().encode()).hexdigest()[:8]


@register_benchmark("hf")
class HFBenchmark(Benchmark):
    """Any Hugging Face dataset (Hub id, save_to_disk folder, parquet) with a column mapping."""

    title = "Any Hugging Face dataset: a Hub id, save_to_disk folder or parquet, with a column mapping"
    splits = ()  # any split the dataset has
    tasks = ()
    default_split = None
    owner_description = "the dataset's own prompt template (template: in the mapping)"
    data_help = (
        "A Hub id (owner/name), a save_to_disk folder or parquet/arrow files, optionally followed by "
        "a column mapping as ?key=value&… (question, options, answer, images, id, task, context, "
        "subset, split, template), or a .yaml file with a dataset: key and the same keys. Unmapped "
        "roles use the usual column names. See docs/hf-datasets.md."
    )

    def load(self, data: str | Path, split: str | None = None) -> LoadedBenchmark:
        """Load the dataset ``data`` describes (see the module docstring)."""
        return load_dataset_items(read_spec(data), self.name, split)

    def owner_prompt(self, item: Item) -> OwnerPrompt | None:
        """The mapping's template rendered for ``item`` (``--protocol owner``).

        Raises:
            DataFormatError: When the mapping has no template.
        """
        text = item.metadata.get(PROMPT_KEY)
        if not isinstance(text, str):
            raise DataFormatError(
                f"item {item.id} has no prompt template; add template: to the dataset mapping, "
                "or run with --protocol default"
            )
        return OwnerPrompt(text=text)

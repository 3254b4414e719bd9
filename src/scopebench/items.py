"""The few types every stage shares: :class:`Item`, :class:`ImageRef`, :class:`Box`, :class:`Record`.

An :class:`Item` is one question (or one detection target) of a benchmark, whatever the source
format. Images travel as :class:`ImageRef` references and are decoded only when a backend needs the
pixels, so a run never holds a whole dataset's images in memory.
"""

from __future__ import annotations

import copy
import io
import os
import string
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any, Literal

from PIL import Image

from scopebench.errors import ImageLoadError, UnsafePathError

__all__ = [
    "LETTERS",
    "RECORD_FIELDS",
    "SAMPLE_COLUMNS",
    "Box",
    "ImageRef",
    "Item",
    "ItemKind",
    "Record",
    "RecordStatus",
    "Sample",
    "letter",
    "open_image",
    "safe_join",
]

#: Option letters, in order. Benchmarks here have at most 10 options; 26 leaves room.
LETTERS = string.ascii_uppercase

ItemKind = Literal["mcq", "detection"]
RecordStatus = Literal["ok", "unparsed", "error", "missing_image", "missing_response"]

# Pillow's default decompression-bomb limit (~89 Mpx) stays on: we never raise or disable it, and
# `open_image` turns its warning into an error so a hostile file cannot exhaust memory.
_BOMB_LIMIT = Image.MAX_IMAGE_PIXELS


def letter(index: int) -> str:
    """Return the option letter for a 0-based index (0 → "A")."""
    return LETTERS[index]


def safe_join(root: Path, relative: str) -> Path:
    """Join ``relative`` onto ``root`` and refuse references that escape ``root``.

    The check is on the reference as written (``..`` segments and absolute paths), not on where
    symbolic links lead: a data folder whose ``images/`` is a link to shared storage is the data
    owner's choice, while a ``../`` in a downloaded data file is not.

    Args:
        root: The benchmark's data folder.
        relative: An image reference from a data file.

    Returns:
        The absolute path (it may not exist; callers report missing files).

    Raises:
        UnsafePathError: When the reference is absolute outside ``root`` or climbs out with ``..``.
    """
    base = Path(os.path.abspath(root))
    candidate = Path(os.path.normpath(base / relative))
    if not candidate.is_relative_to(base):
        shown = relative if len(relative) <= 80 else relative[:79] + "…"  # never a whole encoded image
        raise UnsafePathError(
            f"image reference {shown!r} points outside the data folder {base}; "
            "image paths must be relative to the data folder and stay inside it"
        )
    return candidate


def open_image(data: bytes | Path, *, what: str) -> Image.Image:
    """Decode an image with Pillow's decompression-bomb guard on, fully loaded, as RGB.

    Args:
        data: Encoded bytes or a file path.
        what: A description of the image for error messages (an item id or a path).

    Raises:
        ImageLoadError: When the file is missing, not an image, truncated or too large.
    """
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            src = io.BytesIO(data) if isinstance(data, bytes) else data
            with Image.open(src) as img:
                # Checked here too: the warning filter above is process-global, so a thread that
                # leaves its own catch_warnings meanwhile may undo it (images decode ahead in a thread).
                if _BOMB_LIMIT is not None and img.width * img.height > _BOMB_LIMIT:
                    raise Image.DecompressionBombError(f"{img.width * img.height} pixels")
                img.load()
                return img.convert("RGB") if img.mode != "RGB" else img.copy()
    except FileNotFoundError as exc:
        raise ImageLoadError(f"image file not found: {what}") from exc
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise ImageLoadError(
            f"image {what} exceeds Pillow's decompression-bomb limit ({_BOMB_LIMIT} pixels); "
            "it is refused to protect memory"
        ) from exc
    except (OSError, ValueError, SyntaxError) as exc:
        raise ImageLoadError(f"cannot decode image {what}: {exc}") from exc


@dataclass(frozen=True, slots=True)
class ImageRef:
    """A lazy reference to one image.

    Exactly one of ``path``, ``data`` or ``loader`` provides the pixels. ``key`` identifies the
    image across items (two questions about the same picture share a key), which is what lets the
    engine decode and encode each image once.

    Attributes:
        key: Stable identity of the image within its benchmark (used for dedup and fingerprints).
        path: A file on disk, already checked to lie inside the data folder.
        data: Encoded bytes (e.g. from a Parquet ``{"bytes": ...}`` cell).
        loader: A callable returning encoded bytes or a PIL image, for memory-mapped datasets.
    """

    key: str
    path: Path | None = None
    data: bytes | None = field(default=None, repr=False)
    loader: Callable[[], bytes | Image.Image] | None = field(default=None, repr=False, compare=False)

    def exists(self) -> bool:
        """Whether the pixels can be looked for at all (a path must exist on disk)."""
        if self.path is not None:
            return self.path.is_file()
        return self.data is not None or self.loader is not None

    def load(self) -> Image.Image:
        """Decode the image as RGB.

        Raises:
            ImageLoadError: When the image is missing or cannot be decoded.
        """
        if self.data is not None:
            return open_image(self.data, what=self.key)
        if self.path is not None:
            return open_image(self.path, what=str(self.path))
        if self.loader is not None:
            try:
                got = self.loader()
            except Exception as exc:  # a dataset backend can fail in many ways; keep the reason
                raise ImageLoadError(f"cannot read image {self.key}: {exc}") from exc
            if isinstance(got, Image.Image):
                return got.convert("RGB") if got.mode != "RGB" else got
            return open_image(got, what=self.key)
        raise ImageLoadError(f"image {self.key} has no source")

    def size(self) -> tuple[int, int]:
        """``(width, height)`` in pixels, reading only the header for files and bytes.

        Raises:
            ImageLoadError: When the image is missing or cannot be read.
        """
        import warnings

        src: Path | io.BytesIO | None = self.path
        if self.data is not None:
            src = io.BytesIO(self.data)
        if src is None:
            return self.load().size
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", Image.DecompressionBombWarning)
                with Image.open(src) as img:
                    return img.size
        except FileNotFoundError as exc:
            raise ImageLoadError(f"image file not found: {self.describe()}") from exc
        except (OSError, ValueError, Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
            raise ImageLoadError(f"cannot read image {self.describe()}: {exc}") from exc

    def describe(self) -> str:
        """A short human-readable location for reports and error messages."""
        return str(self.path) if self.path is not None else self.key


@dataclass(frozen=True, slots=True)
class Box:
    """An axis-aligned box in pixel coordinates of the original image.

    Attributes:
        x1: Left edge.
        y1: Top edge.
        x2: Right edge.
        y2: Bottom edge.
        label: Class name of the object in the box.
    """

    x1: float
    y1: float
    x2: float
    y2: float
    label: str = ""


@dataclass(frozen=True, slots=True)
class Item:
    """One evaluation unit of any benchmark.

    Attributes:
        id: Stable identifier, unique within the benchmark (e.g. ``"spur/reason/2010027917_6_1"``).
        benchmark: Registered benchmark name.
        split: Split name (``"test"``, ``"val"``, ``"test_tiny"``, …).
        task: Task name used for per-task accuracy (``"modality"``, ``"NP"``, ``"1"``, …).
        subset: Sub-collection (PathMMU ``"SocialPath"``, μ-Bench source dataset), or ``None``.
        question: The question text as shown to a model.
        choices: Ordered option texts without their letters.
        answer_index: 0-based index of the correct choice; ``None`` for detection items.
        images: Zero, one or several image references.
        context: Optional extra text shown before the question.
        captions: One caption per choice for contrastive models (μ-Bench templates), when the
            benchmark provides them.
        metadata: Free-form fields (modality, stain, source dataset, figure type, original tag…).
        kind: ``"mcq"`` or ``"detection"``.
        targets: Ground-truth boxes for detection items.
        problems: Data problems found while loading (``"missing_image"``…); the item is kept and
            the problem is counted, never silently dropped.
    """

    id: str
    benchmark: str
    split: str
    task: str
    question: str
    choices: tuple[str, ...] = ()
    answer_index: int | None = None
    subset: str | None = None
    images: tuple[ImageRef, ...] = ()
    context: str | None = None
    captions: tuple[str, ...] | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    kind: ItemKind = "mcq"
    targets: tuple[Box, ...] = ()
    problems: tuple[str, ...] = ()

    @property
    def answer_letter(self) -> str | None:
        """The letter of the correct choice, or ``None`` for detection items."""
        return None if self.answer_index is None else letter(self.answer_index)

    @property
    def answer_text(self) -> str | None:
        """The text of the correct choice, or ``None`` for detection items."""
        return None if self.answer_index is None else self.choices[self.answer_index]

    def to_summary(self) -> dict[str, Any]:
        """A JSON-safe view (no pixels) for reports and exports."""
        return {
            "id": self.id,
            "benchmark": self.benchmark,
            "split": self.split,
            "task": self.task,
            "subset": self.subset,
            "question": self.question,
            "choices": list(self.choices),
            "answer_index": self.answer_index,
            "images": [ref.describe() for ref in self.images],
            "context": self.context,
            "metadata": dict(self.metadata),
            "kind": self.kind,
            "targets": [asdict(b) for b in self.targets],
            "problems": list(self.problems),
        }


@dataclass(frozen=True, slots=True)
class Sample:
    """What the model was shown for one item, stored with its record (``run --log-samples``).

    Error analysis reads it beside the reply, with no join against the data (lm-eval's
    ``--log_samples``, Inspect's logs).

    Attributes:
        prompt: The rendered user message; ``None`` when no prompt was rendered (the item's image
            was missing, or rendering failed).
        system: The system message, if the protocol has one.
        images: The ids (:attr:`ImageRef.key`) of the images sent with the prompt, in order.
        question: The item's question.
        options: The option texts, in order.
        answer_key: The correct option's label as the prompt asks for it (``"B"``, or ``"2"`` under
            number labels); ``None`` for detection items.
        protocol: The resolved prompt protocol (``default``, ``<benchmark>-owner``…).
    """

    prompt: str | None
    question: str
    options: tuple[str, ...] = ()
    answer_key: str | None = None
    images: tuple[str, ...] = ()
    system: str | None = None
    protocol: str = ""

    @classmethod
    def of_item(cls, item: Item) -> Sample:
        """The sample of an item no prompt was rendered for (its question, options and key)."""
        return cls(
            prompt=None,
            question=item.question,
            options=item.choices,
            answer_key=item.answer_letter,
            images=tuple(ref.key for ref in item.images),
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Sample:
        """Rebuild a sample from its stored dict (lists back to tuples)."""
        d = dict(data)
        d["options"] = tuple(d.get("options") or ())
        d["images"] = tuple(d.get("images") or ())
        return cls(**d)


def _plain(value: Any) -> Any:
    """``value`` with dataclasses as dicts and containers copied, as :func:`dataclasses.asdict` does.

    Immutable leaves (strings, numbers, ``None``) are shared instead of deep-copied; anything else
    is deep-copied as ``asdict`` would.
    """
    kind = type(value)
    if kind in (str, int, float, bool) or value is None:
        return value
    if kind is dict:
        return {k: _plain(v) for k, v in value.items()}
    if kind is list:
        return [_plain(v) for v in value]
    if kind is tuple:
        return tuple(_plain(v) for v in value)
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value)}
    return copy.deepcopy(value)


#: The :class:`Sample` fields, as the columns of flat exports (Parquet, ``Results.to_pandas()``).
SAMPLE_COLUMNS: tuple[str, ...] = (
    "prompt",
    "system",
    "images",
    "question",
    "options",
    "answer_key",
    "protocol",
)


@dataclass(slots=True)
class Record:
    """The stored outcome of one item under one model: what a run directory keeps per item.

    Attributes:
        item_id: The :attr:`Item.id`.
        model: The model spec string as given by the user.
        status: ``ok`` (a choice was made), ``unparsed`` (the response commits to no single
            option), ``error`` (the model call or image failed), ``missing_image`` (the data lacks
            the image), ``missing_response`` (replay file has no line for the item).
        choice: The chosen 0-based option index, or ``None``.
        correct: Whether ``choice`` equals the answer; ``None`` when nothing was scored.
        response: Raw text from a generative model, if any.
        scores: Per-option scores (probabilities for contrastive/log-prob backends), if any.
        error: Error message for ``error``/``missing_*`` records, or the parser's reason.
        task: Copied from the item so metrics need no reload of the data.
        subset: Copied from the item.
        split: Copied from the item.
        answer_index: Copied from the item.
        extra: Backend-specific details (intermediate messages, latency, token counts…); for
            detection items the parsed ``boxes`` (scored with GRIT at metrics time, never here;
            runs written before that carry a stored ``grit`` score).
        kind: ``mcq`` or ``detection`` (detection records have no ``choice``/``correct``).
        sample: What the model was shown (:class:`Sample`); ``None`` with ``--log-samples false``
            and in runs written before samples were stored.
        finish_reason: Why generation stopped (``stop``, ``length``, ``content_filter``,
            ``error``), as the backend recorded it; ``None`` when it could not tell (and in runs
            written before it was recorded).
        truncated: The reply stopped at the length limit (``finish_reason == "length"``): it was
            read only by an explicit verdict before the cut; raise the backend's
            ``max_new_tokens`` / ``max_tokens`` to let it finish.
    """

    item_id: str
    model: str
    status: RecordStatus
    choice: int | None = None
    correct: bool | None = None
    response: str | None = None
    scores: list[float] | None = None
    error: str | None = None
    task: str = ""
    subset: str | None = None
    split: str = ""
    answer_index: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    kind: ItemKind = "mcq"
    sample: Sample | None = None
    finish_reason: str | None = None
    truncated: bool = False

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe dict of every field (what :func:`dataclasses.asdict` gives, built directly).

        Every record is serialised on store and export; ``asdict`` deep-copies each leaf, which
        made this a third of a contrastive run's time outside the model.
        """
        return {name: _plain(getattr(self, name)) for name in RECORD_FIELDS}

    def to_flat(self) -> dict[str, Any]:
        """:meth:`to_dict` with the sample's fields as top-level columns (:data:`SAMPLE_COLUMNS`)."""
        d = self.to_dict()
        sample = d.pop("sample") or {}
        for name in SAMPLE_COLUMNS:
            value = sample.get(name)
            d[name] = list(value) if isinstance(value, tuple) else value
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Record:
        """Rebuild a record from :meth:`to_dict` output (runs without samples load with ``None``)."""
        d = dict(data)
        if isinstance(d.get("sample"), Mapping):
            d["sample"] = Sample.from_dict(d["sample"])
        return cls(**d)


#: The :class:`Record` fields in order: the keys of :meth:`Record.to_dict` and of a stored record.
RECORD_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Record))

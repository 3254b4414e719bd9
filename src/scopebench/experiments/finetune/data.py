"""Training data for fine-tuning: items of a benchmark split (or a build output), or a pairs file.

Nothing is dropped silently: an item that cannot train (no answer key, no image for a contrastive
model, no explanation when the target asks for one) is counted under its reason, logged, and the
counts are recorded in ``finetune.json``; a split where no item can train is refused.

The data fingerprint (SHA-256 over every example's id, image key and target text, in order) is
recorded too, so two fine-tunes can be told apart by what they were trained on.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from scopebench.benchmarks import get_benchmark
from scopebench.errors import DataFormatError, DataNotFoundError, NoItemsError
from scopebench.items import ImageRef, Item
from scopebench.protocols import caption_texts

__all__ = ["CaptionPair", "DataSource", "caption_pairs", "fingerprint", "load_split", "read_pairs_file"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DataSource:
    """Where training (or held-out) items come from, as recorded in finetune.json.

    Attributes:
        benchmark: A benchmark name (``local`` for a ``scopebench build`` output folder).
        split: The split (``None``: the benchmark's default).
        data: The data location (``--data``; empty for the demo).
    """

    benchmark: str
    split: str | None = None
    data: str = ""

    def describe(self) -> dict[str, str | None]:
        """The fields as a JSON-ready dict."""
        return {"benchmark": self.benchmark, "split": self.split, "data": self.data}


@dataclass(frozen=True)
class CaptionPair:
    """One image–caption pair for contrastive training."""

    id: str
    image: ImageRef
    caption: str
    group: str = ""


@dataclass
class Skipped:
    """Items left out of training, counted by reason (recorded, never silent)."""

    reasons: Counter[str] = field(default_factory=Counter)

    def add(self, reason: str) -> None:
        """Count one item left out for ``reason``."""
        self.reasons[reason] += 1

    def as_dict(self) -> dict[str, int]:
        """Reason → count."""
        return dict(sorted(self.reasons.items()))


def load_split(source: DataSource) -> list[Item]:
    """The items of ``source`` (loaded by the benchmark's own loader, as ``scopebench run`` does)."""
    loaded = get_benchmark(source.benchmark).load(source.data, split=source.split)
    return list(loaded.items)


def caption_pairs(items: Sequence[Item], skipped: Skipped) -> list[CaptionPair]:
    """One pair per answered MCQ item with an image: the image and the correct option's caption.

    The caption is :func:`~scopebench.protocols.caption_texts` of the item at its answer, the very
    text the ``clip:`` backend scores at evaluation, so training and evaluation cannot drift apart.
    """
    pairs = []
    for it in items:
        if it.kind != "mcq" or it.answer_index is None:
            skipped.add("no answer key")
        elif not it.images:
            skipped.add("no image")
        else:
            pairs.append(CaptionPair(it.id, it.images[0], caption_texts(it)[it.answer_index], it.task))
    return pairs


def read_pairs_file(path: Path) -> list[CaptionPair]:
    """A user's image–caption pairs: JSON Lines of ``{"image": PATH, "caption": TEXT}``.

    ``image`` is relative to the file's folder (or absolute); an optional ``id`` names the pair
    (default: its line number) and an optional ``group`` labels it for ``--group-batches``.

    Raises:
        DataNotFoundError: When the file or one of its images does not exist.
        DataFormatError: For a line that is not such an object.
    """
    if not path.is_file():
        raise DataNotFoundError(f"pairs file {path} does not exist; give a JSON Lines file of image/caption")
    pairs = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataFormatError(f"{path}:{n}: not JSON ({exc.msg}); each line is one object") from exc
        if not isinstance(row, dict) or not isinstance(row.get("image"), str) or not row.get("caption"):
            raise DataFormatError(
                f'{path}:{n}: each line needs "image" (a path) and "caption" (a text), e.g. '
                '{"image": "img/1.png", "caption": "An H&E stained section of colon."}'
            )
        image = Path(row["image"]).expanduser()
        image = image if image.is_absolute() else path.parent / image
        if not image.is_file():
            raise DataNotFoundError(f"{path}:{n}: image {image} does not exist")
        pairs.append(
            CaptionPair(
                str(row.get("id", n)),
                ImageRef(key=str(image), path=image),
                str(row["caption"]),
                str(row.get("group", "")),
            )
        )
    if not pairs:
        raise NoItemsError(f"pairs file {path} holds no pairs")
    return pairs


def fingerprint(rows: Sequence[tuple[str, str, str]]) -> str:
    """SHA-256 of ``(id, image key, target text)`` rows, in order (the training data's identity)."""
    h = hashlib.sha256()
    for row in rows:
        h.update(json.dumps(row, ensure_ascii=False).encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()


def refuse_empty(n: int, source: str, skipped: Skipped) -> None:
    """Refuse a training set with no example, naming why every item was left out.

    Raises:
        NoItemsError: When ``n`` is 0.
    """
    if n == 0:
        why = ", ".join(f"{k}: {v}" for k, v in skipped.as_dict().items()) or "no items"
        raise NoItemsError(f"{source} has no item that can train ({why})")
    if skipped.reasons:
        log.warning(
            "%s: %d items left out of training (%s)",
            source,
            sum(skipped.reasons.values()),
            ", ".join(f"{k}: {v}" for k, v in skipped.as_dict().items()),
        )

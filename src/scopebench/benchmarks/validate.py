"""What ``scopebench validate`` checks beyond loading: that every image decodes.

Loaders only look for image files (a missing one is a ``missing_image`` warning); they do not
decode them, because a run decodes each image when a model needs it. ``validate`` promises every
data problem, so it decodes every distinct image once, fully (a truncated file fails only when its
pixels are read, not when its header is), with Pillow's decompression-bomb guard on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from scopebench.benchmarks.base import LoadedBenchmark, Problem
from scopebench.errors import ImageLoadError
from scopebench.items import ImageRef

__all__ = ["ImageCheck", "check_images", "distinct_images"]


@dataclass(frozen=True, slots=True)
class ImageCheck:
    """What :func:`check_images` did.

    Attributes:
        n_checked: Distinct images decoded.
        n_skipped: Distinct images not decoded because their file is missing (already reported by
            the loader as ``missing_image``).
        problems: One ``bad_image`` error per image that could not be decoded.
    """

    n_checked: int
    n_skipped: int
    problems: list[Problem]


def distinct_images(loaded: LoadedBenchmark) -> list[tuple[ImageRef, list[str]]]:
    """Every distinct image of the benchmark with the ids of the items that show it, in item order.

    Two images are the same when they have the same file (or, without a file, the same key).
    """
    seen: dict[str, tuple[ImageRef, list[str]]] = {}
    for item in loaded.items:
        for ref in item.images:
            ident = f"path:{ref.path}" if ref.path is not None else f"key:{ref.key}"
            entry = seen.setdefault(ident, (ref, []))
            if item.id not in entry[1]:
                entry[1].append(item.id)
    return list(seen.values())


def check_images(loaded: LoadedBenchmark, *, on_image: Callable[[], object] | None = None) -> ImageCheck:
    """Decode every distinct image of ``loaded`` and report each one that fails.

    Args:
        loaded: A loaded benchmark.
        on_image: Called once per distinct image (checked or skipped), e.g. to advance a
            progress bar.

    Returns:
        Counts and one ``bad_image`` error per undecodable image, naming the image, the first
        item that shows it and how many items do. The error is an error (not a warning) because
        every one of those items would end as an error record in a run.
    """
    problems: list[Problem] = []
    n_checked = n_skipped = 0
    for ref, item_ids in distinct_images(loaded):
        if on_image is not None:
            on_image()
        if ref.path is not None and not ref.path.is_file():
            n_skipped += 1  # the loader already reported it as missing_image
            continue
        n_checked += 1
        try:
            ref.load()
        except ImageLoadError as exc:
            problems.append(
                Problem(
                    ref.describe(),
                    _record(item_ids),
                    f"{exc}; items showing it would fail in a run (replace or remove the file)",
                    severity="error",
                    kind="bad_image",
                )
            )
    return ImageCheck(n_checked, n_skipped, problems)


def _record(item_ids: Sequence[str]) -> str:
    """The first item showing an image, and how many others do."""
    more = len(item_ids) - 1
    return item_ids[0] + (f" and {more} other item(s)" if more else "")

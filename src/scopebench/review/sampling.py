"""The review sample: a seeded subset of a benchmark stratified by task and by image.

``review init --limit N`` reviews N items, not the first N rows: a benchmark file is usually
sorted by task or by image, so its head would be a few questions about one picture. The sample
instead

* gives each task a share of ``N`` proportional to its size (largest remainders, every task at
  least one item while ``N`` allows), so small tasks are reviewed too;
* within a task, takes one item per image in a seeded order before a second item of any image,
  so the reviewers see as many different images as the limit allows;
* keeps the benchmark's own order among the chosen items.

Everything random draws from ``random.Random(seed)``; the project records the seed and the
counts (:func:`sample_items` returns them) in its ``project_created`` event.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from scopebench.items import Item
from scopebench.review.errors import Invalid

__all__ = ["sample_items"]

METHOD = "stratified by task, one item per image first"


def _quotas(sizes: dict[str, int], n: int, rng: random.Random) -> dict[str, int]:
    """Share ``n`` among tasks proportionally to ``sizes`` (largest remainder, ties drawn)."""
    total = sum(sizes.values())
    tasks = sorted(sizes)
    if n >= len(tasks):  # one each first, so that a task of two items is not rounded away
        quota = {t: 1 for t in tasks}
        rest = n - len(tasks)
        spare = {t: sizes[t] - 1 for t in tasks}
    else:
        quota = dict.fromkeys(tasks, 0)
        rest = n
        spare = dict(sizes)
    spare_total = sum(spare.values())
    if rest and spare_total:
        exact = {t: rest * spare[t] / spare_total for t in tasks}
        for t in tasks:
            quota[t] += int(exact[t])
        left = n - sum(quota.values())
        order = sorted(tasks, key=lambda t: (-(exact[t] - int(exact[t])), rng.random()))
        for t in order:
            if left == 0:
                break
            if quota[t] < sizes[t]:
                quota[t] += 1
                left -= 1
    assert sum(quota.values()) == min(n, total), (quota, n, total)
    return quota


def _spread_over_images(positions: list[int], items: Sequence[Item], k: int, rng: random.Random) -> list[int]:
    """``k`` of ``positions``: round-robin over the images in a seeded order."""
    by_image: dict[str, list[int]] = defaultdict(list)
    for pos in positions:
        refs = items[pos].images
        by_image[refs[0].key if refs else f"no image: {items[pos].id}"].append(pos)
    groups = [by_image[key] for key in sorted(by_image)]
    rng.shuffle(groups)
    for group in groups:
        rng.shuffle(group)
    chosen: list[int] = []
    depth = 0
    while len(chosen) < k:
        for group in groups:
            if depth < len(group) and len(chosen) < k:
                chosen.append(group[depth])
        depth += 1
    return chosen


def sample_items(items: Sequence[Item], limit: int, seed: int) -> tuple[list[Item], dict[str, Any]]:
    """A seeded sample of ``limit`` items stratified by task and image.

    Args:
        items: The benchmark's reviewable items, in file order.
        limit: How many to keep (all of them when ``limit`` is at least ``len(items)``).
        seed: Seed of every random choice (the task ties and the image and item order).

    Returns:
        The chosen items in their file order, and the record the project keeps: method, seed,
        limit, the number of items it was drawn from, items per task and distinct images.

    Raises:
        Invalid: When ``limit`` is below 1.
    """
    if limit < 1:
        raise Invalid(f"--limit must be at least 1 (got {limit}); leave it out to load every item")
    if limit >= len(items):
        every = {"method": "all items (the limit is not below their number)", "seed": seed, "limit": limit}
        return list(items), {**every, "from_items": len(items), "items": len(items)}
    rng = random.Random(seed)
    by_task: dict[str, list[int]] = defaultdict(list)
    for pos, item in enumerate(items):
        by_task[item.task or "(no task)"].append(pos)
    quota = _quotas({t: len(p) for t, p in by_task.items()}, limit, rng)
    chosen = sorted(
        pos for task in sorted(by_task) for pos in _spread_over_images(by_task[task], items, quota[task], rng)
    )
    picked = [items[pos] for pos in chosen]
    record = {
        "method": METHOD,
        "seed": seed,
        "limit": limit,
        "from_items": len(items),
        "items": len(picked),
        "per_task": {t: quota[t] for t in sorted(quota)},
        "images": len({it.images[0].key for it in picked if it.images}),
    }
    return picked, record

"""Text-side item transforms: swapped questions (PathMMU Fig. 5) and rotated options.

* ``swap-questions[:SCOPE]`` — every item gets the question of another item while keeping its own
  options, captions, answer and images. Items are grouped by benchmark and task (``SCOPE`` =
  ``task``, the default) or by benchmark only (``all``); each group's questions are permuted by a
  seeded *derangement* (a uniformly random single cycle, Sattolo's algorithm), so no item keeps its
  own question. Items alone in their task group are pooled and deranged among themselves; a single
  item left over keeps its question (recorded as not swapped). The context text travels with the
  question. Each item records ``swap_source`` (the id whose question it got) and
  ``original_question`` in its metadata.
* ``rotate:K`` — the options (and the contrastive captions with them) move ``K`` positions later,
  wrapping around: option ``i`` becomes option ``(i + K) mod n`` and the answer index moves the same
  way. ``K`` is taken modulo each item's option count. Item ids are kept: each rotation is its own
  run (the transform is part of the run's identity), and unchanged ids let circular evaluation
  join the rotations of an item directly. Items record ``rotation`` and ``original_answer_index``.

``no-image`` is not a transform: it is :attr:`~scopebench.engine.RunConfig.no_image`.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from scopebench.errors import ScopebenchError
from scopebench.items import Item
from scopebench.transforms import register_transform

__all__ = ["derangement", "rotate_item", "rotate_items", "swap_questions"]

_SCOPES = ("task", "all")


def derangement(n: int, rng: np.random.Generator) -> list[int]:
    """A random permutation of ``range(n)`` without fixed points (a single ``n``-cycle).

    Sattolo's algorithm; for ``n ≤ 1`` the identity (no derangement exists).
    """
    perm = list(range(n))
    for i in range(n - 1, 0, -1):
        j = int(rng.integers(i))  # j < i: never swap an element with itself
        perm[i], perm[j] = perm[j], perm[i]
    return perm


def _group_rng(seed: int, key: str) -> np.random.Generator:
    digest = hashlib.sha256(f"{seed}\x00swap\x00{key}".encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


def swap_questions(items: Sequence[Item], seed: int, scope: str = "task") -> list[Item]:
    """Permute questions among ``items`` (see the module docstring); order of ``items`` is kept.

    Args:
        items: The run's items.
        seed: Seed of the derangements (each group's generator is seeded by the seed and the
            group's key, so a group's permutation does not depend on the other groups).
        scope: ``task`` (within benchmark and task) or ``all`` (within benchmark).

    Raises:
        ScopebenchError: For an unknown scope.
    """
    if scope not in _SCOPES:
        raise ScopebenchError(f"swap-questions scope must be one of {', '.join(_SCOPES)}, got {scope!r}")
    groups: dict[str, list[int]] = defaultdict(list)
    for i, it in enumerate(items):
        groups[f"{it.benchmark}/{it.task}" if scope == "task" else it.benchmark].append(i)
    # Singletons cannot be deranged within their group: pool them per benchmark.
    pools: dict[str, list[int]] = {}
    for key, members in list(groups.items()):
        if len(members) == 1 and scope == "task":
            bench = items[members[0]].benchmark
            pools.setdefault(f"{bench}/<pooled singletons>", []).extend(members)
            del groups[key]
    groups.update(pools)
    source = list(range(len(items)))
    for key in sorted(groups):
        members = sorted(groups[key], key=lambda i: items[i].id)  # order-independent
        perm = derangement(len(members), _group_rng(seed, key))
        for pos, idx in enumerate(members):
            source[idx] = members[perm[pos]]
    out = []
    for i, it in enumerate(items):
        src = items[source[i]]
        meta = {
            **it.metadata,
            "swap_source": src.id,
            "swapped": src.id != it.id,
            "original_question": it.question,
        }
        out.append(replace(it, question=src.question, context=src.context, metadata=meta))
    return out


def rotate_item(item: Item, k: int) -> Item:
    """``item`` with its options (and captions) moved ``k`` positions later, answer moved along."""
    n = len(item.choices)
    if n == 0:
        return item
    shift = k % n

    def rot(seq: Sequence[str]) -> tuple[str, ...]:
        # new[(i + shift) % n] = old[i]
        return tuple(seq[(j - shift) % n] for j in range(n))

    answer = None if item.answer_index is None else (item.answer_index + shift) % n
    captions = rot(item.captions) if item.captions is not None and len(item.captions) == n else item.captions
    meta = {**item.metadata, "rotation": shift, "original_answer_index": item.answer_index}
    return replace(item, choices=rot(item.choices), captions=captions, answer_index=answer, metadata=meta)


def rotate_items(items: Sequence[Item], k: int) -> list[Item]:
    """Every item rotated by ``k`` (see :func:`rotate_item`)."""
    return [rotate_item(it, k) for it in items]


@register_transform("swap-questions")
def _swap_transform(items: Sequence[Item], arg: str, seed: int) -> list[Item]:
    """``swap-questions[:task|all]`` — questions deranged among items (PathMMU Fig. 5)."""
    return swap_questions(items, seed, arg or "task")


@register_transform("rotate")
def _rotate_transform(items: Sequence[Item], arg: str, seed: int) -> list[Item]:
    """``rotate:K`` — options rotated ``K`` positions (circular evaluation)."""
    try:
        k = int(arg)
    except ValueError:
        raise ScopebenchError(f"the rotate transform takes an integer (rotate:K), got {arg!r}") from None
    if k < 0:
        raise ScopebenchError(f"rotate:K needs K ≥ 0, got {k}")
    return rotate_items(items, k)

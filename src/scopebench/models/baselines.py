"""Baselines that need no model: seeded random choice and PathMMU's frequent choice."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from scopebench.items import Item
from scopebench.models.base import Backend, ModelOptions, Response
from scopebench.models.registry import split_spec

__all__ = ["FrequentBackend", "RandomBackend", "normalise_option"]


def normalise_option(text: str) -> str:
    """Case- and space-insensitive form of an option text, used to count identical options."""
    return " ".join(text.lower().split()).rstrip(".")


class RandomBackend(Backend):
    """Uniform choice among each item's options.

    The draw for an item depends only on the seed and the item id (not on batch order or on which
    items a resumed run still has to do), so results are identical however the run is split.
    """

    mode = "baseline"
    needs_images = False

    def __init__(self, spec: str, options: ModelOptions) -> None:
        split_spec(spec)
        super().__init__(spec, options)

    def _rng(self, item_id: str) -> np.random.Generator:
        digest = hashlib.sha256(f"{self.options.seed}:{item_id}".encode()).digest()
        return np.random.default_rng(int.from_bytes(digest[:8], "little"))

    def predict(self, items: Sequence[Item]) -> list[Response]:
        """Pick one option uniformly at random per item (seeded per item)."""
        out = []
        for it in items:
            if not it.choices:
                out.append(Response(it.id, status="error", error="item has no options to choose from"))
                continue
            n = len(it.choices)
            out.append(Response(it.id, choice=int(self._rng(it.id).integers(n)), scores=[1.0 / n] * n))
        return out

    def identity(self) -> dict[str, Any]:
        """Spec, mode and seed."""
        return {**super().identity(), "seed": self.options.seed}


class FrequentBackend(Backend):
    """PathMMU's "Frequent Choice" baseline.

    How it is computed: over all items of the evaluated split (every item the run sees, as given
    to :meth:`prepare`), count how often each option text (compared case- and space-insensitively)
    is the correct answer. For each item, pick the option whose text is most often correct among
    the *other* items — leave-one-out, so an item's own label never votes for itself (counting it
    would make every answer whose text is unique in the split a certain hit: 100% on data with
    free-text answers). Ties are broken by the lowest option index, so the result is
    deterministic; an item none of whose options is correct elsewhere gets its first option.
    Leave-one-out majority is biased low on perfectly balanced tasks (6 + 6 answers of a binary
    task: each item sees its own class at 5 against 6 and scores 0%), which is the honest price of
    never reading the label; the reports show it beside the random baseline.
    """

    mode = "baseline"
    needs_images = False

    def __init__(self, spec: str, options: ModelOptions) -> None:
        split_spec(spec)
        super().__init__(spec, options)
        self.answer_counts: Counter[str] = Counter()

    def prepare(self, items: Sequence[Item]) -> None:
        """Count correct-answer texts over the evaluated items."""
        self.answer_counts = Counter(
            normalise_option(it.choices[it.answer_index])
            for it in items
            if it.answer_index is not None and it.choices
        )

    def predict(self, items: Sequence[Item]) -> list[Response]:
        """Pick the option whose text is most often correct in the evaluated split."""
        out = []
        for it in items:
            if not it.choices:
                out.append(Response(it.id, status="error", error="item has no options to choose from"))
                continue
            counts = [self.answer_counts[normalise_option(c)] for c in it.choices]
            if it.answer_index is not None and 0 <= it.answer_index < len(counts):
                counts[it.answer_index] -= 1  # leave this item's own answer out
            # max() returns the first maximal element: the lowest index wins ties.
            best = max(range(len(counts)), key=lambda i: counts[i])
            # Counts are not probabilities, so they go to `extra`, not `scores` (calibration
            # metrics read `scores`).
            out.append(Response(it.id, choice=best, extra={"answer_counts": counts}))
        return out

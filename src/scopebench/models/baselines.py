"""Baselines that need no model: seeded random choice and the papers' frequent choice."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from scopebench.items import Item
from scopebench.models.base import Backend, ModelOptions, Response
from scopebench.models.registry import ModelSpec, parse_spec
from scopebench.protocols import Request

__all__ = [
    "REFERENCE_SPLITS",
    "FrequentBackend",
    "FrequentTextLOOBackend",
    "RandomBackend",
    "normalise_option",
]


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

    takes_model_spec = True

    def __init__(self, spec: str | ModelSpec, options: ModelOptions) -> None:
        parse_spec(spec)  # refuses a malformed spec (``random:x``); a ModelSpec passes through
        super().__init__(spec, options)

    def _rng(self, item_id: str) -> np.random.Generator:
        digest = hashlib.sha256(f"{self.options.seed}:{item_id}".encode()).digest()
        return np.random.default_rng(int.from_bytes(digest[:8], "little"))

    def answer(self, requests: Sequence[Request]) -> list[Response]:
        """Pick one option uniformly at random per item (seeded per item)."""
        items = [r.item for r in requests]
        out = []
        for it in items:
            if not it.choices:
                out.append(Response(it.id, status="error", error="item has no options to choose from"))
                continue
            n = len(it.choices)
            out.append(
                Response(
                    it.id,
                    choice=int(self._rng(it.id).integers(n)),
                    scores=[1.0 / n] * n,
                    finish_reason="stop",
                )
            )
        return out

    def identity(self) -> dict[str, Any]:
        """Spec, mode and seed."""
        return {**super().identity(), "seed": self.options.seed}


#: Splits that serve as the frequent-choice reference set when a run holds them (MMMU counts
#: answer letters on its validation set and applies them to every split).
REFERENCE_SPLITS: tuple[str, ...] = ("val", "validation")


def _seeded_order(seed: int, key: str, n: int) -> list[int]:
    """A permutation of ``range(n)`` fixed by ``seed`` and ``key`` (the tie-break order)."""
    digest = hashlib.sha256(f"{seed}:frequent:{key}".encode()).digest()
    return [int(i) for i in np.random.default_rng(int.from_bytes(digest[:8], "little")).permutation(n)]


class FrequentBackend(Backend):
    """MMMU's "Frequent Choice" baseline, which PathMMU reports as its "Frequent Choice" row.

    Definition (MMMU, Yue et al. 2024, §4.1): "selects the most frequent option within each
    specific subject of the validation set, based on its frequency of occurrence in that subject".
    Here a subject is an item's ``task`` (PathMMU: its subset), and an option is an answer
    *position* (letter A, B, …), the only thing MMMU's questions share:

    1. For each task, the reference items are those of the validation split (``val`` or
       ``validation``) when the run holds any for that task; otherwise every evaluated item of
       that task (in-sample — the letter frequencies then include the items' own answers, which is
       what makes the score read as "the best constant letter", at or a little above chance).
    2. Count how often each letter is the correct answer among the reference items.
    3. Every item of the task gets the most frequent letter; an item with fewer options than that
       letter's position gets the most frequent letter it has. Ties between letters are broken by
       a permutation seeded by the run seed and the task, so the result is deterministic and the
       seed is recorded (:meth:`identity`).

    :attr:`reference` says, per task, which split the letters were counted on and on how many
    items; each response's ``extra`` carries its task's letter counts.
    """

    mode = "baseline"
    needs_images = False
    item_set_dependent = True  # counts over the evaluated items (prepare)

    takes_model_spec = True

    def __init__(self, spec: str | ModelSpec, options: ModelOptions) -> None:
        parse_spec(spec)  # refuses a malformed spec (``random:x``); a ModelSpec passes through
        super().__init__(spec, options)
        self.letter_counts: dict[str, list[int]] = {}
        self.ranking: dict[str, list[int]] = {}
        self.reference: dict[str, dict[str, Any]] = {}

    def prepare(self, items: Sequence[Item]) -> None:
        """Count correct answer letters per task on the reference items (see the class doc)."""
        by_task: dict[str, list[Item]] = {}
        for it in items:
            if it.answer_index is not None and it.choices:
                by_task.setdefault(it.task, []).append(it)
        self.letter_counts, self.ranking, self.reference = {}, {}, {}
        for task, task_items in sorted(by_task.items()):
            ref = [it for it in task_items if it.split in REFERENCE_SPLITS]
            where = sorted({it.split for it in ref}) if ref else ["evaluated items (in-sample)"]
            ref = ref or task_items
            width = max(len(it.choices) for it in task_items)
            counts = [0] * width
            for it in ref:
                if it.answer_index is not None and it.answer_index < width:
                    counts[it.answer_index] += 1
            order = _seeded_order(self.options.seed, task, width)
            self.letter_counts[task] = counts
            self.ranking[task] = sorted(range(width), key=lambda i: (-counts[i], order[i]))
            self.reference[task] = {"split": ", ".join(where), "n": len(ref), "letter_counts": counts}

    def answer(self, requests: Sequence[Request]) -> list[Response]:
        """Answer every item with its task's most frequent letter (that the item has)."""
        items = [r.item for r in requests]
        out = []
        for it in items:
            if not it.choices:
                out.append(Response(it.id, status="error", error="item has no options to choose from"))
                continue
            ranking = self.ranking.get(it.task)
            if ranking is None:
                # An item prepare() never saw (no answer key): no letter frequencies to follow.
                out.append(
                    Response(it.id, status="error", error=f"no frequent-choice counts for task {it.task!r}")
                )
                continue
            best = next((i for i in ranking if i < len(it.choices)), 0)
            # Counts are not probabilities, so they go to `extra`, not `scores` (calibration
            # metrics read `scores`).
            out.append(
                Response(
                    it.id,
                    choice=best,
                    extra={"letter_counts": self.letter_counts[it.task]},
                    finish_reason="stop",
                )
            )
        return out

    def identity(self) -> dict[str, Any]:
        """Spec, mode and seed (the seed breaks ties between equally frequent letters)."""
        return {**super().identity(), "seed": self.options.seed}


class FrequentTextLOOBackend(Backend):
    """Variant ``frequent-text-loo``: the most frequent correct answer *text*, leave-one-out.

    Not the papers' baseline (that is :class:`FrequentBackend`); a text-shortcut probe: over all
    evaluated items, count how often each option text (case- and space-insensitive) is the correct
    answer, and pick for each item the option whose text is most often correct among the *other*
    items (leave-one-out, so an item's own label never votes for itself). Ties: lowest index; an
    item none of whose options is correct elsewhere gets its first option. Leave-one-out majority
    is biased low on balanced tasks (6 + 6 answers of a binary task score 0%), so it reads far
    below chance on data without repeated answer texts.
    """

    mode = "baseline"
    needs_images = False
    item_set_dependent = True  # counts over the evaluated items (prepare)

    takes_model_spec = True

    def __init__(self, spec: str | ModelSpec, options: ModelOptions) -> None:
        parse_spec(spec)  # refuses a malformed spec (``random:x``); a ModelSpec passes through
        super().__init__(spec, options)
        self.answer_counts: Counter[str] = Counter()

    def prepare(self, items: Sequence[Item]) -> None:
        """Count correct-answer texts over the evaluated items."""
        self.answer_counts = Counter(
            normalise_option(it.choices[it.answer_index])
            for it in items
            if it.answer_index is not None and it.choices
        )

    def answer(self, requests: Sequence[Request]) -> list[Response]:
        """Pick the option whose text is most often correct among the other evaluated items."""
        items = [r.item for r in requests]
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
            out.append(Response(it.id, choice=best, extra={"answer_counts": counts}, finish_reason="stop"))
        return out

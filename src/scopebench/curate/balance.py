"""Where each item's correct option goes: answer positions balanced per task, with a recorded seed.

A benchmark whose answers favour one letter rewards a model that always picks it (the ``frequent``
baseline). So every step that writes or keeps items places their answers here:

* an item's **layout** says which slots its answer may take: every slot, except a "None of the
  above" option (it stays where it is, last) — and none at all when an *option text* names other
  options by position ("Both A and C", "All of the above", "option B"): moving those would make them
  wrong. Panel letters ("Panels A and C", "Fig. B") are not option references and never block;
* :func:`assign_positions` gives the answers of one task their slots so that each letter is the
  answer equally often (per option count; ``⌊m/k⌋`` or ``⌈m/k⌉`` times over ``m`` movable items),
  fixed items counted first, ties broken by a seeded order;
* :func:`reorder` moves the answer to its slot and shuffles the other movable options with the
  item's own seeded generator; :func:`relabel` rewrites "option B"-style references in the question
  and explanation to the new letters;
* :func:`position_stats` is what ``build.json`` and the card publish per task: letter counts, the
  chi-square statistic against the uniform spread (``scipy.stats.chisquare``, expected counts from
  each item's own option count), chance, and the share of the most frequent letter next to chance
  plus the stated margin (one item: ``1/n``).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "NOTA",
    "Layout",
    "assign_positions",
    "layout",
    "names_positions",
    "position_stats",
    "relabel",
    "reorder",
    "rng_for",
    "stats_markdown",
]

#: "None of the above", compared after :func:`_norm`; it stays in its slot (last).
NOTA = "none of the above"
_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
#: Panel and figure letters: "Panel A", "Panels A and C", "panels B–D", "Fig. 2B", "(A)" after "panel".
_PANELS = re.compile(
    r"\b(?:panels?|figs?\.?|figures?|subfigures?|insets?)\s*\(?[0-9]*[A-Za-z]\)?"
    r"(?:\s*(?:,|and|or|&|-|–|to)\s*\(?[A-Za-z]\)?)*",
    re.IGNORECASE,
)
#: An option text naming other options by position.
_POSITIONAL = re.compile(
    r"\b(?i:options?|choices?|answers?)\s+\(?[A-F]\)?(?![\w'])"
    r"|(?<![\w(])\(?[A-F]\)?\s*(?:,\s*\(?[A-F]\)?\s*)*(?:and|or|&|nor)\s+\(?[A-F]\b"
    r"|\b(?i:(?:all|both|neither|none|any) of the (?:above|below|options|choices|others|previous))\b"
    r"|\b(?i:(?:first|second|third|fourth|fifth|last|previous|above) (?:two |three )?"
    r"(?:options?|choices?|answers?))\b"
)
#: An option reference in a question or explanation ("option B", "the answer is (C)").
_REFERENCE = re.compile(r"\b((?i:options?|choices?|answers?)\s+(?:(?i:is)\s+)?\(?)([A-Z])(\)?)(?![\w'])")


def _norm(text: str) -> str:
    return " ".join(text.split()).strip().rstrip(".").casefold()


def rng_for(seed: int, *parts: str) -> np.random.Generator:
    """A generator fixed by ``seed`` and ``parts`` (independent of every other item's)."""
    digest = hashlib.sha256("\0".join(parts).encode()).digest()
    return np.random.default_rng([seed, int.from_bytes(digest[:8], "big")])


def names_positions(options: Sequence[str]) -> bool:
    """Whether an option text (other than "None of the above") names other options by position.

    Panel letters are taken out first, so "Panels A and C" is an ordinary option.
    """
    for o in options:
        if _norm(o) == NOTA:
            continue
        if _POSITIONAL.search(_PANELS.sub(" ", o)):
            return True
    return False


@dataclass(frozen=True)
class Layout:
    """The slots an item's answer may take.

    Attributes:
        width: Number of options.
        answer: The answer's current index.
        slots: Indices the answer may move to (``()``: it stays where it is).
        fixed_by: Why it stays (``names_positions``, ``answer_is_nota``, ``not_shuffled``), or ``""``.
    """

    width: int
    answer: int
    slots: tuple[int, ...]
    fixed_by: str = ""


def layout(options: Sequence[str], answer: int, *, movable: bool = True) -> Layout:
    """The layout of one item (module docstring)."""
    n = len(options)
    if not movable:
        return Layout(n, answer, (), "not_shuffled")
    if names_positions(options):
        return Layout(n, answer, (), "names_positions")
    nota = {i for i, o in enumerate(options) if _norm(o) == NOTA}
    if answer in nota:
        return Layout(n, answer, (), "answer_is_nota")
    return Layout(n, answer, tuple(i for i in range(n) if i not in nota))


def assign_positions(
    layouts: Sequence[Layout], rng: np.random.Generator, outer: Counter[int] | None = None
) -> list[int]:
    """The answer slot of every item of one task: balanced per option count, fixed items first.

    Items are grouped by (option count, slots). Within a group each answer goes to the slot whose
    letter is the answer least often so far — counting the group's fixed items of the same option
    count — then least often in ``outer`` (the task's totals elsewhere, e.g. in the other splits),
    then by a seeded order; the group's letters are then shuffled over its items.

    Args:
        layouts: One per item.
        rng: The task's generator (seeded; recorded by the caller).
        outer: Letter totals of the task so far (updated in place); a new counter when ``None``.

    Returns:
        The new answer index of every item (fixed items keep theirs).
    """
    totals = outer if outer is not None else Counter()
    out = [lay.answer for lay in layouts]
    groups: dict[tuple[int, tuple[int, ...]], list[int]] = defaultdict(list)
    fixed: dict[int, Counter[int]] = defaultdict(Counter)
    for i, lay in enumerate(layouts):
        if lay.slots:
            groups[(lay.width, lay.slots)].append(i)
        else:
            fixed[lay.width][lay.answer] += 1
            totals[lay.answer] += 1
    for (width, slots), idxs in sorted(groups.items()):
        order = rng.permutation(max(width, max(slots) + 1))
        have = Counter({s: fixed[width][s] for s in slots})
        bag = []
        for _ in idxs:
            pick = min(slots, key=lambda s: (have[s], totals[s], order[s]))
            have[pick] += 1
            totals[pick] += 1
            bag.append(pick)
        for i, k in zip(idxs, rng.permutation(len(bag)), strict=True):
            out[i] = bag[int(k)]
    return out


def reorder(
    options: Sequence[str], lay: Layout, target: int, rng: np.random.Generator
) -> tuple[list[str], int, list[int]]:
    """Options with the answer at ``target`` and the other movable options shuffled.

    Returns:
        The options, the answer's index (``target``) and ``order`` (new slot → old index).
    """
    if not lay.slots:
        return list(options), lay.answer, list(range(len(options)))
    others = [i for i in lay.slots if i != lay.answer]
    shuffled = [others[int(k)] for k in rng.permutation(len(others))]
    order = list(range(len(options)))
    order[target] = lay.answer
    for slot, old in zip([s for s in lay.slots if s != target], shuffled, strict=True):
        order[slot] = old
    return [options[i] for i in order], target, order


def relabel(text: str, order: Sequence[int]) -> str:
    """``text`` with "option B"-style references moved to the options' new letters."""
    if not text or list(order) == list(range(len(order))):
        return text
    new_of = {old: new for new, old in enumerate(order)}

    def sub(m: re.Match[str]) -> str:
        old = _LETTERS.index(m.group(2))
        if old >= len(order):
            return m.group(0)
        return f"{m.group(1)}{_LETTERS[new_of[old]]}{m.group(3)}"

    return _REFERENCE.sub(sub, text)


def position_stats(answers: Sequence[int], widths: Sequence[int]) -> dict[str, Any]:
    """Letter counts of one task and how far they are from uniform.

    Returns:
        ``counts`` (per letter, over the widest item), ``n``, ``chi2`` and ``p``
        (``scipy.stats.chisquare``; expected counts ``Σ 1/k`` over the items having that letter),
        ``chance`` (mean of ``1/k``), ``max_share`` (the most frequent letter's share: what the
        ``frequent`` baseline scores when every item has the same option count), ``margin``
        (``1/n``: one item) and ``within_margin`` (``max_share ≤ chance + margin``).
    """
    from scipy.stats import chisquare

    n = len(answers)
    if n == 0:
        return {"counts": [], "n": 0, "chi2": 0.0, "p": 1.0, "chance": None, "max_share": None,
                "margin": None, "within_margin": True}  # fmt: skip
    width = max(widths)
    counts = np.bincount(np.asarray(answers, dtype=int), minlength=width).tolist()
    expected = np.zeros(width)
    for k in widths:
        expected[:k] += 1.0 / k
    used = expected > 0
    chi2, p = 0.0, 1.0
    if used.sum() >= 2:
        res = chisquare(np.asarray(counts)[used], f_exp=expected[used])
        chi2, p = float(res.statistic), float(res.pvalue)
    chance = float(np.mean([1.0 / k for k in widths]))
    share = max(counts) / n
    return {"counts": counts, "n": n, "chi2": chi2, "p": p, "chance": chance, "max_share": share,
            "margin": 1.0 / n, "within_margin": share <= chance + 1.0 / n + 1e-12}  # fmt: skip


def stats_markdown(per_task: dict[str, dict[str, Any]], title: str = "Answer balance") -> list[str]:
    """A Markdown table of :func:`position_stats` per task (the card's answer-balance section)."""
    lines = [f"## {title}", "", "Correct-letter counts per task, their chi-square against a uniform "
             "spread, and the most frequent letter's share next to chance (+ 1/n, one item).", "",
             "| task | items | letter counts | chi-square | p | most frequent letter | chance + 1/n |",
             "|---|---:|---|---:|---:|---:|---:|"]  # fmt: skip
    for task, s in sorted(per_task.items()):
        if not s["n"]:
            continue
        lines.append(
            f"| {task} | {s['n']} | {s['counts']} | {s['chi2']:.3f} | {s['p']:.3f} | "
            f"{100 * s['max_share']:.1f}% | {100 * min(1.0, s['chance'] + s['margin']):.1f}% |"
        )
    return [*lines, ""]

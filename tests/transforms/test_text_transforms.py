"""Question swap (seeded derangement keeping options/answers) and option rotation."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest

from scopebench.errors import ScopebenchError
from scopebench.items import Item
from scopebench.transforms import apply_transform
from scopebench.transforms.text import derangement, rotate_item, swap_questions


def _items(n: int, tasks: tuple[str, ...] = ("t1", "t2")) -> list[Item]:
    return [
        Item(
            id=f"b/{i:03d}",
            benchmark="b",
            split="test",
            task=tasks[i % len(tasks)],
            question=f"question {i}?",
            context=f"context {i}",
            choices=tuple(f"opt {i}.{j}" for j in range(4)),
            answer_index=i % 4,
            captions=tuple(f"caption {i}.{j}" for j in range(4)),
        )
        for i in range(n)
    ]


def test_derangement_has_no_fixed_points() -> None:
    rng = np.random.default_rng(0)
    for n in range(2, 30):
        perm = derangement(n, rng)
        assert sorted(perm) == list(range(n)) and all(p != i for i, p in enumerate(perm))
    assert derangement(1, rng) == [0] and derangement(0, rng) == []


def test_swap_is_a_seeded_permutation_within_task_keeping_options_and_answers() -> None:
    items = _items(20)
    out = swap_questions(items, seed=4)
    assert out == swap_questions(items, seed=4)  # deterministic
    assert [o.question for o in out] != [o.question for o in swap_questions(items, seed=5)]
    by_id = {it.id: it for it in items}
    for task in ("t1", "t2"):
        orig = sorted(it.question for it in items if it.task == task)
        assert sorted(o.question for o in out if o.task == task) == orig  # a permutation within task
    for it, o in zip(items, out, strict=True):
        assert (o.id, o.choices, o.answer_index, o.captions, o.images) == (
            it.id,
            it.choices,
            it.answer_index,
            it.captions,
            it.images,
        )
        assert o.question != it.question  # a derangement: nobody keeps its question
        src = by_id[o.metadata["swap_source"]]
        assert o.question == src.question and o.context == src.context and src.task == it.task
        assert o.metadata["original_question"] == it.question and o.metadata["swapped"] is True


def test_swap_does_not_depend_on_item_order() -> None:
    items = _items(15)
    shuffled = items[:]
    random.Random(1).shuffle(shuffled)
    a = {o.id: o.question for o in swap_questions(items, seed=2)}
    b = {o.id: o.question for o in swap_questions(shuffled, seed=2)}
    assert a == b


def test_singleton_tasks_are_pooled_and_scope_all_crosses_tasks() -> None:
    items = _items(3, tasks=("a", "b", "c"))  # three tasks of one item each
    out = swap_questions(items, seed=0)
    assert all(o.question != it.question for o, it in zip(out, items, strict=True))
    lone = swap_questions(_items(1), seed=0)[0]
    assert lone.question == "question 0?" and lone.metadata["swapped"] is False
    crossed = swap_questions(_items(12), seed=0, scope="all")
    tasks = {it.id: it.task for it in _items(12)}
    assert any(tasks[o.metadata["swap_source"]] != o.task for o in crossed)
    with pytest.raises(ScopebenchError, match="scope"):
        swap_questions(items, seed=0, scope="split")


def test_rotation_moves_answer_options_and_captions() -> None:
    it = _items(2)[1]  # answer 1 ("opt 1.1")
    r1 = rotate_item(it, 1)
    assert r1.choices == ("opt 1.3", "opt 1.0", "opt 1.1", "opt 1.2")
    assert r1.answer_index == 2 and r1.answer_text == it.answer_text
    assert r1.captions == ("caption 1.3", "caption 1.0", "caption 1.1", "caption 1.2")
    assert r1.metadata["rotation"] == 1 and r1.metadata["original_answer_index"] == 1
    for k in range(9):
        rk = rotate_item(it, k)
        assert rk.answer_index == (1 + k) % 4 and rk.answer_text == "opt 1.1"
        assert rk.id == it.id
    assert rotate_item(it, 4).choices == it.choices and rotate_item(it, 6) == rotate_item(it, 2)
    # Every position is the answer exactly once over the n rotations.
    assert Counter(rotate_item(it, k).answer_index for k in range(4)) == Counter(range(4))


def test_rotate_transform_through_the_registry() -> None:
    items = _items(5)
    out = apply_transform("rotate:3", items, 0)
    assert [o.answer_index for o in out] == [(i % 4 + 3) % 4 for i in range(5)]
    three = Item(
        id="x", benchmark="b", split="s", task="t", question="?", choices=("a", "b", "c"), answer_index=2
    )
    assert apply_transform("rotate:3", [three], 0)[0] == rotate_item(three, 0)  # 3 ≡ 0 for 3 options
    for bad in ("rotate:x", "rotate:-1"):
        with pytest.raises(ScopebenchError, match="rotate"):
            apply_transform(bad, items, 0)
    swapped = apply_transform("swap-questions", items, 1)
    assert swapped == swap_questions(items, 1)

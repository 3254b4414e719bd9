"""The text-shortcut rule: when models that do not see the image answer a question right.

PathMMU drops a question when at least 3 of 4 text-only models answer it correctly; SPUR when one
model is correct in at least 5 of 10 tries; MMMU-Pro applies the same test to the options alone.
All of them are one rule over the correct tries of each model: a model *answers right* when it is
correct in at least ``min_tries`` of its tries, and a question is *flagged* when at least
``min_models`` models answer it right. Failed and unparsed tries are tries that were not correct.

``scopebench probe shortcut`` (its K-of-N and r-of-R rules) and the build's shortcut gate and
RefineBot both decide with :func:`flagged`; this module is the one place the rule lives.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

__all__ = ["ModelCorrect", "answers_right", "flagged", "min_tries_for"]

#: How many tries a model must get right to answer a question right, in the probe's words.
ModelCorrect = Literal["majority", "any", "all"]


def min_tries_for(how: ModelCorrect, n_tries: int) -> int:
    """The correct tries ``how`` asks for out of ``n_tries``: more than half, one, or all."""
    if how == "majority":
        return n_tries // 2 + 1
    if how == "any":
        return 1
    return n_tries


def answers_right(n_correct: int, min_tries: int) -> bool:
    """Whether a model correct in ``n_correct`` tries answers the question right (``min_tries`` ≥ 1)."""
    return n_correct >= max(1, min_tries)


def flagged(correct_tries: Mapping[str, int], *, min_models: int, min_tries: int) -> bool:
    """Whether at least ``min_models`` models are correct in at least ``min_tries`` of their tries.

    Args:
        correct_tries: Per model, its correct tries on one question.
        min_models: Models that must answer right (``k`` of ``n``).
        min_tries: Correct tries a model needs (``r`` of ``R``).
    """
    return sum(answers_right(n, min_tries) for n in correct_tries.values()) >= min_models

"""The k-of-n text-shortcut rule shared by ``probe shortcut`` and the build's gates."""

from __future__ import annotations

import pytest

from scopebench.scoring.shortcut import answers_right, flagged, min_tries_for


@pytest.mark.parametrize(
    ("how", "n", "need"),
    [("majority", 1, 1), ("majority", 4, 3), ("majority", 5, 3), ("any", 10, 1), ("all", 10, 10)],
)
def test_min_tries_for(how: str, n: int, need: int) -> None:
    # Catches "majority" read as at least half (2 of 4) instead of more than half (3 of 4).
    assert min_tries_for(how, n) == need  # type: ignore[arg-type]


def test_pathmmu_and_spur_rules() -> None:
    # Catches a rule that counts tries across models (SPUR's r is one model's) or drops a model.
    three_of_four = {"a": 1, "b": 1, "c": 1, "d": 0}
    assert flagged(three_of_four, min_models=3, min_tries=1)
    assert not flagged({**three_of_four, "c": 0}, min_models=3, min_tries=1)
    assert flagged({"gpt": 5}, min_models=1, min_tries=5) and not flagged(
        {"gpt": 4}, min_models=1, min_tries=5
    )
    assert not flagged(
        {"a": 3, "b": 2}, min_models=1, min_tries=4
    )  # 5 tries over two models are not 4 of one
    assert answers_right(1, 0) and not answers_right(0, 0)  # a model with no correct try never answers right

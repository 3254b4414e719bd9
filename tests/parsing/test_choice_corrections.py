"""Several self-corrections in one reply: the last one wins (a planted bug reading the first survived)."""

from __future__ import annotations

import pytest

from scopebench.parsing.choice import parse_choice

CHOICES = ["Adenocarcinoma", "Squamous cell carcinoma", "Small cell carcinoma", "Large cell carcinoma"]


@pytest.mark.parametrize(
    ("reply", "index", "marker"),
    [
        # Two markers, each with an answer after it: the answer after the *last* one is final. Taking
        # the first marker instead sees B and C after it and leaves the reply unparsed.
        ("The answer is A. Wait, it is B. Wait — no, the answer is C.", 2, "Wait"),
        (
            "The answer is A. Actually, the answer is B. On second thought, the answer is C.",
            2,
            "On second thought",
        ),
    ],
)
def test_the_last_of_several_self_corrections_wins(reply: str, index: int, marker: str) -> None:
    result = parse_choice(reply, CHOICES)
    assert result.index == index
    assert f"self-correction {marker!r}" in result.reason

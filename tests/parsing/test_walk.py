"""Walk-throughs and "the former/the latter" (parsing/_walk.py): the reasons a user reads."""

from __future__ import annotations

from scopebench.parsing import parse_choice

_OPTIONS = ["Whorled pattern", "Spindle cells", "Rosette formation", "Necrosis"]


def test_former_latter_reason_names_the_option_by_its_label() -> None:
    # The reason is what a user reads in the record to see why D was chosen: it must name D, in
    # the run's label style (not "option None", not "option 4" under letters).
    got = parse_choice("B or D: the latter.", _OPTIONS)
    assert got.index == 3 and got.method == "former_latter"
    assert got.reason == "'the latter' refers to option D, the latter of two named"
    got = parse_choice("1 or 3? The former fits better.", _OPTIONS, labels="numbers")
    assert (got.index, got.reason) == (0, "'the former' refers to option 1, the former of two named")


def test_former_latter_not_chosen_reason() -> None:
    got = parse_choice("Between B and D, the stain makes me doubt the latter.", _OPTIONS)
    assert got.index is None and got.method == "former_latter"
    assert got.reason == "'the latter' refers to option D but does not choose it"


def test_walk_through_reason() -> None:
    got = parse_choice("A: no. B: no. C: yes. D: no.", _OPTIONS)
    assert (got.index, got.method) == (2, "walk_through")
    assert got.reason == "walk-through marks only option C as fitting"

from __future__ import annotations

import pytest

from scopebench.errors import ModelSpecError
from scopebench.items import Item
from scopebench.protocols import caption_texts, render_prompt, resolve_protocol


def _item(benchmark: str = "pathmmu", captions: tuple[str, ...] | None = None) -> Item:
    return Item(
        id="x/1",
        benchmark=benchmark,
        split="test",
        task="t",
        question="What pattern do the cells show?",
        choices=("Random", "Palisading", "Whorled"),
        answer_index=2,
        captions=captions,
    )


def test_pathmmu_owner_prompt_is_llava_template() -> None:
    p = render_prompt(_item(), "owner")
    assert p.protocol == "pathmmu-owner"
    assert p.text == (
        "What pattern do the cells show?\n\n(A) Random\n(B) Palisading\n(C) Whorled\n\n"
        "Answer with the option's letter from the given choices directly."
    )
    assert p.option_labels == ("A", "B", "C") and p.labels == "letters"


def test_ubench_owner_prompt() -> None:
    p = render_prompt(_item("ubench"), "owner")
    assert p.text == (
        "Answer with a single letter, no extra details.\nQuestion: What pattern do the cells show?\n"
        "A) Random\nB) Palisading\nC) Whorled\n"
    )


def test_microvqa_owner_numbers_options() -> None:
    p = render_prompt(_item("microvqa"), "owner")
    assert p.labels == "numbers" and p.option_labels == ("1", "2", "3")
    assert "  (1): Random\n  (2): Palisading\n  (3): Whorled" in p.text
    assert p.text.startswith("The following is a multiple choice question (with answers). \n")


def test_spur_owner_has_system_instruction() -> None:
    p = render_prompt(_item("spur"), "owner")
    assert p.system is not None and "<ANSWER>" in p.system
    assert p.text.endswith("A. Random B. Palisading C. Whorled")


def test_default_prompt_and_no_image() -> None:
    p = render_prompt(_item("local"), "default", no_image=True)
    assert p.images == ()
    assert "A) Random\nB) Palisading\nC) Whorled" in p.text
    assert p.text.endswith("(A, B, C) only.")


def test_unknown_protocols() -> None:
    with pytest.raises(ModelSpecError, match="no owner protocol"):
        resolve_protocol("owner", "local")
    with pytest.raises(ModelSpecError, match="unknown protocol"):
        resolve_protocol("fancy", "pathmmu")


def test_caption_texts() -> None:
    caps = ("A micrograph of random cells.", "A palisade.", "A whorl.")
    assert caption_texts(_item(captions=caps)) == list(caps)
    assert caption_texts(_item())[1] == "What pattern do the cells show? Palisading"

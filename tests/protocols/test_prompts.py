from __future__ import annotations

from pathlib import Path

import pytest

from scopebench.benchmarks.pathmmu import pathmmu_option_text
from scopebench.benchmarks.registry import get_benchmark
from scopebench.errors import ModelSpecError
from scopebench.items import Item
from scopebench.protocols import caption_texts, render_prompt, resolve_protocol

FIXTURES = Path(__file__).parents[1] / "fixtures"


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


def test_pathmmu_owner_prompt_is_llava_template_byte_for_byte() -> None:
    # PathMMU-Benchmark/PathMMU eval/configs/llava1.5.yaml (commit f1ca4d3):
    #     multi_choice_example_format:
    #     - '{}
    #
    #     {}
    #
    #     Answer with the option''s letter from the given choices directly.'
    # A blank line inside a single-quoted YAML scalar folds to one "\n", so the format string is
    # "{}\n{}\nAnswer with the option's letter from the given choices directly."; eval/utils/
    # data_utils.py construct_prompt fills the second {} with "(A) text\n" per option. So: ONE
    # newline between question and options (we used to add a blank line), a blank line before
    # the instruction, no trailing newline.
    p = render_prompt(_item(), "owner")
    assert p.protocol == "pathmmu-owner"
    assert p.text == (
        "What pattern do the cells show?\n(A) Random\n(B) Palisading\n(C) Whorled\n\n"
        "Answer with the option's letter from the given choices directly."
    )
    assert p.option_labels == ("A", "B", "C") and p.labels == "letters"


def test_pathmmu_owner_yaml_folding_is_what_we_claim() -> None:
    # The config text exactly as stored in the repository, parsed the way eval/main.py does
    # (yaml.safe_load, then the single list element).
    yaml = pytest.importorskip("yaml")
    config = (
        "task_instructions:\n- ''\nmulti_choice_example_format:\n- '{}\n\n{}\n\n"
        "Answer with the option''s letter from the given choices directly.'\ntemperature:\n- 0"
    )
    fmt = yaml.safe_load(config)["multi_choice_example_format"][0]
    example = "(A) Random\n(B) Palisading\n(C) Whorled\n"
    assert render_prompt(_item(), "owner").text == fmt.format("What pattern do the cells show?", example)


def test_pathmmu_owner_cuts_option_text_at_its_second_parenthesis() -> None:
    # construct_prompt: option = option.split(')')[1].strip()
    assert (
        pathmmu_option_text("B) Nuclear enlargement (megalocytosis)") == "Nuclear enlargement (megalocytosis"
    )
    assert pathmmu_option_text("B) Hematoxylin and eosin (H&E) stain") == "Hematoxylin and eosin (H&E"
    assert pathmmu_option_text("A)  Whorled pattern ") == "Whorled pattern"
    assert pathmmu_option_text("no label at all") == "no label at all"  # official code cannot render it


def test_pathmmu_owner_prompt_of_a_real_record() -> None:
    # test_tiny No 22 of data/socialpath_mapping.json (tests/fixtures/pathmmu): the answer option
    # "B) Nuclear enlargement (megalocytosis)" reaches the model without its closing ")".
    lb = get_benchmark("pathmmu").load(FIXTURES / "pathmmu" / "socialpath_mapping.json", split="test_tiny")
    item = next(it for it in lb.items if it.id == "pathmmu/SocialPath/test_tiny/22")
    assert item.choices[1] == "Nuclear enlargement (megalocytosis)"  # the item itself keeps the full text
    assert render_prompt(item, "owner").text == (
        "What notable nuclear feature can be observed in the epithelial cells within this renal biopsy "
        "specimen?\n(A) Nuclear molding\n(B) Nuclear enlargement (megalocytosis\n(C) Multinucleation\n"
        "(D) Smudged chromatin\n\nAnswer with the option's letter from the given choices directly."
    )


def test_ubench_owner_prompt_byte_for_byte() -> None:
    # Ale9806/eVLLM src/evlm/inference/generative_inference.py:
    #     template = prompt + "\n" + "Question:" + question_str + "\n" + joined_options
    # with prompt = "Answer with a single letter, no extra details.", joined_options = "\n".join
    # of add_alphabet's "A) option" (src/evlm/inference/utils.py): no space after "Question:", no
    # trailing newline.
    p = render_prompt(_item("ubench"), "owner")
    assert p.text == (
        "Answer with a single letter, no extra details.\nQuestion:What pattern do the cells show?\n"
        "A) Random\nB) Palisading\nC) Whorled"
    )


def test_microvqa_owner_prompt_byte_for_byte() -> None:
    # jmhb0/microvqa eval/eval.py PROMPT_TEMPLATE = """\\
    # The following is a multiple choice question (with answers). <- trailing space
    # Think step by step and then output the answer in the format of \"The answer is (X)\" at the end.
    #
    # {{QUESTION}}
    #
    # Options:
    # {{CHOICES}}
    # """   with choices_str += f"  ({j+1}): {ch}\\n": the prompt ends in two newlines.
    p = render_prompt(_item("microvqa"), "owner")
    assert p.labels == "numbers" and p.option_labels == ("1", "2", "3")
    assert p.text == (
        "The following is a multiple choice question (with answers). \n"
        'Think step by step and then output the answer in the format of "The answer is (X)" at the end.\n'
        "\n"
        "What pattern do the cells show?\n"
        "\n"
        "Options:\n"
        "  (1): Random\n"
        "  (2): Palisading\n"
        "  (3): Whorled\n"
        "\n"
    )


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

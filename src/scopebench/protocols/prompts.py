"""Prompt protocols: how an item becomes the text (and images) a generative model sees.

Two families:

* ``default`` — one unified prompt for every benchmark, so models are compared on equal terms;
* ``owner`` — each benchmark's own published prompt, byte for byte as its code builds it (see
  ``docs/models.md``, Protocols), resolved to ``ubench-owner``, ``pathmmu-owner``, ``spur-owner``
  or ``microvqa-owner``.

The resolved protocol name is recorded per item (``extra.protocol``) and in ``run.json``;
:data:`PROTOCOL_VERSION` names the template revision (2: owner prompts made byte-exact). It is not
part of the resume check, so finish or ``--fresh`` an owner-protocol run started before a revision.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from scopebench.errors import ModelSpecError
from scopebench.items import ImageRef, Item, letter

__all__ = [
    "PROTOCOLS",
    "PROTOCOL_VERSION",
    "DetectionStyle",
    "Prompt",
    "caption_texts",
    "detection_class",
    "pathmmu_option_text",
    "render_detection_prompt",
    "render_prompt",
    "resolve_protocol",
]

PROTOCOL_VERSION = "2"  # 2: owner prompts byte for byte as the owners' code

Labels = Literal["letters", "numbers"]


@dataclass(frozen=True, slots=True)
class Prompt:
    """What a generative backend sends for one item.

    Attributes:
        text: The user message text. Images are not placed inline: backends put them before the
            text in the model's own chat format (one image placeholder per image).
        images: The images to attach (empty with ``--no-image``).
        system: A system message, for protocols that have one.
        labels: How options are labelled (``letters`` A, B…; ``numbers`` 1, 2…).
        option_labels: The label of each option as the model must answer it (``"A"``/``"1"``).
        protocol: Resolved protocol name.
    """

    text: str
    images: tuple[ImageRef, ...]
    system: str | None
    labels: Labels
    option_labels: tuple[str, ...]
    protocol: str


def _context(item: Item) -> str:
    return f"{item.context.strip()}\n\n" if item.context else ""


def _default(item: Item) -> tuple[str, str | None, Labels]:
    opts = "\n".join(f"{letter(i)}) {c}" for i, c in enumerate(item.choices))
    letters = ", ".join(letter(i) for i in range(len(item.choices)))
    text = (
        f"{_context(item)}Question: {item.question}\nOptions:\n{opts}\n"
        f"Answer with the letter of the correct option ({letters}) only."
    )
    return text, None, "letters"


def _ubench_owner(item: Item) -> tuple[str, str | None, Labels]:
    # Byte for byte as Ale9806/eVLLM src/evlm/inference/generative_inference.py builds it:
    # prompt + "\n" + "Question:" + question + "\n" + "\n".join(options), each option prefixed
    # "A) " by add_alphabet (src/evlm/inference/utils.py). No space after "Question:" and no
    # trailing newline (the paper's Fig. 19 shows one; the code has none).
    opts = "\n".join(f"{letter(i)}) {c}" for i, c in enumerate(item.choices))
    return (
        f"Answer with a single letter, no extra details.\nQuestion:{item.question}\n{opts}",
        None,
        "letters",
    )


def pathmmu_option_text(raw: str) -> str:
    """An option's text as PathMMU's ``construct_prompt`` renders it: ``raw.split(")")[1].strip()``.

    The official code (PathMMU-Benchmark/PathMMU ``eval/utils/data_utils.py``) keeps only what lies
    between the label's ")" and the option's *second* ")": ``"A) Carcinoma (invasive) type"``
    becomes ``"Carcinoma (invasive"``. The owner protocol reproduces that cut. An option with no
    ")" at all, which the official code cannot render (it skips the question), is kept whole.
    """
    parts = raw.split(")")
    return parts[1].strip() if len(parts) > 1 else raw.strip()


def _pathmmu_raw_options(item: Item) -> list[str]:
    # The loader keeps the options as written in data.json ("A) text"); items from elsewhere get
    # the "A) " label the released data always carries.
    raw = item.metadata.get("options_raw")
    if isinstance(raw, list) and len(raw) == len(item.choices) and all(isinstance(o, str) for o in raw):
        return list(raw)
    return [f"{letter(i)}) {c}" for i, c in enumerate(item.choices)]


def _pathmmu_owner(item: Item) -> tuple[str, str | None, Labels]:
    # PathMMU eval/configs/llava1.5.yaml: multi_choice_example_format is the single-quoted YAML
    # scalar '{}\n\n{}\n\nAnswer with…' whose blank lines fold to one "\n" each, i.e.
    # "{}\n{}\nAnswer with the option's letter from the given choices directly."; construct_prompt
    # fills it with the question and "(A) text\n" per option (every option line ends in "\n").
    opts = "".join(
        f"({letter(i)}) {pathmmu_option_text(o)}\n" for i, o in enumerate(_pathmmu_raw_options(item))
    )
    text = f"{item.question}\n{opts}\nAnswer with the option's letter from the given choices directly."
    return text, None, "letters"


# SPUR api_test/base.py SYSTEM_INSTRUCTION, verbatim (including its odd spacing and the stray "]").
_SPUR_SYSTEM = (
    " You are a helpful assistant specialized in analyzing academic images. Please answer this question."
    " Input: {question} {options} {image}"
    " Answer with the option’s letter from the given choices.Please solve the problem step by step."
    " Make sure to follow this output format strictly:"
    " <ANSWER> the correct answer (A or B or C or D or E) of question here] </ANSWER>"
    " <EVIDENCE> the explain of your answer here </EVIDENCE>"
)


def _spur_owner(item: Item) -> tuple[str, str | None, Labels]:
    # The released code sends QUESTION + "\n {Options}:" + the raw OPTION string; we render the
    # parsed options one per line with their letters, which carries the same content.
    opts = " ".join(f"{letter(i)}. {c}" for i, c in enumerate(item.choices))
    return f"{item.question}\n {{Options}}:{opts}", _SPUR_SYSTEM, "letters"


def _microvqa_owner(item: Item) -> tuple[str, str | None, Labels]:
    # jmhb0/microvqa eval/eval.py PROMPT_TEMPLATE (MMLU-Pro style), byte for byte: the template
    # ends "{{CHOICES}}\n" and every choice line "  (n): text\n" ends in a newline, so the prompt
    # ends in two newlines. The question goes in as is (no context block).
    opts = "".join(f"  ({i + 1}): {c}\n" for i, c in enumerate(item.choices))
    text = (
        "The following is a multiple choice question (with answers). \n"
        'Think step by step and then output the answer in the format of "The answer is (X)" at the end.'
        f"\n\n{item.question}\n\nOptions:\n{opts}\n"
    )
    return text, None, "numbers"


PROTOCOLS: dict[str, Callable[[Item], tuple[str, str | None, Labels]]] = {
    "default": _default,
    "ubench-owner": _ubench_owner,
    "pathmmu-owner": _pathmmu_owner,
    "spur-owner": _spur_owner,
    "microvqa-owner": _microvqa_owner,
}


def resolve_protocol(name: str, benchmark: str) -> str:
    """Resolve ``owner`` to the benchmark's own protocol and check the name exists.

    Raises:
        ModelSpecError: For an unknown protocol, or ``owner`` on a benchmark without one.
    """
    if name == "owner":
        key = f"{benchmark}-owner"
        if key not in PROTOCOLS:
            raise ModelSpecError(
                f"benchmark {benchmark!r} has no owner protocol; use --protocol default "
                f"(owner protocols exist for: {', '.join(k[:-6] for k in PROTOCOLS if k.endswith('-owner'))})"
            )
        return key
    if name not in PROTOCOLS:
        raise ModelSpecError(f"unknown protocol {name!r}; choose one of: owner, {', '.join(PROTOCOLS)}")
    return name


def render_prompt(item: Item, protocol: str = "default", *, no_image: bool = False) -> Prompt:
    """Build the prompt of ``item`` under ``protocol`` (``owner`` resolves per benchmark)."""
    name = resolve_protocol(protocol, item.benchmark)
    text, system, labels = PROTOCOLS[name](item)
    option_labels = tuple(str(i + 1) if labels == "numbers" else letter(i) for i in range(len(item.choices)))
    return Prompt(
        text=text,
        images=() if no_image else item.images,
        system=system,
        labels=labels,
        option_labels=option_labels,
        protocol=name,
    )


DetectionStyle = Literal["qwen", "paligemma", "paligemma-segment", "json"]


def detection_class(item: Item) -> str:
    """The class a detection item asks for (metadata ``class_name``, else its targets' label)."""
    name = item.metadata.get("class_name")
    if name:
        return str(name)
    labels = sorted({b.label for b in item.targets if b.label})
    return labels[0] if labels else "object"


def render_detection_prompt(item: Item, style: DetectionStyle = "json") -> str:
    """The detection prompt of ``item`` in a model family's own style.

    ``qwen``: ``Detect {class}`` (Qwen-VL answers ``<box>(x1,y1),(x2,y2)</box>`` on a 0–1000 grid);
    ``paligemma``: ``detect {class}; {class}`` and its fallback ``segment {class}; {class}``
    (``<locNNNN>`` tokens); ``json``: asks any other model for a JSON list of pixel boxes.
    """
    cls = detection_class(item)
    if style == "qwen":
        return f"Detect {cls}"
    if style == "paligemma":
        return f"detect {cls}; {cls}"
    if style == "paligemma-segment":
        return f"segment {cls}; {cls}"
    size = ""
    if item.images:
        try:
            w, h = item.images[0].size()
            size = f" of this {w}×{h} image"
        except Exception:  # the size is a hint only; the record reports unreadable images
            size = ""
    return (
        f"Locate every {cls} in the image. Answer only with a JSON list of boxes, one per {cls}, each "
        f'as {{"x1": …, "y1": …, "x2": …, "y2": …}} in pixel coordinates{size}. '
        "Answer [] if there is none."
    )


def caption_texts(item: Item) -> list[str]:
    """One text per option for contrastive models.

    μ-Bench items carry caption-style options (templated sentences); every other benchmark uses
    question + option, μ-Bench's protocol for its cognition questions.
    """
    if item.captions is not None and len(item.captions) == len(item.choices):
        return list(item.captions)
    return [f"{item.question} {c}".strip() for c in item.choices]

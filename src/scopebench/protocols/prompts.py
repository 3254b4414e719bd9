"""The Request stage: how an item becomes what a backend is asked (:func:`render` → :class:`Request`).

Two protocol families:

* ``default`` — one unified prompt for every benchmark, so models are compared on equal terms
  (defined here, the only protocol this package owns);
* ``owner`` — each benchmark's own published prompt, byte for byte as its code builds it, defined
  by the benchmark itself (:meth:`~scopebench.benchmarks.Benchmark.owner_prompt`, beside its loader)
  and resolved to ``<benchmark>-owner`` (``ubench-owner``, ``pathmmu-owner``…; see
  ``docs/models.md``, Protocols).

A :class:`Request` carries everything a backend of any kind needs — the text and system message of
a generative model, the images, the option labels the answer must use (the parser reads the reply
with the same request), the owner's answer prefix for log-prob scoring, and one caption per option
for contrastive models — so no backend builds a prompt itself and two backends given the same
request see the same labels.

The resolved protocol name is recorded per item (``extra.protocol``) and in ``run.json``;
:data:`PROTOCOL_VERSION` names the template revision (2: owner prompts made byte-exact). An
owner-protocol run records it in ``run.json`` (``owner_protocol_version``), and resuming it under
another revision is refused (``--fresh`` or another ``--out``), so no run mixes two revisions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from scopebench.benchmarks.base import Benchmark, Labels
from scopebench.benchmarks.registry import find_benchmark, owner_protocol_benchmarks
from scopebench.errors import ModelSpecError
from scopebench.items import ImageRef, Item, ItemKind, Sample, letter

__all__ = [
    "PROTOCOLS",
    "PROTOCOL_VERSION",
    "DetectionStyle",
    "Labels",
    "Prompt",
    "Request",
    "caption_texts",
    "detection_class",
    "render",
    "render_detection_prompt",
    "render_prompt",
    "resolve_protocol",
]

PROTOCOL_VERSION = "2"  # 2: owner prompts byte for byte as the owners' code

DetectionStyle = Literal["qwen", "paligemma", "paligemma-segment", "json"]


@dataclass(frozen=True, slots=True)
class Request:
    """What a backend is asked about one item: the output of :func:`render`.

    Attributes:
        item: The item (backends that need more than the rendering, e.g. its image keys for
            batching, read it here; the parser reads its choices).
        text: The user message text. Images are not placed inline: backends put them before the
            text in the model's own chat format (one image placeholder per image). For detection
            items, the detection prompt in the requested style.
        images: The images to attach (empty with ``--no-image``).
        system: A system message, for protocols that have one.
        labels: How options are labelled (``letters`` A, B…; ``numbers`` 1, 2…); the parser reads
            the reply with the same labels.
        option_labels: The label of each option as the model must answer it (``"A"``/``"1"``).
        protocol: Resolved protocol name (``default``, ``<benchmark>-owner``, or
            ``detection-<style>`` for detection items).
        answer_prefix: Text the answer starts with under the protocol (the owner's, for
            choice-logprob scoring; empty under ``default``).
        captions: One text per option for contrastive models (:func:`caption_texts`).
    """

    item: Item
    text: str
    images: tuple[ImageRef, ...]
    system: str | None
    labels: Labels
    option_labels: tuple[str, ...]
    protocol: str
    answer_prefix: str = ""
    captions: tuple[str, ...] = ()

    @property
    def item_id(self) -> str:
        """The id of the item asked about."""
        return self.item.id

    @property
    def kind(self) -> ItemKind:
        """``mcq`` or ``detection``."""
        return self.item.kind

    def sample(self) -> Sample:
        """What this request shows the model, as a record stores it (images by id)."""
        item = self.item
        answer = item.answer_index
        return Sample(
            prompt=self.text,
            system=self.system,
            images=tuple(ref.key for ref in self.images),
            question=item.question,
            options=item.choices,
            answer_key=self.option_labels[answer] if answer is not None and self.option_labels else None,
            protocol=self.protocol,
        )


#: The former name of :class:`Request` (a rendered prompt), kept for callers of :func:`render_prompt`.
Prompt = Request


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


#: The protocols this package owns; benchmarks add ``<name>-owner`` (:func:`resolve_protocol`).
PROTOCOLS: dict[str, Callable[[Item], tuple[str, str | None, Labels]]] = {"default": _default}
_OWNER_SUFFIX = "-owner"


def _owner_benchmark(name: str) -> Benchmark | None:
    """The benchmark whose owner protocol ``name`` (``<benchmark>-owner``) is, if it has one."""
    if not name.endswith(_OWNER_SUFFIX):
        return None
    bench = find_benchmark(name[: -len(_OWNER_SUFFIX)])
    return bench if bench is not None and bench.has_owner_protocol() else None


def resolve_protocol(name: str, benchmark: str) -> str:
    """Resolve ``owner`` to the benchmark's own protocol and check the name exists.

    Args:
        name: ``default``, ``owner`` or a ``<benchmark>-owner`` name.
        benchmark: The benchmark the items come from (a name or a plugin file spec).

    Raises:
        ModelSpecError: For an unknown protocol, or ``owner`` on a benchmark without one.
    """
    return _resolve(name, benchmark)[0]


def _resolve(name: str, benchmark: str) -> tuple[str, Benchmark | None]:
    """The resolved protocol name and, for an owner protocol, the benchmark that owns it."""
    if name in PROTOCOLS:
        return name, None
    if name == "owner":
        bench = find_benchmark(benchmark)
        if bench is None or not bench.has_owner_protocol():
            raise ModelSpecError(
                f"benchmark {benchmark!r} has no owner protocol; use --protocol default "
                f"(owner protocols exist for: {', '.join(owner_protocol_benchmarks())})"
            )
        return bench.name + _OWNER_SUFFIX, bench
    owner = _owner_benchmark(name)
    if owner is None:
        known = ["owner", *PROTOCOLS, *(b + _OWNER_SUFFIX for b in owner_protocol_benchmarks())]
        raise ModelSpecError(f"unknown protocol {name!r}; choose one of: {', '.join(known)}")
    return name, owner


def render(
    item: Item,
    protocol: str = "default",
    *,
    no_image: bool = False,
    detection_style: DetectionStyle = "json",
) -> Request:
    """Build the :class:`Request` of ``item`` under ``protocol`` (``owner`` resolves per benchmark).

    Args:
        item: The item.
        protocol: ``default``, ``owner`` or ``<benchmark>-owner``.
        no_image: Send no image (text-only runs).
        detection_style: The box format to ask detection items for (the backend's own).

    Raises:
        ModelSpecError: For an unknown protocol, or ``owner`` on a benchmark without one.
    """
    images = () if no_image else item.images
    if item.kind == "detection":
        return Request(
            item=item,
            text=render_detection_prompt(item, detection_style),
            images=images,
            system=None,
            labels="letters",
            option_labels=(),
            protocol=f"detection-{detection_style}",
        )
    name, owner = _resolve(protocol, item.benchmark)
    if owner is not None:
        got = owner.owner_prompt(item)
        if got is None:  # has_owner_protocol() said otherwise: a plugin returning None for an item
            raise ModelSpecError(f"the owner protocol {name} renders no prompt for item {item.id}")
        text, system, labels, prefix = got.text, got.system, got.labels, owner.answer_prefix
    else:
        text, system, labels = PROTOCOLS[name](item)
        prefix = ""
    option_labels = tuple(str(i + 1) if labels == "numbers" else letter(i) for i in range(len(item.choices)))
    return Request(
        item=item,
        text=text,
        images=images,
        system=system,
        labels=labels,
        option_labels=option_labels,
        protocol=name,
        answer_prefix=prefix,
        captions=tuple(caption_texts(item)),
    )


def render_prompt(item: Item, protocol: str = "default", *, no_image: bool = False) -> Request:
    """The multiple-choice :class:`Request` of ``item`` (:func:`render`; kept for existing callers)."""
    return render(item, protocol, no_image=no_image)


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

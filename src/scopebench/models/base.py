"""The backend contract: a model adapter answers a batch of Requests, one response each.

The engine renders every item into a :class:`~scopebench.protocols.Request` (:meth:`Backend.render`:
prompt text, images, option labels, answer prefix, captions) and hands backends *lists* of them;
backends batch internally (the lm-evaluation-harness habit), so the engine can hand them as much
work as memory allows, and never build a prompt themselves. The parser reads each reply with the
labels of the request it answers. A backend answers in one of three ways:

* ``text`` — free text from a generative model, mapped to an option by the parser;
* ``scores`` — one score per option (probabilities for contrastive and log-prob backends); the
  highest wins;
* ``choice`` — a direct option index (baselines).
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from scopebench.config import ModelConfig
from scopebench.errors import ModelSpecError
from scopebench.items import ImageRef, Item
from scopebench.protocols import DetectionStyle, Request, render

if TYPE_CHECKING:  # the registry imports this module; a backend only reads a ModelSpec's fields
    from scopebench.models.registry import ModelSpec

__all__ = [
    "Backend",
    "ChatMessage",
    "FinishReason",
    "ModelOptions",
    "Response",
    "ResponseStatus",
    "finish_reason",
]

ResponseStatus = Literal["ok", "error", "missing_response"]
#: Why generation stopped: ``stop`` (the model ended its reply), ``length`` (the token limit cut
#: it), ``content_filter`` (the provider withheld or cut it), ``error`` (the call failed).
FinishReason = Literal["stop", "length", "content_filter", "error"]

# What servers and engines call each reason (OpenAI, vLLM, Anthropic-style and Gemini-style names).
_FINISH_NAMES: dict[str, FinishReason] = {
    "stop": "stop", "eos": "stop", "end_turn": "stop", "stop_sequence": "stop", "tool_calls": "stop",
    "function_call": "stop", "length": "length", "max_tokens": "length", "max_output_tokens": "length",
    "model_length": "length", "content_filter": "content_filter", "safety": "content_filter",
    "refusal": "content_filter", "recitation": "content_filter", "error": "error", "abort": "error",
}  # fmt: skip


def finish_reason(raw: object) -> FinishReason | None:
    """A backend's own name for why generation stopped, as a :data:`FinishReason` (``None``: unknown).

    Args:
        raw: The reason as the server or engine gave it (``"length"``, ``"max_tokens"``, ``"eos"``…).
    """
    if not isinstance(raw, str):
        return None
    return _FINISH_NAMES.get(raw.strip().lower())


@dataclass(slots=True)
class Response:
    """A backend's answer for one item.

    Attributes:
        item_id: The item answered.
        text: Free-text output, for generative backends.
        scores: One score per option (higher is better; probabilities where the backend has them).
        choice: A direct 0-based option index, for backends that pick without text or scores.
        status: ``ok``; ``error`` when the call failed (``error`` says why); ``missing_response``
            when a replay file has no answer for the item.
        error: The failure reason.
        extra: Anything worth keeping in the per-item record (prompt, latency, token counts,
            intermediate messages).
        finish_reason: Why generation stopped (:data:`FinishReason`); a failed call is ``error``
            unless the backend says more (``content_filter``: the provider withheld the reply);
            ``None`` means the backend could not tell.
    """

    item_id: str
    text: str | None = None
    scores: list[float] | None = None
    choice: int | None = None
    status: ResponseStatus = "ok"
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    finish_reason: FinishReason | None = None

    def __post_init__(self) -> None:
        if self.status == "error" and self.finish_reason is None:
            self.finish_reason = "error"


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """One turn of a multi-turn conversation (chain-of-thought strategies).

    Attributes:
        role: ``system``, ``user`` or ``assistant``.
        text: The message text.
        images: Images attached to this turn (usually only the first user turn has them).
    """

    role: Literal["system", "user", "assistant"]
    text: str
    images: tuple[ImageRef, ...] = ()


#: The options every backend is built with: :class:`scopebench.config.ModelConfig`, under the name
#: backends (and third-party ones) have always imported from :mod:`scopebench.models`.
ModelOptions = ModelConfig


class Backend(ABC):  # noqa: B024 - abstract by contract: answer() or predict() must be overridden
    """Base class of every model adapter.

    Attributes:
        spec: The resolved spec string the backend was made from (``"random"``, ``"clip:/path"``…).
        mode: What the backend does, recorded in results (``baseline``, ``replay``,
            ``contrastive``, ``generate``, ``choice-logprob``…).
        needs_images: Whether items whose image is missing can be answered at all.
        options: The :class:`ModelOptions` it was built with.
    """

    mode: ClassVar[str] = "baseline"
    needs_images: ClassVar[bool] = True
    #: Item kinds the backend can answer; others are left out of its runs (and logged).
    kinds: ClassVar[tuple[str, ...]] = ("mcq",)
    #: Batch size when the user sets none; safe on a CPU.
    default_batch_size: ClassVar[int] = 8
    #: The ``--model-arg`` keys the backend reads; ``load_model`` refuses others, so a typo is an
    #: error rather than a silently ignored setting. ``None``: the backend validates them itself.
    model_args: ClassVar[frozenset[str] | None] = frozenset()
    #: Whether an item's answer depends on the whole set of items evaluated (frequent-choice
    #: baselines count letters over it): such a run's ``--limit`` cannot be raised in place.
    item_set_dependent: ClassVar[bool] = False
    #: Whether ``__init__`` takes the parsed :class:`~scopebench.models.ModelSpec` (the built-in
    #: backends: they read its ``target`` and never parse the spec again). ``False`` (plugins):
    #: :func:`~scopebench.models.load_model` hands the resolved spec string, as it always did.
    takes_model_spec: ClassVar[bool] = False
    #: The parsed spec the backend was built from (set by :func:`~scopebench.models.load_model`,
    #: or by ``__init__`` when handed one); ``None`` for a backend built from a bare string.
    model_spec: ModelSpec | None = None

    @property
    def box_format(self) -> Literal["auto", "qwen", "paligemma", "json"]:
        """How this backend writes boxes for detection items (``auto`` tries every format)."""
        return "auto"

    @property
    def detection_style(self) -> DetectionStyle:
        """The box format detection prompts ask this backend for (its :attr:`box_format`, else JSON)."""
        fmt = self.box_format
        return "json" if fmt == "auto" else fmt

    def __init__(self, spec: str | ModelSpec, options: ModelOptions) -> None:
        if type(self).answer is Backend.answer and type(self).predict is Backend.predict:
            raise ModelSpecError(
                f"{type(self).__module__}.{type(self).__qualname__} implements neither answer(requests) "
                "nor predict(items); a backend must answer requests (docs/extending.md)"
            )
        if isinstance(spec, str):
            self.spec = spec
        else:  # parsed once by the caller: keep it, so nothing parses the string again
            self.spec, self.model_spec = spec.spec, spec
        self.options = options

    def can_constrain(self) -> bool:
        """Whether this backend can enforce a label-only answer (``--answer-format constrained``).

        Backends that can override this and constrain their multiple-choice replies when
        ``options.answer_format == "constrained"``; :func:`~scopebench.models.load_model` refuses
        the others.
        """
        return False

    def can_sample(self) -> bool:
        """Whether this backend can generate beyond greedy (``--gen-arg``, :mod:`.sampling`).

        Backends that can override this and answer with every sample in ``extra["samples"]``;
        :func:`~scopebench.models.load_model` refuses ``--gen-arg`` for the others.
        """
        return False

    def prepare(self, items: Sequence[Item]) -> None:  # noqa: B027 - optional hook
        """Look at every item of the run once before any prediction (e.g. answer frequencies)."""

    def plan(self, items: Sequence[Item]) -> list[Item]:
        """The order in which to answer ``items`` (batches are cut from it); default: as given.

        Generative backends group items that share an image and sort by prompt length, so a batch
        decodes each image once and pads little. Every item must be returned exactly once.
        """
        return list(items)

    def batches(self, requests: Sequence[Request], size: int) -> list[list[Request]]:
        """How the planned requests are cut into backend calls; default: ``size`` requests each.

        A backend whose unit of model work is not the item (a contrastive model encodes images)
        cuts along that unit instead. Every request must be in exactly one batch, in order.
        """
        return [list(requests[k : k + size]) for k in range(0, len(requests), size)]

    def render(self, item: Item) -> Request:
        """The :class:`~scopebench.protocols.Request` this backend is asked for ``item``.

        :func:`~scopebench.protocols.render` under the backend's protocol, ``no_image`` option and
        detection style. A backend overrides it only to change what the request says about the
        reply (a replay file declaring its own option labels).
        """
        return render(
            item, self.options.protocol, no_image=self.options.no_image, detection_style=self.detection_style
        )

    def answer(self, requests: Sequence[Request]) -> list[Response]:
        """Answer a batch of requests, one :class:`Response` per request, in order (the engine's call).

        Every built-in backend implements this. A failure that concerns one item is returned as
        that item's ``error`` response; raising marks the whole batch as failed with the
        exception's message. The default hands the requests' items to :meth:`predict`, for
        third-party backends written against the older item-based contract.
        """
        if type(self).predict is Backend.predict:
            raise NotImplementedError(f"{type(self).__name__} implements neither answer() nor predict()")
        return self.predict([r.item for r in requests])

    def predict(self, items: Sequence[Item]) -> list[Response]:
        """Answer a batch of items: :meth:`render` each, then :meth:`answer` (a convenience).

        Older third-party backends override this instead of :meth:`answer`; the engine still
        renders and parses their items the same way.
        """
        if type(self).answer is Backend.answer:
            raise NotImplementedError(f"{type(self).__name__} implements neither answer() nor predict()")
        return self.answer([self.render(it) for it in items])

    def chat(
        self,
        conversations: Sequence[Sequence[ChatMessage]],
        item_ids: Sequence[str],
        *,
        max_new_tokens: int | None = None,
    ) -> list[Response]:
        """Continue each conversation with one assistant turn (generative backends).

        Args:
            conversations: One message list per item, ending with a user turn.
            item_ids: The item each conversation is about (for records, caches and replay).
            max_new_tokens: Generation budget for this turn (backend default when ``None``).

        Returns:
            One :class:`Response` with ``text`` per conversation, in order.

        Raises:
            ModelSpecError: When the backend cannot hold a conversation.
        """
        raise ModelSpecError(
            f"model {self.spec!r} ({self.mode}) cannot hold a multi-turn conversation, which "
            "chain-of-thought strategies need; use a generative model (hf:, vllm:, openai:) or replay:"
        )

    def identity(self) -> dict[str, Any]:
        """What identifies this model in provenance records (spec, revision, weight hash, mode)."""
        return {"spec": self.spec, "mode": self.mode}

    def prefetch(self, requests: Sequence[Request]) -> None:  # noqa: B027 - optional hook
        """A hint that ``requests`` come next, so the backend may start reading what they need.

        A contrastive backend decodes their images while its model encodes the current batch. A
        hint is never required for correctness; the default ignores it.
        """

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources (GPU memory, sessions, worker processes)."""

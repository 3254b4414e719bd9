"""``vllm:MODEL`` — generative VLMs through vLLM's offline engine (optional extra ``scopebench[vllm]``).

A batch becomes one ``LLM.chat`` call over all its conversations, so vLLM schedules them together
(continuous batching). Images travel as PIL objects in ``image_pil`` content parts (vLLM ≥ 0.10; no
base64 round trip); the model's own chat template places them. Decoding is greedy
(``temperature=0``) unless ``--model-arg temperature=…`` or ``--gen-arg`` says otherwise, with the
run's seed (``--gen-arg n=K``: K samples per item in the same call, sample ``i`` seeded seed + i).

The request building — messages from an :class:`~scopebench.items.Item` or a
:class:`~scopebench.models.base.ChatMessage` list — is plain Python in :func:`build_messages` and
:func:`chat_messages`, so it is tested where vLLM is not installed. vLLM itself is imported only when
a ``vllm:`` model is built, and the weights are loaded at the first batch (a finished run resumes
without them).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from PIL import Image

from scopebench.errors import ImageLoadError, MissingDependencyError, ModelError, ModelSpecError
from scopebench.items import Item
from scopebench.models.base import Backend, ChatMessage, ModelOptions, Response, finish_reason
from scopebench.models.registry import ModelSpec, parse_spec
from scopebench.models.sampling import gather, sample_seeds
from scopebench.protocols import Request, render

__all__ = ["ChatRequest", "VLLMBackend", "build_messages", "chat_messages"]

log = logging.getLogger(__name__)

# `--model-arg` keys passed straight to `vllm.LLM(...)` (engine arguments), with their types.
_ENGINE_KEYS: dict[str, type] = {
    "dtype": str,
    "max_model_len": int,
    "gpu_memory_utilization": float,
    "tensor_parallel_size": int,
    "trust_remote_code": bool,
    "revision": str,
    "max_num_seqs": int,
    "enforce_eager": bool,
    "quantization": str,
}
_OWN_KEYS: dict[str, type] = {"max_tokens": int, "temperature": float, "max_images": int, "engine_args": dict}


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """One conversation as vLLM's ``LLM.chat`` takes it, plus what to record.

    Attributes:
        messages: OpenAI-style messages whose image parts are ``{"type": "image_pil", "image_pil": PIL}``.
        n_images: Images in the conversation.
        protocol: The prompt protocol (``detection-json`` for detection items).
        labels: How the options are labelled in the prompt.
    """

    messages: list[dict[str, Any]]
    n_images: int
    protocol: str
    labels: Literal["letters", "numbers"]


def chat_messages(
    conversation: Sequence[ChatMessage], images: dict[str, Image.Image] | None = None
) -> list[dict[str, Any]]:
    """Turn a conversation into vLLM chat messages, images first in each turn (PIL, not base64).

    Args:
        conversation: The turns.
        images: Already decoded images by :attr:`ImageRef.key` (each image decoded once per batch);
            missing keys are decoded here and added.

    Raises:
        ImageLoadError: When an image cannot be decoded.
    """
    cache = {} if images is None else images
    out: list[dict[str, Any]] = []
    for msg in conversation:
        if not msg.images:
            out.append({"role": msg.role, "content": msg.text})
            continue
        parts: list[dict[str, Any]] = []
        for ref in msg.images:
            if ref.key not in cache:
                cache[ref.key] = ref.load()
            parts.append({"type": "image_pil", "image_pil": cache[ref.key]})
        parts.append({"type": "text", "text": msg.text})
        out.append({"role": msg.role, "content": parts})
    return out


def build_messages(
    item: Item,
    protocol: str = "default",
    *,
    no_image: bool = False,
    images: dict[str, Image.Image] | None = None,
) -> ChatRequest:
    """The chat request of ``item``: the protocol's prompt (or a JSON-box detection prompt) and its images.

    :func:`~scopebench.protocols.render` then :func:`request_messages`.

    Args:
        item: The item.
        protocol: Prompt protocol (``default``, ``owner``…).
        no_image: Leave the images out (text-only baseline).
        images: Decoded images shared across a batch (filled as images are decoded).

    Raises:
        ImageLoadError: When one of the item's images cannot be decoded.
        ModelSpecError: For an unknown protocol.
    """
    return request_messages(render(item, protocol, no_image=no_image), images)


def request_messages(request: Request, images: dict[str, Image.Image] | None = None) -> ChatRequest:
    """VLLM chat messages of a rendered :class:`~scopebench.protocols.Request`.

    A detection request sends its first image only (the boxes are read in that image's pixels).

    Raises:
        ImageLoadError: When one of the request's images cannot be decoded.
    """
    if request.kind == "detection":
        refs = request.images[:1]
        conv = [ChatMessage("user", request.text, refs)]
        return ChatRequest(chat_messages(conv, images), len(refs), request.protocol, "letters")
    conv = [ChatMessage("system", request.system)] if request.system else []
    conv.append(ChatMessage("user", request.text, request.images))
    return ChatRequest(chat_messages(conv, images), len(request.images), request.protocol, request.labels)


def _typed(key: str, value: Any, kind: type) -> Any:
    try:
        if kind is bool:
            if isinstance(value, bool):
                return value
            if str(value).lower() in ("true", "1", "yes"):
                return True
            if str(value).lower() in ("false", "0", "no"):
                return False
            raise ValueError
        if kind is dict:
            if not isinstance(value, Mapping):
                raise ValueError
            return dict(value)
        return kind(value)
    except (TypeError, ValueError):
        raise ModelSpecError(f"--model-arg {key}={value!r} must be a {kind.__name__}") from None


def _responses(
    item_ids: Sequence[str],
    errors: Sequence[str | None],
    generated: Sequence[tuple[str | None, dict[str, Any]]],
    request_extras: Sequence[dict[str, Any]],
) -> list[Response]:
    """One response per item: its build error, else the next generated text (or vLLM's error).

    Args:
        item_ids: The items, in order.
        errors: Per item, why its request could not be built (``None``: it was sent).
        generated: ``(text, extra)`` of each sent request, in order (``text`` ``None`` on failure).
        request_extras: Per item, what its request adds to the response's ``extra``.
    """
    texts = iter(generated)
    out = []
    for item_id, err, request_extra in zip(item_ids, errors, request_extras, strict=True):
        if err is not None:
            out.append(Response(item_id, status="error", error=err))
            continue
        text, extra = next(texts)
        extra.update(request_extra)
        if text is None:
            out.append(Response(item_id, status="error", error=extra.pop("error"), extra=extra))
        else:
            out.append(
                Response(
                    item_id, text=text, extra=extra, finish_reason=finish_reason(extra.get("finish_reason"))
                )
            )
    return out


class VLLMBackend(Backend):
    """Generative answers from vLLM's offline engine.

    ``--model-arg`` keys: ``max_tokens`` (1024), ``temperature`` (0), ``max_images`` (8, vLLM's
    ``limit_mm_per_prompt``), engine arguments ``dtype``, ``max_model_len``,
    ``gpu_memory_utilization``, ``tensor_parallel_size``, ``trust_remote_code``, ``revision``,
    ``max_num_seqs``, ``enforce_eager``, ``quantization``, and ``engine_args`` (a JSON object of any
    other ``vllm.LLM`` argument).

    Raises:
        MissingDependencyError: When vLLM is not installed (extra ``scopebench[vllm]``).
        ModelSpecError: For an unknown ``--model-arg`` or an unsupported ``--mode``.
    """

    model_args = None  # validated against its engine and sampling keys

    mode = "generate"
    kinds = ("mcq", "detection")
    default_batch_size = 64  # vLLM schedules a whole batch at once; bigger batches keep the GPU busy

    takes_model_spec = True

    def __init__(self, spec: str | ModelSpec, options: ModelOptions) -> None:
        super().__init__(spec, options)
        self.model_name = parse_spec(spec).target
        if options.mode not in (None, "generate"):
            raise ModelSpecError(
                f"vllm: models answer in 'generate' mode only (got --mode {options.mode}); "
                "use an hf: model for choice-logprob"
            )
        unknown = sorted(set(options.extra) - set(_ENGINE_KEYS) - set(_OWN_KEYS))
        if unknown:
            raise ModelSpecError(
                f"unknown --model-arg {', '.join(unknown)} for vllm: models; known: "
                + ", ".join([*_OWN_KEYS, *_ENGINE_KEYS])
            )
        args = {k: _typed(k, v, {**_ENGINE_KEYS, **_OWN_KEYS}[k]) for k, v in options.extra.items()}
        self.max_tokens: int = args.get("max_tokens", 1024)
        self.temperature: float = args.get("temperature", 0.0)
        self.max_images: int = args.get("max_images", 8)
        self.engine_kwargs: dict[str, Any] = {k: v for k, v in args.items() if k in _ENGINE_KEYS}
        self.engine_kwargs.update(args.get("engine_args", {}))
        try:
            import vllm  # noqa: F401 - fail early, before any data is loaded, when the extra is missing
        except ImportError as exc:
            raise MissingDependencyError("vllm", "vllm", "vllm: models") from exc
        self._llm: Any = None

    def _engine(self) -> Any:
        if self._llm is None:
            from vllm import LLM

            kwargs = {"seed": self.options.seed, "limit_mm_per_prompt": {"image": self.max_images}}
            kwargs.update(self.engine_kwargs)
            try:
                self._llm = LLM(model=self.model_name, **kwargs)
            except (OSError, ValueError, RuntimeError) as exc:
                raise ModelError(f"vLLM cannot load {self.model_name!r}: {exc}") from exc
        return self._llm

    def _sampling(self, max_tokens: int, choice: Sequence[str] | None = None, seed: int | None = None) -> Any:
        """Sampling settings: ``--gen-arg`` over ``--model-arg temperature``, ``seed`` (the run's by default).

        With ``choice``, guided decoding to exactly one of those strings.
        """
        from vllm import SamplingParams

        kwargs: dict[str, Any] = {
            "temperature": self.temperature,
            "max_tokens": max_tokens,
            "seed": self.options.seed if seed is None else seed,
            **{k: v for k, v in self.options.gen_args.items() if k != "n"},
        }
        if choice is not None:
            try:  # vLLM ≥ 0.11 names it structured outputs; earlier releases, guided decoding
                from vllm.sampling_params import StructuredOutputsParams

                kwargs["structured_outputs"] = StructuredOutputsParams(choice=list(choice))
            except ImportError:
                from vllm.sampling_params import GuidedDecodingParams

                kwargs["guided_decoding"] = GuidedDecodingParams(choice=list(choice))
        return SamplingParams(**kwargs)

    def can_constrain(self) -> bool:
        """Yes: guided decoding to one of the option labels (vLLM's ``choice``)."""
        return True

    def can_sample(self) -> bool:
        """Yes: ``temperature``/``top_p`` in each request's ``SamplingParams``, one seed per sample."""
        return True

    def answer(self, requests: Sequence[Request]) -> list[Response]:
        """Answer a batch with one ``LLM.chat`` call; an unreadable image is that item's error."""
        images: dict[str, Image.Image] = {}
        chats: list[ChatRequest | None] = []
        errors: list[str | None] = []
        for request in requests:
            try:
                chats.append(request_messages(request, images))
                errors.append(None)
            except ImageLoadError as exc:
                chats.append(None)
                errors.append(str(exc))
        constrained = self.options.answer_format == "constrained"
        choices = [
            r.option_labels if constrained and r.kind == "mcq" else None
            for r, c in zip(requests, chats, strict=True)
            if c is not None
        ]
        seeds = sample_seeds(self.options.seed, self.options.gen_args)
        sent = [c.messages for c in chats if c is not None]
        # Every sample of every item in one call (vLLM batches them), sample i seeded seed + i.
        texts = self._generate([m for m in sent for _ in seeds], self.max_tokens,
                               [c for c in choices for _ in seeds], seeds * len(sent))  # fmt: skip
        request_extras = [
            {} if c is None else {"protocol": c.protocol, "n_images": c.n_images} for c in chats
        ]
        ids = [r.item_id for r in requests]
        passes = [_responses(ids, errors, texts[i :: len(seeds)], request_extras) for i in range(len(seeds))]
        if not self.options.gen_args:
            return passes[0]
        return [gather(list(samples), seeds) for samples in zip(*passes, strict=True)]

    def chat(
        self,
        conversations: Sequence[Sequence[ChatMessage]],
        item_ids: Sequence[str],
        *,
        max_new_tokens: int | None = None,
    ) -> list[Response]:
        """Continue each conversation with one assistant turn (chain-of-thought strategies)."""
        images: dict[str, Image.Image] = {}
        msgs: list[list[dict[str, Any]] | None] = []
        errors: list[str | None] = []
        for conv in conversations:
            try:
                msgs.append(chat_messages(conv, images))
                errors.append(None)
            except ImageLoadError as exc:
                msgs.append(None)
                errors.append(str(exc))
        texts = self._generate([m for m in msgs if m is not None], max_new_tokens or self.max_tokens)
        return _responses(item_ids, errors, texts, [{} for _ in msgs])

    def _generate(
        self,
        conversations: list[list[dict[str, Any]]],
        max_tokens: int,
        choices: Sequence[Sequence[str] | None] | None = None,
        seeds: Sequence[int | None] | None = None,
    ) -> list[tuple[str | None, dict[str, Any]]]:
        """One batched ``LLM.chat``; if vLLM rejects the batch, each conversation alone (to isolate it).

        ``choices``: per conversation, the labels its reply is constrained to (``None``: free);
        ``seeds``: per conversation, its sample's seed (``None``: the run's).
        """
        if not conversations:
            return []
        per = list(choices) if choices is not None else [None] * len(conversations)
        per_seed = list(seeds) if seeds is not None else [None] * len(conversations)
        llm = self._engine()
        params = [self._sampling(max_tokens, c, s) for c, s in zip(per, per_seed, strict=True)]
        try:
            outputs = llm.chat(conversations, sampling_params=params, use_tqdm=False)
            return [self._read(o) for o in outputs]
        except (ValueError, RuntimeError) as exc:
            # One over-long prompt or bad image fails the whole call; retry one by one so only
            # that item is an error.
            log.warning(
                "vLLM rejected a batch (%s); answering its %d items one by one", exc, len(conversations)
            )
        out: list[tuple[str | None, dict[str, Any]]] = []
        for conv, one_params in zip(conversations, params, strict=True):
            try:
                [one] = llm.chat([conv], sampling_params=one_params, use_tqdm=False)
                out.append(self._read(one))
            except (ValueError, RuntimeError) as exc:
                out.append((None, {"error": f"vLLM failed on this item: {exc}"}))
        return out

    @staticmethod
    def _read(output: Any) -> tuple[str | None, dict[str, Any]]:
        first = output.outputs[0]
        extra = {
            "finish_reason": getattr(first, "finish_reason", None),
            "usage": {
                "prompt_tokens": len(getattr(output, "prompt_token_ids", None) or []),
                "completion_tokens": len(getattr(first, "token_ids", None) or []),
            },
        }
        return first.text, extra

    def identity(self) -> dict[str, Any]:
        """Model, sampling settings and engine arguments that change answers."""
        ident = {
            **super().identity(),
            "model": self.model_name,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "seed": self.options.seed,
        }
        if self.options.answer_format == "constrained":
            ident["answer_format"] = "constrained"
        if self.options.gen_args:
            ident["gen_args"] = dict(self.options.gen_args)
        for key in ("dtype", "revision", "quantization", "max_model_len"):
            if key in self.engine_kwargs:
                ident[key] = self.engine_kwargs[key]
        return ident

    def close(self) -> None:
        """Drop the engine (vLLM frees GPU memory when the engine is garbage-collected)."""
        self._llm = None

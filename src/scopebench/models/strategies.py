"""Chain-of-thought strategies (SPUR): multi-turn conversations over any generative backend.

A strategy wraps a backend that implements :meth:`~scopebench.models.base.Backend.chat` (local
transformers, vLLM, OpenAI-compatible APIs, or ``replay:`` transcripts). Each step is one batched
``chat`` call over every item of the batch, so batching survives multi-step prompting. Every
message — prompts and replies — is kept in the record (``extra["messages"]``), and the last reply
goes through the same answer parser as a direct answer.

Strategies (the instruction texts are below, verbatim):

* ``direct`` — the protocol's prompt, one reply.
* ``step-by-step`` — think step by step, then "The answer is X".
* ``vot`` — Visualization-of-Thought: visualize the state after each reasoning step.
* ``ddcot`` — Duty-Distinct CoT: decompose into sub-questions, answer them, then answer.
* ``cantor`` — plan-based, in the spirit of Cantor: decide what is needed and split into sub-tasks,
  execute each, synthesize the final answer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from scopebench.errors import ModelSpecError
from scopebench.items import Item
from scopebench.models.base import Backend, ChatMessage, FinishReason, Response
from scopebench.protocols import Request, render
from scopebench.registry import did_you_mean

__all__ = ["STRATEGIES", "Step", "StrategyBackend", "strategy_steps"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Step:
    """One user turn of a strategy.

    Attributes:
        instruction: Text of the turn; on the first step it is appended to the protocol prompt.
            ``{X}`` is replaced by "the letter" or "the number" of the option.
        max_new_tokens: Generation budget for the reply.
    """

    instruction: str
    max_new_tokens: int


_FINAL = 'End with "The answer is X", where X is {X} of your choice.'

STRATEGIES: dict[str, tuple[Step, ...]] = {
    "direct": (Step("", 128),),
    "step-by-step": (Step("Think step by step about the image and the question. " + _FINAL, 768),),
    "vot": (
        Step(
            "Reason step by step. After each reasoning step, visualize the state: describe what the "
            "relevant part of the figure looks like at that point of your reasoning. " + _FINAL,
            768,
        ),
    ),
    "ddcot": (
        Step(
            "First, decompose this question into the sub-questions you would need to answer to solve "
            "it. List the sub-questions only; do not answer them yet.",
            384,
        ),
        Step("Now answer each sub-question in turn, using the image.", 768),
        Step("Using those answers, answer the original question. " + _FINAL, 256),
    ),
    "cantor": (
        Step(
            "Before answering, decide what information from the figure and what knowledge are needed. "
            "Split the problem into sub-tasks, each with a clear goal. Do not answer yet.",
            384,
        ),
        Step("Execute each sub-task in turn and report its result.", 768),
        Step("Synthesize the results of the sub-tasks into the final answer. " + _FINAL, 256),
    ),
}


def strategy_steps(name: str) -> tuple[Step, ...]:
    """The steps of a strategy.

    Raises:
        ModelSpecError: For an unknown strategy name.
    """
    if name not in STRATEGIES:
        raise ModelSpecError(
            f"unknown strategy {name!r}{did_you_mean(name, STRATEGIES)}; "
            f"choose one of: {', '.join(STRATEGIES)}"
        )
    return STRATEGIES[name]


class StrategyBackend(Backend):
    """Answers items by running a strategy's conversation on an inner generative backend."""

    kinds = ("mcq",)

    def __init__(self, inner: Backend, strategy: str, *, protocol: str = "default", no_image: bool = False):
        super().__init__(inner.spec, inner.options)
        if inner.options.answer_format == "constrained":
            raise ModelSpecError(
                "--answer-format constrained asks for an option label only, while a chain-of-thought "
                "strategy needs free text in its turns; drop --strategy or use --answer-format free"
            )
        if inner.options.gen_args:
            raise ModelSpecError(
                "--gen-arg samples single replies, while a chain-of-thought strategy holds a "
                "conversation; drop --strategy or --gen-arg"
            )
        if type(inner).chat is Backend.chat:
            inner.chat([], [])  # raises the backend's own "cannot hold a conversation" error
        self.inner = inner
        self.strategy = strategy
        self.steps = strategy_steps(strategy)
        self.protocol = protocol
        self.no_image = no_image
        self.default_batch_size = inner.default_batch_size  # type: ignore[misc]

    @property
    def needs_images(self) -> bool:  # type: ignore[override]
        """Whatever the inner backend needs."""
        return self.inner.needs_images and not self.no_image

    @property
    def mode(self) -> str:  # type: ignore[override]
        """``strategy:<name>`` over the inner backend's mode."""
        return f"strategy:{self.strategy}"

    def prepare(self, items: Sequence[Item]) -> None:
        """Let the inner backend see the run's items; warn once about transcripts too long to use."""
        if hasattr(self.inner, "steps_needed"):
            # A replay counts a transcript shorter than the strategy as missing (as chat() will).
            self.inner.steps_needed = len(self.steps)
        self.inner.prepare(items)
        unused = self._unused_replies_of()
        if unused is None:
            return
        extra = [it.id for it in items if unused(it.id, len(self.steps))]
        if extra:
            # A replayed transcript longer than the strategy only ever contributes its first
            # replies: usually a file made for another strategy, whose answers then all go unparsed.
            log.warning(
                "%d of %d items have more replies in their transcript than strategy %r has steps "
                "(%d); the extra replies are not used (e.g. %s; see each record's "
                "extra['unused_replies']). Use the strategy the transcripts were made with.",
                len(extra),
                len(items),
                self.strategy,
                len(self.steps),
                extra[0],
            )

    def _unused_replies_of(self) -> Callable[[str, int], int] | None:
        """The inner backend's count of a stored transcript's unused replies (replay), if any."""
        fn = getattr(self.inner, "unused_replies", None)
        return fn if callable(fn) else None

    def render(self, item: Item) -> Request:
        """The request under the strategy's protocol and image setting."""
        return render(item, self.protocol, no_image=self.no_image)

    def answer(self, requests: Sequence[Request]) -> list[Response]:
        """Run every step for the whole batch; the last reply is the answer text.

        The first user turn is the request's text (plus the step's instruction) with its images;
        "the letter"/"the number" in instructions follows the request's option labels.
        """
        prompts = list(requests)
        items = [r.item for r in requests]
        convs: list[list[ChatMessage]] = []
        for p in prompts:
            conv = [ChatMessage("system", p.system)] if p.system else []
            convs.append(conv)
        failed: dict[int, Response] = {}
        finished: dict[int, FinishReason | None] = {}
        for k, step in enumerate(self.steps):
            live = [i for i in range(len(items)) if i not in failed]
            if not live:
                break
            for i in live:
                which = "the number" if prompts[i].labels == "numbers" else "the letter"
                text = step.instruction.replace("{X}", which)
                if k == 0:
                    body = prompts[i].text + (f"\n\n{text}" if text else "")
                    convs[i].append(ChatMessage("user", body, prompts[i].images))
                else:
                    convs[i].append(ChatMessage("user", text))
            replies = self.inner.chat(
                [convs[i] for i in live], [items[i].id for i in live], max_new_tokens=step.max_new_tokens
            )
            for i, r in zip(live, replies, strict=True):
                if r.status != "ok" or r.text is None:
                    failed[i] = Response(
                        items[i].id,
                        status=r.status if r.status != "ok" else "error",
                        error=r.error or "empty reply",
                        extra=self._transcript(convs[i]),
                    )
                else:
                    convs[i].append(ChatMessage("assistant", r.text))
                    finished[i] = r.finish_reason  # the last turn's is the reply's
        unused = self._unused_replies_of()
        out = []
        for i, it in enumerate(items):
            if i in failed:
                out.append(failed[i])
            else:
                extra = self._transcript(convs[i])
                n_unused = unused(it.id, len(self.steps)) if unused is not None else 0
                if n_unused:
                    extra["unused_replies"] = n_unused
                out.append(
                    Response(it.id, text=convs[i][-1].text, extra=extra, finish_reason=finished.get(i))
                )
        return out

    def _transcript(self, conv: Sequence[ChatMessage]) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "messages": [{"role": m.role, "text": m.text, "images": len(m.images)} for m in conv],
        }

    def identity(self) -> dict[str, Any]:
        """The inner backend's identity plus the strategy."""
        return {**self.inner.identity(), "strategy": self.strategy, "mode": self.mode}

    def close(self) -> None:
        """Close the inner backend."""
        self.inner.close()

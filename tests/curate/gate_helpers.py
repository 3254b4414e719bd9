"""A scripted answerer for the gate tests: every answer and reply is set by the test."""

from __future__ import annotations

from collections.abc import Sequence

from scopebench.curate.filtering.shortcut import Answer, GateItem


class Scripted:
    """Answers from tables; records every call (to check who was asked what).

    ``answers[(model, seed, key)]`` is ``"c"`` (correct), ``"u"`` (unparsed) or ``"e"`` (error);
    anything else, or no entry, is a wrong answer. ``chats[(model, key)]`` is a chat reply; no
    entry is an error reply.
    """

    def __init__(
        self,
        answers: dict[tuple[str, int, str], str] | None = None,
        chats: dict[tuple[str, str], str] | None = None,
    ) -> None:
        self.answers = answers or {}
        self.chats = chats or {}
        self.calls: list[tuple[str, str, str, int]] = []  # (kind, model, key, seed)
        self.prompts: dict[str, str] = {}

    def answer(
        self, spec: str, items: Sequence[GateItem], seed: int, *, key_suffix: str = ""
    ) -> list[Answer]:
        out = []
        for it in items:
            key = it.id + key_suffix
            self.calls.append(("answer", spec, key, seed))
            got = self.answers.get((spec, seed, key))
            if got == "c":
                out.append(Answer(it.answer, "correct", f"({it.answer})"))
            elif got == "u":
                out.append(Answer(None, "unparsed", "hmm", "no option committed to"))
            elif got == "e":
                out.append(Answer(None, "error", None, "timeout"))
            else:
                wrong = (it.answer + 1) % len(it.options)
                out.append(Answer(wrong, "wrong", f"({wrong})"))
        return out

    def chat(self, spec: str, prompts: Sequence[str], keys: Sequence[str], seed: int) -> list[Answer]:
        out = []
        for prompt, key in zip(prompts, keys, strict=True):
            self.calls.append(("chat", spec, key, seed))
            self.prompts[key] = prompt
            reply = self.chats.get((spec, key))
            out.append(
                Answer(None, "ok", reply) if reply is not None else Answer(None, "error", None, "no reply")
            )
        return out

r"""What the engine knows about a reply, applied before any rule reads it (private to the parser).

* :func:`strip_echo` removes the rendered prompt and chat role markers from the start of a reply
  that repeats them (LLaVA's "USER: … ASSISTANT: C", ChatML's ``<|im_start|>assistant``, or the
  prompt echoed with its whitespace or markdown changed), so what follows is read as the answer.
* :func:`drop_cut_fragment` drops the unfinished sentence a reply cut at the length limit ends
  on: what the cut touched is no verdict ("The answer is C" may have been "… Cholangio…").
* :func:`collapse_repeats` reads a degenerate loop that repeats one line ("A\\nA\\nA…") as that
  line once.

Each is one pass over the reply (and the prompt), so parsing stays linear in the reply's length.
"""

from __future__ import annotations

import re

__all__ = ["collapse_repeats", "drop_cut_fragment", "strip_echo"]

# A user turn opening the reply: the model repeats the conversation it was given.
_USER_TURN = re.compile(
    r"\A\s*(?:<s>\s*)?(?:<\|im_start\|>\s*(?:system|user)\b|<\|user\|>|<start_of_turn>\s*user\b"
    r"|<\|start_header_id\|>\s*user\s*<\|end_header_id\|>|\[INST\]|(?:###\s*)?(?i:user|human)\s*:)"
)
# The assistant's turn: what follows it is the reply proper.
_ASSISTANT_TURN = re.compile(
    r"<\|im_start\|>\s*assistant\b|<\|assistant\|>|<start_of_turn>\s*model\b"
    r"|<\|start_header_id\|>\s*assistant\s*<\|end_header_id\|>|\[/INST\]"
    r"|(?:^|(?<=\s))(?:###\s*)?(?i:assistant|gpt)\s*:",
    re.M,
)
# Tokens and placeholders a chat template leaves around a turn.
_TEMPLATE_NOISE = re.compile(r"\A(?:\s|<\|im_end\|>|<end_of_turn>|<\|eot_id\|>|</s>|<image>|<\|image\|>)+")
# Characters an echo may add or drop without changing the prompt: whitespace and markdown.
_FORMAT = frozenset(" \t\r\n*_#`>")
#: Share of the prompt an echo must repeat, from its start, to be removed (a model that echoes
#: the question and options but not the instruction still echoes).
_ECHO_SHARE = 0.6
#: Where, after an echoed prompt, the assistant's role marker is still looked for.
_MARKER_REACH = 80


def _echo_end(reply: str, prompt: str) -> int:
    """Where the prompt echoed at the start of ``reply`` ends (0 when it is not echoed).

    Both are compared without whitespace, markdown characters or case, so a reply that collapses
    the prompt's line breaks or bolds its headings still counts as an echo.
    """
    want = [ch.casefold() for ch in prompt if ch not in _FORMAT]
    if len(want) < 8:
        return 0
    i = matched = end = 0
    while i < len(reply) and matched < len(want):
        ch = reply[i]
        i += 1
        if ch in _FORMAT:
            continue
        if ch.casefold() != want[matched]:
            break
        matched += 1
        end = i
    return end if matched >= _ECHO_SHARE * len(want) else 0


def strip_echo(reply: str, prompt: str | None = None) -> str:
    """``reply`` without the prompt and role markers it starts by repeating.

    Args:
        reply: The raw reply.
        prompt: The rendered prompt the reply answers (the user message), when known.

    Returns:
        What follows the echo and the assistant's role marker; ``reply`` unchanged when it does not
        start with an echo. An echo with nothing after it gives ``""`` (nothing to read).
    """
    pos = 0
    user = _USER_TURN.match(reply)
    if user is not None:
        pos = user.end()
    noise = _TEMPLATE_NOISE.match(reply, pos)
    if noise is not None:
        pos = noise.end()
    echo = _echo_end(reply[pos:], prompt) if prompt else 0
    if user is None and echo == 0:
        # No echo: only an assistant marker opening the reply ("<|im_start|>assistant\nC") goes.
        lead = _ASSISTANT_TURN.match(reply, pos)
        return reply[lead.end() :] if lead is not None else reply
    pos += echo
    # After a user turn the assistant's marker may come at any distance (the echo may differ from
    # the prompt); right after an echoed prompt it must come soon or not at all.
    reach = len(reply) if echo == 0 else pos + _MARKER_REACH
    marker = _ASSISTANT_TURN.search(reply, pos, reach)
    if marker is not None:
        pos = marker.end()
    elif echo == 0:
        return ""  # a user turn repeated with no assistant turn after it: no reply to read
    noise = _TEMPLATE_NOISE.match(reply, pos)
    return reply[noise.end() if noise is not None else pos :]


# The end of a sentence or line: what comes after the last one in a cut reply is unfinished.
_FINISHED = re.compile(r"[.!?。！？](?=[\s\"')\]*]|\Z)|\n")


def drop_cut_fragment(reply: str) -> str:
    """``reply`` up to the end of its last finished sentence or line (all of it when there is none).

    Args:
        reply: A reply that generation stopped at the length limit.
    """
    end = 0
    for m in _FINISHED.finditer(reply):
        end = m.end()
    if end == 0:
        return reply
    kept = reply[:end]
    return kept if kept.strip() else reply


def collapse_repeats(reply: str) -> str:
    r"""One copy of the line a reply repeats on every line ("A\\nA\\nA" → "A"); else ``reply``."""
    lines = [line.strip() for line in reply.splitlines() if line.strip()]
    if len(lines) < 2 or any(line != lines[0] for line in lines):
        return reply
    return lines[0]

"""``replay:PATH`` — re-score raw responses produced earlier or by other tools.

The file is JSON Lines, one object per answered item::

    {"item_id": "pathmmu/SocialPath/test_tiny/3", "response": "The answer is (B)"}

with, optionally, why generation stopped (``"finish_reason": "length"``; OpenAI's, vLLM's and
similar names are read as :data:`~scopebench.models.base.FinishReason`), so a reply that the token
limit cut is read as one (only an explicit verdict before the cut counts).

or, for multi-step strategies (one reply per step, in order)::

    {"item_id": "spur/reason/2010027917_6_1", "responses": ["sub-questions…", "…", "The answer is B"]}

``item_id`` may also be the benchmark's own id (SPUR's ``QUESTION_INDEX`` ``2010027917_6_1``, or
``reason/2010027917_6_1``): the item id without its ``<benchmark>/`` prefix, or its last part, when
that names one item of the run. Each response goes through the same parser as a live model's.
Items with no line are reported as
``missing_response`` (never scored, never guessed); lines naming items that are not in the run are
counted and logged. Under a strategy, step *k* replays reply *k*: a transcript with fewer replies than
the strategy has steps is ``missing_response``, one with more has replies that are never used — the
strategy logs how many items have such a transcript and records ``extra["unused_replies"]``.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from scopebench.errors import DataFormatError, DataNotFoundError, ModelSpecError
from scopebench.items import LETTERS, Item
from scopebench.models.base import Backend, ChatMessage, FinishReason, ModelOptions, Response, finish_reason
from scopebench.models.registry import ModelSpec, parse_spec
from scopebench.protocols import Request

__all__ = ["ReplayBackend", "read_replay_file"]

log = logging.getLogger(__name__)


def read_replay_file(path: Path, finish: dict[str, FinishReason] | None = None) -> dict[str, str | list[str]]:
    """Read a replay JSONL file into ``{item_id: response}`` (a list for multi-step transcripts).

    Args:
        path: The file.
        finish: Filled with each line's ``finish_reason``, where it has one.

    Raises:
        DataNotFoundError: When the file does not exist.
        DataFormatError: On a malformed line, a line without ``item_id``/``response``, an
            ``item_id`` that is not text, an unknown ``finish_reason``, or two lines giving
            different responses for the same item.
    """
    if not path.is_file():
        raise DataNotFoundError(f"replay file not found: {path}")
    out: dict[str, str | list[str]] = {}
    first_line: dict[str, int] = {}
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataFormatError(f"{path}, line {lineno}: not valid JSON ({exc.msg})") from exc
            if (
                not isinstance(obj, dict)
                or "item_id" not in obj
                or not ({"response", "responses"} & set(obj))
            ):
                raise DataFormatError(
                    f'{path}, line {lineno}: expected {{"item_id": "...", "response": "..."}} '
                    '(or "responses": [...] for multi-step transcripts)'
                )
            item_id = obj["item_id"]
            if not isinstance(item_id, str) or not item_id.strip():
                # Never str(): 7 would become "7" and name no item (ids look like "local/7").
                raise DataFormatError(
                    f"{path}, line {lineno}: item_id must be the item's id as text "
                    f'(e.g. "local/q1"), got {json.dumps(item_id)}'
                )
            text: str | list[str]
            if "responses" in obj:
                steps = obj["responses"]
                if not isinstance(steps, list) or not all(isinstance(x, str) for x in steps):
                    raise DataFormatError(f"{path}, line {lineno}: 'responses' must be a list of strings")
                text = list(steps)
            else:
                response = obj["response"]
                if response is not None and not isinstance(response, str):
                    raise DataFormatError(f"{path}, line {lineno}: 'response' must be a string or null")
                text = response or ""
            if item_id in out and out[item_id] != text:
                raise DataFormatError(
                    f"{path}: item {item_id!r} has different responses on lines "
                    f"{first_line[item_id]} and {lineno}; keep one"
                )
            out[item_id] = text
            first_line.setdefault(item_id, lineno)
            if obj.get("finish_reason") is not None and finish is not None:
                finish[item_id] = _finish(obj["finish_reason"], path, lineno)
    return out


def _short_ids(item_id: str) -> list[str]:
    """The forms a benchmark's own files give an id: without ``<benchmark>/``, and its last part."""
    rest = item_id.split("/", 1)[1] if "/" in item_id else ""
    last = item_id.rsplit("/", 1)[-1]
    return [s for s in dict.fromkeys((rest, last)) if s and s != item_id]


def _id_forms(item: Item | None) -> str:
    """The ``item_id`` forms a replay file may use, shown with the run's first item."""
    if item is None:
        return "'<benchmark>/<id>'"
    return " or ".join(repr(s) for s in [item.id, *_short_ids(item.id)])


def _finish(raw: object, path: Path, lineno: int) -> FinishReason:
    reason = finish_reason(raw)
    if reason is None:
        raise DataFormatError(
            f"{path}, line {lineno}: unknown finish_reason {json.dumps(raw)}; "
            "use stop, length, content_filter or error"
        )
    return reason


class ReplayBackend(Backend):
    """Answers from a JSONL file of raw responses, parsed like live model output."""

    model_args = frozenset({"labels"})

    mode = "replay"
    needs_images = False
    # Detection responses are replayed too: their boxes are parsed and scored with GRIT.
    kinds = ("mcq", "detection")
    default_batch_size = 256

    takes_model_spec = True

    def __init__(self, spec: str | ModelSpec, options: ModelOptions) -> None:
        arg = parse_spec(spec).target
        super().__init__(spec, options)
        self.path = Path(arg).expanduser()
        self.finish_reasons: dict[str, FinishReason] = {}
        self.responses = read_replay_file(self.path, self.finish_reasons)
        # Explicit labels=letters|numbers wins; otherwise the run's protocol decides, as it does for
        # live models (MicroVQA's owner protocol numbers options: "The answer is (2)").
        explicit = options.extra.get("labels")
        if explicit not in (None, "letters", "numbers"):
            raise ModelSpecError(f"--model-arg labels must be letters or numbers (got {explicit!r})")
        self.explicit_labels: Literal["letters", "numbers"] | None = explicit

    #: Replies an item needs to be answered: 1, or a strategy's number of steps (the strategy sets
    #: it before :meth:`prepare`, so the warning counts exactly the ``missing_response`` records).
    steps_needed: int = 1

    def n_replies(self, item_id: str) -> int:
        """How many replies the file holds for ``item_id`` (a single ``"response"`` is one)."""
        got = self.responses.get(item_id)
        return len(got) if isinstance(got, list) else (0 if got is None else 1)

    def prepare(self, items: Sequence[Item]) -> None:
        """Log how the file's ids line up with the run's items.

        The count of items without a response is exactly the number of ``missing_response``
        records the run will write: items with no line or an empty transcript, and, under a
        strategy, items whose transcript has fewer replies than the strategy has steps.
        """
        ids = {it.id for it in items}
        self._adopt_own_ids(items, ids)
        unknown = [k for k in self.responses if k not in ids]
        no_line = sum(1 for it in items if self.n_replies(it.id) == 0)
        short = sum(1 for it in items if 0 < self.n_replies(it.id) < self.steps_needed)
        missing = no_line + short
        expected = _id_forms(next(iter(items), None))
        if unknown:
            log.warning(
                "%d line(s) of %s name items that are not in this run (e.g. %r); item ids look like %s",
                len(unknown),
                self.path,
                unknown[0],
                expected,
            )
        if missing:
            log.warning(
                "%d of %d items have no response in %s%s; they are recorded as missing_response "
                "(item_id as %s)",
                missing,
                len(items),
                self.path,
                f" ({no_line} have no reply, {short} have fewer replies than the strategy's "
                f"{self.steps_needed} steps)"
                if short
                else "",
                expected,
            )

    def _adopt_own_ids(self, items: Sequence[Item], ids: set[str]) -> None:
        """Read lines that name items by the benchmark's own id (SPUR's ``QUESTION_INDEX``).

        A line may give the item's id without the ``<benchmark>/`` prefix
        (``reason/2010027917_6_1``) or its last part (``2010027917_6_1``), as the benchmark's own
        files and tools write it, when that names one item of the run only. A line with the full
        id for the same item wins.
        """
        aliases: dict[str, list[str]] = {}
        for item in items:
            for alias in _short_ids(item.id):
                aliases.setdefault(alias, []).append(item.id)
        adopted, shared = 0, []
        for key in [k for k in self.responses if k not in ids]:
            targets = aliases.get(key, [])
            if len(targets) > 1:
                shared.append(key)  # never guessed: SPUR's three files reuse QUESTION_INDEX values
            elif targets and targets[0] not in self.responses:
                self.responses[targets[0]] = self.responses.pop(key)
                adopted += 1
        if adopted:
            log.info("%d line(s) of %s name their item by the benchmark's own id", adopted, self.path)
        if shared:
            log.warning(
                "%d line(s) of %s name an id that several items of this run share (e.g. %r: %s); "
                "give those lines the full item id",
                len(shared),
                self.path,
                shared[0],
                ", ".join(aliases[shared[0]]),
            )

    def render(self, item: Item) -> Request:
        """The run's request, with the file's declared option labels (``labels=``) when given.

        The parser reads each reply with the request's labels, so a file of numbered answers
        (``The answer is (2)``) is read as numbers whatever the protocol.
        """
        request = super().render(item)
        if self.explicit_labels is None or request.kind != "mcq":
            return request
        n = len(item.choices)
        numbers = self.explicit_labels == "numbers"
        labels = tuple(str(i + 1) for i in range(n)) if numbers else tuple(LETTERS[:n])
        return replace(request, labels=self.explicit_labels, option_labels=labels)

    def answer(self, requests: Sequence[Request]) -> list[Response]:
        """Return the stored response of each item (a transcript's last reply), or ``missing_response``."""
        out = []
        for req in requests:
            got = self.responses.get(req.item_id)
            if got is None or (isinstance(got, list) and not got):
                error = f"no line for this item in {self.path}"
                out.append(Response(req.item_id, status="missing_response", error=error))
            else:
                text = got[-1] if isinstance(got, list) else got
                out.append(
                    Response(req.item_id, text=text, finish_reason=self.finish_reasons.get(req.item_id))
                )
        return out

    def unused_replies(self, item_id: str, n_steps: int) -> int:
        """How many replies of ``item_id``'s transcript a conversation of ``n_steps`` turns leaves unused.

        A single ``"response"`` counts as a one-reply transcript; an item without a line has none.
        """
        return max(0, self.n_replies(item_id) - n_steps)

    def chat(
        self,
        conversations: Sequence[Sequence[ChatMessage]],
        item_ids: Sequence[str],
        *,
        max_new_tokens: int | None = None,
    ) -> list[Response]:
        """Replay step *k* of each item's transcript, *k* = assistant turns so far."""
        out = []
        for conv, item_id in zip(conversations, item_ids, strict=True):
            step = sum(m.role == "assistant" for m in conv)
            got = self.responses.get(item_id)
            steps = got if isinstance(got, list) else ([got] if got is not None else [])
            if step < len(steps):
                out.append(Response(item_id, text=steps[step]))
            else:
                out.append(
                    Response(
                        item_id,
                        status="missing_response",
                        error=f"{self.path} has no reply for step {step + 1} of this item",
                    )
                )
        return out

    def identity(self) -> dict[str, Any]:
        """Spec plus a hash of the replay file, so a changed file is a different model."""
        digest = hashlib.sha256(self.path.read_bytes()).hexdigest()[:16]
        return {**super().identity(), "file_sha256": digest}

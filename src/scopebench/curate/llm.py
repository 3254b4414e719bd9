"""Cached, resumable LLM calls for build steps, with a cost ledger per step.

Every build step that asks a model something (``generate``, and the gates: shortcut filter,
RefineBot, panel checks) goes through :class:`LLMClient`, so all of them share three guarantees:

* **Content-keyed cache.** A call's key is the SHA-256 of (the conversation's text and image
  content hashes, the backend's :meth:`~scopebench.models.Backend.identity`, the decoding settings,
  the caller's output-schema version, the seed). A changed prompt, model, setting or schema reruns
  exactly the calls it touches; an unchanged call is answered from the cache at no cost.
* **Resumable.** Replies are committed to the SQLite cache after every batch, so a crashed build
  re-run sends only the calls that had not been answered. Failed calls (``status != "ok"``: network
  errors, a replay file without the line) are never cached: the next run asks again.
* **Ledger.** Each call is counted under its step name: requests sent, cache hits, failed calls,
  input/output tokens (where the backend reports them: ``openai:`` usage) and a price when the
  caller gives per-token prices or the server reports a ``cost``.

How to call it::

    from scopebench.curate.llm import CallCache, Ledger, LLMCall, LLMClient
    from scopebench.models import ChatMessage, ModelOptions, load_model

    backend = load_model("replay:replies.jsonl", ModelOptions(seed=0))
    client = LLMClient(backend, CallCache(out / ".cache" / "llm.sqlite"), Ledger())
    calls = [LLMCall(call_id="shortcut/img1", messages=[ChatMessage("user", prompt)], schema="mcq-v1")]
    replies = client.chat("filter", calls, seed=0)   # one LLMReply per call, in order
    replies[0].text, replies[0].cached, replies[0].key
    client.ledger.write(out / "ledger.json")

``call_id`` names the call for the backend (replay files key their lines by it); a retry continues
the conversation (the invalid reply as an assistant turn and a correction as a user turn), so a
replay transcript's reply *k* answers attempt *k*. Pass ``seed`` per attempt: it is set on the
backend's options for the call (backends that sample read it) and is part of the key.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from scopebench.errors import ModelSpecError, RunAbortedError
from scopebench.models import Backend, ChatMessage, ModelOptions, Response, load_model
from scopebench.models.registry import backend_class

__all__ = [
    "DEFAULT_MAX_CONSECUTIVE_FAILURES",
    "CallCache",
    "FailureGuard",
    "LLMCall",
    "LLMClient",
    "LLMReply",
    "Ledger",
    "LedgerEntry",
    "ModelRef",
    "Prices",
    "call_key",
    "load_backend",
]

#: Calls failing in a row (errors: network, server) after which a step stops.
DEFAULT_MAX_CONSECUTIVE_FAILURES = 8
#: Model arguments that are :class:`~scopebench.models.ModelOptions` fields, not backend extras.
_COMMON_ARGS = ("device", "base_url", "batch_size")


@dataclass(frozen=True)
class ModelRef:
    """A model as every build step names it: a spec and its backend arguments.

    The ``model``/``model_args`` block of ``generate:`` and of every gate entry in ``filter:``.

    Attributes:
        spec: ``openai:…``, ``vllm:…``, ``hf:…``, ``replay:FILE``…
        args: ``base_url``, ``api_key_env``, ``device``, ``batch_size`` and any backend argument
            (``temperature``, ``max_retries``…), as ``--model-arg`` takes them.
    """

    spec: str
    args: dict[str, Any] = field(default_factory=dict)


def load_backend(ref: ModelRef, *, seed: int, no_image: bool = False, needs_chat: bool = False) -> Backend:
    """The backend of ``ref`` (``device``, ``base_url``, ``batch_size`` become common options).

    Raises:
        ModelSpecError: When ``needs_chat`` and the backend cannot write text.
    """
    if needs_chat and backend_class(ref.spec).chat is Backend.chat:
        raise ModelSpecError(f"{ref.spec!r} cannot write text; use openai:, vllm:, hf: or replay:")
    args = dict(ref.args)
    common = {k: args.pop(k) for k in _COMMON_ARGS if k in args}
    options = ModelOptions(
        seed=seed,
        device=str(common.get("device", "auto")),
        batch_size=common.get("batch_size"),
        base_url=common.get("base_url"),
        no_image=no_image,
        extra=args,
    )
    return load_model(ref.spec, options)


class FailureGuard:
    """Stops a step after ``limit`` calls in a row failed with an error (a dead or refusing server).

    A missing replay line is the file's answer, not a failure of the server, and does not count.
    """

    def __init__(self, limit: int = DEFAULT_MAX_CONSECUTIVE_FAILURES, what: str = "") -> None:
        self.limit = limit
        self.what = what
        self.in_a_row = 0

    def record(self, status: str, error: str | None, model: str) -> None:
        """Count one call's outcome.

        Raises:
            RunAbortedError: On the ``limit``-th error in a row, naming the last one.
        """
        if status != "error":
            self.in_a_row = 0
            return
        self.in_a_row += 1
        if self.limit and self.in_a_row >= self.limit:
            raise RunAbortedError(
                f"{self.what or 'step'} stopped: {self.in_a_row} calls to {model} failed in a row (last: "
                f"{error}). Is the server running and reachable (model_args base_url, api_key_env)? "
                "Replies received so far are in the call cache; run again to go on from there"
            )


@dataclass(frozen=True)
class LLMCall:
    """One conversation to continue with one assistant turn.

    Attributes:
        call_id: Names the call for the backend (a replay file keys its lines by it) and in records.
        messages: The conversation, ending with a user turn.
        schema: Version tag of the output schema the caller validates the reply against; bump it
            when the schema changes so cached replies are asked again.
        max_new_tokens: Generation budget (the backend's default when ``None``).
    """

    call_id: str
    messages: Sequence[ChatMessage]
    schema: str = ""
    max_new_tokens: int | None = None


@dataclass
class LLMReply:
    """The answer to one :class:`LLMCall`.

    Attributes:
        call_id: The call's id.
        key: The content key it is cached under.
        text: The reply text (``None`` when the call failed).
        status: ``ok``, ``error`` or ``missing_response`` (the backend's status).
        error: Why the call failed.
        cached: Whether the reply came from the cache (no request sent).
        usage: Token counts the backend reported (``prompt_tokens``, ``completion_tokens``).
        seed: The seed the call was made with.
    """

    call_id: str
    key: str
    text: str | None
    status: str = "ok"
    error: str | None = None
    cached: bool = False
    usage: dict[str, Any] = field(default_factory=dict)
    seed: int = 0


@dataclass(frozen=True)
class Prices:
    """Prices in the currency of your choice per million tokens (from the provider's price list)."""

    input_per_mtok: float
    output_per_mtok: float


@dataclass
class LedgerEntry:
    """Cost of one step: requests, cache hits, failures, tokens and price (``None`` when unknown)."""

    requests: int = 0
    cached: int = 0
    failed: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    price: float | None = None


@dataclass
class Ledger:
    """Costs per step (this run's: cached calls cost nothing and count only as ``cached``)."""

    steps: dict[str, LedgerEntry] = field(default_factory=dict)

    def entry(self, step: str) -> LedgerEntry:
        """The entry of ``step`` (created empty)."""
        return self.steps.setdefault(step, LedgerEntry())

    def total(self) -> LedgerEntry:
        """The sum over steps (price ``None`` unless some step has one)."""
        out = LedgerEntry()
        for e in self.steps.values():
            out.requests += e.requests
            out.cached += e.cached
            out.failed += e.failed
            out.input_tokens += e.input_tokens
            out.output_tokens += e.output_tokens
            if e.price is not None:
                out.price = (out.price or 0.0) + e.price
        return out

    def to_json(self) -> dict[str, Any]:
        """``{"steps": {name: entry}, "total": entry}``."""
        return {"steps": {k: asdict(v) for k, v in sorted(self.steps.items())}, "total": asdict(self.total())}

    def write(self, path: Path) -> None:
        """Write :meth:`to_json` to ``path``."""
        path.write_text(json.dumps(self.to_json(), indent=2), encoding="utf-8")


def _message_content(msg: ChatMessage) -> dict[str, Any]:
    # Images by content where it is at hand (bytes), else by their key: a path alone would make a
    # moved file look new and an edited file look old.
    images = [hashlib.sha256(r.data).hexdigest() if r.data is not None else r.key for r in msg.images]
    return {"role": msg.role, "text": msg.text, "images": images}


def call_key(call: LLMCall, identity: dict[str, Any], decoding: dict[str, Any], seed: int) -> str:
    """SHA-256 of (conversation, model identity, decoding settings, schema version, seed)."""
    payload = {
        "messages": [_message_content(m) for m in call.messages],
        "model": identity,
        "decoding": {**decoding, "max_new_tokens": call.max_new_tokens},
        "schema": call.schema,
        "seed": seed,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


class CallCache:
    """Replies by content key in one SQLite file, committed after every batch."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path)
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, call_id TEXT, text TEXT, usage TEXT)"
        )
        self._db.commit()

    def get(self, key: str) -> tuple[str, dict[str, Any]] | None:
        """``(text, usage)`` stored under ``key``, or ``None``."""
        row = self._db.execute("SELECT text, usage FROM calls WHERE key = ?", (key,)).fetchone()
        return None if row is None else (row[0], json.loads(row[1]))

    def put(self, rows: Sequence[tuple[str, str, str, dict[str, Any]]]) -> None:
        """Store ``(key, call_id, text, usage)`` rows and commit."""
        self._db.executemany(
            "INSERT OR REPLACE INTO calls VALUES (?, ?, ?, ?)",
            [(k, c, t, json.dumps(u)) for k, c, t, u in rows],
        )
        self._db.commit()

    def __len__(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM calls").fetchone()[0])

    def close(self) -> None:
        """Close the database."""
        self._db.close()


class LLMClient:
    """A backend behind the content-keyed cache and the ledger (see the module docstring).

    Args:
        backend: Any generative backend (``Backend.chat``): ``openai:``, ``vllm:``, ``hf:``, ``replay:``.
        cache: Where replies are kept.
        ledger: Where costs are counted (a new one when ``None``).
        decoding: Decoding settings that change replies and are not in the backend's identity.
        prices: Prices per million tokens, for the ledger's ``price``.
        guard: Stops the step after too many failed calls in a row (a new one when ``None``).
        progress: A bar to tick once per call answered (from the cache or sent).
    """

    def __init__(
        self,
        backend: Backend,
        cache: CallCache,
        ledger: Ledger | None = None,
        *,
        decoding: dict[str, Any] | None = None,
        prices: Prices | None = None,
        guard: FailureGuard | None = None,
        progress: Any = None,
    ) -> None:
        self.guard = guard if guard is not None else FailureGuard()
        #: Anything with ``update(n)`` (a tqdm bar): one tick per call answered.
        self.progress = progress
        self.backend = backend
        self.cache = cache
        self.ledger = ledger if ledger is not None else Ledger()
        self.decoding = dict(decoding or {})
        self.prices = prices
        self.identity = backend.identity()
        self.batch_size = backend.options.batch_size or backend.default_batch_size

    def chat(self, step: str, calls: Sequence[LLMCall], *, seed: int) -> list[LLMReply]:
        """Answer every call (cache first), counting costs under ``step``; one reply per call, in order."""
        entry = self.ledger.entry(step)
        out: list[LLMReply | None] = [None] * len(calls)
        todo: list[tuple[int, str]] = []
        for i, call in enumerate(calls):
            key = call_key(call, self.identity, self.decoding, seed)
            hit = self.cache.get(key)
            if hit is None:
                todo.append((i, key))
            else:
                out[i] = LLMReply(call.call_id, key, hit[0], cached=True, usage=hit[1], seed=seed)
                entry.cached += 1
        self._tick(len(calls) - len(todo))
        for start in range(0, len(todo), self.batch_size):
            batch = todo[start : start + self.batch_size]
            responses = self._send([calls[i] for i, _ in batch], seed)
            stored = []
            for (i, key), resp in zip(batch, responses, strict=True):
                reply = self._reply(calls[i].call_id, key, resp, seed)
                self._count(entry, reply)
                out[i] = reply
                if reply.status == "ok" and reply.text is not None:
                    stored.append((key, reply.call_id, reply.text, reply.usage))
            self.cache.put(stored)  # committed before the guard may stop the step
            self._tick(len(batch))
            for resp in responses:
                self.guard.record(resp.status, resp.error, self.backend.spec)
        return [r for r in out if r is not None]

    def _tick(self, n: int) -> None:
        if self.progress is not None and n:
            self.progress.update(n)

    def _send(self, calls: Sequence[LLMCall], seed: int) -> list[Response]:
        budget = max((c.max_new_tokens or 0) for c in calls) or None
        old = self.backend.options.seed
        self.backend.options.seed = seed  # backends that sample read the seed per call
        try:
            return self.backend.chat(
                [list(c.messages) for c in calls], [c.call_id for c in calls], max_new_tokens=budget
            )
        except ModelSpecError:
            raise  # the backend cannot converse at all: a user error, not a failed call
        except Exception as exc:  # one failed batch must not lose the others: each call fails alone
            return [Response(c.call_id, status="error", error=f"{type(exc).__name__}: {exc}") for c in calls]
        finally:
            self.backend.options.seed = old

    @staticmethod
    def _reply(call_id: str, key: str, resp: Response, seed: int) -> LLMReply:
        usage = resp.extra.get("usage") if isinstance(resp.extra.get("usage"), dict) else {}
        return LLMReply(call_id, key, resp.text, resp.status, resp.error, usage=dict(usage or {}), seed=seed)

    def _count(self, entry: LedgerEntry, reply: LLMReply) -> None:
        entry.requests += 1
        if reply.status != "ok":
            entry.failed += 1
        n_in = int(reply.usage.get("prompt_tokens") or 0)
        n_out = int(reply.usage.get("completion_tokens") or 0)
        entry.input_tokens += n_in
        entry.output_tokens += n_out
        cost = reply.usage.get("cost")
        if isinstance(cost, int | float):
            entry.price = (entry.price or 0.0) + float(cost)
        elif self.prices is not None and (n_in or n_out):
            entry.price = (entry.price or 0.0) + (
                n_in * self.prices.input_per_mtok + n_out * self.prices.output_per_mtok
            ) / 1e6

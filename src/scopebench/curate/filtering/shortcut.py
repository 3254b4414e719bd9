"""The text-shortcut gate (MMMU-Pro, SPUR, PathMMU) and the text-only answering it runs on.

**Shortcut gate.** Each of ``n`` text-only models answers every question ``R`` times without the
image (try ``t`` uses seed ``seed + t``). A model *answers a question right* when it is correct in
at least ``r`` of its ``R`` tries; the question is dropped (reason ``shortcut``) when at least
``k`` of the ``n`` models answer it right. ``k = 3, n = 4, R = r = 1`` is PathMMU's rule; ``k = n
= 1, R = 10, r = 5`` is SPUR's. An unparsed answer, an error or a missing replay line is a try
that was not correct: it is recorded with its reason and never counts as right.

**Choices-only test** (MMMU-Pro's option-only probe): the same models and tries see the options
without the question. Its accuracy is published; with ``drop_choices_only`` a question the same
rule flags is dropped too (reason ``choices_only``).

Both **blind accuracies** (correct tries ÷ (questions × models × tries)) are statistics of the
benchmark: computed over the questions entering the gate and over those kept, next to chance
(the mean of 1/options), and written to the dataset card.

Model calls go through :class:`BackendAnswerer` (any scopebench backend, ``no_image`` on;
``replay:`` files answer by question id: ``<id>`` for the question, ``<id>#choices-only`` for
the choices-only test).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from scopebench.curate.llm import (
    DEFAULT_MAX_CONSECUTIVE_FAILURES,
    CallCache,
    FailureGuard,
    Ledger,
    LLMCall,
    LLMClient,
    ModelRef,
    load_backend,
)
from scopebench.engine.parse import parse
from scopebench.errors import DataFormatError
from scopebench.items import Item
from scopebench.models.base import ChatMessage
from scopebench.scoring.shortcut import flagged

if TYPE_CHECKING:
    from scopebench.items import Item
    from scopebench.models.base import Backend, Response
    from scopebench.protocols import Request

__all__ = [
    "CHOICES_ONLY_QUESTION",
    "Answer",
    "Answerer",
    "BackendAnswerer",
    "GateItem",
    "ShortcutGateConfig",
    "ShortcutOutcome",
    "blind_test",
    "run_shortcut_gate",
]

#: The question shown in the choices-only test, in place of the real one.
CHOICES_ONLY_QUESTION = "Which of the following options is correct?"
CHOICES_ONLY_SUFFIX = "#choices-only"


@dataclass(frozen=True)
class GateItem:
    """One question as the gates see it.

    Attributes:
        id: The question id, as exported (``<image_id>-<task>``, or a generated item's id).
        image_id: Its image.
        task: Its task.
        question: The question text.
        options: The options, answer included once.
        answer: 0-based index of the answer.
        modality: The image's modality (quota cell).
        domain: The image's domain (quota cell).
        subset: The image's source dataset.
        generated: Whether ``build generate`` wrote it (else a metadata question).
    """

    id: str
    image_id: str
    task: str
    question: str
    options: tuple[str, ...]
    answer: int
    modality: str | None = None
    domain: str | None = None
    subset: str | None = None
    generated: bool = False

    def cell(self) -> dict[str, Any]:
        """The fields of its quota cell, and its id."""
        return {"id": self.id, "modality": self.modality, "domain": self.domain, "task": self.task}


@dataclass(frozen=True)
class Answer:
    """One text-only answer: the option chosen (``None``: none), status and raw text.

    ``status`` is ``correct``, ``wrong``, ``unparsed``, ``error`` or ``missing_response``.
    """

    index: int | None
    status: str
    text: str | None = None
    error: str | None = None


class Answerer(Protocol):
    """What the gates need from models: text-only answers and free-text chat turns."""

    def answer(
        self, spec: str, items: Sequence[GateItem], seed: int, *, key_suffix: str = ""
    ) -> list[Answer]:
        """Answer ``items`` without their images (``key_suffix`` is appended to ids for replay)."""
        ...

    def chat(self, spec: str, prompts: Sequence[str], keys: Sequence[str], seed: int) -> list[Answer]:
        """One reply per prompt (``index`` unused; ``text`` the reply, ``status`` ok/error)."""
        ...


#: Version of the blind-answer cache entries; bump when what an entry holds changes.
BLIND_SCHEMA = "blind-answer-v1"


class BackendAnswerer:
    """:class:`Answerer` over scopebench backends, cached by content, with a cost ledger.

    Backends are loaded once per (spec, seed) with ``no_image`` on. Every answer and chat reply is
    kept in the build's LLM call cache (:mod:`scopebench.curate.llm`: a SQLite file keyed by the
    SHA-256 of the prompt's content, the backend's identity — a replay file's hash included — and
    the seed), so a re-run sends no request and a changed question or model asks only its calls.
    Failed calls (errors, missing replay lines) are never cached. The ledger counts requests, cache
    hits and failures per gate call kind (``filter/blind``, ``filter/cue``, ``filter/rewrite``,
    ``filter/equiv``).

    Args:
        cache: The call cache file (``None``: a cache in memory, for this run only).
        models: Backend arguments (``model_args``: base URL, key variable…) per model spec.
        max_consecutive_failures: Calls failing in a row that stop the step (0: never).
        progress: A bar to tick once per call answered.
    """

    def __init__(
        self,
        cache: str | Path | None = None,
        *,
        models: Mapping[str, Mapping[str, Any]] | None = None,
        max_consecutive_failures: int = DEFAULT_MAX_CONSECUTIVE_FAILURES,
        progress: Any = None,
    ) -> None:
        self._models = {k: dict(v) for k, v in (models or {}).items()}
        self.guard = FailureGuard(max_consecutive_failures, "filter")
        self.progress = progress
        self._backends: dict[tuple[str, int], Backend] = {}
        # Without a file the cache lives in memory for this run (one call is still asked once).
        self.cache = CallCache(cache if cache is not None else ":memory:")
        self.ledger = Ledger()
        #: Calls that failed with an error (not a missing replay line): the step is incomplete.
        self.errors = 0

    def _backend(self, spec: str, seed: int) -> Backend:

        key = (spec, seed)
        if key not in self._backends:
            ref = ModelRef(spec, self._models.get(spec, {}))
            self._backends[key] = load_backend(ref, seed=seed, no_image=True)
        return self._backends[key]

    def answer(
        self, spec: str, items: Sequence[GateItem], seed: int, *, key_suffix: str = ""
    ) -> list[Answer]:
        """Run the backend's ``predict`` on blind items (cache first); parse text answers like a run."""
        if not items:
            return []
        backend = self._backend(spec, seed)
        blind = [_blind_item(it, key_suffix) for it in items]
        entry = self.ledger.entry("filter/blind")
        identity = backend.identity()
        keys = [_blind_key(b, identity, seed) for b in blind]
        out: list[Answer | None] = [None] * len(items)
        todo = []
        for i, key in enumerate(keys):
            hit = self.cache.get(key)
            if hit is None:
                todo.append(i)
            else:
                out[i] = Answer(**json.loads(hit[0]))
                entry.cached += 1
        if self.progress is not None:
            self.progress.update(len(items) - len(todo))
        if todo:
            # The Request stage: the labels the backend was asked to answer with travel in the request.
            requests = [backend.render(blind[i]) for i in todo]
            fresh = backend.answer(requests)
            stored: list[tuple[str, str, str, dict[str, Any]]] = []
            for i, req, resp in zip(todo, requests, fresh, strict=True):
                a = _read_response(req, resp, spec)
                out[i] = a
                entry.requests += 1
                self.errors += a.status == "error"
                if a.status in ("error", "missing_response"):
                    entry.failed += 1
                else:
                    stored.append((keys[i], blind[i].id, json.dumps(asdict(a)), {}))
            self.cache.put(stored)  # committed before the guard may stop the step
            if self.progress is not None:
                self.progress.update(len(todo))
            for resp in fresh:
                self.guard.record(resp.status, resp.error, spec)
        return [a for a in out if a is not None]

    def chat(self, spec: str, prompts: Sequence[str], keys: Sequence[str], seed: int) -> list[Answer]:
        """One single-turn conversation per prompt, through the build's cached LLM client."""
        if not prompts:
            return []
        kind = keys[0].rsplit("@", 1)[-1].rstrip("0123456789") or "chat"
        client = LLMClient(
            self._backend(spec, seed), self.cache, self.ledger, guard=self.guard, progress=self.progress
        )
        calls = [
            LLMCall(k, [ChatMessage("user", p)], schema=f"refine-{kind}-v1")
            for p, k in zip(prompts, keys, strict=True)
        ]
        replies = client.chat(f"filter/{kind}", calls, seed=seed)
        self.errors += sum(r.status == "error" for r in replies)
        return [Answer(None, "ok" if r.status == "ok" else r.status, r.text, r.error) for r in replies]

    def close(self) -> None:
        """Release every loaded backend and the cache."""
        for b in self._backends.values():
            b.close()
        self._backends.clear()
        self.cache.close()


def _blind_item(it: GateItem, key_suffix: str) -> Item:

    choices_only = key_suffix == CHOICES_ONLY_SUFFIX
    return Item(
        id=it.id + key_suffix,
        benchmark="build",
        split="test",
        task=it.task,
        question=CHOICES_ONLY_QUESTION if choices_only else it.question,
        choices=it.options,
        answer_index=it.answer,
        subset=it.subset,
    )


def _blind_key(item: Item, identity: dict[str, Any], seed: int) -> str:
    payload = {"question": item.question, "choices": list(item.choices), "answer": item.answer_index,
               "id": item.id, "model": identity, "seed": seed, "schema": BLIND_SCHEMA}  # fmt: skip
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


def _read_response(request: Request, resp: Response, spec: str) -> Answer:
    """The option a reply commits to, read by the engine's parse stage exactly as a run reads it."""
    rec = parse(request, resp, model=spec)
    if rec.status == "ok":
        return Answer(rec.choice, "correct" if rec.correct else "wrong", resp.text)
    return Answer(None, rec.status, resp.text, rec.error)


@contextmanager
def default_answerer(
    given: Answerer | None, cache: str | Path | None = None, **options: Any
) -> Iterator[Answerer]:
    """``given``, or a :class:`BackendAnswerer` (with ``cache`` and ``options``) closed on exit."""
    if given is not None:
        yield given
        return
    made = BackendAnswerer(cache, **options)
    try:
        yield made
    finally:
        made.close()


@dataclass(frozen=True)
class ShortcutGateConfig:
    """The shortcut gate's models and rule (module docstring).

    Attributes:
        models: Text-only model specs (``n``), each listed once.
        tries: Tries per model (``R``); try ``t`` uses seed ``seed + t``.
        min_models: ``k``: models that must answer a question right for it to be dropped.
        min_tries: ``r``: correct tries out of ``R`` for a model to answer a question right.
        choices_only: Run the choices-only test (its accuracy is published).
        drop_choices_only: Also drop questions the rule flags in the choices-only test.
    """

    models: tuple[str, ...]
    tries: int = 1
    min_models: int = 1
    min_tries: int = 1
    choices_only: bool = True
    drop_choices_only: bool = False

    def __post_init__(self) -> None:
        n = len(self.models)
        if n == 0:
            raise DataFormatError("filter.shortcut.models must list at least one text-only model")
        if len(set(self.models)) != n:
            raise DataFormatError("filter.shortcut.models lists a model twice; list each once")
        if self.tries < 1:
            raise DataFormatError("filter.shortcut.tries must be at least 1")
        if not 1 <= self.min_models <= n:
            raise DataFormatError(f"filter.shortcut.min_models must be between 1 and the {n} model(s)")
        if not 1 <= self.min_tries <= self.tries:
            raise DataFormatError(f"filter.shortcut.min_tries must be between 1 and tries ({self.tries})")
        if self.drop_choices_only and not self.choices_only:
            raise DataFormatError("filter.shortcut.drop_choices_only needs choices_only: true")


@dataclass
class BlindResult:
    """Per question, per model, every try's answer; and whether the rule flags it."""

    answers: dict[str, dict[str, list[Answer]]] = field(default_factory=dict)
    flagged: dict[str, bool] = field(default_factory=dict)

    def correct_tries(self, item_id: str) -> dict[str, int]:
        """Correct tries per model for one question."""
        return {m: sum(a.status == "correct" for a in tries) for m, tries in self.answers[item_id].items()}

    def record(self, item_id: str) -> dict[str, Any]:
        """JSON-able account of one question: statuses and raw answers per model and try."""
        return {
            m: [{"status": a.status, "index": a.index, "text": a.text, "error": a.error} for a in tries]
            for m, tries in self.answers[item_id].items()
        }


def blind_test(
    answerer: Answerer,
    items: Sequence[GateItem],
    models: Sequence[str],
    seeds: Sequence[int],
    *,
    min_models: int,
    min_tries: int,
    key_suffix: str = "",
) -> BlindResult:
    """Answer ``items`` without the image with every model and seed; flag them with the k/r rule."""
    out = BlindResult(answers={it.id: {m: [] for m in models} for it in items})
    for m in models:
        for s in seeds:
            for it, a in zip(items, answerer.answer(m, items, s, key_suffix=key_suffix), strict=True):
                out.answers[it.id][m].append(a)
    for it in items:
        out.flagged[it.id] = flagged(out.correct_tries(it.id), min_models=min_models, min_tries=min_tries)
    return out


def _accuracy(result: BlindResult, ids: Sequence[str], n_models: int, n_tries: int) -> float | None:
    if not ids:
        return None
    correct = sum(sum(result.correct_tries(i).values()) for i in ids)
    return correct / (len(ids) * n_models * n_tries)


@dataclass
class ShortcutOutcome:
    """What the shortcut gate did.

    Attributes:
        dropped: Question id → reason (``shortcut`` or ``choices_only``).
        records: One JSON-able decision per question (``gates/shortcut.jsonl``).
        stats: Blind accuracies (text-only, choices-only; entering and kept), chance, the rule.
    """

    dropped: dict[str, str] = field(default_factory=dict)
    records: list[dict[str, Any]] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)


def run_shortcut_gate(
    items: Sequence[GateItem], config: ShortcutGateConfig, seed: int, answerer: Answerer
) -> ShortcutOutcome:
    """Apply the shortcut gate (and the choices-only test) to ``items``."""
    cfg = config
    seeds = [seed + t for t in range(cfg.tries)]
    k, r_min = cfg.min_models, cfg.min_tries
    text = blind_test(answerer, items, cfg.models, seeds, min_models=k, min_tries=r_min)
    choices = (
        blind_test(
            answerer, items, cfg.models, seeds, min_models=k, min_tries=r_min, key_suffix=CHOICES_ONLY_SUFFIX
        )
        if cfg.choices_only
        else None
    )
    out = ShortcutOutcome()
    for it in items:
        reason = None
        if text.flagged[it.id]:
            reason = "shortcut"
        elif choices is not None and cfg.drop_choices_only and choices.flagged[it.id]:
            reason = "choices_only"
        if reason:
            out.dropped[it.id] = reason
        rec: dict[str, Any] = {
            "gate": "shortcut",
            "id": it.id,
            "decision": "dropped" if reason else "kept",
            "reason": reason,
            "correct_tries": text.correct_tries(it.id),
            "answers": text.record(it.id),
        }
        if choices is not None:
            rec["choices_only_correct_tries"] = choices.correct_tries(it.id)
            rec["choices_only_flagged"] = choices.flagged[it.id]
            rec["choices_only_answers"] = choices.record(it.id)
        out.records.append(rec)
    every = [it.id for it in items]
    kept = [i for i in every if i not in out.dropped]
    n, r = len(cfg.models), cfg.tries

    def accs(result: BlindResult | None) -> dict[str, Any] | None:
        if result is None:
            return None
        per_model = {
            m: sum(result.correct_tries(i)[m] for i in every) / (len(every) * r) if every else None
            for m in cfg.models
        }
        return {
            "entering": _accuracy(result, every, n, r),
            "kept": _accuracy(result, kept, n, r),
            "per_model_entering": per_model,
            "flagged": sum(result.flagged.values()),
        }

    out.stats = {
        "models": list(cfg.models),
        "tries": r,
        "seeds": seeds,
        "rule": f"dropped when at least {cfg.min_models} of {n} models are correct in at least "
        f"{cfg.min_tries} of {r} tries without the image",
        "questions_entering": len(every),
        "questions_kept": len(kept),
        "chance_entering": sum(1 / len(it.options) for it in items) / len(items) if items else None,
        "text_only": accs(text),
        "choices_only": accs(choices),
    }
    return out


def statuses_summary(records: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """Tries by status over the text-only answers of ``records`` (correct, wrong, unparsed…)."""
    counts: dict[str, int] = {}
    for rec in records:
        for tries in rec["answers"].values():
            for a in tries:
                counts[a["status"]] = counts.get(a["status"], 0) + 1
    return dict(sorted(counts.items()))

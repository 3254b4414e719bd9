"""RefineBot (MicroVQA §4.2), with the checks its authors asked for.

MicroVQA's RefineBot rewrites a question that a text-only model answers, to remove the language
shortcut, and re-tests it. Here every round, for every question still answerable without the
image, is:

1. **blind test** — every *tester* model answers without the image under every seed; the question
   is *answerable* when at least ``min_models`` testers are correct in at least ``min_tries`` of the
   seeds (the shortcut gate's rule; an unparsed answer or an error is not correct);
2. **cue** — a *rewriter* model is shown the question, its answer and a blind model's reasoning and
   asked which text-only cue made it answerable;
3. **rewrite** — the rewriter removes that cue, answering JSON ``{"question", "options", "answer"}``
   (an invalid reply is recorded with its raw text and the round ends without a rewrite);
4. **equivalence** — every *judge* model says whether the rewrite asks the same thing with the same
   correct answer (``SAME`` / ``DIFFERENT``; anything else counts as DIFFERENT). A rewrite that
   drifts is discarded and the next round starts again from the last accepted version;
5. **re-test** — the accepted rewrite is blind-tested again; not answerable means fixed.

Rounds stop at ``rounds``. Every question ends with one code:

* ``unchanged`` — not answerable without the image to begin with (kept as it was);
* ``fixed`` — an equivalent rewrite is no longer answerable (kept, rewritten);
* ``meaning_drifted`` — no rewrite kept the meaning (every valid rewrite was judged DIFFERENT);
  dropped, reason ``meaning_drifted``;
* ``gave_up`` — still answerable after ``rounds`` rounds; written to the human-review queue
  (a ``local``-format folder ``review_queue/`` that ``scopebench review init --bench local``
  imports), and kept out of the benchmark with reason ``refine_gave_up``.

The models that rewrite are never the models that judge (testers and equivalence judges): a
configuration where they overlap is refused. Replay keys: the original question is ``<id>``;
round ``k``'s cue, rewrite, equivalence check and re-test are ``<id>@cue<k>``,
``<id>@rewrite<k>``, ``<id>@equiv<k>`` and ``<id>@round<k>``.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from scopebench.curate.filtering.shortcut import Answerer, GateItem, blind_test
from scopebench.errors import DataFormatError

__all__ = ["CODES", "RefineConfig", "RefineOutcome", "parse_equivalence", "parse_rewrite", "run_refine"]

CODES = ("unchanged", "fixed", "gave_up", "meaning_drifted")

CUE_PROMPT = """A multiple-choice question about a microscopy image was answered correctly by a model that
could NOT see the image, so something in the text gives the answer away.

Question: {question}
Options:
{options}
Correct answer: {answer}
The blind model's reply: {reply}

Which text-only cue (a word, a phrase, an option that stands out, general knowledge) made it
answerable without the image? Answer in one or two sentences."""

REWRITE_PROMPT = """Rewrite this multiple-choice question so that it can no longer be answered without the
image, by removing this cue: {cue}

Question: {question}
Options:
{options}
Correct answer: {answer}

Keep exactly the same meaning and the same correct answer. Reply with JSON only:
{{"question": "...", "options": ["...", "..."], "answer": <0-based index of the correct option>}}"""

EQUIVALENCE_PROMPT = """Do these two multiple-choice questions ask the same thing about the same image, with
the same correct answer?

Original: {question_a}
Options: {options_a}
Correct: {answer_a}

Rewrite: {question_b}
Options: {options_b}
Correct: {answer_b}

Reply with one word: SAME or DIFFERENT."""


def _spec_names(spec: str) -> set[str]:
    """A spec and its model part (``vllm:Qwen/X`` also matches ``openai:Qwen/X``)."""
    _, sep, arg = spec.partition(":")
    return {spec.strip(), arg.strip()} if sep and arg.strip() else {spec.strip()}


@dataclass(frozen=True)
class RefineConfig:
    """RefineBot's models and limits (module docstring).

    Attributes:
        rewriters: Models that name the cue and rewrite (round ``k`` uses ``rewriters[(k-1) % n]``).
        testers: Text-only models of the blind test.
        judges: Models of the equivalence check (a rewrite is kept only when every judge says SAME).
        rounds: Rewrite rounds at most.
        seeds: Seeds of the blind test (one try per tester and seed).
        min_models: Testers that must be right for a question to be answerable.
        min_tries: Seeds out of ``seeds`` a tester must be right in.
    """

    rewriters: tuple[str, ...]
    testers: tuple[str, ...]
    judges: tuple[str, ...]
    rounds: int = 3
    seeds: tuple[int, ...] = (0, 1, 2)
    min_models: int = 1
    min_tries: int = 2

    def __post_init__(self) -> None:
        if not self.rewriters or not self.testers or not self.judges:
            raise DataFormatError("filter.refine needs rewriters, testers and judges (at least one each)")
        rewriting = set().union(*(_spec_names(s) for s in self.rewriters))
        judging = set().union(*(_spec_names(s) for s in (*self.testers, *self.judges)))
        both = sorted(rewriting & judging)
        if both:
            raise DataFormatError(
                f"filter.refine: {', '.join(both)} both rewrites and judges; a model must not judge its "
                "own rewrites (MicroVQA flags that overlap as a bias). Use different models for "
                "rewriters and for testers/judges"
            )
        if self.rounds < 1 or not self.seeds:
            raise DataFormatError("filter.refine needs rounds ≥ 1 and at least one seed")
        if not 1 <= self.min_models <= len(self.testers):
            raise DataFormatError(f"filter.refine.min_models must be between 1 and {len(self.testers)}")
        if not 1 <= self.min_tries <= len(self.seeds):
            raise DataFormatError(f"filter.refine.min_tries must be between 1 and {len(self.seeds)}")


def _options(options: Sequence[str]) -> str:
    return "\n".join(f"{chr(65 + i)}. {o}" for i, o in enumerate(options))


def parse_rewrite(text: str | None, original: GateItem) -> tuple[GateItem | None, str | None]:
    """The rewritten question from a rewriter's reply, or ``None`` with the reason it is invalid."""
    if not text:
        return None, "empty reply"
    m = re.search(r"\{.*\}", text, re.S)
    if m is None:
        return None, "no JSON object in the reply"
    try:
        raw = json.loads(m.group(0))
    except json.JSONDecodeError as exc:
        return None, f"not valid JSON ({exc.msg})"
    if not isinstance(raw, dict):
        return None, "the JSON is not an object"
    q, opts, ans = raw.get("question"), raw.get("options"), raw.get("answer")
    if not isinstance(q, str) or not q.strip():
        return None, "no question text"
    if not isinstance(opts, list) or len(opts) < 2 or not all(isinstance(o, str) and o.strip() for o in opts):
        return None, "options must be a list of at least two non-empty strings"
    if len({o.strip().lower() for o in opts}) != len(opts):
        return None, "two options are the same"
    if isinstance(ans, bool) or not isinstance(ans, int) or not 0 <= ans < len(opts):
        return None, f"answer must be an option index from 0 to {len(opts) - 1}"
    return replace(original, question=q.strip(), options=tuple(o.strip() for o in opts), answer=ans), None


def parse_equivalence(text: str | None) -> bool | None:
    """``True`` for SAME, ``False`` for DIFFERENT, ``None`` when the reply says neither (or both)."""
    words = set(re.findall(r"\b(SAME|DIFFERENT|EQUIVALENT|NOT EQUIVALENT)\b", (text or "").upper()))
    same = bool(words & {"SAME", "EQUIVALENT"}) and "NOT EQUIVALENT" not in words
    different = bool(words & {"DIFFERENT", "NOT EQUIVALENT"})
    if same == different:
        return None
    return same


@dataclass
class _State:
    original: GateItem
    current: GateItem
    rounds: list[dict[str, Any]] = field(default_factory=list)
    initial_blind: dict[str, Any] = field(default_factory=dict)
    code: str | None = None
    valid_rewrites: int = 0
    equivalent_rewrites: int = 0
    last_reply: str = ""


@dataclass
class RefineOutcome:
    """What RefineBot did: a code per question, the final versions and every round's provenance.

    Attributes:
        codes: Question id → code (:data:`CODES`).
        final: Question id → the version to keep (the rewrite for ``fixed``).
        records: One JSON-able record per question (``gates/refine.jsonl``).
        stats: Codes counted, the configuration.
    """

    codes: dict[str, str] = field(default_factory=dict)
    final: dict[str, GateItem] = field(default_factory=dict)
    records: list[dict[str, Any]] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)


def _blind(
    answerer: Answerer, items: Sequence[GateItem], cfg: RefineConfig, suffix: str
) -> tuple[dict[str, bool], dict[str, dict[str, Any]], dict[str, str]]:
    res = blind_test(
        answerer,
        items,
        cfg.testers,
        cfg.seeds,
        min_models=cfg.min_models,
        min_tries=cfg.min_tries,
        key_suffix=suffix,
    )
    replies = {}
    for it in items:
        right = [a.text for tries in res.answers[it.id].values() for a in tries if a.status == "correct"]
        replies[it.id] = (right[0] if right else "") or ""
    info = {it.id: {"correct_tries": res.correct_tries(it.id), "answers": res.record(it.id)} for it in items}
    return res.flagged, info, replies


def _round(answerer: Answerer, states: list[_State], k: int, cfg: RefineConfig) -> None:
    """One round for every question still answerable (module docstring, steps 2–5)."""
    rewriter = cfg.rewriters[(k - 1) % len(cfg.rewriters)]
    seed = cfg.seeds[0] + k
    recs: list[dict[str, Any]] = [{"round": k, "rewriter": rewriter, "seed": seed} for _ in states]
    candidates = _rewrite(answerer, states, recs, rewriter, k, seed)
    verdicts = _judge_equivalence(answerer, states, candidates, cfg.judges, k, seed)
    accepted = []
    for i, new in candidates:
        same = all(v["verdict"] is True for v in verdicts[i].values())
        recs[i].update(equivalence=verdicts[i], equivalent=same)
        if same:
            states[i].equivalent_rewrites += 1
            accepted.append((i, new))
    flagged, info, replies_by_id = _blind(answerer, [new for _, new in accepted], cfg, f"@round{k}")
    for i, new in accepted:
        s = states[i]
        s.current = new
        recs[i].update(blind=info[new.id], answerable=flagged[new.id])
        if flagged[new.id]:
            s.last_reply = replies_by_id[new.id]
        else:
            s.code = "fixed"
    for s, rec in zip(states, recs, strict=True):
        s.rounds.append(rec)


def _rewrite(
    answerer: Answerer, states: list[_State], recs: list[dict[str, Any]], rewriter: str, k: int, seed: int
) -> list[tuple[int, GateItem]]:
    """Steps 2–3: a cue and a rewrite per question; returns the valid rewrites by state index.

    Each state's round record (``recs[i]``) gets its cue, raw and parsed rewrite and why it is invalid.
    """
    cur = [s.current for s in states]
    cues = answerer.chat(
        rewriter,
        [
            CUE_PROMPT.format(
                question=c.question,
                options=_options(c.options),
                answer=c.options[c.answer],
                reply=s.last_reply or "(not recorded)",
            )
            for c, s in zip(cur, states, strict=True)
        ],
        [f"{s.original.id}@cue{k}" for s in states],
        seed,
    )
    rewrites = answerer.chat(
        rewriter,
        [
            REWRITE_PROMPT.format(
                cue=cue.text or "(none given)",
                question=c.question,
                options=_options(c.options),
                answer=c.options[c.answer],
            )
            for c, cue in zip(cur, cues, strict=True)
        ],
        [f"{s.original.id}@rewrite{k}" for s in states],
        seed,
    )
    candidates: list[tuple[int, GateItem]] = []
    for i, (s, cue, rw) in enumerate(zip(states, cues, rewrites, strict=True)):
        recs[i].update(cue=cue.text, cue_error=cue.error, rewrite_raw=rw.text)
        new, why = parse_rewrite(rw.text, s.current) if rw.status == "ok" else (None, rw.error or rw.status)
        recs[i]["rewrite"] = (
            None
            if new is None
            else {"question": new.question, "options": list(new.options), "answer": new.answer}
        )
        recs[i]["invalid"] = why
        if new is not None:
            s.valid_rewrites += 1
            candidates.append((i, new))
    return candidates


def _judge_equivalence(
    answerer: Answerer,
    states: list[_State],
    candidates: list[tuple[int, GateItem]],
    judges: Sequence[str],
    k: int,
    seed: int,
) -> dict[int, dict[str, Any]]:
    """Step 4: every judge's verdict on whether each rewrite asks what the original asked."""
    verdicts: dict[int, dict[str, Any]] = {i: {} for i, _ in candidates}
    for judge in judges:
        replies = answerer.chat(
            judge,
            [
                EQUIVALENCE_PROMPT.format(
                    question_a=states[i].original.question,
                    options_a=list(states[i].original.options),
                    answer_a=states[i].original.options[states[i].original.answer],
                    question_b=new.question,
                    options_b=list(new.options),
                    answer_b=new.options[new.answer],
                )
                for i, new in candidates
            ],
            [f"{states[i].original.id}@equiv{k}" for i, _ in candidates],
            seed,
        )
        for (i, _), rep in zip(candidates, replies, strict=True):
            verdicts[i][judge] = {"verdict": parse_equivalence(rep.text), "raw": rep.text, "error": rep.error}
    return verdicts


def run_refine(items: Sequence[GateItem], config: RefineConfig, answerer: Answerer) -> RefineOutcome:
    """Run RefineBot over ``items`` (every question gets a code; module docstring)."""
    cfg = config
    flagged, info, replies = _blind(answerer, items, cfg, "")
    states = {it.id: _State(it, it, initial_blind=info[it.id], last_reply=replies[it.id]) for it in items}
    for it in items:
        if not flagged[it.id]:
            states[it.id].code = "unchanged"
    for k in range(1, cfg.rounds + 1):
        active = [s for s in states.values() if s.code is None]
        if not active:
            break
        _round(answerer, active, k, cfg)
    out = RefineOutcome()
    for it in items:
        s = states[it.id]
        if s.code is None:
            s.code = "meaning_drifted" if s.valid_rewrites and not s.equivalent_rewrites else "gave_up"
        out.codes[it.id] = s.code
        out.final[it.id] = s.current
        out.records.append(
            {
                "gate": "refine",
                "id": it.id,
                "code": s.code,
                "decision": {"unchanged": "kept", "fixed": "rewritten", "gave_up": "review"}.get(
                    s.code, "dropped"
                ),
                "original": {"question": it.question, "options": list(it.options), "answer": it.answer},
                "final": {
                    "question": s.current.question,
                    "options": list(s.current.options),
                    "answer": s.current.answer,
                },
                "initial_blind": s.initial_blind,
                "rounds": s.rounds,
            }
        )
    counts = Counter(out.codes.values())
    out.stats = {
        "codes": {c: counts.get(c, 0) for c in CODES},
        "rewriters": list(cfg.rewriters),
        "testers": list(cfg.testers),
        "judges": list(cfg.judges),
        "rounds": cfg.rounds,
        "seeds": list(cfg.seeds),
        "rule": f"answerable when at least {cfg.min_models} of {len(cfg.testers)} testers are correct in "
        f"at least {cfg.min_tries} of {len(cfg.seeds)} seeds without the image",
    }
    return out

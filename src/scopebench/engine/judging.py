"""The judge phase of a run: ask an answer-extraction judge about the responses the parser left unparsed.

After the main answers are stored, :func:`judge_unparsed` takes every multiple-choice record with
status ``unparsed`` and a non-blank response text that has no judge verdict yet, asks the judge backend
(``--judge SPEC``, any generative backend: ``openai:``, ``hf:``, ``vllm:``, ``replay:``) in batches
which option the response commits to (prompt: :func:`~scopebench.parsing.judge.build_judge_prompt`),
and commits each batch to the run store. So a crash mid-judge resumes with only the records without
a verdict redone, and a finished run asks the judge nothing again.

Per judged record, ``extra["judge"]`` keeps ``spec``, ``prompt``, ``reply``, ``verdict`` (the label,
``"none"``, or ``null``), ``status`` (``ok``: the reply was read; ``unreadable``: it was not a bare
label or ``none``; ``error``: the call failed — retried by the next run), ``error`` and the parser's
own ``parser_error``. A judge that commits to an option turns the record into ``ok`` with that
choice and ``extra["answer_method"] = "judge"``; otherwise it stays ``unparsed``.

Which judge may touch a run directory (the ``judge`` entry of ``run.json``, see
:func:`check_judge_config`): adding a judge to a run that had none judges its existing unparsed
records; a run judged by one judge refuses another judge (or none) unless ``--rejudge`` is given,
which first returns every judged record to the parser's verdict.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scopebench.display import progress
from scopebench.errors import ConfigMismatchError, ModelSpecError, RunInterruptedError, ScopebenchError
from scopebench.items import Item, Record
from scopebench.models import Backend, ChatMessage, ModelOptions, ModelSpec, Response, load_model, parse_spec
from scopebench.models.registry import backend_class
from scopebench.parsing.choice import LabelStyle
from scopebench.parsing.judge import JUDGE_PROMPT_VERSION, build_judge_prompt, judge_free, read_judge_reply
from scopebench.store.rundir import CONFIG_FILE
from scopebench.store.runstore import RunStore

if TYPE_CHECKING:
    from scopebench.config import RunConfig

__all__ = [
    "JudgeStats",
    "build_judge",
    "check_judge_config",
    "check_judge_spec",
    "judge_provenance",
    "judge_unparsed",
    "pending_records",
]

log = logging.getLogger(__name__)

#: ``--judge-arg`` keys that set the judge's common options; every other key goes to the backend.
_COMMON_KEYS = ("device", "base_url", "batch_size")


def check_judge_spec(spec: str | ModelSpec) -> ModelSpec:
    """Refuse a judge spec that is unknown or names a backend that cannot write text.

    Checked before any data or weights are loaded (only the backend's class is imported).

    Returns:
        The parsed spec, for :func:`build_judge` (so the judge's spec is parsed once).

    Raises:
        ModelSpecError: For an unknown spec, or a backend without a text conversation (``clip:``,
            ``random``…).
    """
    parsed = parse_spec(spec)
    cls = backend_class(parsed)
    if cls.chat is Backend.chat:
        raise ModelSpecError(
            f"--judge {parsed.raw!r}: {parsed.scheme} models cannot write text, and the judge must "
            "reply with an option label; use a generative backend (openai:, hf:, vllm:) or replay:FILE"
        )
    return parsed


def _judge_options(config: RunConfig) -> ModelOptions:
    args = dict(config.judge_args)
    batch_size = args.pop("batch_size", None)
    if batch_size is not None and (not isinstance(batch_size, int) or batch_size < 1):
        raise ModelSpecError(f"--judge-arg batch_size must be a whole number ≥ 1 (got {batch_size!r})")
    return ModelOptions(
        seed=config.seed,
        device=str(args.pop("device", config.device)),
        batch_size=batch_size,
        # The judge reads text only: never an image, whatever the main model was shown.
        no_image=True,
        base_url=args.pop("base_url", None),
        extra=args,
    )


def build_judge(config: RunConfig, spec: ModelSpec | None = None) -> Backend:
    """The run's judge backend, built from ``config.judge`` and ``config.judge_args``.

    Args:
        config: The run; ``config.judge`` names the judge.
        spec: ``config.judge`` already parsed (:func:`check_judge_spec`), so it is not parsed again.

    Raises:
        ModelSpecError: For a bad spec, a non-generative backend or a bad ``--judge-arg``.
    """
    assert config.judge is not None
    parsed = check_judge_spec(config.judge if spec is None else spec)
    return load_model(parsed, _judge_options(config))


def judge_provenance(judge: Backend | None) -> dict[str, Any] | None:
    """The ``judge`` entry of ``run.json``: spec, identity and prompt version (``None``: no judge)."""
    if judge is None:
        return None
    return {"spec": judge.spec, "identity": judge.identity(), "prompt_version": JUDGE_PROMPT_VERSION}


def check_judge_config(run_dir: Path, new: dict[str, Any] | None, store: RunStore, *, rejudge: bool) -> None:
    """Refuse to mix verdicts of two judges in one run directory.

    The stored judge is the ``judge`` entry of the existing ``run.json``. A run without stored
    verdicts accepts any judge (its unparsed records are then judged); a run whose records hold
    verdicts of judge X accepts X again (same spec, identity and prompt version) and, with
    ``rejudge``, anything else: the stored verdicts are then removed first (records return to the
    parser's verdict) and the new judge, if any, asks again.

    Raises:
        ConfigMismatchError: When the stored verdicts come from another judge and not ``rejudge``.
    """
    judged = [r for r in store.iter_records() if "judge" in r.extra]
    if rejudge:
        if judged:
            store.add(_unjudged(r) for r in judged)
            log.info("--rejudge: removed the judge verdicts of %d record(s)", len(judged))
        return
    if not judged:
        return
    cfg_path = run_dir / CONFIG_FILE
    old = json.loads(cfg_path.read_text(encoding="utf-8")).get("judge") if cfg_path.is_file() else None
    if json.dumps(old, sort_keys=True) == json.dumps(new, sort_keys=True):
        return
    was = f"judge {old['spec']!r}" if old else "a judge"
    if new is None:
        now = "no --judge"
    elif old and old.get("spec") == new["spec"]:
        now = "another version of it (its identity, options or prompt version changed)"
    else:
        now = f"judge {new['spec']!r}"
    raise ConfigMismatchError(
        f"{len(judged)} record(s) in {run_dir} hold verdicts of {was}, but this run has {now}; "
        "one run never mixes two judges. Pass the same --judge (and --judge-arg) to resume, or "
        "--rejudge to drop the stored verdicts and judge the unparsed answers again (with no "
        "--judge: go back to the parser's verdicts)."
    )


def _unjudged(record: Record) -> Record:
    """The record without any trace of a judge (the parser's verdict)."""
    rec = judge_free(record)
    extra = {k: v for k, v in rec.extra.items() if k != "judge"}
    extra["answer_method"] = "parser"
    # judge_free returns the same object for records the judge did not answer: copy, don't mutate.
    return Record.from_dict({**rec.to_dict(), "extra": extra})


def pending_records(store: RunStore) -> list[Record]:
    """Unparsed multiple-choice records with a non-blank response and no judge verdict (or a failed call)."""
    out = []
    for r in store.iter_records():
        # A blank response commits to nothing: no judge is asked to read it.
        if r.kind != "mcq" or r.status != "unparsed" or not (r.response or "").strip():
            continue
        judge = r.extra.get("judge")
        if judge is None or judge.get("status") == "error":
            out.append(r)
    return out


@dataclass(slots=True)
class JudgeStats:
    """What one judge phase did.

    Attributes:
        asked: Records sent to the judge.
        answered: Records the judge committed to an option (now ``answer_method == "judge"``).
        none: Records the judge said commit to no option (or several).
        unreadable: Replies that were not a bare label or ``none``.
        failed: Calls that failed (retried by the next run).
    """

    asked: int = 0
    answered: int = 0
    none: int = 0
    unreadable: int = 0
    failed: int = 0


def _labels_of(item: Item, config: RunConfig, backend: Backend) -> LabelStyle:
    """The label style of the main model's request for ``item`` (the one its reply was parsed with)."""
    return backend.render(item).labels


def _ask(judge: Backend, convs: Sequence[Sequence[ChatMessage]], ids: Sequence[str]) -> list[Response]:
    """One batched judge call; a failing call becomes an error response per record."""
    try:
        replies = judge.chat(convs, ids)
        if len(replies) != len(ids):
            raise RuntimeError(f"the judge returned {len(replies)} replies for {len(ids)} prompts")
        return replies
    except ScopebenchError as exc:
        return [Response(i, status="error", error=str(exc)) for i in ids]
    except (RuntimeError, ValueError, OSError, MemoryError) as exc:
        log.debug("judge batch failed", exc_info=True)
        return [Response(i, status="error", error=f"{type(exc).__name__}: {exc}") for i in ids]


def _apply(rec: Record, item: Item, prompt: str, reply: Response, labels: LabelStyle, spec: str) -> Record:
    """The record updated with the judge's reply (a new object; ``rec`` is left alone)."""
    parser_error = rec.extra.get("judge", {}).get("parser_error", rec.error)
    entry: dict[str, Any] = {
        "spec": spec,
        "prompt": prompt,
        "reply": reply.text,
        "parser_error": parser_error,
    }
    out = Record.from_dict({**rec.to_dict(), "extra": {**rec.extra, "answer_method": "parser"}})
    if reply.status != "ok" or reply.text is None:
        entry.update(verdict=None, status="error", error=reply.error or "the judge gave no reply")
    else:
        verdict = read_judge_reply(reply.text, len(item.choices), labels)
        entry.update(verdict=verdict.verdict, status="unreadable" if verdict.verdict is None else "ok")
        entry["error"] = verdict.error
        if verdict.index is not None:
            out.status, out.choice, out.error = "ok", verdict.index, None
            out.correct = verdict.index == item.answer_index
            out.extra["answer_method"] = "judge"
    out.extra["judge"] = entry
    return out


def judge_unparsed(
    config: RunConfig, judge: Backend, backend: Backend, items: Sequence[Item], store: RunStore
) -> JudgeStats:
    """Ask the judge about every pending record (:func:`pending_records`), committing per batch.

    Args:
        config: The run's configuration (protocol → label style).
        judge: The judge backend.
        backend: The run's main backend (its label style, for replay files with explicit labels).
        items: The run's items (question and options of each record).
        store: The run store.

    Returns:
        Counts of what the judge said.

    Raises:
        RunInterruptedError: On Ctrl-C (committed verdicts are kept).
    """
    by_id = {it.id: it for it in items}
    todo = [r for r in pending_records(store) if r.item_id in by_id]
    stats = JudgeStats()
    if not todo:
        return stats
    size = max(1, judge.options.batch_size or judge.default_batch_size)
    with progress(len(todo), desc=f"judge {judge.spec}") as bar:
        try:
            for k in range(0, len(todo), size):
                batch = todo[k : k + size]
                labels = [_labels_of(by_id[r.item_id], config, backend) for r in batch]
                prompts = [
                    build_judge_prompt(
                        by_id[r.item_id].question, by_id[r.item_id].choices, r.response or "", lab
                    )
                    for r, lab in zip(batch, labels, strict=True)
                ]
                replies = _ask(judge, [[ChatMessage("user", p)] for p in prompts], [r.item_id for r in batch])
                done = [
                    _apply(r, by_id[r.item_id], p, reply, lab, judge.spec)
                    for r, p, reply, lab in zip(batch, prompts, replies, labels, strict=True)
                ]
                store.add(done)
                _count(stats, done)
                bar.update(len(batch))
        except KeyboardInterrupt:
            raise RunInterruptedError(
                f"interrupted while judging: {stats.asked} verdicts were saved in {store.path.parent}; "
                "run the same command again to resume"
            ) from None
    if stats.failed:
        log.warning(
            "%d of %d judge call(s) failed; those answers stay unparsed (the next run of the same "
            "command asks again). E.g.: %s",
            stats.failed,
            stats.asked,
            next(r.extra["judge"]["error"] for r in store.iter_records() if _failed(r)),
        )
    return stats


def _failed(rec: Record) -> bool:
    return bool(rec.extra.get("judge", {}).get("status") == "error")


def _count(stats: JudgeStats, done: Sequence[Record]) -> None:
    for r in done:
        entry = r.extra["judge"]
        stats.asked += 1
        if entry["status"] == "error":
            stats.failed += 1
        elif entry["status"] == "unreadable":
            stats.unreadable += 1
        elif entry["verdict"] == "none":
            stats.none += 1
        else:
            stats.answered += 1

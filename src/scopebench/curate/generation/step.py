"""``build generate``: LLM-written items (μ-Bench cognition, PathMMU steps 2–3, SPUR step ③).

Tasks (prompts in ``build/data/generate_templates.yaml``, overridable):

* ``describe`` — a detailed description of each image from its original caption (PathMMU step 2);
* ``mcq`` — ``n`` multiple-choice questions per image with answer and explanation, from the
  description (or the caption when ``describe`` did not run) (PathMMU step 3: 3 per image);
* ``open_to_mcq`` — an expert's open question and answer → one 6-option question with "None of
  the above" (μ-Bench's GPT-4 conversion prompt, its Figure 16);
* ``spur_np`` … ``spur_quant`` — SPUR's seven task templates over a figure and its caption.

Each (task, image) is one call through :class:`~scopebench.curate.llm.LLMClient` (content-keyed
cache, ledger). The reply is validated (:func:`~scopebench.curate.generation.schema.validate_reply`);
an invalid one is retried up to ``retries`` times — the conversation continues with the invalid
reply and the reason, under seed ``seed + attempt`` — and then written as a **failure row** with the
raw text and the reason. Nothing is ``None`` and nothing is dropped: ``generated.jsonl`` holds one
line per item or failure with its provenance (model identity, prompt, raw reply, seed, attempt,
every attempt's raw reply), ``problems.jsonl`` one problem per failure naming source and row.
Texts come from an inputs table (``source``, ``image`` as in the metadata table, and ``caption``,
``question``, ``answer``, ``context``); an image without what a task needs is skipped for that task
and counted.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import Any

from scopebench.curate.balance import assign_positions, layout, position_stats, relabel, reorder, rng_for
from scopebench.curate.generation.output import dataset_entry, write_generate_output
from scopebench.curate.generation.schema import MCQ, SCHEMA_VERSION, Invalid, Kind, validate_reply
from scopebench.curate.llm import (
    DEFAULT_MAX_CONSECUTIVE_FAILURES,
    CallCache,
    FailureGuard,
    LLMCall,
    LLMClient,
    ModelRef,
    Prices,
    load_backend,
)
from scopebench.curate.manifest import read_table
from scopebench.curate.output import read_rows
from scopebench.curate.report import BuildProblem, StepResult
from scopebench.errors import DataFormatError, RunAbortedError
from scopebench.items import ImageRef
from scopebench.models import Backend, ChatMessage

__all__ = ["GenerateConfig", "generate", "load_templates"]

STEP = "generate"
_KINDS = ("description", "mcq", "mcq_nota")
_INPUT_FIELDS = ("caption", "question", "answer", "context")
_META_FIELDS = ("modality", "submodality", "domain", "subdomain", "stain", "ncbitaxon_name", "label_name")


@dataclass(frozen=True)
class GenerateConfig:
    """How to generate.

    Attributes:
        model: A generative backend spec (``openai:…``, ``vllm:…``, ``hf:…``, ``replay:FILE``).
        tasks: Tasks to run, from the templates file (``describe`` runs first: others read it).
        seed: Seed of the first attempt (attempt *k* uses ``seed + k``) and of option shuffles.
        retries: Retries after an invalid reply (so at most ``retries + 1`` attempts).
        inputs: Table of texts per image (caption, question, answer, context).
        templates: A YAML file merged over the shipped templates.
        questions_per_image: Overrides ``n`` of the ``mcq`` task.
        max_new_tokens: Generation budget per reply.
        model_args: Backend options (``--model-arg``); ``device``, ``base_url``, ``batch_size`` too.
        prices: Prices per million tokens, for the ledger.
        shuffle: Shuffle each question's options with the seed (balances answer positions;
            "None of the above" stays last).
        max_fail_fraction: The step fails (non-zero exit) when more of its calls end as failure
            rows (its output is written first).
        max_consecutive_failures: Calls failing in a row with an error (network, server) that stop
            the step at once (0: never).
    """

    model: str
    tasks: tuple[str, ...] = ("describe", "mcq")
    seed: int = 0
    retries: int = 2
    inputs: str | None = None
    templates: str | None = None
    questions_per_image: int | None = None
    max_new_tokens: int = 1024
    model_args: dict[str, Any] = field(default_factory=dict)
    prices: Prices | None = None
    shuffle: bool = True
    max_fail_fraction: float = 0.5
    max_consecutive_failures: int = DEFAULT_MAX_CONSECUTIVE_FAILURES

    def __post_init__(self) -> None:
        if not 0.0 <= self.max_fail_fraction <= 1.0 or self.max_consecutive_failures < 0:
            raise DataFormatError(
                "generate: max_fail_fraction must be between 0 and 1 and max_consecutive_failures ≥ 0"
            )
        if self.retries < 0 or self.max_new_tokens < 1:
            raise DataFormatError("generate: retries must be ≥ 0 and max_new_tokens ≥ 1")
        if self.questions_per_image is not None and self.questions_per_image < 1:
            raise DataFormatError("generate: questions_per_image must be ≥ 1")
        if not self.tasks or len(set(self.tasks)) != len(self.tasks):
            raise DataFormatError(f"generate: name each task once, at least one (got {list(self.tasks)})")


def load_templates(path: str | Path | None = None) -> dict[str, Any]:
    """The shipped templates, with ``path`` merged over them (task by task, key by key).

    Raises:
        DataFormatError: When a task has an unknown ``kind`` or no ``prompt``.
    """
    import yaml

    shipped = yaml.safe_load(
        files("scopebench.curate").joinpath("data/generate_templates.yaml").read_text("utf-8")
    )
    if path is not None:
        p = Path(path)
        if not p.is_file():
            raise DataFormatError(f"templates file not found: {p}")
        user = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
        if not isinstance(user, dict):
            raise DataFormatError(f"{p}: expected a mapping (system, retry, tasks)")
        for key, value in user.items():
            if key == "tasks":
                for name, task in (value or {}).items():
                    shipped["tasks"][name] = {**shipped["tasks"].get(name, {}), **(task or {})}
            else:
                shipped[key] = value
    for name, task in shipped["tasks"].items():
        if task.get("kind") not in _KINDS or not task.get("prompt"):
            raise DataFormatError(f"template task {name!r}: needs a prompt and a kind among {_KINDS}")
    return dict(shipped)


def _fill(template: str, values: dict[str, Any], task: str) -> str:
    try:
        return template.format_map(values)
    except KeyError as exc:
        raise DataFormatError(
            f"template of task {task!r} uses {{{exc.args[0]}}}, which is not one of {sorted(values)}; "
            "write literal braces doubled ({{ }})"
        ) from exc


def _read_inputs(
    path: str | None, rows: Sequence[dict[str, Any]], problems: list[BuildProblem]
) -> dict[str, dict[str, str]]:
    """image_id → texts, from the inputs table; a row naming no image is a problem (kept out)."""
    if path is None:
        return {}

    by_path = {(r["dataset"], r["source_path"]): r["image_id"] for r in rows}
    ids = {r["image_id"] for r in rows}
    out: dict[str, dict[str, str]] = {}
    first: dict[str, int] = {}
    for i, rec in enumerate(read_table(Path(path))):
        image_id = rec.get("image_id") or by_path.get((rec.get("source"), rec.get("image")))
        if image_id not in ids:
            where = (
                f"image_id {rec.get('image_id')!r}"
                if rec.get("image_id")
                else (f"source {rec.get('source')!r} image {rec.get('image')!r}")
            )
            msg = f"{where} names no image of this build (give source + image as in the metadata table)"
            problems.append(BuildProblem(STEP, Path(path).name, str(i), "image", "unknown_image", msg))
            continue
        if str(image_id) in out:
            msg = f"a second row for the same image (row {first[str(image_id)]} is used); merge them"
            problems.append(BuildProblem(STEP, Path(path).name, str(i), "image", "duplicate_input", msg))
            continue
        first[str(image_id)] = i
        out[str(image_id)] = {k: str(rec[k]) for k in _INPUT_FIELDS if rec.get(k) not in (None, "")}
    return out


def _metadata(row: dict[str, Any]) -> str:
    names = {"ncbitaxon_name": "organism", "label_name": "label"}
    return "; ".join(f"{names.get(k, k)}: {row[k]}" for k in _META_FIELDS if row.get(k))


@dataclass
class _Job:
    """One (task, image) call and its attempts."""

    task: str
    row: dict[str, Any]
    call_id: str
    messages: list[ChatMessage]
    attempts: list[dict[str, Any]] = field(default_factory=list)


def _jobs(
    task: str, spec: dict[str, Any], rows: Sequence[dict[str, Any]], texts: dict[str, dict[str, str]],
    templates: dict[str, Any], descriptions: dict[str, str], n: int, options: int,
) -> tuple[list[_Job], int]:  # fmt: skip
    """The calls of one task, and how many images lacked what it needs."""
    jobs, skipped = [], 0
    for row in rows:
        have = dict(texts.get(row["image_id"], {}))
        desc = descriptions.get(row["image_id"]) or have.get("caption")
        if desc:
            have["description"] = desc
        if any(not have.get(k) for k in spec.get("needs", [])):
            skipped += 1
            continue
        values = {
            "metadata": _metadata(row), "caption": have.get("caption", ""), "description": desc or "",
            "question": have.get("question", ""), "answer": have.get("answer", ""),
            "context": have.get("context") or have.get("caption") or _metadata(row), "n": n,
            "options": options, "task_instruction": spec.get("task_instruction", ""),
        }  # fmt: skip
        image = ImageRef(key=row["image_id"], data=(row.get("image") or {}).get("bytes"))
        messages = [
            ChatMessage("system", str(templates["system"])),
            ChatMessage("user", _fill(str(spec["prompt"]), values, task), images=(image,)),
        ]
        jobs.append(_Job(task, row, f"{task}/{row['dataset']}/{row['source_path']}", messages))
    return jobs, skipped


def _run_task(
    client: LLMClient, jobs: list[_Job], kind: Kind, n: int, options: int, config: GenerateConfig,
    retry_text: str,
) -> tuple[list[tuple[_Job, Any]], list[tuple[_Job, Invalid]], int]:  # fmt: skip
    """Call, validate and retry; returns (job, content) successes, (job, reason) failures, retries made."""
    done: list[tuple[_Job, Any]] = []
    failed: list[tuple[_Job, Invalid]] = []
    pending, retries = jobs, 0
    for attempt in range(config.retries + 1):
        if not pending:
            break
        if attempt:
            retries += len(pending)
            if client.progress is not None:
                client.progress.total += len(pending)
        seed = config.seed + attempt
        calls = [
            LLMCall(
                j.call_id, list(j.messages), f"{SCHEMA_VERSION}/{kind}/{n}/{options}", config.max_new_tokens
            )
            for j in pending
        ]
        replies = client.chat(jobs[0].task, calls, seed=seed)
        still: list[_Job] = []
        for job, reply in zip(pending, replies, strict=True):
            record = {
                "attempt": attempt,
                "seed": seed,
                "key": reply.key,
                "cached": reply.cached,
                "raw": reply.text,
            }
            job.attempts.append(record)
            if reply.status != "ok":
                # A failed call is not the model's fault: no retry now, the next run asks again.
                record["reason"] = reason = Invalid("call_failed", f"{reply.status}: {reply.error}")
                failed.append((job, reason))
                continue
            got = validate_reply(reply.text, kind, n=n, options=options)
            if not isinstance(got, Invalid):
                done.append((job, got))
                continue
            record["reason"] = got
            if attempt == config.retries:
                failed.append((job, got))
                continue
            job.messages += [
                ChatMessage("assistant", reply.text or ""),
                ChatMessage("user", _fill(retry_text, {"reason": got.message}, "retry")),
            ]
            still.append(job)
        pending = still
    return done, failed, retries


def _provenance(job: _Job, identity: dict[str, Any]) -> dict[str, Any]:
    last = job.attempts[-1]
    attempts = [
        {**a, "reason": f"{a['reason'].kind}: {a['reason'].message}" if a.get("reason") else None}
        for a in job.attempts
    ]
    return {
        "call_id": job.call_id,
        "model": identity,
        "system": job.messages[0].text,
        "prompt": job.messages[1].text,
        "raw": last["raw"],
        "seed": last["seed"],
        "attempt": last["attempt"],
        "attempts": attempts,
    }


def generate(
    data: str | Path,
    out: str | Path,
    config: GenerateConfig,
    *,
    cache: str | Path | None = None,
    backend: Backend | None = None,
    progress: bool = False,
) -> StepResult:
    """Run the configured tasks on every image of a questions (or ingest) output.

    Args:
        data: A ``build questions`` (or ``build ingest``) output folder.
        out: The output folder (same dataset plus a ``generated`` column, ``generated.jsonl``,
            ``ledger.json``, ``problems.jsonl``, ``build.json``, card).
        config: What to generate and with which model.
        cache: The call cache file (default: ``.cache/llm.sqlite`` beside ``out``).
        backend: A ready backend (default: built from ``config.model``).
        progress: Show a progress bar counting calls (retries add to its total).

    Returns:
        ``items_in`` (task, image) calls, ``kept`` those that gave a valid reply, ``dropped`` the
        failures by reason; ``stats`` holds items and failures per task, retries, skipped images,
        and the ledger.
    """
    data, out = Path(data), Path(out)

    splits, labels = read_rows(data)
    rows = [r for rs in splits.values() for r in rs if r.get("split") != "test_tiny"]
    templates = load_templates(config.templates)
    unknown = [t for t in config.tasks if t not in templates["tasks"]]
    if unknown:
        raise DataFormatError(f"generate: unknown task(s) {unknown}; known: {sorted(templates['tasks'])}")
    result = StepResult(STEP, out=str(out))
    texts = _read_inputs(config.inputs, rows, result.problems)
    ref = ModelRef(config.model, dict(config.model_args))
    backend = backend or load_backend(ref, seed=config.seed, needs_chat=True)
    from tqdm import tqdm

    bar = tqdm(total=0, desc="generate", unit="call", disable=not progress)  # grows as calls are planned
    client = LLMClient(
        backend,
        CallCache(cache or out.parent / ".cache" / "llm.sqlite"),
        decoding={"max_new_tokens": config.max_new_tokens},
        prices=config.prices,
        guard=FailureGuard(config.max_consecutive_failures, "generate"),
        progress=bar,
    )
    descriptions: dict[str, str] = {}
    records: list[dict[str, Any]] = []
    stats: dict[str, Any] = {"items": {}, "failures": {}, "retries": {}, "skipped_no_input": {},
                             "answer_positions": {}}  # fmt: skip
    result.stats = stats  # _collect adds each task's answer balance
    order = sorted(config.tasks, key=lambda t: t != "describe")  # descriptions feed the others
    for task in order:
        spec = templates["tasks"][task]
        kind: Kind = spec["kind"]
        n = int(config.questions_per_image or spec.get("n", 1)) if task == "mcq" else int(spec.get("n", 1))
        options = int(spec.get("options", 4))
        jobs, skipped = _jobs(task, spec, rows, texts, templates, descriptions, n, options)
        stats["skipped_no_input"][task] = skipped
        result.items_in += len(jobs)
        bar.total = (bar.total or 0) + len(jobs)
        done, failed, retries = _run_task(client, jobs, kind, n, options, config, str(templates["retry"]))
        stats["retries"][task] = retries
        n_items = _collect(task, kind, done, failed, client.identity, config, descriptions, records, result)
        stats["items"][task] = n_items
        stats["failures"][task] = dict(Counter(why.kind for _, why in failed))
    result.kept = result.items_in - sum(result.dropped.values())
    stats.update(seed=config.seed, model=client.identity, ledger=client.ledger.to_json())
    stats["incomplete"] = bool(result.dropped.get("call_failed"))
    stats["output_sha256"] = _output_digest(records)
    client.cache.close()
    bar.close()
    write_generate_output(data, out, splits, labels, records, result, client.ledger)
    _check_failures(result, config.max_fail_fraction, out)
    return result


def _check_failures(result: StepResult, limit: float, out: Path) -> None:
    """Stop (a non-zero exit) when more than ``limit`` of the calls ended as failure rows.

    Raises:
        RunAbortedError: Naming the count, the reasons and where the failure rows are.
    """
    failed = sum(result.dropped.values())
    if result.items_in and failed / result.items_in > limit:
        reasons = ", ".join(f"{k} {v}" for k, v in sorted(result.dropped.items()))
        raise RunAbortedError(
            f"generate: {failed} of {result.items_in} calls failed ({reasons}), more than "
            f"max_fail_fraction {limit:.0%}; the failure rows and raw replies are in "
            f"{out / 'generated.jsonl'}. Fix the model or server and run again (answered calls "
            "come from the cache)"
        )


def _collect(
    task: str, kind: Kind, done: list[tuple[_Job, Any]], failed: list[tuple[_Job, Invalid]],
    identity: dict[str, Any], config: GenerateConfig, descriptions: dict[str, str],
    records: list[dict[str, Any]], result: StepResult,
) -> int:  # fmt: skip
    """Append one task's items and failure rows to ``records`` (problems and drops to ``result``).

    Returns:
        The number of items (descriptions or questions) written.
    """
    n_items = 0
    drafts: list[tuple[_Job, str, MCQ, int, dict[str, Any]]] = []
    for job, content in done:
        prov = _provenance(job, identity)
        if kind == "description":
            descriptions[job.row["image_id"]] = content
            records.append(_record(job, f"{task}-0", "description", prov, description=content))
            n_items += 1
            continue
        drafts += [(job, f"{task}-{k}", q, idx, prov) for k, (q, idx) in enumerate(content)]
    if drafts:
        placed, balance = _place(task, drafts, config)
        records += placed
        n_items += len(placed)
        result.stats["answer_positions"][task] = balance
    for job, why in failed:
        prov = _provenance(job, identity)
        records.append(_record(job, f"{task}-failed", "failure", prov, reason=why.kind, message=why.message))
        result.dropped[why.kind] += 1
        tries = len(job.attempts)
        msg = f"{job.call_id}: {why.message} (after {tries} attempt(s)); raw reply in generated.jsonl"
        result.problems.append(
            BuildProblem(STEP, job.row["dataset"], job.row["source_path"], task, why.kind, msg)
        )
    return n_items


def _place(
    task: str, drafts: list[tuple[_Job, str, MCQ, int, dict[str, Any]]], config: GenerateConfig
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """One task's items with their answers placed (balanced over the task), and the task's balance.

    Options are shuffled with the item's own generator (seed, image id, item id) unless an option
    text names others by position; "None of the above" keeps its slot; "option B"-style references
    in the question and explanation follow their option.
    """
    layouts = [layout(q.options, idx, movable=config.shuffle) for _, _, q, idx, _ in drafts]
    targets = assign_positions(layouts, rng_for(config.seed, "positions", task))
    out = []
    for (job, item_id, q, _, prov), lay, target in zip(drafts, layouts, targets, strict=True):
        opts, answer, order = reorder(
            q.options, lay, target, rng_for(config.seed, job.row["image_id"], item_id)
        )
        placement = {"option_order": order, "shuffled": bool(lay.slots), "shuffle_seed": config.seed,
                     "kept_order_because": lay.fixed_by or None}  # fmt: skip
        content = {"question": relabel(q.question, order), "options": opts, "answer_idx": answer,
                   "explanation": relabel(q.explanation, order)}  # fmt: skip
        out.append(_record(job, item_id, "mcq", {**prov, **placement}, **content))
    return out, position_stats(targets, [lay.width for lay in layouts])


def _output_digest(records: list[dict[str, Any]]) -> str:
    """SHA-256 of what later steps read: the items, and which calls failed and why."""
    parts = [dataset_entry(r) if r["status"] == "ok" else [r["id"], r["reason"]] for r in records]
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def _record(job: _Job, item_id: str, kind: str, prov: dict[str, Any], **content: Any) -> dict[str, Any]:
    row = job.row
    return {
        "id": f"{row['image_id']}-{item_id}",
        "task": job.task,
        "kind": kind,
        "status": "failed" if kind == "failure" else "ok",
        "image_id": row["image_id"],
        "source": row["dataset"],
        "row": row["source_path"],
        **content,
        **prov,
    }


def read_generated(folder: str | Path) -> list[dict[str, Any]]:
    """The records of a generate output's ``generated.jsonl`` (items and failure rows)."""
    path = Path(folder) / "generated.jsonl"
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x]

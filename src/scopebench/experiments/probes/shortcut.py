"""``scopebench probe shortcut`` — the text-shortcut filter, as PathMMU and SPUR built their data.

Both benchmarks removed questions that can be answered without the image: PathMMU drops an item
when at least 3 of 4 text-only LLMs answer it correctly; SPUR drops one when GPT-4o answers it
correctly without the image in at least 5 of 10 tries. This probe reproduces either rule (or both)
for any set of models:

* every model runs text only (``no_image=True``) ``R`` times (``--tries``); try ``r`` (``r = 0 …
  R−1``) uses seed ``seed + r``, and, for backends that sample (``vllm:``, ``openai:``),
  ``--temperature T`` is passed as the model argument ``temperature``. Each (model, try) is an
  ordinary run under ``OUT/runs/<model-slug>/try-<r>/``, so the probe resumes like any run;
* an item-try is **correct** only when its record has status ``ok`` and the chosen option is the
  answer. Unparsed answers, errors and missing records are *not correct*; they are counted and
  reported per item, never dropped, and an item kept only because a try failed is listed;
* **K-of-N rule** (``--min-models K``): a model *answers an item correctly* when it is correct in
  a strict majority of its ``R`` tries (``--model-correct majority``, i.e. more than ``R/2``;
  ``any`` and ``all`` are the alternatives; with ``R = 1`` all three mean "correct"). The item is
  flagged when at least ``K`` models answer it correctly;
* **r-of-R rule** (``--min-tries r``): the item is flagged when at least one model is correct in
  at least ``r`` of its ``R`` tries;
* with both rules given, an item is flagged when either fires (the rules that fired are recorded).

The denominator of every count is ``R``: a failed try is a try that was not correct.

Outputs in ``OUT``: ``kept.txt`` and ``flagged.txt`` (sorted item ids, one per line; evaluate the
filtered set with ``scopebench run … --exclude OUT/flagged.txt``), ``shortcut.json`` (the rule, the
runs, the counts and every item's per-model, per-try outcomes), ``shortcut.md``, ``shortcut.csv``
(counts per task and subset), ``items.csv`` (one row per item) and ``shortcut_hist.png``/``.svg``.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import logging
import re
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scopebench.engine import load_items, run_benchmark
from scopebench.errors import DataNotFoundError, ScopebenchError
from scopebench.items import Item, Record
from scopebench.models import parse_spec
from scopebench.report import json_safe
from scopebench.scoring.shortcut import ModelCorrect, answers_right, flagged, min_tries_for
from scopebench.store import load_run

if TYPE_CHECKING:
    from scopebench.engine import RunConfig

__all__ = [
    "ERROR_STATUSES",
    "SAMPLING_SCHEMES",
    "ItemVerdict",
    "ModelCorrect",
    "ShortcutRule",
    "flag_items",
    "model_answers_correctly",
    "model_slug",
    "read_id_file",
    "run_shortcut",
    "summarize",
    "try_status",
]

log = logging.getLogger(__name__)

#: Statuses of an item-try that mean the model could not be judged (counted as not correct).
ERROR_STATUSES = frozenset({"error", "missing_image", "missing_response", "no_record"})
#: Backend schemes that sample when given ``--model-arg temperature=T`` (with the run's seed);
#: the others — ``hf:`` decodes greedily — answer the same for the same seed and item.
SAMPLING_SCHEMES = frozenset({"vllm", "openai"})


# The counting logic (pure) ------------------------------------------------------------------------


def try_status(record: Record | None) -> str:
    """The outcome of one item-try: ``correct``, ``wrong``, or the record's failure status.

    ``no_record`` when the run has no record for the item; ``unparsed``, ``error``,
    ``missing_image``, ``missing_response`` as stored. Only ``correct`` counts as correct.
    """
    if record is None:
        return "no_record"
    if record.status == "ok":
        return "correct" if record.correct else "wrong"
    return record.status


def model_answers_correctly(n_correct: int, n_tries: int, how: ModelCorrect = "majority") -> bool:
    """Whether a model correct in ``n_correct`` of ``n_tries`` tries "answers the item correctly".

    Args:
        n_correct: Tries whose answer was correct.
        n_tries: Tries run (failed tries included: they were not correct).
        how: ``majority`` (more than half), ``any`` (at least one) or ``all`` (every try).
    """
    if n_tries <= 0:
        return False
    return answers_right(n_correct, min_tries_for(how, n_tries))


@dataclass(frozen=True, slots=True)
class ShortcutRule:
    """Which items the filter flags.

    Attributes:
        min_models: K of the K-of-N rule (``None``: rule off).
        min_tries: r of the r-of-R rule (``None``: rule off).
        model_correct: When a model answers an item correctly across its tries (K-of-N rule).
    """

    min_models: int | None = None
    min_tries: int | None = None
    model_correct: ModelCorrect = "majority"

    def validate(self, n_models: int, n_tries: int) -> None:
        """Check the rule against the number of models and tries.

        Raises:
            ScopebenchError: When no rule is set or a threshold cannot be reached.
        """
        if self.min_models is None and self.min_tries is None:
            raise ScopebenchError(
                "give at least one rule: --min-models K (PathMMU: 3 of 4 models) and/or "
                "--min-tries r (SPUR: 5 of 10 tries)"
            )
        if self.min_models is not None and not 1 <= self.min_models <= n_models:
            raise ScopebenchError(f"--min-models must be between 1 and the {n_models} model(s) given")
        if self.min_tries is not None and not 1 <= self.min_tries <= n_tries:
            raise ScopebenchError(f"--min-tries must be between 1 and --tries ({n_tries})")

    def describe(self, n_models: int, n_tries: int) -> list[str]:
        """One sentence per active rule, for reports."""
        out = []
        if self.min_models is not None:
            per = {
                "majority": f"correct in more than half of its {n_tries} tries",
                "any": f"correct in at least one of its {n_tries} tries",
                "all": f"correct in all {n_tries} tries",
            }[self.model_correct]
            out.append(
                f"min-models: flagged when at least {self.min_models} of {n_models} models answer "
                f"correctly (a model answers correctly when {per})"
            )
        if self.min_tries is not None:
            out.append(
                f"min-tries: flagged when some model is correct in at least {self.min_tries} of "
                f"{n_tries} tries"
            )
        return out


@dataclass(slots=True)
class ItemVerdict:
    """The filter's decision for one item and what it was based on.

    Attributes:
        item_id: The item.
        task: Its task.
        subset: Its subset.
        outcomes: Per model, the status of each try (:func:`try_status`).
        correct_tries: Per model, how many tries were correct.
        models_correct: Models that answer correctly under the rule's ``model_correct``.
        max_correct_tries: The most correct tries of any model.
        flagged: Whether the item is flagged as text-answerable.
        rules: The rules that fired (``min-models``, ``min-tries``).
        problems: ``"MODEL try R: STATUS (reason)"`` for every failed or unparsed try.
    """

    item_id: str
    task: str
    subset: str | None
    outcomes: dict[str, list[str]] = field(default_factory=dict)
    correct_tries: dict[str, int] = field(default_factory=dict)
    models_correct: list[str] = field(default_factory=list)
    max_correct_tries: int = 0
    flagged: bool = False
    rules: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def has_errors(self) -> bool:
        """Whether any try of any model failed (error, missing image/response, no record)."""
        return any(s in ERROR_STATUSES for v in self.outcomes.values() for s in v)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict."""
        return asdict(self)


def flag_items(
    items: Sequence[Item], runs: Mapping[str, Sequence[Mapping[str, Record]]], rule: ShortcutRule
) -> list[ItemVerdict]:
    """Apply ``rule`` to every item (pure: records in, verdicts out).

    Args:
        items: The items to judge (multiple-choice items of the filtered benchmark).
        runs: Per model, one ``{item_id: record}`` mapping per try, every model with the same
            number of tries.
        rule: The rule (validated against the numbers of models and tries).

    Returns:
        One :class:`ItemVerdict` per item, in the order of ``items``.

    Raises:
        ScopebenchError: When no model is given, the models have different numbers of tries, or
            the rule cannot be reached.
    """
    if not runs:
        raise ScopebenchError("the shortcut filter needs at least one model")
    n_tries = {len(tries) for tries in runs.values()}
    if len(n_tries) != 1:
        raise ScopebenchError("every model must have the same number of tries")
    r_total = n_tries.pop()
    rule.validate(len(runs), r_total)
    verdicts = []
    for it in items:
        v = ItemVerdict(item_id=it.id, task=it.task, subset=it.subset)
        for model, tries in runs.items():
            statuses = []
            for r, by_id in enumerate(tries):
                rec = by_id.get(it.id)
                st = try_status(rec)
                statuses.append(st)
                if st not in ("correct", "wrong"):
                    reason = (rec.error if rec is not None else None) or "the run has no record of it"
                    v.problems.append(f"{model} try {r}: {st} ({reason})")
            v.outcomes[model] = statuses
            v.correct_tries[model] = statuses.count("correct")
            if model_answers_correctly(v.correct_tries[model], r_total, rule.model_correct):
                v.models_correct.append(model)
        v.max_correct_tries = max(v.correct_tries.values())
        # Both rules are the shared k-of-n rule: K models right (each by `model_correct`), or one
        # model right in r tries.
        need = min_tries_for(rule.model_correct, r_total)
        if rule.min_models is not None and flagged(
            v.correct_tries, min_models=rule.min_models, min_tries=need
        ):
            v.rules.append("min-models")
        if rule.min_tries is not None and flagged(v.correct_tries, min_models=1, min_tries=rule.min_tries):
            v.rules.append("min-tries")
        v.flagged = bool(v.rules)
        verdicts.append(v)
    return verdicts


def _count_rows(verdicts: Sequence[ItemVerdict], key: str) -> list[dict[str, Any]]:
    groups: dict[str, list[ItemVerdict]] = defaultdict(list)
    for v in verdicts:
        k = getattr(v, key)
        if k is not None:
            groups[str(k)].append(v)
    rows = []
    for k in sorted(groups):
        vs = groups[k]
        flagged = sum(v.flagged for v in vs)
        rows.append(
            {
                "group": f"{key}={k}",
                "items": len(vs),
                "flagged": flagged,
                "kept": len(vs) - flagged,
                "flagged_fraction": flagged / len(vs),
            }
        )
    return rows


def summarize(verdicts: Sequence[ItemVerdict], n_models: int, n_tries: int) -> dict[str, Any]:
    """Counts over the verdicts: flagged/kept overall, per rule, per task and subset; failures.

    Returns:
        ``{"items", "flagged", "kept", "flagged_by": {"min-models only", "min-tries only", "both"},
        "tries": {status: count over every item-try}, "items_with_errors",
        "kept_items_with_errors", "items_with_unparsed", "histogram_models_correct" (index k: items
        that k models answer correctly), "histogram_max_correct_tries", "by_task", "by_subset"}``.
    """
    flagged = sum(v.flagged for v in verdicts)
    by_rule: Counter[str] = Counter()
    for v in verdicts:
        if v.flagged:
            by_rule["both" if len(v.rules) == 2 else f"{v.rules[0]} only"] += 1
    tries: Counter[str] = Counter(s for v in verdicts for st in v.outcomes.values() for s in st)
    hist_models = [0] * (n_models + 1)
    hist_tries = [0] * (n_tries + 1)
    for v in verdicts:
        hist_models[len(v.models_correct)] += 1
        hist_tries[v.max_correct_tries] += 1
    return {
        "items": len(verdicts),
        "flagged": flagged,
        "kept": len(verdicts) - flagged,
        "flagged_by": {k: by_rule[k] for k in ("min-models only", "min-tries only", "both")},
        "tries": {
            k: tries[k]
            for k in (
                "correct",
                "wrong",
                "unparsed",
                "error",
                "missing_image",
                "missing_response",
                "no_record",
            )
        },
        "items_with_errors": sum(v.has_errors for v in verdicts),
        "kept_items_with_errors": sum(v.has_errors and not v.flagged for v in verdicts),
        "items_with_unparsed": sum(any("unparsed" in s for s in v.outcomes.values()) for v in verdicts),
        "histogram_models_correct": hist_models,
        "histogram_max_correct_tries": hist_tries,
        "by_task": _count_rows(verdicts, "task"),
        "by_subset": _count_rows(verdicts, "subset"),
    }


# Running the models -------------------------------------------------------------------------------


def model_slug(spec: str, taken: set[str] | None = None) -> str:
    """A folder name for a model spec, unique among ``taken`` (which it is added to).

    Runs of different specs must never share a folder: a clash (``a/b`` vs ``a_b``) gets a short
    hash of the spec appended.
    """
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", spec).strip("_.")[:80] or "model"
    if taken is not None:
        if slug in taken:
            slug = f"{slug[:70]}-{hashlib.sha256(spec.encode()).hexdigest()[:8]}"
        taken.add(slug)
    return slug


def read_id_file(path: str | Path) -> list[str]:
    """Item ids from a file, one per line (blank lines ignored), in file order, without repeats.

    Raises:
        DataNotFoundError: When the file does not exist.
    """
    p = Path(path)
    if not p.is_file():
        raise DataNotFoundError(f"item-id file not found: {p}")
    return list(dict.fromkeys(s.strip() for s in p.read_text(encoding="utf-8").splitlines() if s.strip()))


def run_shortcut(
    base: RunConfig,
    models: Sequence[str],
    out: str | Path,
    rule: ShortcutRule,
    *,
    tries: int = 1,
    temperature: float | None = None,
    fresh: bool = False,
    retry_errors: bool = False,
) -> dict[str, Any]:
    """Run every model text only ``tries`` times, flag items and write the outputs.

    Args:
        base: The run settings shared by every run (benchmark, data, split, limit, seed, …); its
            ``model`` is replaced by each of ``models`` and ``no_image`` is forced on.
        models: Model specs (any backends), at least one, no repeats.
        out: Output folder (runs under ``out/runs/<slug>/try-<r>/``).
        rule: The flagging rule.
        tries: Tries per model (``R``); try ``r`` uses seed ``base.seed + r``.
        temperature: Sampling temperature for backends that sample (:data:`SAMPLING_SCHEMES`),
            passed as their model argument ``temperature``.
        fresh: Discard stored results of a different configuration instead of refusing.
        retry_errors: Redo items whose stored record is an error.

    Returns:
        The content of ``shortcut.json``.

    Raises:
        ScopebenchError: For repeated models, fewer than one try or an unreachable rule.
    """
    if tries < 1:
        raise ScopebenchError("--tries must be at least 1")
    if len(set(models)) != len(models):
        raise ScopebenchError("a model is listed twice in --models; list each once")
    parsed = {spec: parse_spec(spec) for spec in models}  # once: a typo fails before any run
    rule.validate(len(models), tries)
    out = Path(out)
    _, items = load_items(base)
    taken: set[str] = set()
    runs: dict[str, list[dict[str, Record]]] = {}
    model_info = []
    for spec in models:
        slug = model_slug(spec, taken)
        sampling = temperature is not None and parsed[spec].scheme in SAMPLING_SCHEMES
        args = {**base.model_args, **({"temperature": temperature} if sampling else {})}
        info: dict[str, Any] = {
            "model": spec,
            "slug": slug,
            "temperature": temperature if sampling else None,
            "samples": sampling,
            "tries": [],
        }
        runs[spec] = []
        for r in range(tries):
            cfg = replace(base, model=spec, seed=base.seed + r, no_image=True, model_args=args)
            run_dir = out / "runs" / slug / f"try-{r}"
            log.info("shortcut: %s try %d of %d (seed %d)", spec, r + 1, tries, cfg.seed)
            res = run_benchmark(cfg, run_dir, fresh=fresh, retry_errors=retry_errors, model_spec=parsed[spec])
            by_id = {rec.item_id: rec for rec in load_run(run_dir).records}
            runs[spec].append(by_id)
            overall = res.metrics["overall"]
            info["tries"].append(
                {
                    "try": r,
                    "seed": cfg.seed,
                    "run_dir": str(run_dir),
                    "n": overall["n"],
                    "correct": overall["correct"],
                    "accuracy": overall["accuracy"],
                    "n_new": res.n_new,
                }
            )
        info["tries_identical"] = tries > 1 and all(
            {k: (v.status, v.choice) for k, v in t.items()}
            == {k: (v.status, v.choice) for k, v in runs[spec][0].items()}
            for t in runs[spec][1:]
        )
        model_info.append(info)
    mcq = [it for it in items if it.kind == "mcq"]
    verdicts = flag_items(mcq, runs, rule)
    not_judged = sorted(it.id for it in items if it.kind != "mcq")
    flagged = sorted(v.item_id for v in verdicts if v.flagged)
    kept = sorted([v.item_id for v in verdicts if not v.flagged] + not_judged)
    result = {
        "benchmark": base.benchmark,
        "data": base.data,
        "split": base.split,
        "limit": base.limit,
        "seed": base.seed,
        "protocol": base.protocol,
        "tries": tries,
        "temperature": temperature,
        "rule": {**asdict(rule), "description": rule.describe(len(models), tries)},
        "models": model_info,
        "counts": {**summarize(verdicts, len(models), tries), "not_judged": len(not_judged)},
        "not_judged": not_judged,
        "items": [v.to_dict() for v in verdicts],
    }
    _write_outputs(out, result, flagged, kept, verdicts, list(models), rule, tries)
    return result


# Outputs -------------------------------------------------------------------------------------------


def _write_outputs(
    out: Path,
    result: dict[str, Any],
    flagged: list[str],
    kept: list[str],
    verdicts: Sequence[ItemVerdict],
    models: list[str],
    rule: ShortcutRule,
    tries: int,
) -> None:

    out.mkdir(parents=True, exist_ok=True)
    (out / "flagged.txt").write_text("".join(f"{i}\n" for i in flagged), encoding="utf-8")
    (out / "kept.txt").write_text("".join(f"{i}\n" for i in kept), encoding="utf-8")
    (out / "shortcut.json").write_text(
        json.dumps(json_safe(result), indent=2, ensure_ascii=False), encoding="utf-8"
    )
    c = result["counts"]
    overall = {
        "group": "overall",
        "items": c["items"],
        "flagged": c["flagged"],
        "kept": c["kept"],
        "flagged_fraction": c["flagged"] / c["items"] if c["items"] else float("nan"),
    }
    rows = [{"section": "overall", **overall}]
    rows += [{"section": "task", **r} for r in c["by_task"]]
    rows += [{"section": "subset", **r} for r in c["by_subset"]]
    cols = ["section", "group", "items", "flagged", "kept", "flagged_fraction"]
    (out / "shortcut.csv").write_text(_csv(cols, [[r[k] for k in cols] for r in rows]), encoding="utf-8")
    item_cols = ["item_id", "task", "subset", "flagged", "rules", "models_correct", "max_correct_tries"]
    item_cols += [f"correct_tries:{m}" for m in models] + ["problems"]
    item_rows = [
        [v.item_id, v.task, v.subset or "", int(v.flagged), ";".join(v.rules), len(v.models_correct),
         v.max_correct_tries, *[v.correct_tries[m] for m in models], " | ".join(v.problems)]
        for v in verdicts
    ]  # fmt: skip
    (out / "items.csv").write_text(_csv(item_cols, item_rows), encoding="utf-8")
    (out / "shortcut.md").write_text(_markdown(result, rows), encoding="utf-8")
    _plot(out / "shortcut_hist", c, rule, len(models), tries)


def _csv(head: Sequence[str], body: Sequence[Sequence[Any]]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(head)
    for row in body:
        w.writerow([f"{x:.6g}" if isinstance(x, float) else x for x in row])
    return buf.getvalue()


def _pct(x: Any) -> str:
    return "n/a" if x is None or x != x else f"{100 * float(x):.1f}%"


def _md_table(head: Sequence[str], body: Sequence[Sequence[Any]]) -> list[str]:
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |" for row in body]
    return [*lines, ""]


def _markdown(result: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> str:
    c = result["counts"]
    tries_word = "try" if result["tries"] == 1 else "tries"
    lines = [f"# Text-shortcut filter — {result['benchmark']} ({result['split'] or 'default split'})", ""]
    lines += [f"- {d}" for d in result["rule"]["description"]]
    lines += [
        "- an item-try counts as correct only when its answer parsed to the right option; unparsed "
        "answers, errors and missing records count as not correct (and are listed below)",
        f"- every model ran text only (no image), {result['tries']} {tries_word} each; "
        f"try r used seed {result['seed']} + r",
        "",
        "## Models",
        "",
    ]
    body = []
    for m in result["models"]:
        accs = ", ".join(
            "n/a"
            if t["accuracy"] is None or t["accuracy"] != t["accuracy"]
            else f"{100 * t['accuracy']:.1f}%"
            for t in m["tries"]
        )
        if result["tries"] == 1:
            note = "one try"
        elif m["tries_identical"]:
            note = "tries identical (deterministic backend or no sampling): the r-of-R rule adds nothing"
        else:
            note = "tries differ"
        if m["temperature"] is not None:
            temp = str(m["temperature"])
        elif result["temperature"] is not None:
            temp = "not passed (backend does not sample)"
        else:
            temp = ""
        body.append([m["model"], temp, accs, note])
    lines += _md_table(["model", "temperature", "text-only accuracy per try", "tries"], body)
    lines += ["## Counts", ""]
    fb = c["flagged_by"]
    lines += [
        f"- items judged: {c['items']}; flagged: {c['flagged']} (min-models only {fb['min-models only']}, "
        f"min-tries only {fb['min-tries only']}, both {fb['both']}); kept: {c['kept']}",
        "- item-tries: " + ", ".join(f"{k} {v}" for k, v in c["tries"].items()),
        f"- items with a failed try (error, missing image/response, no record): {c['items_with_errors']}, "
        f"of which kept: {c['kept_items_with_errors']} (a failed try may have hidden a correct answer; "
        "run the probe again with --retry-errors to redo them)",
        f"- items with an unparsed answer: {c['items_with_unparsed']}",
        f"- items not judged (not multiple choice; kept): {c['not_judged']}",
        "",
    ]
    lines += _md_table(
        ["section", "group", "items", "flagged", "kept", "flagged %"],
        [[r["section"], r["group"], r["items"], r["flagged"], r["kept"],
          "n/a" if r["flagged_fraction"] != r["flagged_fraction"] else f"{100 * r['flagged_fraction']:.1f}"]
         for r in rows],
    )  # fmt: skip
    lines += ["## Models answering correctly per item", ""]
    lines += _md_table(
        ["models correct", "items"], [[k, n] for k, n in enumerate(c["histogram_models_correct"])]
    )
    if result["tries"] > 1:
        lines += _md_table(
            ["most correct tries of a model", "items"],
            [[k, n] for k, n in enumerate(c["histogram_max_correct_tries"])],
        )
    problems = [(it["item_id"], p) for it in result["items"] for p in it["problems"]]
    if problems:
        lines += ["## Failed or unparsed tries", ""]
        lines += _md_table(["item", "problem"], problems)
    lines += ["Lists: `kept.txt`, `flagged.txt`; evaluate the filtered set with `scopebench run … "
              "--exclude flagged.txt`.", ""]  # fmt: skip
    return "\n".join(lines)


def _plot(stem: Path, counts: Mapping[str, Any], rule: ShortcutRule, n_models: int, n_tries: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from scopebench.report.plots import save_figure

    panels = [
        ("models answering correctly", counts["histogram_models_correct"], rule.min_models, "min-models")
    ]
    if n_tries > 1:
        panels.append(
            (
                "most correct tries of one model",
                counts["histogram_max_correct_tries"],
                rule.min_tries,
                "min-tries",
            )
        )
    fig, axes = plt.subplots(1, len(panels), figsize=(4.5 * len(panels), 3.4), squeeze=False)
    for ax, (label, hist, threshold, name) in zip(axes[0], panels, strict=True):
        xs = list(range(len(hist)))
        colors = ["#C44E52" if threshold is not None and x >= threshold else "#4C72B0" for x in xs]
        ax.bar(xs, hist, color=colors)
        ax.set_xticks(xs)
        ax.set_xlabel(label)
        ax.set_ylabel("items")
        if threshold is not None:
            ax.axvline(threshold - 0.5, color="k", ls="--", lw=1)
            ax.set_title(f"red: flagged by rule {name} (≥ {threshold})", fontsize=9)
        else:
            ax.set_title(f"rule {name} not used", fontsize=9)
    fig.tight_layout()
    save_figure(fig, stem)

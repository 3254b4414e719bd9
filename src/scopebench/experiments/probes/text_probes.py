"""Text probes: ``swap`` (PathMMU Fig. 5) and ``permutation`` (circular evaluation).

* ``swap`` — clean run vs a run whose questions are deranged among items (each keeps its options
  and answer), per subset, against chance (mean ``1/n_options``).
* ``permutation`` — the benchmark asked ``K`` times with its options rotated ``k = 0..K−1``
  positions; per task: accuracy when correct in *every* rotation, mean accuracy over rotations,
  consistency (the same option text chosen in every rotation), and position bias (how often each
  letter is chosen vs how often it is the answer).

See ``docs/probes.md``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from scopebench.errors import ScopebenchError
from scopebench.experiments.probes.base import (
    Condition,
    ProbeRun,
    accuracy_summary,
    compare_conditions,
    fmt_pct,
    n_options,
    paper_source,
    plot_grouped_bars,
    published_rows,
    report_header,
    run_condition,
    write_report,
)
from scopebench.items import LETTERS, Record
from scopebench.scoring.bootstrap import bootstrap_ci
from scopebench.scoring.intervals import proportion_ci
from scopebench.store import RunData

__all__ = ["circular_items", "permutation_probe", "position_bias", "swap_probe"]

CLEAN = Condition("clean")


def _mcq(run: RunData) -> list[Record]:
    return [r for r in run.records if r.kind == "mcq"]


def _cell(row: Mapping[str, Any], prefix: str) -> str:
    acc, lo, hi = (fmt_pct(row.get(f"{prefix}{k}")) for k in ("accuracy", "ci_low", "ci_high"))
    return f"{acc} [{lo}, {hi}]" if lo and hi else acc


# Swap ------------------------------------------------------------------------------------------


def swap_probe(probe: ProbeRun, scope: str = "task") -> dict[str, Any]:
    """Clean vs swapped questions (PathMMU Fig. 5): accuracy, drop and chance per subset.

    Args:
        probe: The base configuration and output folder.
        scope: ``task`` (questions swapped within benchmark and task) or ``all``.
    """
    swapped_cond = Condition(f"swap-{scope}", f"swap-questions:{scope}")
    clean_run = run_condition(probe, CLEAN)
    swap_run = run_condition(probe, swapped_cond)
    clean, swapped = _mcq(clean_run), _mcq(swap_run)

    def chance(records: Sequence[Record]) -> float:
        ns = [n_options(clean_run, r.item_id) for r in records]
        ns = [n for n in ns if n]
        return sum(1 / n for n in ns) / len(ns) if ns else float("nan")

    rows = compare_conditions(
        clean, swapped, seed=probe.seed, resamples=probe.resamples, labels=("clean", "swapped"), chance=chance
    )
    changed = sum(
        1
        for s in swap_run.items.values()
        if s["question"] != (s.get("metadata") or {}).get("original_question")
    )
    report = report_header(probe, "swap", [CLEAN, swapped_cond])
    report.update(
        scope=scope,
        n_items=len(swap_run.items),
        n_question_changed=changed,
        rows=rows,
        published=published_rows(probe.config.benchmark, "Fig. 5"),
    )
    _write_swap_report(probe, report, scope, changed, len(swap_run.items))
    return report


def _write_swap_report(
    probe: ProbeRun, report: dict[str, Any], scope: str, changed: int, n_items: int
) -> None:
    """The swap probe's display table, notes, report files and grouped bars."""
    rows = report["rows"]
    head = ["split", "group", "n", "clean", "swapped", "chance", "drop (clean − swapped)"]
    body = [
        [
            r["split"],
            r["group"],
            r["clean_n"],
            _cell(r, "clean_"),
            _cell(r, "swapped_"),
            fmt_pct(r["chance"]),
            f"{fmt_pct(r['drop'])} [{fmt_pct(r['drop_ci_low'])}, {fmt_pct(r['drop_ci_high'])}]",
        ]
        for r in rows
    ]
    report["table"] = {"head": head, "body": body}
    cols = ["split", "group", "clean_n", "clean_correct", "clean_accuracy", "clean_ci_low", "clean_ci_high",
            "swapped_n", "swapped_correct", "swapped_accuracy", "swapped_ci_low", "swapped_ci_high", "chance",
            "n_common", "drop", "drop_ci_low", "drop_ci_high"]  # fmt: skip
    notes = [
        f"questions deranged within each {'benchmark/task' if scope == 'task' else 'benchmark'} "
        f"(seed {probe.seed}); {changed} of {n_items} items got a different question text "
        "(items of a task that all ask the same question cannot change: use --scope all).",
        "chance = mean of 1/n_options over the group's items.",
        *(
            [
                "published: PathMMU Fig. 5 (right), text-only LLMs with and without swapped questions "
                "on the 1,600 text-guessable samples."
            ]
            if report["published"]
            else []
        ),
    ]
    report["files"] = [
        str(p)
        for p in write_report(
            probe.out,
            "swap",
            report,
            columns=cols,
            rows=rows,
            display=(head, body),
            title="Swapped questions" + paper_source(probe.config.benchmark, "Fig. 5"),
            notes=notes,
        )
    ]
    groups = [f"{r['split']}/{r['group']}" for r in rows]
    series = {
        lab: [
            {"accuracy": r[f"{lab}_accuracy"], "ci_low": r[f"{lab}_ci_low"], "ci_high": r[f"{lab}_ci_high"]}
            for r in rows
        ]
        for lab in ("clean", "swapped")
    }
    report["files"] += [
        str(p)
        for p in plot_grouped_bars(
            groups,
            series,
            probe.out / "swap",
            title="Swapped questions",
            # Per group: groups differ in their numbers of options, so one overall line would mislead.
            group_reference={"chance (1/#options)": [r["chance"] for r in rows]},
        )
    ]


# Permutation -----------------------------------------------------------------------------------


def circular_items(
    runs: Sequence[Sequence[Record]], n_opts: Mapping[str, int], k_max: int
) -> dict[str, dict[str, Any]]:
    """Per item: its records over the rotations that apply to it.

    Args:
        runs: ``runs[k]`` = the records of rotation ``k`` (``k = 0..K−1``).
        n_opts: Option count per item id.
        k_max: ``K``, the number of rotations run.

    Returns:
        ``{item_id: {"task", "rotations", "records"}}`` where ``rotations = min(K, n_options)``
        (rotation ``k`` of an ``n``-option item equals rotation ``k mod n``, so only the first ``n``
        count); items missing from any of their rotations are left out.
    """
    by_k = [{r.item_id: r for r in recs} for recs in runs]
    out: dict[str, dict[str, Any]] = {}
    for item_id, rec0 in by_k[0].items():
        n = n_opts.get(item_id, 0)
        if n == 0:
            continue
        rot = min(k_max, n)
        recs = [by_k[k].get(item_id) for k in range(rot)]
        if any(r is None for r in recs):
            continue
        out[item_id] = {"task": rec0.task, "rotations": rot, "n_options": n, "records": recs}
    return out


def _item_stats(entry: Mapping[str, Any]) -> tuple[bool, float, bool]:
    """(correct in every rotation, mean correctness, same option text chosen every time)."""
    recs: list[Record] = entry["records"]
    n = entry["n_options"]
    correct = [bool(r.correct) for r in recs]
    originals = {None if r.choice is None else (r.choice - k) % n for k, r in enumerate(recs)}
    consistent = len(originals) == 1 and None not in originals
    return all(correct), sum(correct) / len(correct), consistent


def position_bias(entries: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """How often each letter is chosen vs how often it is the answer, over (item, rotation) pairs.

    ``chosen_share`` is over pairs where an option was chosen; ``answer_share`` over all pairs.
    """
    chosen: dict[int, int] = defaultdict(int)
    answer: dict[int, int] = defaultdict(int)
    n_chosen = n_pairs = 0
    width = 0
    for e in entries:
        width = max(width, e["n_options"])
        for r in e["records"]:
            n_pairs += 1
            if r.answer_index is not None:
                answer[r.answer_index] += 1
            if r.choice is not None:
                chosen[r.choice] += 1
                n_chosen += 1
    return [
        {
            "letter": LETTERS[i],
            "chosen": chosen[i],
            "chosen_share": chosen[i] / n_chosen if n_chosen else float("nan"),
            "answer": answer[i],
            "answer_share": answer[i] / n_pairs if n_pairs else float("nan"),
        }
        for i in range(width)
    ]


def _circular_row(
    group: str, entries: Sequence[Mapping[str, Any]], seed: int, resamples: int
) -> dict[str, Any]:
    stats = [_item_stats(e) for e in entries]
    all_ok = [1.0 if s[0] else 0.0 for s in stats]
    means = [s[1] for s in stats]
    cons = [1.0 if s[2] else 0.0 for s in stats]
    clean = [e["records"][0] for e in entries]
    row: dict[str, Any] = {
        "group": group,
        "n_items": len(entries),
        "pairs": sum(e["rotations"] for e in entries),
    }
    s0 = accuracy_summary(clean, seed=seed, resamples=resamples)
    row.update(clean_accuracy=s0["accuracy"], clean_ci_low=s0["ci_low"], clean_ci_high=s0["ci_high"])
    for name, values in (("circular", all_ok), ("mean", means), ("consistency", cons)):
        # Circular accuracy and consistency are proportions (Wilson); the mean is a mean of
        # fractions, bootstrapped.
        iv = bootstrap_ci(values, seed=seed, resamples=resamples) if name == "mean" else proportion_ci(values)
        row[f"{name}_accuracy" if name != "consistency" else name] = (
            sum(values) / len(values) if values else float("nan")
        )
        row[f"{name}_ci_low"], row[f"{name}_ci_high"] = iv.low, iv.high
        row[f"{name}_ci_method"] = iv.method
    row["circular_correct"] = int(sum(all_ok))
    return row


def permutation_probe(probe: ProbeRun, rotations: int | None = None) -> dict[str, Any]:
    """Circular evaluation: ``K`` option rotations, per task and overall.

    Args:
        probe: The base configuration and output folder.
        rotations: ``K`` (default: the largest option count among the items).

    Returns:
        The report dict (also written to ``OUT/permutation.json``).
    """
    clean_run = run_condition(probe, CLEAN)
    n_opts = {i: n_options(clean_run, i) for i in clean_run.items}
    k_max = rotations if rotations is not None else max(n_opts.values(), default=1)
    if k_max < 1:
        raise ScopebenchError(f"--rotations must be at least 1, got {k_max}")
    conditions = [CLEAN] + [Condition(f"rotate-{k}", f"rotate:{k}") for k in range(1, k_max)]
    runs = [_mcq(clean_run)] + [_mcq(run_condition(probe, c)) for c in conditions[1:]]
    entries = circular_items(runs, n_opts, k_max)
    by_task: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for e in entries.values():
        by_task[e["task"]].append(e)
    kw = {"seed": probe.seed, "resamples": probe.resamples}
    rows = [_circular_row(f"task={t}", by_task[t], **kw) for t in sorted(by_task)]
    rows.append(_circular_row("overall", list(entries.values()), **kw))
    bias = {"overall": position_bias(list(entries.values()))}
    bias.update({f"task={t}": position_bias(by_task[t]) for t in sorted(by_task)})
    per_rotation = [{"rotation": k, **accuracy_summary(recs, **kw)} for k, recs in enumerate(runs)]
    report = report_header(probe, "permutation", conditions)
    report.update(rotations=k_max, rows=rows, position_bias=bias, per_rotation=per_rotation, published=[])
    _write_permutation_report(probe, report)
    return report


def _write_permutation_report(probe: ProbeRun, report: dict[str, Any]) -> None:
    """The permutation probe's display table, notes, report files, bars and position-bias plot."""
    rows, bias, k_max = report["rows"], report["position_bias"], report["rotations"]
    head = ["group", "items", "rotation 0", "mean over rotations", "correct in every rotation", "consistency"]
    body = [
        [
            r["group"],
            r["n_items"],
            _cell(r, "clean_"),
            _cell(r, "mean_"),
            _cell(r, "circular_"),
            _cell(
                {k.removeprefix("consistency_"): v for k, v in r.items()} | {"accuracy": r["consistency"]}, ""
            ),
        ]
        for r in rows
    ]
    report["table"] = {"head": head, "body": body}
    cols = ["group", "n_items", "pairs", "clean_accuracy", "clean_ci_low", "clean_ci_high", "mean_accuracy",
            "mean_ci_low", "mean_ci_high", "circular_correct", "circular_accuracy", "circular_ci_low",
            "circular_ci_high", "consistency", "consistency_ci_low", "consistency_ci_high"]  # fmt: skip
    bias_lines = [
        "position bias (overall): "
        + ", ".join(
            f"{b['letter']} chosen {fmt_pct(b['chosen_share'])}% vs answer {fmt_pct(b['answer_share'])}%"
            for b in bias["overall"]
        )
    ]
    notes = [
        f"K = {k_max} rotations (options moved k = 0..{k_max - 1} positions later, answer moved along); "
        "an item with n < K options counts its first n rotations only.",
        "'mean over rotations' averages each item's accuracy over its rotations, then over items; "
        "'consistency': the same option text chosen in every rotation.",
        *bias_lines,
    ]
    report["files"] = [
        str(p)
        for p in write_report(
            probe.out,
            "permutation",
            report,
            columns=cols,
            rows=rows,
            display=(head, body),
            title="Option permutation (circular evaluation)",
            notes=notes,
        )
    ]
    series = {
        label: [
            {"accuracy": r[f"{key}_accuracy"], "ci_low": r[f"{key}_ci_low"], "ci_high": r[f"{key}_ci_high"]}
            for r in rows
        ]
        for label, key in (
            ("rotation 0", "clean"),
            ("mean over rotations", "mean"),
            ("correct in every rotation", "circular"),
        )
    }
    report["files"] += [
        str(p)
        for p in plot_grouped_bars(
            [r["group"].removeprefix("task=") for r in rows],
            series,
            probe.out / "permutation",
            title="Circular evaluation",
        )
    ]
    report["files"] += [str(p) for p in _plot_bias(bias["overall"], probe.out / "position_bias")]


def _plot_bias(rows: Sequence[Mapping[str, Any]], stem: Any) -> list[Any]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from scopebench.report.plots import save_figure

    x = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(max(4.0, 0.8 * len(rows) + 2) + 1.6, 3.4))  # + legend
    ax.bar(x - 0.2, [100 * r["chosen_share"] for r in rows], 0.4, label="chosen")
    ax.bar(x + 0.2, [100 * r["answer_share"] for r in rows], 0.4, label="correct answer")
    ax.set_xticks(x, [r["letter"] for r in rows])
    ax.set_ylabel("share of (item, rotation) pairs (%)")
    ax.set_title("Position bias: letter chosen vs letter correct", fontsize=10)
    # Right of the axes: inside, it covered the bars of the first letters.
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    fig.tight_layout()
    return save_figure(fig, stem)

"""Writing a ``build generate`` output: the dataset with its ``generated`` column, records, ledger, card."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from scopebench.curate.balance import stats_markdown
from scopebench.curate.card import ledger_lines
from scopebench.curate.llm import Ledger
from scopebench.curate.output import (
    copy_sources,
    prepare_out,
    save_dataset,
    write_step_card,
    write_summary,
)
from scopebench.curate.report import StepResult
from scopebench.curate.schema import GENERATED_FIELDS

__all__ = ["dataset_entry", "write_generate_output"]


def dataset_entry(rec: dict[str, Any]) -> dict[str, Any]:
    """The ``generated`` column entry of one item record (provenance as text, answer as ``"0"``…)."""
    out = {f: rec.get(f) for f in GENERATED_FIELDS}
    out["model"] = json.dumps(rec.get("model"), sort_keys=True)
    if rec.get("answer_idx") is not None:
        out["answer_idx"] = str(rec["answer_idx"])
    return out


def write_generate_output(
    data: Path,
    out: Path,
    splits: dict[str, list[dict[str, Any]]],
    labels: list[str],
    records: list[dict[str, Any]],
    result: StepResult,
    ledger: Ledger,
) -> None:
    """Write the dataset (each row's valid items in ``generated``), ``generated.jsonl``, ``ledger.json``."""
    by_image: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for rec in records:
        if rec["status"] == "ok":
            by_image[rec["image_id"]].append(dataset_entry(rec))
    for rows in splits.values():
        for row in rows:
            row["generated"] = by_image.get(row["image_id"], [])
    prepare_out(out)
    save_dataset(splits, labels, out)
    copy_sources(data, out)
    with (out / "generated.jsonl").open("w", encoding="utf-8") as fh:
        for rec in records:
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
    ledger.write(out / "ledger.json")
    write_summary(out, result)
    items = sum(result.stats["items"].values())
    extra = [
        "## Generated items",
        "",
        f"{items} items and descriptions written by `{result.stats['model'].get('spec')}` "
        f"({result.kept} of {result.items_in} calls valid; failures by reason: "
        + (", ".join(f"{k} {v}" for k, v in sorted(result.dropped.items())) or "none")
        + "). Each item's prompt, raw reply, seed and attempt are in `generated.jsonl`, with every "
        "failure row.",
        "",
        *stats_markdown(result.stats.get("answer_positions", {}), "Answer balance of the generated items"),
        *ledger_lines(ledger),
    ]
    rows = [r for name, rs in splits.items() if name != "test_tiny" for r in rs]
    write_step_card(data, out, result, title=f"{data.name} + generated items", rows=rows, extra=extra)

"""``build export``: the benchmark as it is published, in two forms.

``OUT/hf`` uploads as it is (``huggingface_hub.upload_folder``): ``data/<split>-*.parquet`` (the
rows in the Hub's layout: their only copy, no Arrow cache beside them), ``README.md`` (the published
card, :func:`scopebench.curate.card.export_card_body`, with ``configs`` and ``dataset_info`` front
matter), ``provenance/`` (every step's ``build.json`` and ``problems.jsonl``) and the carried
``benchmark.json``, ``sources.json``, ``inputs.json`` and ``benchmark_stats.json``.
``datasets.load_dataset("OUT/hf")`` reads every split; ``scopebench run --bench ubench --data OUT/hf``
evaluates it.

``OUT/local`` is the ``local`` format (docs/local-format.md): ``data.jsonl`` holds one item per
question of every split but ``test_tiny`` (a ``split`` column), which ``scopebench run --bench local
--data OUT/local`` evaluates as it is; ``<split>.jsonl`` holds each split's items (``test_tiny``
too) and ``README.md`` maps every split to its file, so ``datasets.load_dataset("OUT/local")`` puts
every item in its own split; ``images/<image_id>.png`` the images.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from scopebench.curate.card import (
    HISTORY,
    card_data,
    checksum_lines,
    export_card_body,
    read_history,
    save_card,
)
from scopebench.curate.output import (
    STATS_FILE,
    copy_sources,
    local_items,
    prepare_out,
    read_benchmark,
    read_inputs,
    read_rows,
    read_sources,
    write_summary,
)
from scopebench.curate.report import StepResult
from scopebench.curate.schema import features

__all__ = ["export"]

STEP = "export"


def _panel_categories(data: Path) -> dict[str, str]:
    """image_id → panel category, when ``build filter`` categorised the panels (else empty)."""
    path = data / STATS_FILE
    stats = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    return dict((stats.get("categories") or {}).get("per_image") or {})


def _write_local(
    splits: dict[str, list[dict[str, Any]]],
    local: Path,
    result: StepResult,
    progress: bool,
    categories: dict[str, str],
) -> dict[str, list[dict[str, Any]]]:
    """Write the images and one JSONL file per split (and ``data.jsonl``); the items per split.

    Items of a build whose panels were categorised carry their image's ``panel_category``.
    """
    from tqdm import tqdm

    by_split: dict[str, list[dict[str, Any]]] = {name: [] for name in splits}
    todo = [(name, r) for name, rows in splits.items() for r in rows]
    for name, r in tqdm(todo, desc="export", unit="img", disable=not progress):
        cat = {"panel_category": categories[r["image_id"]]} if r["image_id"] in categories else {}
        items = [{**i, **cat} for i in local_items(r)]
        by_split[name] += items
        if name == "test_tiny":
            continue  # its images are test images, written below
        result.items_in += 1
        if not items:
            result.dropped["no_questions"] += 1
            continue
        (local / "images" / f"{r['image_id']}.png").write_bytes(r["image"]["bytes"])
    result.kept = result.items_in - sum(result.dropped.values())
    # Every file has every column, so `datasets` reads all splits with one schema.
    keys = list(dict.fromkeys(k for items in by_split.values() for i in items for k in i))
    by_split = {s: [{k: i.get(k) for k in keys} for i in items] for s, items in by_split.items()}
    main = [i for s, items in by_split.items() if s != "test_tiny" for i in items]
    files = {"data": main, **by_split}
    for stem, items in files.items():
        text = "".join(json.dumps(i, ensure_ascii=False) + "\n" for i in items)
        (local / f"{stem}.jsonl").write_text(text, encoding="utf-8")
    return by_split


def export(data: str | Path, out: str | Path, *, progress: bool = False) -> StepResult:
    """Export a split (or questions) output to ``out/hf`` and ``out/local`` (module docstring).

    Returns:
        Images in (``items_in``) and images with questions (``kept``); images without questions
        are counted as dropped (``no_questions``) and kept in the HF dataset. ``stats`` holds the
        items per split.
    """
    data, out = Path(data), Path(out)
    splits, labels = read_rows(data)
    prepare_out(out)
    local, hf = out / "local", out / "hf"
    (local / "images").mkdir(parents=True)
    result = StepResult(STEP, out=str(out))
    by_split = _write_local(splits, local, result, progress, _panel_categories(data))
    shutil.copytree(data / "data", hf / "data")  # the Parquet shards: the rows' one copy
    copy_sources(data, hf)
    main = sum(len(v) for s, v in by_split.items() if s != "test_tiny")
    result.stats = {"local_items": main, "test_tiny_items": len(by_split.get("test_tiny", [])),
                    "items_per_split": {s: len(v) for s, v in by_split.items()}}  # fmt: skip
    write_summary(out, result)
    shutil.copytree(out / HISTORY, hf / HISTORY, dirs_exist_ok=True)
    _write_cards(data, hf, local, splits, by_split, labels)
    return result


def _write_cards(
    data: Path,
    hf: Path,
    local: Path,
    splits: dict[str, list[dict[str, Any]]],
    by_split: dict[str, list[dict[str, Any]]],
    labels: list[str],
) -> None:
    """The published card, in both folders: the same body, each with its own files and checksums."""
    stats_file = data / STATS_FILE
    stats = json.loads(stats_file.read_text(encoding="utf-8")) if stats_file.is_file() else None
    benchmark = read_benchmark(data)
    body = export_card_body(
        benchmark=benchmark,
        history=read_history(hf),
        rows_by_split=splits,
        items_by_split=by_split,
        sources=read_sources(data),
        filter_stats=stats,
    )
    title = str(benchmark.get("name") or f"{data.name} export")
    licences = [r.get("license") for rows in splits.values() for r in rows]
    n_items = sum(len(v) for s, v in by_split.items() if s != "test_tiny")
    local_data = card_data(
        title=title, licences=licences, n=n_items, data_files={s: f"{s}.jsonl" for s in by_split}
    )
    # The local card first: the HF card checksums it with the rest of the local folder.
    save_card(
        local / "README.md",
        local_data,
        [*body, *checksum_lines(local, also=[hf], recorded=read_inputs(data))],
    )
    sizes = {s: len(rows) for s, rows in splits.items()}
    hf_data = card_data(
        title=title,
        licences=licences,
        n=sum(n for s, n in sizes.items() if s != "test_tiny"),
        data_files={s: f"data/{s}-*.parquet" for s in splits},
        features=features(labels),
        split_sizes=sizes,
    )
    save_card(
        hf / "README.md", hf_data, [*body, *checksum_lines(hf, also=[local], recorded=read_inputs(data))]
    )

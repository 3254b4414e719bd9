"""Dataset cards: the ``README.md`` of every build output and the published card of the export.

Every card starts with YAML front matter in the Hub's dataset card format, written through
``huggingface_hub.DatasetCardData`` with ``configs`` (each split's ``data_files``) and, for the
export, ``dataset_info`` (features, split sizes) written by ``datasets`` itself, so the folder uploads
as it is and ``datasets.load_dataset(folder)`` reads every split. The export's card is the whole
pipeline's (:func:`export_card_body`): it reads what every step left in ``provenance/``.

This module imports no step: the steps import it (so no step imports another).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scopebench import __version__
from scopebench.curate.balance import position_stats, stats_markdown
from scopebench.curate.report import BuildProblem, StepResult, read_problems
from scopebench.curate.schema import QUESTION_TASKS

if TYPE_CHECKING:
    from huggingface_hub import DatasetCardData

    from scopebench.curate.llm import Ledger

__all__ = [
    "HISTORY",
    "STEP_ORDER",
    "card_data",
    "export_card_body",
    "filter_sections",
    "hub_licence",
    "ledger_lines",
    "quota_table_markdown",
    "read_history",
    "save_card",
    "sha256_file",
    "size_category",
    "write_card",
]

#: The folder every output carries with each earlier step's ``build.json`` and ``problems.jsonl``.
HISTORY = "provenance"
#: Steps in the order they run (the card lists them so).
STEP_ORDER = ("ingest", "questions", "generate", "filter", "split", "export")
#: What each step's ``items_in`` / ``kept`` count.
_UNITS = {"ingest": "metadata rows", "questions": "images", "generate": "model calls", "filter": "questions",
          "split": "images", "export": "images"}  # fmt: skip
_SIZES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"),
          (10_000_000, "1M<n<10M"), (100_000_000, "10M<n<100M"))  # fmt: skip


def sha256_file(path: Path) -> str:
    """SHA-256 of a file, read in blocks."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def size_category(n: int) -> str:
    """The Hub's ``size_categories`` value for ``n`` examples."""
    return next((name for top, name in _SIZES if n < top), "n>1T")


def hub_licence(values: Iterable[Any]) -> str | list[str]:
    """The front matter's ``license``: the Hub's lower-case ids, a list when the sources differ.

    An SPDX id is the Hub's id in lower case (``CC-BY-4.0`` → ``cc-by-4.0``); an expression
    (``Apache-2.0 OR MIT``), a ``LicenseRef-…`` or an unreadable value has no Hub id and is ``other``
    (the card's source table gives each source's licence as its rows do).
    """
    ids = {_hub_id(str(v)) for v in values if v not in (None, "")} or {"other"}
    out = sorted(ids)
    return out[0] if len(out) == 1 else out


def _hub_id(spdx: str) -> str:
    low = spdx.strip().lower()
    return (
        low if re.fullmatch(r"[a-z0-9][a-z0-9.+-]*", low) and not low.startswith("licenseref-") else "other"
    )


def card_data(
    *,
    title: str,
    licences: Iterable[Any],
    n: int,
    data_files: Mapping[str, str],
    features: Any = None,
    split_sizes: Mapping[str, int] | None = None,
) -> DatasetCardData:
    """The front matter of a card (``configs`` checked by ``datasets``' own validation).

    Args:
        title: ``pretty_name``.
        licences: Every row's licence (see :func:`hub_licence`).
        n: Examples, for ``size_categories``.
        data_files: Split name → path or glob, relative to the card's folder.
        features: ``datasets.Features`` for ``dataset_info`` (left out when ``None``).
        split_sizes: Examples per split, for ``dataset_info``.
    """
    from datasets.info import DatasetInfo, DatasetInfosDict
    from datasets.splits import SplitDict, SplitInfo
    from datasets.utils.metadata import MetadataConfigs
    from huggingface_hub import DatasetCardData

    data = DatasetCardData(
        license=hub_licence(licences),
        language=["en"],
        task_categories=["visual-question-answering", "multiple-choice"],
        size_categories=[size_category(n)],
        pretty_name=title,
        tags=["microscopy", "biology", "scopebench"],
    )
    files = [{"split": s, "path": p} for s, p in data_files.items()]
    MetadataConfigs({"default": {"data_files": files}}).to_dataset_card_data(data)
    if features is not None:
        splits = SplitDict()
        for name, count in (split_sizes or {}).items():
            splits.add(SplitInfo(name=name, num_examples=count))
        DatasetInfosDict({"default": DatasetInfo(features=features, splits=splits)}).to_dataset_card_data(
            data
        )
    return data


def save_card(path: Path, data: DatasetCardData, body: Sequence[str]) -> None:
    """Write ``path`` as a ``huggingface_hub.DatasetCard``: front matter, then the Markdown body."""
    from huggingface_hub import DatasetCard

    DatasetCard(f"---\n{data.to_yaml()}\n---\n\n" + "\n".join(body) + "\n").save(path)


def _parquet_splits(out: Path) -> dict[str, str]:
    """Split → ``data/<split>-*.parquet`` for the shards in ``out/data`` (the Hub's layout)."""
    names = sorted({p.name.rsplit("-", 3)[0] for p in (out / "data").glob("*.parquet")})
    return {name: f"data/{name}-*.parquet" for name in names}


def _count_table(title: str, counts: Counter[str]) -> list[str]:
    lines = [f"### {title}", "", f"| {title.lower()} | images |", "|---|---:|"]
    lines += [f"| {k} | {v} |" for k, v in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    return [*lines, ""]


def _cell(text: Any) -> str:
    return str(text or "").replace("|", "\\|").replace("\n", " ")


def provenance_text() -> list[str]:
    """How images and hashes are defined (every card says it)."""
    return [
        "## Provenance",
        "",
        f"Built by scopebench {__version__} (`scopebench build`). Images are lossless PNG at their "
        "original resolution (`conversion` says what was done to each source file). `pixel_md5` is the "
        'MD5 of `"<dtype>:<shape>|"` followed by the pixel array\'s C-order bytes; `image_id` is the first '
        "128 bits of SHA-256 over source, relative path and `pixel_md5`; `dhash` is a 64-bit difference "
        "hash and `dup_group` names each image's near-duplicate group (all its members share a split).",
        "",
    ]


def checksum_lines(
    out: Path,
    inputs: Mapping[str, str] | None = None,
    also: Sequence[Path] = (),
    recorded: Mapping[str, Mapping[str, str]] | None = None,
) -> list[str]:
    """The checksum table: inputs by role, every file of ``out`` (not the card) and of ``also``.

    ``recorded`` holds checksums taken earlier (the ingest inputs, ``inputs.json``): role →
    ``{"file", "sha256"}``.
    """
    lines = ["## Checksums (SHA-256)", "", "| file | sha256 |", "|---|---|"]
    for role, rec in (recorded or {}).items():
        lines.append(f"| ingest input {role}: {rec['file']} | {rec['sha256']} |")
    for role, given in (inputs or {}).items():
        lines.append(f"| input {role}: {Path(given).name} | {sha256_file(Path(given))} |")
    for root in (out, *also):
        prefix = "" if root == out else f"../{root.name}/"
        for path in sorted(p for p in root.rglob("*") if p.is_file() and p != out / "README.md"):
            lines.append(f"| {prefix}{path.relative_to(root).as_posix()} | {sha256_file(path)} |")
    return [*lines, ""]


def _headline(result: StepResult) -> str:
    if result.step == "ingest":
        return f"{result.kept} images kept of {result.items_in} read; "
    return f"{result.step}: {result.kept} {_UNITS.get(result.step, 'items')} kept of {result.items_in}; "


def write_card(
    out: Path,
    *,
    title: str,
    description: str,
    rows: Iterable[Mapping[str, Any]],
    sources: Sequence[Mapping[str, Any]],
    result: StepResult,
    inputs: Mapping[str, str],
    extra: Sequence[str] = (),
) -> None:
    """Write the ``README.md`` of one step's output: counts, licences, provenance, checksums.

    Args:
        out: The output folder (every file in it is checksummed, except the card itself).
        title: The card's title.
        description: Its first paragraph.
        rows: The dataset's rows (one per image).
        sources: One mapping per source (name, license, citation, url).
        result: The step's summary (kept, dropped by reason).
        inputs: Input files by role (manifest, metadata tables…), checksummed in the card.
        extra: More Markdown sections.
    """
    rows = list(rows)
    lines = [
        f"# {title}",
        "",
        description or "A microscopy benchmark built with `scopebench build`.",
        "",
        _headline(result)
        + "kept out by reason: "
        + (", ".join(f"{k} {v}" for k, v in sorted(result.dropped.items())) or "none")
        + " (each one is listed in `problems.jsonl` with its source, row and field).",
        "",
        "## Counts",
        "",
    ]
    for col, name in (
        ("dataset", "Source"),
        ("modality", "Modality"),
        ("domain", "Domain"),
        ("stain", "Stain"),
    ):
        lines += _count_table(name, Counter(str(r.get(col)) for r in rows))
    lines += source_lines(rows, sources)
    lines += [*provenance_text(), *extra, *checksum_lines(out, inputs)]
    data = card_data(
        title=title, licences=(r.get("license") for r in rows), n=len(rows), data_files=_parquet_splits(out)
    )
    save_card(out / "README.md", data, lines)


def source_lines(rows: Sequence[Mapping[str, Any]], sources: Sequence[Mapping[str, Any]]) -> list[str]:
    """Sources with their licences as the rows give them (images per licence), citation and URL."""
    per: dict[str, Counter[str]] = defaultdict(Counter)
    for r in rows:
        per[str(r.get("dataset"))][str(r.get("license") or "none")] += 1
    lines = [
        "## Sources and licences",
        "",
        "| source | licence (images) | citation | url |",
        "|---|---|---|---|",
    ]
    named = {str(s["name"]): s for s in sources}
    for name in sorted(set(per) | set(named)):
        s = named.get(name, {})
        lic = ", ".join(f"{k} ({v})" for k, v in sorted(per[name].items())) or _cell(s.get("license"))
        lines.append(f"| {name} | {lic} | {_cell(s.get('citation'))} | {_cell(s.get('url'))} |")
    return [*lines, ""]


def coverage_lines(cells: Counter[tuple[str, str]]) -> list[str]:
    """Questions per taxonomy cell (modality × domain) and task, as a Markdown table."""
    tasks = {t for _, t in cells}
    order = [t for t in QUESTION_TASKS if t in tasks] + sorted(tasks - set(QUESTION_TASKS))
    lines = ["## Coverage (questions per modality × domain and task)", ""]
    lines += ["| modality × domain | " + " | ".join(order) + " |", "|---|" + "---:|" * len(order)]
    for cell in sorted({c for c, _ in cells}):
        lines.append(f"| {cell} | " + " | ".join(str(cells[(cell, t)]) for t in order) + " |")
    return [*lines, ""]


def ledger_lines(ledger: Ledger | Mapping[str, Any]) -> list[str]:
    """The generation cost table (per task or kind of call) of a ledger or its ``to_json()``."""
    steps = ledger.to_json()["steps"] if hasattr(ledger, "to_json") else ledger.get("steps", {})
    head = "| task | requests sent | from the cache | failed calls | input tokens | output tokens | price |"
    lines = ["## Generation cost", "", head, "|---|---:|---:|---:|---:|---:|---:|"]
    for name, e in sorted(steps.items()):
        price = "" if e.get("price") is None else f"{e['price']:.4f}"
        cells = (name, e["requests"], e["cached"], e["failed"], e["input_tokens"], e["output_tokens"], price)
        lines.append("| " + " | ".join(map(str, cells)) + " |")
    return [*lines, ""]


def quota_table_markdown(table: Sequence[Mapping[str, Any]]) -> list[str]:
    """The coverage-quota table as Markdown lines."""
    lines = [
        "| modality | domain | task | target | available | kept | dropped (quota) | shortfall |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in table:
        target = "-" if r["target"] is None else str(r["target"])
        lines.append(
            f"| {r['modality']} | {r['domain']} | {r['task']} | {target} | {r['available']} | "
            f"{r['kept']} | {r['dropped']} | {r['shortfall']} |"
        )
    return lines


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def filter_sections(stats: Mapping[str, Any]) -> list[str]:
    """Markdown sections for the filter statistics (blind accuracies, RefineBot, figures, quotas)."""
    lines: list[str] = []
    sc = stats.get("shortcut")
    if sc:
        lines += [
            "## Blind accuracies (text-only shortcut gate)",
            "",
            f"Models: {', '.join(sc['models'])}; {sc['tries']} tries each (seeds {sc['seeds']}). "
            f"Rule: {sc['rule']}. Accuracy = correct tries ÷ (questions × models × tries); an "
            "unparsed or failed answer counts as not correct.",
            "",
            "| test | questions entering | accuracy entering | accuracy of the published questions "
            "| chance |",
            "|---|---:|---:|---:|---:|",
        ]
        for name, key in (
            ("text only (question + options, no image)", "text_only"),
            ("choices only (options, no question, no image)", "choices_only"),
        ):
            acc = sc.get(key)
            if acc:
                lines.append(
                    f"| {name} | {sc['questions_entering']} | {_pct(acc['entering'])} | "
                    f"{_pct(acc['kept'])} | {_pct(sc['chance_entering'])} |"
                )
        lines.append("")
    ref = stats.get("refine")
    if ref:
        lines += [
            "## RefineBot",
            "",
            f"Rewriters {', '.join(ref['rewriters'])}; testers {', '.join(ref['testers'])}; equivalence "
            f"judges {', '.join(ref['judges'])}; up to {ref['rounds']} rounds; seeds {ref['seeds']}. "
            f"{ref['rule']}.",
            "",
            "| code | questions |",
            "|---|---:|",
        ]
        lines += [f"| {c} | {n} |" for c, n in ref["codes"].items()] + [""]
    fig = stats.get("figures")
    if fig:
        lines += [
            "## Figure gate",
            "",
            f"Panels counted with `{fig['method']}`; figures with fewer than {fig['min_panels']} panels "
            f"dropped: {fig['dropped_images']} of {fig['images']}. Panels per figure: "
            f"{fig['panels_histogram']}.",
            "",
        ]
    lines += _caption_section(stats.get("caption")) + _category_section(stats.get("categories"))
    q = stats.get("quotas")
    if q:
        lines += [
            "## Coverage quotas (modality × domain × task)",
            "",
            f"Seeded choice (seed {stats.get('seed')}) of the questions a cell keeps over its target.",
            "",
            *quota_table_markdown(q["table"]),
            "",
        ]
    return lines


def _caption_section(cg: Mapping[str, Any] | None) -> list[str]:
    """The caption gate (SPUR): what it dropped, blind accuracy with and without the caption."""
    if not cg:
        return []
    w, wo = cg["accuracy_with_caption"], cg["accuracy_without_caption"]
    return [
        "## Caption gate (questions answerable from the caption)",
        "",
        f"Models: {', '.join(cg['models'])}; {cg['tries']} tries each (seeds {cg['seeds']}). "
        f"Rule: {cg['rule']}. {cg['dropped']} of {cg['with_caption']} captioned questions dropped "
        f"(`caption_answers`); {cg['without_caption']} questions had no caption and were kept.",
        "",
        "| blind test (no image) | accuracy entering | accuracy of the published questions |",
        "|---|---:|---:|",
        f"| question + options | {_pct(wo['entering'])} | {_pct(wo['kept'])} |",
        f"| caption + question + options | {_pct(w['entering'])} | {_pct(w['kept'])} |",
        "",
    ]


def _category_section(cat: Mapping[str, Any] | None) -> list[str]:
    """SPUR's panel categories: images per category."""
    if not cat:
        return []
    lines = ["## Panel categories (SPUR)", "", f"One category per image, from {cat['method']}.", ""]
    lines += ["| category | images |", "|---|---:|"]
    lines += [f"| {name} | {n} |" for name, n in cat["counts"].items()]
    return [*lines, ""]


def read_history(folder: Path) -> list[tuple[StepResult, list[BuildProblem]]]:
    """Every earlier step's summary and problems as carried in ``folder/provenance``, in step order."""
    found = []
    for step in STEP_ORDER:
        summary = folder / HISTORY / f"{step}.build.json"
        if summary.is_file():
            problems = read_problems(folder / HISTORY / f"{step}.problems.jsonl")
            raw = json.loads(summary.read_text(encoding="utf-8"))
            found.append((StepResult.from_json(raw, problems), problems))
    return found


def pipeline_lines(history: Sequence[tuple[StepResult, list[BuildProblem]]]) -> list[str]:
    """One row per step: what it read, kept and kept out by reason, and its problems."""
    lines = [
        "## What every step read, kept and kept out",
        "",
        "Every problem is listed, with its source, row and field, in `provenance/<step>.problems.jsonl`.",
        "",
        "| step | counts | in | kept | kept out (reason: n) | errors | warnings |",
        "|---|---|---:|---:|---|---:|---:|",
    ]
    for res, problems in history:
        errors = sum(p.severity == "error" for p in problems)
        dropped = ", ".join(f"{k}: {v}" for k, v in sorted(res.dropped.items())) or "-"
        lines.append(
            f"| {res.step} | {_UNITS.get(res.step, 'items')} | {res.items_in} | {res.kept} | {dropped} "
            f"| {errors} | {len(problems) - errors} |"
        )
    return [*lines, ""]


def split_lines(items_by_split: Mapping[str, Sequence[Mapping[str, Any]]],
                rows_by_split: Mapping[str, Sequence[Mapping[str, Any]]],
                warnings: Sequence[BuildProblem]) -> list[str]:  # fmt: skip
    """Images and questions per split and source, and the split step's warnings about sources."""
    lines = ["## Splits", "", "| split | source | images | questions |", "|---|---|---:|---:|"]
    for name, rows in rows_by_split.items():
        images = Counter(str(r.get("dataset")) for r in rows)
        questions = Counter(str(i.get("subset")) for i in items_by_split.get(name, []))
        for source in sorted(set(images) | set(questions)):
            lines.append(f"| {name} | {source} | {images[source]} | {questions[source]} |")
    lines.append("")
    lines += [f"**Warning:** {p.message}" for p in warnings]
    return [*lines, ""] if warnings else lines


def balance_lines(items: Sequence[Mapping[str, Any]]) -> list[str]:
    """Answer balance per task over ``items`` (local-format items)."""
    by_task: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for it in items:
        by_task[str(it["task"])].append(it)
    per = {
        t: position_stats([int(i["answer"]) for i in v], [len(i["choices"]) for i in v])
        for t, v in by_task.items()
    }
    return stats_markdown(per)


def export_card_body(
    *,
    benchmark: Mapping[str, Any],
    history: Sequence[tuple[StepResult, list[BuildProblem]]],
    rows_by_split: Mapping[str, Sequence[Mapping[str, Any]]],
    items_by_split: Mapping[str, Sequence[Mapping[str, Any]]],
    sources: Sequence[Mapping[str, Any]],
    filter_stats: Mapping[str, Any] | None,
) -> list[str]:
    """The published card's Markdown (checksums excepted): the whole pipeline, step by step.

    Args:
        benchmark: The manifest's ``name`` and ``description``.
        history: Every step's summary and problems, export included (:func:`read_history`).
        rows_by_split: The dataset's rows per split (``test_tiny`` included).
        items_by_split: The exported questions per split.
        sources: The manifest's sources (citation, url).
        filter_stats: The filter step's published statistics, when it ran.
    """
    steps = {res.step: res for res, _ in history}
    main = [r for name, rows in rows_by_split.items() if name != "test_tiny" for r in rows]
    items = [i for name, its in items_by_split.items() if name != "test_tiny" for i in its]
    title = benchmark.get("name") or "A microscopy benchmark"
    about = benchmark.get("description") or "A microscopy benchmark built with `scopebench build`."
    lines = [f"# {title}", "", about, ""]
    ing = steps.get("ingest")
    if ing is not None:
        refused = ", ".join(f"{k} {v}" for k, v in sorted(ing.dropped.items())) or "none"
        lines += [
            f"{ing.items_in} images read, {ing.kept} kept, {ing.items_in - ing.kept} refused (by reason: "
            f"{refused}); {len(main)} images and {len(items)} questions in the benchmark.",
            "",
        ]
    lines += pipeline_lines(history)
    lines += source_lines(main, sources)
    left_out = [p for res, ps in history if res.step == "split" for p in ps if p.kind == "source_left_out"]
    lines += split_lines(items_by_split, rows_by_split, left_out)
    lines += balance_lines(items)
    if "split" in steps:
        lines += [f"Answers placed by `build split` with seed {steps['split'].stats.get('seed')}; every "
                  "split's letters per task are in `provenance/split.build.json` "
                  "(`answer_positions_by_split`).", ""]  # fmt: skip
    cells: Counter[tuple[str, str]] = Counter(
        (f"{i.get('modality')} × {i.get('domain')}", str(i["task"])) for i in items
    )
    lines += coverage_lines(cells)
    if "filter" in steps:
        f = steps["filter"]
        dropped = ", ".join(f"{k} {v}" for k, v in sorted(f.dropped.items())) or "none"
        lines += [
            "## Quality gates",
            "",
            f"{f.items_in} questions entered the gates, {f.kept} kept; dropped by reason: {dropped} "
            "(every decision is in the filter step's `gates/*.jsonl`).",
            "",
        ]
        lines += filter_sections(filter_stats or {})
    gen = steps.get("generate")
    if gen is not None:
        spec = (gen.stats.get("model") or {}).get("spec")
        lines += [
            "## Generated items",
            "",
            f"{gen.kept} of {gen.items_in} model calls gave a valid reply (model `{spec}`, seed "
            f"{gen.stats.get('seed')}).",
            "",
        ]
        lines += ledger_lines(gen.stats.get("ledger") or {})
    lines += ["## Counts", ""]
    for col, name in (
        ("dataset", "Source"),
        ("modality", "Modality"),
        ("domain", "Domain"),
        ("stain", "Stain"),
    ):
        lines += _count_table(name, Counter(str(r.get(col)) for r in main))
    return [*lines, *provenance_text()]

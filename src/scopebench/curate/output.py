"""Writing a build dataset: ``save_to_disk`` + Parquet shards + ``README.md`` dataset card.

Layout of an output folder::

    dataset_dict.json, <split>/…     datasets.DatasetDict.save_to_disk (what --data points at)
    data/<split>-0000i-of-0000n.parquet  the same rows as Parquet shards (the Hub's layout)
    README.md                         the dataset card
    problems.jsonl                    every problem the step found
    build.json                        the step's summary (counts, drops, statistics)
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scopebench.curate.card import HISTORY, sha256_file, write_card
from scopebench.curate.report import MARKER, StepResult, write_problems
from scopebench.curate.schema import BUILD_COLUMNS, UBENCH_COLUMNS, features
from scopebench.errors import DataFormatError, NoItemsError

if TYPE_CHECKING:
    from scopebench.curate.ingestion.step import IngestedImage
    from scopebench.curate.manifest import Manifest
    from scopebench.curate.taxonomy import Taxonomy

__all__ = [
    "BENCHMARK_FILE",
    "MARKER",
    "STATS_FILE",
    "copy_sources",
    "local_items",
    "prepare_out",
    "read_benchmark",
    "read_inputs",
    "read_rows",
    "read_sources",
    "save_dataset",
    "save_split_stream",
    "write_dataset",
    "write_step_card",
]

_SHARD_BYTES = 500 * 1024 * 1024
#: Rows encoded into one Arrow table and written to both layouts at a time (``datasets`` flushes an
#: image dataset every 100 rows too).
_BATCH_ROWS = 100


def prepare_out(out: Path) -> None:
    """Empty ``out`` for a new output; refuse a non-empty folder that is not a build output.

    Raises:
        DataFormatError: When ``out`` holds files and no ``build.json``.
    """
    if out.exists() and any(out.iterdir()):
        if not (out / MARKER).is_file():
            raise DataFormatError(
                f"{out} is not empty and is not a scopebench build output; choose an empty or new folder"
            )
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)


def save_dataset(splits: Mapping[str, list[dict[str, Any]]], label_names: list[str], out: Path) -> None:
    """Save rows per split with the build features: ``save_to_disk`` and Parquet shards.

    Each split goes through :func:`save_split_stream` (one encoding of each row, into both layouts),
    so the files depend on the rows only and a re-run with the same rows writes the same bytes.
    """
    for name, rows in splits.items():
        size = sum(len((r.get("image") or {}).get("bytes") or b"") for r in rows)
        save_split_stream(name, rows, label_names, out, n_rows=len(rows), total_bytes=size)
    (out / "dataset_dict.json").write_text(json.dumps({"splits": list(splits)}), encoding="utf-8")


def _contiguous(n_rows: int, n_shards: int) -> list[int]:
    """Shard boundaries as ``Dataset.shard(n, i, contiguous=True)`` draws them (the first get one more)."""
    div, mod = divmod(n_rows, n_shards)
    return [div * i + min(i, mod) for i in range(n_shards + 1)]


def save_split_stream(
    name: str,
    rows: Iterable[Mapping[str, Any]],
    label_names: list[str],
    out: Path,
    *,
    n_rows: int,
    total_bytes: int,
) -> str:
    """Save one split from an iterator of rows in one pass, a bounded batch in memory at a time.

    Each row is encoded once and written to both layouts as it comes — the ``save_to_disk`` Arrow
    shards (``<split>/data-0000i-of-0000n.arrow`` with its ``state.json`` and ``dataset_info.json``,
    as ``Dataset.save_to_disk`` writes them) and the Parquet shards (``data/``) — through ``datasets``'
    ``ArrowWriter`` and ``ParquetWriter``, which flush every 100 rows of an image dataset. Nothing is
    read back, so memory (resident file pages included) does not grow with the split.

    Args:
        name: The split.
        rows: Its rows, each with every feature column (``image`` as ``{"bytes", "path"}``).
        label_names: The ``label`` classes.
        out: The (prepared) output folder.
        n_rows: How many rows ``rows`` yields.
        total_bytes: The images' total size, which sets the number of shards (≤ 500 MB each).

    Returns:
        The SHA-256 of the rows written; its first 16 digits are the dataset's fingerprint, so the
        saved files depend on the rows only.
    """
    import pyarrow as pa
    from datasets import DatasetInfo
    from datasets.arrow_writer import ArrowWriter, ParquetWriter
    from datasets.utils.py_utils import asdict  # features as save_to_disk writes them

    feats = features(label_names)
    n = max(1, min(n_rows, math.ceil(total_bytes / _SHARD_BYTES)))
    bounds = _contiguous(n_rows, n)
    (out / name).mkdir(parents=True, exist_ok=True)
    (out / "data").mkdir(exist_ok=True)
    digest = hashlib.sha256()
    source = iter(rows)
    for k in range(n):
        arrow = ArrowWriter(features=feats, path=str(out / name / f"data-{k:05d}-of-{n:05d}.arrow"))
        parquet = ParquetWriter(features=feats, path=str(out / "data" / f"{name}-{k:05d}-of-{n:05d}.parquet"))
        with arrow, parquet:
            batch: list[dict[str, Any]] = []
            for left in range(bounds[k + 1] - bounds[k], 0, -1):
                row = next(source)
                meta = {key: v for key, v in row.items() if key != "image"}
                digest.update(json.dumps(meta, sort_keys=True, default=str).encode())
                digest.update((row.get("image") or {}).get("bytes") or b"")
                batch.append(feats.encode_example({c: row.get(c) for c in feats}))
                if len(batch) == _BATCH_ROWS or left == 1:
                    # One Arrow table per batch, written to both layouts (encoded once, not twice).
                    table = pa.Table.from_pylist(batch, schema=feats.arrow_schema)
                    arrow.write_table(table)
                    parquet.write_table(table)
                    batch.clear()
            arrow.finalize()
            parquet.finalize()
    state: dict[str, Any] = {
        "_data_files": [{"filename": f"data-{k:05d}-of-{n:05d}.arrow"} for k in range(n)],
        "_fingerprint": digest.hexdigest()[:16],
        "_format_columns": None,
        "_format_kwargs": {},
        "_format_type": None,
        "_output_all_columns": False,
        "_split": None,
    }
    (out / name / "state.json").write_text(json.dumps(state, indent=2, sort_keys=True), encoding="utf-8")
    info = asdict(DatasetInfo(features=feats))
    info_text = json.dumps({key: info[key] for key in sorted(info)}, indent=2)  # as save_to_disk sorts it
    (out / name / "dataset_info.json").write_text(info_text, encoding="utf-8")
    return digest.hexdigest()


def read_rows(folder: Path) -> tuple[dict[str, list[dict[str, Any]]], list[str]]:
    """The rows per split of a build output (images as PNG bytes) and its class names.

    Raises:
        DataFormatError: When ``folder`` is not a build output.
    """
    from datasets import ClassLabel, Image, load_from_disk

    if not (folder / MARKER).is_file() or not (folder / "dataset_dict.json").is_file():
        raise DataFormatError(f"{folder} is not a scopebench build output (no {MARKER}); run the step before")
    dd = load_from_disk(str(folder))
    label = dd[next(iter(dd))].features["label"]
    names = list(label.names) if isinstance(label, ClassLabel) else []
    out = {}
    for name, ds in dd.items():
        # cast_column fails on an empty dataset (datasets concatenates zero tables).
        out[name] = list(ds.cast_column("image", Image(decode=False))) if len(ds) else []
    return out, names


#: The statistics a card publishes, carried from the filter output to the export.
STATS_FILE = "benchmark_stats.json"
#: What the benchmark is called and what it is (the manifest's ``name`` and ``description``).
BENCHMARK_FILE = "benchmark.json"
#: Files each step carries to the next: the benchmark's name, the sources (licence, citation, url),
#: the checksums of the ingest inputs (manifest, metadata tables) and the filter step's published
#: statistics; and the folder of every earlier step's ``build.json`` and ``problems.jsonl``.
CARRIED = (BENCHMARK_FILE, "sources.json", "inputs.json", STATS_FILE)


def copy_sources(data: Path, out: Path) -> None:
    """Carry :data:`CARRIED` files and the :data:`~scopebench.curate.card.HISTORY` folder onward."""
    for name in CARRIED:
        if (data / name).is_file():
            shutil.copyfile(data / name, out / name)
    if (data / HISTORY).is_dir():
        shutil.copytree(data / HISTORY, out / HISTORY, dirs_exist_ok=True)


def read_benchmark(folder: Path) -> dict[str, Any]:
    """The benchmark's ``name`` and ``description`` as ingest recorded them (empty when none)."""
    path = folder / BENCHMARK_FILE
    return dict(json.loads(path.read_text(encoding="utf-8"))) if path.is_file() else {}


def read_inputs(folder: Path) -> dict[str, dict[str, str]]:
    """The ingest inputs recorded in a build output: role → ``{"file", "sha256"}`` (empty when none)."""
    path = folder / "inputs.json"
    return dict(json.loads(path.read_text(encoding="utf-8"))) if path.is_file() else {}


def read_sources(folder: Path) -> list[dict[str, Any]]:
    """The sources recorded in a build output (empty when none)."""
    path = folder / "sources.json"
    return list(json.loads(path.read_text(encoding="utf-8"))) if path.is_file() else []


def write_summary(out: Path, result: StepResult) -> None:
    """Write ``problems.jsonl`` and ``build.json``, and a copy of both in ``provenance/``.

    ``provenance/<step>.build.json`` and ``provenance/<step>.problems.jsonl`` travel with every
    later output (:func:`copy_sources`), so the exported card is the whole pipeline's.
    """
    write_problems(result.problems, out / "problems.jsonl")
    summary = json.dumps(result.to_json(), indent=2)
    (out / MARKER).write_text(summary, encoding="utf-8")
    (out / HISTORY).mkdir(exist_ok=True)
    (out / HISTORY / f"{result.step}.build.json").write_text(summary, encoding="utf-8")
    write_problems(result.problems, out / HISTORY / f"{result.step}.problems.jsonl")


def _ingest_rows(images: list[IngestedImage], labels: list[str]) -> Iterator[dict[str, Any]]:
    """The dataset rows of ``images``, each PNG read from its store file only when its row is due."""
    for img in images:
        yield {**_ingest_metadata(img, labels), "image": _image_of(img)}


def _counted(rows: Iterable[dict[str, Any]], tick: Any) -> Iterator[dict[str, Any]]:
    for row in rows:
        yield row
        tick()


def _image_of(img: IngestedImage) -> dict[str, Any]:
    return {"bytes": img.png.read_bytes(), "path": f"{img.source}/{img.record['source_path']}.png"}


def _ingest_metadata(img: IngestedImage, labels: list[str]) -> dict[str, Any]:
    rec = img.record
    row = {c: rec.get(c) for c in (*UBENCH_COLUMNS, *BUILD_COLUMNS) if c != "image"}
    row["label"] = labels.index(rec["label_name"]) if rec.get("label_name") else -1
    row["split"] = "test"
    row["questions"] = row["captions"] = None
    return row


def write_dataset(
    images: list[IngestedImage],
    out: Path,
    manifest: Manifest,
    tax: Taxonomy,
    result: StepResult,
    inputs: Mapping[str, str],
    *,
    progress: bool = False,
) -> None:
    """Write the ingest output: one ``test`` split of every kept image, with its card.

    Images stream from the conversion store into the Arrow and Parquet files, so memory holds one
    batch of images whatever the number of rows.

    Raises:
        NoItemsError: When no image passed the checks (``problems.jsonl`` is still written).
    """
    from tqdm import tqdm

    prepare_out(out)
    if not images:
        # datasets cannot load a saved dataset of zero rows back, so an empty build stops here.
        write_summary(out, result)
        first = "\n".join(f"  {p}" for p in result.problems[:5])
        raise NoItemsError(
            f"no image of {result.items_in} passed the checks (kept out: "
            + ", ".join(f"{k} {v}" for k, v in sorted(result.dropped.items()))
            + f"); the first problems:\n{first}\nevery one is in {out / 'problems.jsonl'}"
        )
    labels = sorted({str(i.record["label_name"]) for i in images if i.record.get("label_name")})
    total = sum(int(i.info.get("png_bytes") or 0) for i in images)
    with tqdm(total=len(images), desc="ingest: write", unit="img", disable=not progress) as bar:
        rows = _counted(_ingest_rows(images, labels), bar.update)
        save_split_stream("test", rows, labels, out, n_rows=len(images), total_bytes=total)
    (out / "dataset_dict.json").write_text(json.dumps({"splits": ["test"]}), encoding="utf-8")
    sources = [s.model_dump(exclude={"defaults", "columns"}) for s in manifest.sources]
    (out / "sources.json").write_text(json.dumps(sources, indent=2), encoding="utf-8")
    # The checksums of the inputs travel to the exported card (the manifest's above all).
    recorded = {role: {"file": Path(p).name, "sha256": sha256_file(Path(p))} for role, p in inputs.items()}
    (out / "inputs.json").write_text(json.dumps(recorded, indent=2), encoding="utf-8")
    about = {"name": manifest.name, "description": manifest.description}
    (out / BENCHMARK_FILE).write_text(json.dumps(about, indent=2), encoding="utf-8")
    result.stats.update(taxonomy_sha256=tax.fingerprint(), label_names=labels)
    write_summary(out, result)
    write_card(
        out,
        title=manifest.name,
        description=manifest.description,
        rows=(_ingest_metadata(img, labels) for img in images),
        sources=sources,
        result=result,
        inputs=inputs,
    )


_META = ("image_id", "dup_group", "label_name", "modality", "submodality", "domain", "subdomain", "stain",
         "ncbitaxon_id", "license", "source_path", "pixel_md5")  # fmt: skip


def local_items(row: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``local``-format items (docs/local-format.md) of one dataset row.

    One per question, in task order, then one per generated multiple-choice item (``build
    generate``) with its explanation and provenance.
    """
    items = []
    captions = row.get("captions") or {}
    common = {"image": f"images/{row['image_id']}.png", "subset": row["dataset"], "split": row["split"]}
    for task, q in (row.get("questions") or {}).items():
        if not q:
            continue
        item = {"id": f"{row['image_id']}-{task}", "question": q["question"], "choices": list(q["options"]),
                "answer": int(q["answer_idx"]), "task": task, **common, "question_id": q["id"]}  # fmt: skip
        cap = captions.get(f"{task}_0")
        if cap and len(cap["options"]) == len(q["options"]):
            item["captions"] = list(cap["options"])
        item.update({k: row.get(k) for k in _META if row.get(k) is not None})
        items.append(item)
    for g in row.get("generated") or []:
        if g.get("kind") != "mcq":
            continue  # descriptions are inputs of other items, not questions
        item = {"id": g["id"], "question": g["question"], "choices": list(g["options"]),
                "answer": int(g["answer_idx"]), "task": g["task"], **common, "question_id": g["id"],
                # PathMMU keeps an explanation per item; the provenance says who wrote it and how.
                "explanation": g.get("explanation") or "", "generated_by": g.get("model"),
                "generation_seed": g.get("seed"), "generation_attempt": g.get("attempt")}  # fmt: skip
        item.update({k: row.get(k) for k in _META if row.get(k) is not None})
        items.append(item)
    return items


def write_step_card(
    data: Path,
    out: Path,
    result: StepResult,
    *,
    title: str,
    rows: Iterable[Mapping[str, Any]],
    extra: Sequence[str] = (),
    role: str = "previous build.json",
) -> None:
    """The card of a step's output that continues ``data``: its sources, and the previous summary as input."""
    write_card(
        out,
        title=title,
        description="",
        rows=rows,
        sources=read_sources(out),
        result=result,
        inputs={role: str(data / "build.json")},
        extra=extra,
    )

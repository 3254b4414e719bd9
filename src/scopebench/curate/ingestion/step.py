"""``build ingest``: sources (images + metadata tables) → one standardised μ-Bench-format dataset.

Every row either becomes a dataset row or is kept out with a :class:`BuildProblem` naming its
source, row and field; ``StepResult.dropped`` counts the rows kept out by reason, so
``items_in == kept + sum(dropped)`` always holds.

The step runs in four passes, none of which holds more than one image per worker in memory (on
Ray, the driver also holds the files of the batches in flight, a bounded number; :mod:`.cluster`):

1. every metadata row is validated (no image is read);
2. every distinct image file is converted on every core (:mod:`.convert`), or as Ray tasks on a
   cluster (:mod:`.cluster`), into the content-keyed :class:`~.cache.ConversionStore` (a
   temporary one when no cache is given);
3. exact repeats and near-duplicates are found from the hashes, near-duplicates confirmed on the
   pixels (:mod:`.near_duplicates`) — on the grids the workers stored beside the PNGs, so the PNG
   of an image is decoded here only for a crop search or a cache entry without a grid;
4. the dataset is written in bounded batches, each PNG read back from the store
   (:func:`~scopebench.curate.output.write_dataset`).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import ValidationError

from scopebench.curate.ingestion.cache import ConversionStore, FileHashes, sha256_file
from scopebench.curate.ingestion.cluster import convert_on_ray
from scopebench.curate.ingestion.convert import Converted, Job, convert_all
from scopebench.curate.ingestion.images import DEFAULT_MAX_PIXELS, image_id
from scopebench.curate.ingestion.near_duplicates import GRID_SIDE, find_near_duplicates
from scopebench.curate.manifest import Manifest, Record, Source, load_manifest, read_table
from scopebench.curate.output import write_dataset
from scopebench.curate.report import BuildProblem, StepResult
from scopebench.curate.schema import BUILD_COLUMNS, UBENCH_COLUMNS
from scopebench.curate.settings import IngestConfig
from scopebench.curate.taxonomy import Taxonomy, load_taxonomy
from scopebench.errors import UsageError

if TYPE_CHECKING:
    from scopebench.config import EngineConfig

__all__ = ["IngestConfig", "IngestResult", "IngestedImage", "ingest", "sha256_file"]

STEP = "ingest"


@dataclass(slots=True)
class IngestedImage:
    """One image that passed every check, with its normalised metadata and where its PNG is.

    Attributes:
        source: The manifest source.
        row: The metadata row (0-based).
        record: The dataset row's values (without the image).
        png: The converted PNG in the conversion store.
        info: The conversion's hashes and facts.
    """

    source: str
    row: int
    record: dict[str, Any]
    png: Path
    info: dict[str, Any]


@dataclass
class IngestResult(StepResult):
    """:class:`StepResult` plus what this run converted.

    The counts stay out of ``build.json``, which must not depend on what an earlier run cached.

    Attributes:
        converted: Image files decoded and encoded in this run.
        reused: Image files whose conversion came from the cache.
    """

    converted: int = 0
    reused: int = 0


@dataclass(slots=True)
class _Pending:
    """A row whose metadata is valid, waiting for its image."""

    source: Source
    row: int
    record: Record
    path: Path


def _clean(value: Any) -> Any:
    if isinstance(value, str):
        value = value.strip()
        return value or None
    if isinstance(value, float) and value != value:  # NaN from a Parquet/pandas null
        return None
    return value


def _row_values(source: Source, raw: dict[str, Any]) -> dict[str, Any]:
    """A metadata row with the source's renames, defaults and source-level fields applied."""
    row = {source.columns.get(k, k): _clean(v) for k, v in raw.items()}
    licence = row.pop("licence", None)  # British spelling accepted, as in the manifest
    if row.get("license") is None:
        row["license"] = licence
    for key, value in source.defaults.items():
        if row.get(key) is None:
            row[key] = value
    for key in ("license", "institution", "pmid"):
        if row.get(key) is None:
            row[key] = getattr(source, key)
    return {k: v for k, v in row.items() if v is not None}


def _problems_from(
    exc: ValidationError, source: str, row: int, values: dict[str, Any], tax: Taxonomy
) -> list[BuildProblem]:
    out = []
    for err in exc.errors():
        msg = str(err["msg"]).removeprefix("Value error, ")
        loc = err["loc"]
        field = str(loc[0]) if loc else msg.split(" ", 1)[0]
        suggestion = None
        if err["type"] == "missing":
            kind = "missing_licence" if field == "license" else "missing_field"
            msg = (
                "no licence: give `license:` for the source in the manifest or a license column"
                if field == "license"
                else f"required field {field!r} is missing (a column, or `defaults:` in the manifest)"
            )
        elif "is unknown" in msg:
            kind = "unknown_vocabulary"
            value = values.get(field)
            suggestion = tax.closest(field, str(value)) if value is not None else None
        else:
            kind = "invalid_value"
        out.append(BuildProblem(STEP, source, str(row), field, kind, msg, suggestion=suggestion))
    return out


def _inside(folder: Path, rel: str) -> Path | None:
    path = (folder / rel).resolve()
    try:
        path.relative_to(folder.resolve())
    except ValueError:
        return None
    return path


def _validate(
    manifest: Manifest, source: Source, i: int, raw: dict[str, Any], tax: Taxonomy
) -> _Pending | list[BuildProblem]:
    """Pass 1 for one row: its metadata and its image path, without reading the image."""
    values = _row_values(source, raw)
    try:
        record = Record.model_validate(values, context={"taxonomy": tax})
    except ValidationError as exc:
        return _problems_from(exc, source.name, i, values, tax)
    folder = manifest.path(source.images)
    path = _inside(folder, record.image)
    if path is None:
        msg = (
            f"image path {record.image!r} leaves the source's image folder {folder}; move the file inside it"
        )
        return [BuildProblem(STEP, source.name, str(i), "image", "unsafe_path", msg)]
    if not path.is_file():
        msg = f"image file {record.image!r} not found in {folder}"
        return [BuildProblem(STEP, source.name, str(i), "image", "missing_image", msg)]
    return _Pending(source, i, record, path)


def _row_of(p: _Pending, done: Converted, store: ConversionStore, tax: Taxonomy) -> IngestedImage:
    """A converted row's dataset values: metadata, hashes, ids and ontology ids."""
    info = done.info or {}
    record = p.record
    rel = Path(record.image).as_posix()
    data = record.model_dump()
    data.update({k: v for k, v in info.items() if k != "png_bytes"}, dataset=p.source.name, source_path=rel)
    data["image_id"] = image_id(p.source.name, rel, info["pixel_md5"])
    sub = tax.get("submodality", record.submodality) if record.submodality else None
    mod = tax.get("modality", record.modality)
    data["modality_id"] = mod.ontology_id if mod else None
    data["submodality_id"] = sub.ontology_id if sub else None
    taxon_names = {v: k for k, v in tax.organisms.items()}
    data["ncbitaxon_name"] = record.organism or taxon_names.get(record.ncbitaxon_id or "")
    return IngestedImage(p.source.name, p.row, data, store.png_path(done.sha256), info)


def _convert_rows(
    rows: list[_Pending | list[BuildProblem]],
    store: ConversionStore,
    hashes: FileHashes,
    settings: tuple[int | None, int | None, bool, EngineConfig | None],
) -> dict[Path, Converted]:
    """Pass 2: convert every distinct image file once, on ``workers`` processes (or Ray tasks)."""
    from tqdm import tqdm

    workers, max_pixels, progress, engine = settings
    paths = list(dict.fromkeys(r.path for r in rows if isinstance(r, _Pending)))
    jobs = [Job(str(p), hashes.known(p), str(store.root.parent), max_pixels) for p in paths]
    converted: dict[Path, Converted] = {}
    with tqdm(total=len(jobs), desc="ingest: convert", unit="img", disable=not progress) as bar:
        if engine is not None and engine.executor == "ray":
            results = convert_on_ray(
                jobs, store, address=engine.ray_address, workers=workers, on_done=bar.update
            )
        elif engine is None or engine.executor == "local":
            results = convert_all(jobs, workers, on_done=bar.update)
        else:
            raise UsageError(f"unknown executor {engine.executor!r}: use local or ray")
        for job, path, done in zip(jobs, paths, results, strict=True):
            if job.sha256 is None:
                hashes.record(path, done.sha256)  # known from now on while the file's stat holds
            converted[path] = done
    return converted


def _collect(
    rows: list[_Pending | list[BuildProblem]],
    converted: dict[Path, Converted],
    store: ConversionStore,
    tax: Taxonomy,
    result: IngestResult,
) -> list[IngestedImage]:
    """Rows in manifest order: each an image, or its problems (counted under the first one's kind)."""
    images: list[IngestedImage] = []
    for row in rows:
        if isinstance(row, _Pending):
            done = converted[row.path]
            if done.info is not None:
                images.append(_row_of(row, done, store, tax))
                result.problems.extend(
                    BuildProblem(STEP, row.source.name, str(row.row), f, k, m, severity="warning")
                    for f, k, m in row.record.notes
                )
                continue
            kind, msg = done.kind or "bad_image", done.message or ""
            row = [BuildProblem(STEP, row.source.name, str(row.row), "image", kind, msg)]
        result.problems.extend(row)
        result.dropped[row[0].kind] += 1
    return images


def _report_ignored_columns(source: Source, rows: list[dict[str, Any]], result: StepResult) -> None:
    """One warning per source naming the table columns the μ-Bench schema has no place for."""
    known = {*UBENCH_COLUMNS, *BUILD_COLUMNS, *Record.model_fields, "licence"}
    columns = {source.columns.get(k, k) for row in rows for k in row}
    ignored = sorted(columns - known)
    if ignored:
        result.problems.append(
            BuildProblem(
                STEP,
                source.name,
                "-",
                ", ".join(ignored),
                "ignored_column",
                f"columns not in the μ-Bench schema are not carried into the dataset: {', '.join(ignored)} "
                "(rename them with `columns:` in the manifest if they hold one of ours)",
                severity="warning",
            )
        )


def _drop_repeats(images: list[IngestedImage], result: StepResult) -> list[IngestedImage]:
    """The same image (same id) listed again is kept out, naming the row that keeps it."""
    kept: list[IngestedImage] = []
    seen: dict[str, IngestedImage] = {}
    for img in images:
        iid = img.record["image_id"]
        if iid in seen:
            first = seen[iid]
            result.dropped["duplicate_id"] += 1
            msg = f"the same image ({img.record['source_path']}) is listed again; row {first.row} keeps it"
            result.problems.append(BuildProblem(STEP, img.source, str(img.row), "image", "duplicate_id", msg))
            continue
        seen[iid] = img
        kept.append(img)
    return kept


def _grey(png: Path) -> np.ndarray:
    from PIL import Image

    with Image.open(png) as im:
        return np.asarray(im.convert("F") if im.mode.startswith("I") else im.convert("L"), dtype=np.float32)


def _stored_grid(store: ConversionStore, img: IngestedImage) -> tuple[tuple[int, int], np.ndarray] | None:
    """The near-duplicate grid the worker stored for ``img`` with its size (``None``: decode the PNG)."""
    grid = store.grid(str(img.info["file_sha256"]), GRID_SIDE)
    return None if grid is None else ((int(img.info["height"]), int(img.info["width"])), grid)


def _group(
    kept: list[IngestedImage], store: ConversionStore, bits: int, min_similarity: float, result: StepResult
) -> None:
    """Mark near-duplicate groups (``dup_group``): hash-proposed, pixel-confirmed; report them."""
    scores = store.similarities()
    before = len(scores)
    store.root.mkdir(parents=True, exist_ok=True)  # beside the stored grids, not in a RAM-backed /tmp
    found = find_near_duplicates(
        [k.info["dhash"] for k in kept],
        bits,
        lambda i: _grey(kept[i].png),
        min_similarity=min_similarity,
        same=lambda i, j: kept[i].info["pixel_md5"] == kept[j].info["pixel_md5"],
        scores=scores,
        key=lambda i: str(kept[i].info["pixel_md5"]),
        grids=lambda i: _stored_grid(store, kept[i]),
        spill=store.root,
    )
    if len(scores) > before:
        store.save_similarities(scores)
    for index, (img, root) in enumerate(zip(kept, found.roots, strict=True)):
        head = kept[root]
        img.record["dup_group"] = head.record["image_id"]
        if img is head:
            continue
        other, apart, score = found.joined[index]  # not `bits`: the stats below report the setting
        peer = kept[other]
        evidence = (
            "identical pixels"
            if score == 1.0 and img.info["pixel_md5"] == peer.info["pixel_md5"]
            else f"dHash {apart} bits apart, pixel similarity {score:.2f}"
        )
        msg = (
            f"near-duplicate of {head.source} row {head.row} ({head.record['source_path']}): "
            f"{evidence} with {peer.source} row {peer.row}; both kept, always in the same split"
        )
        result.problems.append(
            BuildProblem(STEP, img.source, str(img.row), "image", "near_duplicate", msg, severity="warning")
        )
    result.stats["near_duplicates"] = {
        "max_bits": bits,
        "min_similarity": min_similarity,
        "grouped": sum(1 for i, r in enumerate(found.roots) if i != r),
        "refused_pairs": len(found.refused),
    }


@contextmanager
def _store(cache_dir: Path | None, out: Path) -> Iterator[tuple[ConversionStore, FileHashes]]:
    """The conversion store and file hashes: in ``cache_dir``, or temporary beside ``out``."""
    if cache_dir is not None:
        cache_dir.mkdir(parents=True, exist_ok=True)
        hashes = FileHashes(cache_dir / "file_sha256.sqlite")
        try:
            yield ConversionStore(cache_dir), hashes
        finally:
            hashes.close()
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{out.name}.ingest-", dir=out.parent) as tmp:
        hashes = FileHashes(None)
        try:
            yield ConversionStore(Path(tmp)), hashes
        finally:
            hashes.close()


def ingest(
    manifest: str | Path,
    out: str | Path,
    *,
    cache_dir: str | Path | None = None,
    workers: int | None = None,
    max_pixels: int | None = DEFAULT_MAX_PIXELS,
    progress: bool = False,
    engine: EngineConfig | None = None,
) -> IngestResult:
    """Ingest a manifest's sources into a μ-Bench-format dataset in ``out``.

    Args:
        manifest: The manifest YAML file.
        out: Output folder (created; an earlier build output there is replaced).
        cache_dir: Conversions keyed by file content and file hashes keyed by stat, reused by later
            runs (:mod:`.cache`); ``None``: a temporary store, removed at the end.
        workers: Conversions at once: processes (``None``: every core), or with ``engine`` on Ray,
            Ray tasks (``None``: the cluster's CPUs). The output does not depend on it.
        max_pixels: Images declaring more pixels are ``oversized_image`` problems (``None``: no limit).
        progress: Show progress bars.
        engine: Where images are converted (``executor="ray"``: as Ray tasks on the cluster at
            ``ray_address``, the driver shipping each file's bytes; ``None``: a process pool here).
            The output does not depend on it.

    Returns:
        What was kept and dropped, and every problem (also in ``out/problems.jsonl``).

    Raises:
        DataNotFoundError: A manifest, taxonomy or metadata file is missing.
        DataFormatError: One of them cannot be read, or ``out`` holds something else.
        NoItemsError: No row passed the checks.
    """
    man = load_manifest(manifest)
    tax = load_taxonomy(man.path(man.taxonomy) if man.taxonomy else None)
    out = Path(out)
    result = IngestResult(STEP, out=str(out))
    tables = [(s, read_table(man.path(s.metadata))) for s in man.sources]
    result.items_in = sum(len(rows) for _, rows in tables)
    for source, table in tables:
        _report_ignored_columns(source, table, result)
    rows = [_validate(man, source, i, raw, tax) for source, table in tables for i, raw in enumerate(table)]
    settings = (workers, max_pixels, progress, engine)
    with _store(Path(cache_dir) if cache_dir is not None else None, out) as (store, hashes):
        converted = _convert_rows(rows, store, hashes, settings)
        result.converted = sum(1 for c in converted.values() if c.converted)
        result.reused = sum(1 for c in converted.values() if c.reused)
        kept = _drop_repeats(_collect(rows, converted, store, tax, result), result)
        _group(kept, store, man.near_duplicate_bits, man.near_duplicate_similarity, result)
        result.kept = len(kept)
        inputs = {"manifest": str(manifest), **{s.name: str(man.path(s.metadata)) for s in man.sources}}
        write_dataset(kept, out, man, tax, result, inputs, progress=progress)
    return result

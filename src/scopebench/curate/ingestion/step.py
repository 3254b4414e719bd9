"""``build ingest``: sources (images + metadata tables) → one standardised μ-Bench-format dataset.

Every row either becomes a dataset row or is kept out with a :class:`BuildProblem` naming its
source, row and field; ``StepResult.dropped`` counts the rows kept out by reason, so
``items_in == kept + sum(dropped)`` always holds.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from scopebench.curate.ingestion.images import dhash, encode_png, hamming, image_id, pixel_md5, read_image
from scopebench.curate.manifest import Manifest, Record, Source, load_manifest, read_table
from scopebench.curate.output import write_dataset
from scopebench.curate.report import BuildProblem, StepResult
from scopebench.curate.schema import BUILD_COLUMNS, UBENCH_COLUMNS
from scopebench.curate.taxonomy import Taxonomy, load_taxonomy
from scopebench.errors import ImageLoadError

__all__ = ["IngestedImage", "find_near_duplicates", "ingest", "sha256_file"]

STEP = "ingest"


@dataclass(slots=True)
class IngestedImage:
    """One image that passed every check, with its normalised metadata and PNG bytes."""

    source: str
    row: int
    record: dict[str, Any]
    png: bytes
    info: dict[str, Any]


def sha256_file(path: Path) -> str:
    """SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


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


def _convert(path: Path, cache: Path | None) -> tuple[bytes, dict[str, Any]]:
    """PNG bytes and hashes of one image, reused from ``cache`` when its bytes were seen before."""
    file_sha = sha256_file(path)
    if cache is not None and (cache / f"{file_sha}.json").is_file():
        info = json.loads((cache / f"{file_sha}.json").read_text(encoding="utf-8"))
        return (cache / f"{file_sha}.png").read_bytes(), info
    std = read_image(path)
    px = std.pixels
    info = {
        "file_sha256": file_sha,
        "pixel_md5": pixel_md5(px),
        "dhash": dhash(px),
        "conversion": std.conversion,
        "source_format": std.source_format,
        "width": int(px.shape[1]),
        "height": int(px.shape[0]),
        "bit_depth": 16 if px.dtype.itemsize == 2 else 8,
        "channels": 1 if px.ndim == 2 else int(px.shape[-1]),
    }
    png = encode_png(px)
    if cache is not None:
        (cache / f"{file_sha}.png").write_bytes(png)
        (cache / f"{file_sha}.json").write_text(json.dumps(info), encoding="utf-8")
    return png, info


def _one_row(
    manifest: Manifest, source: Source, i: int, raw: dict[str, Any], tax: Taxonomy, cache: Path | None
) -> tuple[IngestedImage | None, list[BuildProblem]]:
    values = _row_values(source, raw)
    try:
        record = Record.model_validate(values, context={"taxonomy": tax})
    except ValidationError as exc:
        return None, _problems_from(exc, source.name, i, values, tax)
    folder = manifest.path(source.images)
    path = _inside(folder, record.image)
    if path is None:
        msg = (
            f"image path {record.image!r} leaves the source's image folder {folder}; move the file inside it"
        )
        return None, [BuildProblem(STEP, source.name, str(i), "image", "unsafe_path", msg)]
    if not path.is_file():
        msg = f"image file {record.image!r} not found in {folder}"
        return None, [BuildProblem(STEP, source.name, str(i), "image", "missing_image", msg)]
    try:
        png, info = _convert(path, cache)
    except ImageLoadError as exc:
        return None, [BuildProblem(STEP, source.name, str(i), "image", "bad_image", str(exc))]
    rel = Path(record.image).as_posix()
    data = record.model_dump()
    data.update(info, dataset=source.name, source_path=rel)
    data["image_id"] = image_id(source.name, rel, info["pixel_md5"])
    sub = tax.get("submodality", record.submodality) if record.submodality else None
    mod = tax.get("modality", record.modality)
    data["modality_id"] = mod.ontology_id if mod else None
    data["submodality_id"] = sub.ontology_id if sub else None
    taxon_names = {v: k for k, v in tax.organisms.items()}
    data["ncbitaxon_name"] = record.organism or taxon_names.get(record.ncbitaxon_id or "")
    notes = [BuildProblem(STEP, source.name, str(i), f, k, m, severity="warning") for f, k, m in record.notes]
    return IngestedImage(source.name, i, data, png, info), notes


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


def find_near_duplicates(hashes: list[str], max_bits: int) -> list[int]:
    """Group indices whose dHashes are within ``max_bits`` (transitively): each index's group root.

    The root is the smallest index of its group, so groups are deterministic.
    """
    import numpy as np

    parent = list(range(len(hashes)))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    values = np.array([int(h, 16) for h in hashes], dtype=np.uint64)
    for i in range(len(values)):
        diff = np.bitwise_xor(values[i + 1 :], values[i])
        bits = np.unpackbits(diff.view(np.uint8).reshape(-1, 8), axis=1).sum(axis=1)
        for j in np.nonzero(bits <= max_bits)[0]:
            a, b = find(i), find(i + 1 + int(j))
            parent[max(a, b)] = min(a, b)
    return [find(i) for i in range(len(hashes))]


def _dedupe(images: list[IngestedImage], max_bits: int, result: StepResult) -> list[IngestedImage]:
    """Drop repeated ids; mark near-duplicate groups (``dup_group``) and report them."""
    kept: list[IngestedImage] = []
    seen: dict[str, IngestedImage] = {}
    for img in images:
        iid = img.record["image_id"]
        if iid in seen:
            first = seen[iid]
            result.dropped["duplicate_id"] += 1
            result.problems.append(
                BuildProblem(
                    STEP,
                    img.source,
                    str(img.row),
                    "image",
                    "duplicate_id",
                    f"the same image ({img.record['source_path']}) is listed again; row {first.row} keeps it",
                )
            )
            continue
        seen[iid] = img
        kept.append(img)
    roots = find_near_duplicates([k.info["dhash"] for k in kept], max_bits)
    for img, root in zip(kept, roots, strict=True):
        head = kept[root]
        img.record["dup_group"] = head.record["image_id"]
        if img is not head:
            d = hamming(img.info["dhash"], head.info["dhash"])
            same = (
                "identical pixels" if img.info["pixel_md5"] == head.info["pixel_md5"] else f"{d} bits apart"
            )
            result.problems.append(
                BuildProblem(
                    STEP,
                    img.source,
                    str(img.row),
                    "image",
                    "near_duplicate",
                    f"near-duplicate of {head.source} row {head.row} ({head.record['source_path']}; "
                    f"dHash {same}); both kept, always in the same split",
                    severity="warning",
                )
            )
    return kept


def ingest(
    manifest: str | Path, out: str | Path, *, cache_dir: str | Path | None = None, progress: bool = False
) -> StepResult:
    """Ingest a manifest's sources into a μ-Bench-format dataset in ``out``.

    Args:
        manifest: The manifest YAML file.
        out: Output folder (created; an earlier build output there is replaced).
        cache_dir: Converted images keyed by the SHA-256 of their file, reused by later runs.
        progress: Show a progress bar.

    Returns:
        What was kept and dropped, and every problem (also in ``out/problems.jsonl``).

    Raises:
        DataNotFoundError: A manifest, taxonomy or metadata file is missing.
        DataFormatError: One of them cannot be read, or ``out`` holds something else.
    """
    from tqdm import tqdm

    man = load_manifest(manifest)
    tax = load_taxonomy(man.path(man.taxonomy) if man.taxonomy else None)
    cache = Path(cache_dir) if cache_dir is not None else None
    if cache is not None:
        cache.mkdir(parents=True, exist_ok=True)
    result = StepResult(STEP, out=str(out))
    tables = [(s, read_table(man.path(s.metadata))) for s in man.sources]
    result.items_in = sum(len(rows) for _, rows in tables)
    for source, rows in tables:
        _report_ignored_columns(source, rows, result)
    images: list[IngestedImage] = []
    with tqdm(total=result.items_in, desc="ingest", unit="img", disable=not progress) as bar:
        for source, rows in tables:
            for i, raw in enumerate(rows):
                img, problems = _one_row(man, source, i, raw, tax, cache)
                result.problems.extend(problems)
                if img is None:
                    result.dropped[problems[0].kind] += 1
                else:
                    images.append(img)
                bar.update(1)
    kept = _dedupe(images, man.near_duplicate_bits, result)
    result.kept = len(kept)
    inputs = {"manifest": str(manifest), **{s.name: str(man.path(s.metadata)) for s in man.sources}}
    write_dataset(kept, Path(out), man, tax, result, inputs)
    return result

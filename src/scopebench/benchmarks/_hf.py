"""Open Hugging Face ``datasets`` data wherever it lies, keeping images lazy.

μ-Bench and MicroVQA are published as Hugging Face datasets, and users hold them in several forms.
:func:`open_hf_data` accepts each of them and decides by what is on disk — an existing path is
never sent to the Hub:

* a folder written by ``Dataset.save_to_disk`` (``state.json``) or ``DatasetDict.save_to_disk``
  (``dataset_dict.json``), opened with ``datasets.load_from_disk`` (memory-mapped);
* a folder of ``.arrow`` files as the Hub repository of μ-Bench ships them
  (``perception/0.1.0/ubench-test-00000-of-00007.arrow`` …), memory-mapped with
  ``Dataset.from_file`` — no copy;
* a folder of ``.parquet`` files (``data/test-00000-of-00005.parquet`` …) or one ``.parquet`` /
  ``.arrow`` file. Parquet cannot be memory-mapped, so ``datasets`` converts it once into its
  Arrow cache (``HF_DATASETS_CACHE``) and memory-maps that, exactly as it does for Hub downloads;
* anything else of the form ``owner/name`` is a Hub dataset id, read with
  ``datasets.load_dataset`` (needs the network the first time).

Images are never decoded here: :class:`ImageColumn` reads the raw ``{"bytes", "path"}`` cells of
one column through the Arrow format, one row at a time, when an :class:`~scopebench.items.ImageRef`
loader asks for them. ``datasets`` is imported inside the functions because it takes seconds to
import and ``import scopebench`` must stay light.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import logging
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from scopebench.benchmarks.base import Problem
from scopebench.display import adopt_library_logs
from scopebench.errors import DataFormatError, DataNotFoundError, ImageLoadError

if TYPE_CHECKING:
    from datasets import Dataset

__all__ = [
    "HFData",
    "ImageColumn",
    "LazyImage",
    "cell_bytes",
    "gc_paused",
    "is_hub_id",
    "open_hf_data",
    "read_text_columns",
    "source_problems",
    "split_of_file",
]

logger = logging.getLogger(__name__)

SourceKind = Literal["hub", "saved", "parquet", "arrow"]

# "owner/name" as the Hub spells dataset ids (letters, digits, ".", "_", "-").
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
# Shard file names written by `datasets`: "<split>-00000-of-00005" or "<builder>-<split>-00000-of-00005".
_SHARD = re.compile(r"^(?:.*-)?(?P<split>[A-Za-z0-9_.]+)-\d{5}-of-\d{5}$")
# Metadata files written beside a dataset's shards by `datasets`.
_METADATA_FILES = frozenset({"state.json", "dataset_info.json", "dataset_dict.json"})
# `save_to_disk` names its shards "data-00000-of-00001": "data" is no split name.
_NOT_SPLITS = frozenset({"data"})


@dataclass(slots=True)
class HFData:
    """An opened dataset and what it was opened from.

    Attributes:
        dataset: The memory-mapped ``datasets.Dataset`` of the chosen split.
        split: The split the data came from, or ``None`` when the data do not name one.
        kind: How it was opened: ``hub``, ``saved``, ``parquet`` or ``arrow``.
        source: The dataset id or path, for problem reports.
        files: The data files read (empty for Hub ids and ``save_to_disk`` folders).
        fingerprint: The dataset's own fingerprint, or a hash of the files' names and sizes.
        available: Every split name the data hold.
        unread: Data files in the folder that name no split, left unread because files of the
            chosen split were found beside them.
    """

    dataset: Dataset
    split: str | None
    kind: SourceKind
    source: str
    files: tuple[Path, ...] = ()
    fingerprint: str = ""
    available: tuple[str, ...] = field(default_factory=tuple)
    unread: tuple[Path, ...] = ()


def is_hub_id(data: str | Path) -> bool:
    """Whether ``data`` is shaped like a Hub dataset id (``owner/name``) and is not an existing path."""
    text = str(data)
    return not Path(text).expanduser().exists() and _HUB_ID.match(text) is not None


def split_of_file(path: Path) -> str | None:
    """The split named by a shard file's name (``test-00000-of-00002.parquet`` → ``"test"``).

    A file named exactly after a split (``test.parquet``) names it too; any other name names none.
    """
    stem = path.name.split(".", 1)[0] if path.suffix else path.name
    m = _SHARD.match(stem)
    if m is not None:
        name = m.group("split")
        return None if name in _NOT_SPLITS else name
    return stem if stem in {"train", "test", "validation", "val", "dev"} else None


def _files_fingerprint(files: Sequence[Path], root: Path) -> str:
    """Hash names and sizes only: the data are gigabytes, and shards never change in place."""
    h = hashlib.sha256()
    for f in files:
        rel = f.relative_to(root).as_posix() if f.is_relative_to(root) else f.name
        h.update(f"{rel}\0{f.stat().st_size}\n".encode())
    return h.hexdigest()[:16]


def _choose_split(
    available: Sequence[str | None], split: str | None, fallbacks: Sequence[str], source: str
) -> str | None:
    """Pick the split to read: the one asked for, else a fallback, else the only one there is."""
    if split in available:
        return split
    for name in fallbacks:
        if name in available:
            return name
    if len(available) == 1:
        return available[0]
    names = ", ".join(sorted(str(s) for s in available if s is not None)) or "none named"
    raise DataFormatError(
        f"{source} has no split {split!r}; it holds: {names}. Pass --split with one of them, "
        "or point --data at that split's files"
    )


def open_hf_data(
    data: str | Path,
    split: str | None,
    *,
    what: str,
    hub_help: str,
    fallbacks: Sequence[str] = (),
    subset: str | None = None,
) -> HFData:
    """Open a dataset from a Hub id, a ``save_to_disk`` folder, or parquet / arrow files.

    Args:
        data: The location as the user gave it.
        split: The split wanted (``None``: the data must hold a single split).
        what: What the data are, for error messages (``"μ-Bench data"``).
        hub_help: How to get the data, appended to errors (the dataset id, the download steps).
        fallbacks: Split names to use, in order, when ``split`` is absent (MicroVQA renamed
            ``train`` to ``test``). When the data hold one split only, it is used whatever its name;
            the caller compares :attr:`HFData.split` with what it asked for and reports it.
        subset: The Hub configuration to load (MMMU's ``Art``); for a local copy, the sub-folder
            of ``data`` holding it (the Hub repository's layout).

    Returns:
        The opened dataset and its provenance.

    Raises:
        DataNotFoundError: When the path does not exist, holds no data files, or the Hub cannot be
            reached.
        DataFormatError: When the files cannot be read as a dataset, or the split is absent.
    """
    import datasets  # noqa: F401 - imported here so its log handler is adopted below

    adopt_library_logs("datasets", "huggingface_hub")
    text = str(data)
    path = Path(text).expanduser()
    if path.is_file() and path.name in _METADATA_FILES:
        path = path.parent  # a dataset's own metadata file names its folder
    if not path.exists():
        if _HUB_ID.match(text):
            return _open_hub(text, split, fallbacks, what=what, hub_help=hub_help, subset=subset)
        raise DataNotFoundError(f"{what} not found: {path} (no such file or folder). {hub_help}")
    if subset is not None:
        if not (path / subset).is_dir():
            raise DataNotFoundError(
                f"{path} has no sub-folder {subset!r} for subset {subset!r}; point --data at the "
                "folder of that subset, or leave subset out"
            )
        path = path / subset
    if path.is_file():
        return _open_files([path], path.parent, split, fallbacks, source=str(path), what=what)
    if (path / "dataset_dict.json").is_file() or (path / "state.json").is_file():
        return _open_saved(path, split, fallbacks, what=what)
    files = sorted(
        p
        for p in path.rglob("*")
        if p.suffix in (".parquet", ".arrow")
        and p.is_file()
        and not any(part.startswith(".") for part in p.relative_to(path).parts)
    )
    if not files:
        raise DataNotFoundError(
            f"no .parquet or .arrow files in {path}, and it is not a folder written by "
            f"save_to_disk (no state.json or dataset_dict.json). {hub_help}"
        )
    suffixes = {p.suffix for p in files}
    if len(suffixes) > 1:
        raise DataFormatError(
            f"{path} holds both .parquet and .arrow files; point --data at the folder (or file) of "
            "one format so no rows are read twice"
        )
    return _open_files(files, path, split, fallbacks, source=str(path), what=what)


def _open_hub(
    text: str,
    split: str | None,
    fallbacks: Sequence[str],
    *,
    what: str,
    hub_help: str,
    subset: str | None = None,
) -> HFData:
    import datasets
    from huggingface_hub import constants

    try:
        dd = datasets.load_dataset(text, subset)
    except Exception as exc:  # network, auth and missing-repo errors come in many types; keep the reason
        if constants.HF_HUB_OFFLINE:
            # Offline was asked for: no Hub call was made, so the only remedy is a local copy.
            raise DataNotFoundError(
                f"HF_HUB_OFFLINE is set and {text!r}"
                + (f" (subset {subset!r})" if subset else "")
                + f" is not in the datasets cache ({constants.HF_HOME}, HF_DATASETS_CACHE: "
                f"{datasets.config.HF_DATASETS_CACHE}): {type(exc).__name__}: {exc}. Load it once while "
                f"online, unset HF_HUB_OFFLINE, or pass a local copy (save_to_disk folder or parquet "
                f"files). {hub_help}"
            ) from exc
        raise DataNotFoundError(
            f"{text!r} is no local path, and loading it as a Hugging Face Hub dataset id failed "
            f"({type(exc).__name__}: {exc}). "
            "If this machine is offline, set HF_HUB_OFFLINE=1 (a dataset loaded before is then "
            "read from the datasets cache at once, with no network retries), or download it "
            f"elsewhere with `datasets.load_dataset({text!r}).save_to_disk(DIR)` and pass --data DIR, "
            f"or pass the dataset's local parquet/arrow files. {hub_help}"
        ) from exc
    if isinstance(dd, datasets.Dataset):  # a loading script may return one split directly
        return HFData(dd, split, "hub", text, fingerprint=dd._fingerprint, available=())
    available = tuple(dd.keys())
    chosen = _choose_split(list(available), split, fallbacks, text)
    ds = dd[chosen]
    return HFData(ds, chosen, "hub", text, fingerprint=ds._fingerprint, available=available)


def _open_saved(path: Path, split: str | None, fallbacks: Sequence[str], *, what: str) -> HFData:
    import datasets

    try:
        loaded = datasets.load_from_disk(str(path))
    except Exception as exc:  # corrupt state.json, missing shards, version mismatch…
        raise DataFormatError(
            f"cannot open {path} as a dataset written by save_to_disk ({type(exc).__name__}: {exc}); "
            "re-save it, or pass its parquet/arrow files instead"
        ) from exc
    if isinstance(loaded, datasets.DatasetDict):
        available = tuple(loaded.keys())
        chosen = _choose_split(list(available), split, fallbacks, str(path))
        ds = loaded[chosen]
        return HFData(ds, chosen, "saved", str(path), fingerprint=ds._fingerprint, available=available)
    named = str(loaded.split) if loaded.split is not None else None
    return HFData(
        loaded,
        named,
        "saved",
        str(path),
        fingerprint=loaded._fingerprint,
        available=(named,) if named else (),
    )


def _open_files(
    files: list[Path], root: Path, split: str | None, fallbacks: Sequence[str], *, source: str, what: str
) -> HFData:
    if files[0].suffix not in (".parquet", ".arrow"):
        raise DataFormatError(
            f"{source} is not a .parquet or .arrow file; pass a dataset folder, parquet/arrow files "
            f"or a Hub dataset id for {what}"
        )
    groups: dict[str | None, list[Path]] = {}
    for f in files:
        groups.setdefault(split_of_file(f), []).append(f)
    chosen = _choose_split(list(groups), split, fallbacks, source)
    picked = groups[chosen]
    available = tuple(s for s in groups if s is not None)
    unread = tuple(groups.get(None, ())) if chosen is not None else ()
    ds = _read_parquet(picked, chosen) if picked[0].suffix == ".parquet" else _read_arrow(picked)
    kind: SourceKind = "parquet" if picked[0].suffix == ".parquet" else "arrow"
    fingerprint = _files_fingerprint(picked, root)
    return HFData(ds, chosen, kind, source, tuple(picked), fingerprint, available, unread)


def source_problems(src: HFData, wanted: str, *, why: str = "") -> list[Problem]:
    """Warnings about what was read instead of what was asked for.

    Args:
        src: The opened data.
        wanted: The split the loader asked for (and labels its items with).
        why: A note appended to the split warning (e.g. that a benchmark renamed its split).

    Returns:
        A ``split_mismatch`` warning when the data's split has another name, and a
        ``unread_files`` warning naming data files that were left out.
    """
    out: list[Problem] = []
    if src.split is not None and src.split != wanted:
        out.append(
            Problem(
                src.source,
                "-",
                f"the data hold split {src.split!r}, not {wanted!r}{why}; its rows were loaded as {wanted!r}",
                severity="warning",
                kind="split_mismatch",
            )
        )
    if src.unread:
        names = ", ".join(p.name for p in src.unread[:5]) + (" …" if len(src.unread) > 5 else "")
        out.append(
            Problem(
                src.source,
                "-",
                f"{len(src.unread)} data file(s) whose names give no split were not read ({names}); "
                f"only the {src.split!r} files were. Point --data at a file or folder to read it",
                severity="warning",
                kind="unread_files",
            )
        )
    return out


def _read_arrow(files: list[Path]) -> Dataset:
    import datasets

    parts = []
    for f in files:
        try:
            parts.append(datasets.Dataset.from_file(str(f)))
        except Exception as exc:  # pyarrow raises ArrowInvalid/OSError for non-stream files
            raise DataFormatError(
                f"cannot read {f} as an Arrow stream file written by `datasets` "
                f"({type(exc).__name__}: {exc}); re-download it, or pass the dataset's parquet files"
            ) from exc
    try:
        return parts[0] if len(parts) == 1 else datasets.concatenate_datasets(parts)
    except ValueError as exc:  # shards whose features differ
        raise DataFormatError(
            f"the arrow files {', '.join(str(f) for f in files)} do not agree: {exc}"
        ) from exc


def _read_parquet(files: list[Path], split: str | None) -> Dataset:
    import datasets

    # The split key only names the cache entry; `datasets` requires a word-like name.
    key = split if split is not None and re.fullmatch(r"\w+", split) else "data"
    try:
        ds = datasets.load_dataset("parquet", data_files={key: [str(f) for f in files]}, split=key)
    except Exception as exc:  # pyarrow/datasets raise many types for unreadable parquet
        raise DataFormatError(
            f"cannot read {', '.join(str(f) for f in files)} as parquet ({type(exc).__name__}: {exc}); "
            "re-download the files"
        ) from exc
    assert isinstance(ds, datasets.Dataset)  # a named split always gives one Dataset
    return ds


def read_text_columns(dataset: Dataset, columns: Sequence[str]) -> list[dict[str, Any]]:
    """Every row of ``columns`` as plain Python, read column-wise through Arrow (no image decoding).

    Class labels come back as their integer ids, as Arrow stores them.
    """
    if not columns:
        return [{} for _ in range(len(dataset))]
    table = dataset.select_columns(list(columns)).with_format("arrow")[:]
    with gc_paused():
        rows: list[dict[str, Any]] = table.to_pylist()
    return rows


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a loader builds its items.

    Building ~100k items (μ-Bench) allocates millions of small objects that are all kept, so the
    collector's repeated full passes free nothing and take half the load time.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class ImageColumn:
    """Raw access to one image column (``Image`` or a list of ``Image``) of a dataset.

    The column is read through the Arrow format, so a cell comes back as its stored
    ``{"bytes": …, "path": …}`` struct and nothing is decoded. Pickling keeps the dataset
    memory-mapped (it pickles as its file paths), so worker processes can rebuild it cheaply.
    """

    __slots__ = ("_data", "name")

    def __init__(self, dataset: Dataset, name: str) -> None:
        self.name = name
        self._data = dataset.select_columns([name]).with_format("arrow")

    def __getstate__(self) -> tuple[Any, str]:
        return self._data, self.name

    def __setstate__(self, state: tuple[Any, str]) -> None:
        self._data, self.name = state

    def list_lengths(self) -> list[int | None]:
        """Images per row of a list column (``None`` for a null cell), without reading any bytes."""
        import pyarrow.compute as pc

        column = self._data[:].column(0)
        lengths: list[int | None] = pc.list_value_length(column).to_pylist()
        return lengths

    def nulls(self) -> list[bool]:
        """Whether each row's cell is null, without reading any bytes."""
        column = self._data[:].column(0)
        flags: list[bool] = column.is_null().to_pylist()
        return flags

    def encoded(self, row: int, index: int | None = None, *, what: str) -> bytes:
        """The encoded image of ``row`` (element ``index`` of a list column).

        Raises:
            ImageLoadError: When the cell is null or holds neither bytes nor a readable file path.
        """
        scalar = self._data[row].column(0)[0]
        if index is not None:
            if not scalar.is_valid or index >= len(scalar):
                raise ImageLoadError(f"image {what}: row {row} has no image number {index}")
            scalar = scalar[index]
        return cell_bytes(scalar.as_py(), what=what)


def cell_bytes(cell: Any, *, what: str) -> bytes:
    """The encoded image of one stored ``Image`` cell (``{"bytes", "path"}``, raw bytes or a path).

    Raises:
        ImageLoadError: When the cell is null or holds neither bytes nor a readable file path.
    """
    if isinstance(cell, (bytes, bytearray)):
        return bytes(cell)
    path: Any = cell
    if isinstance(cell, dict):
        if cell.get("bytes"):
            return bytes(cell["bytes"])
        path = cell.get("path")
    if isinstance(path, str) and path:
        # A cell without bytes points at a file on the machine that built the dataset.
        try:
            return Path(path).read_bytes()
        except OSError as exc:
            raise ImageLoadError(
                f"image {what}: the dataset stores only the path {path!r}, which cannot be read "
                f"({exc}); rebuild the dataset with embedded images (e.g. via push_to_hub or to_parquet)"
            ) from exc
    raise ImageLoadError(f"image {what}: the dataset cell is empty")


class LazyImage:
    """An :class:`~scopebench.items.ImageRef` loader: reads one image's bytes when called.

    A small class rather than a closure so that items stay picklable for process executors.
    """

    __slots__ = ("column", "index", "row", "what")

    def __init__(self, column: ImageColumn, row: int, index: int | None = None, *, what: str) -> None:
        self.column = column
        self.row = row
        self.index = index
        self.what = what

    def __getstate__(self) -> tuple[ImageColumn, int, int | None, str]:
        return self.column, self.row, self.index, self.what

    def __setstate__(self, state: tuple[ImageColumn, int, int | None, str]) -> None:
        self.column, self.row, self.index, self.what = state

    def __call__(self) -> bytes:
        """Return the encoded image."""
        return self.column.encoded(self.row, self.index, what=self.what)

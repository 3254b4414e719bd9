"""PathMMU: pathology multiple-choice questions from five sources (Sun et al., ECCV 2024).

Data layout (the official ``data.json`` that ``eval/utils/data_utils.py`` reads)::

    <folder>/data.json      {"PubMed": {"val": [...], "test": [...], "test_tiny": [...]}, "SocialPath": …}
    <folder>/images/<img>

Each record has ``No``, ``img``, ``question``, ``options`` (``"A) text"``…), ``answer`` (``"D) text"``
or, in a few records, a bare ``"D"``) and ``explanation``, plus source-specific keys (``tw_id``,
``img_position``, ``ref_web``, ``source_img``…), all kept in :attr:`Item.metadata`, with the answer
and options as written (``answer_raw``, ``options_raw``).

A per-subset file in the layout ``{"val": [...], "test": [...], "test_tiny": [...]}`` is accepted
too when its name says which subset it holds (``socialpath_mapping.json``, as published in the
GitHub repository's ``data/`` folder).

Unlike the official loader, which silently skips records whose image file is missing (every
SocialPath record until the images are fetched from X/Twitter), missing images are kept as items
marked ``missing_image`` and reported.
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scopebench.benchmarks._options import normalize_text, parse_answer_label, strip_label
from scopebench.benchmarks.base import Benchmark, LoadedBenchmark, OwnerPrompt, Problem, fingerprint_files
from scopebench.benchmarks.registry import register_benchmark
from scopebench.errors import DataFormatError, DataNotFoundError, UnsafePathError
from scopebench.items import LETTERS, ImageRef, Item, Record, letter, safe_join

if TYPE_CHECKING:
    from scopebench.scoring.aggregate import OwnerRows

__all__ = ["PATHMMU_ALL", "SUBSETS", "PathMMUBenchmark", "pathmmu_option_text"]

logger = logging.getLogger(__name__)

#: The five PathMMU subsets, in the paper's order.
SUBSETS: tuple[str, ...] = ("PubMed", "SocialPath", "EduContent", "Atlas", "PathCLS")
_SPLITS: tuple[str, ...] = ("val", "test", "test_tiny")
# Keys turned into Item fields; every other key of a record goes to metadata.
_CORE_KEYS = frozenset({"No", "img", "question", "options", "answer"})


@register_benchmark("pathmmu")
class PathMMUBenchmark(Benchmark):
    """Loader for PathMMU (``data.json`` + ``images/``); task and subset are the PathMMU subset."""

    title = "PathMMU — expert-validated pathology MCQs (PubMed, SocialPath, EduContent, Atlas, PathCLS)"
    splits = _SPLITS
    tasks = SUBSETS
    default_split = None
    data_help = (
        "A folder holding PathMMU's data.json and its images/ folder (or the path to data.json). "
        "Get both from the gated Hugging Face dataset https://huggingface.co/datasets/jamessyx/PathMMU "
        "(accept its terms, then download and unzip). SocialPath and PathCLS images must be fetched "
        "separately, as explained in data/instructions.md of https://github.com/PathMMU-Benchmark/PathMMU; "
        "records whose image is still missing are kept and reported as missing_image. "
        "A per-subset file such as data/socialpath_mapping.json from that repository is accepted too "
        "(images are then looked for in images/ next to it)."
    )

    # Owner protocol (PathMMU-Benchmark/PathMMU eval code) ------------------------------------------

    published_key = "pathmmu"
    owner_description = (
        "PathMMU: instance-weighted accuracy per subset and overall, per split; ALL pools test and "
        "test_tiny (the paper's ALL columns)"
    )

    def owner_prompt(self, item: Item) -> OwnerPrompt:
        """PathMMU's LLaVA-1.5 evaluation prompt for ``item``, byte for byte."""
        # PathMMU eval/configs/llava1.5.yaml: multi_choice_example_format is the single-quoted YAML
        # scalar '{}\n\n{}\n\nAnswer with…' whose blank lines fold to one "\n" each, i.e.
        # "{}\n{}\nAnswer with the option's letter from the given choices directly."; construct_prompt
        # fills it with the question and "(A) text\n" per option (every option line ends in "\n").
        opts = "".join(f"({letter(i)}) {pathmmu_option_text(o)}\n" for i, o in enumerate(_raw_options(item)))
        text = f"{item.question}\n{opts}\nAnswer with the option's letter from the given choices directly."
        return OwnerPrompt(text)

    def owner_rows(
        self, records: Sequence[Record], *, items: Mapping[str, Mapping[str, Any]], rows: OwnerRows
    ) -> list[dict[str, Any]]:
        """Instance-weighted accuracy per subset and ``overall`` for each split, and the ALL rows.

        Splits come ``test_tiny``, ``test``, then any other; ALL pools ``test`` and ``test_tiny``
        (disjoint in the release; the paper's ALL columns count both, e.g. SocialPath 1,620 + 235
        = 1,855, as ``eval/print_results.py`` does), only when both splits are present.
        """
        return _owner_rows(records, rows)

    def load(self, data: str | Path, split: str | None = None) -> LoadedBenchmark:
        """Load every subset (and every split unless ``split`` is given).

        Args:
            data: The folder holding ``data.json`` and ``images/``, or a JSON file.
            split: ``val``, ``test`` or ``test_tiny``; ``None`` loads all three.

        Returns:
            Items ordered by subset, split and file order, with every problem found.

        Raises:
            DataNotFoundError: When the folder has no ``data.json``.
            DataFormatError: When the JSON cannot be read or has an unknown layout.
        """
        chosen = self.check_split(split)
        path = self.require_path(data, "PathMMU data")
        json_path = path / "data.json" if path.is_dir() else path
        if not json_path.is_file():
            raise DataNotFoundError(
                f"no data.json in {path}; point --data at the PathMMU folder holding data.json and images/ "
                "(download it from https://huggingface.co/datasets/jamessyx/PathMMU)"
            )
        raw = _read_json(json_path)
        by_subset = _subsets_of(raw, json_path)
        root = json_path.parent
        images_dir = root / "images"
        if not images_dir.is_dir():
            logger.warning("PathMMU: no images/ folder in %s; every item will be marked missing_image", root)

        items: list[Item] = []
        problems: list[Problem] = []
        for subset, per_split in by_subset.items():
            if subset not in SUBSETS:
                problems.append(
                    Problem(
                        file=str(json_path),
                        record=subset,
                        message=f"unknown PathMMU subset {subset!r} (known: {', '.join(SUBSETS)}); "
                        "loaded anyway",
                        severity="warning",
                        kind="unknown_subset",
                    )
                )
            for split_name, records in per_split.items():
                if chosen is not None and split_name != chosen:
                    continue
                if not isinstance(records, list):
                    problems.append(
                        Problem(
                            file=str(json_path),
                            record=f"{subset}/{split_name}",
                            message="expected a list of records; this split was skipped",
                            kind="malformed",
                        )
                    )
                    continue
                items.extend(_load_split(records, subset, split_name, json_path, root, problems))
        missing = sum(1 for it in items if "missing_image" in it.problems)
        if missing:
            logger.warning(
                "PathMMU: %d of %d items have no image file under %s", missing, len(items), images_dir
            )
        return LoadedBenchmark(
            name=self.name,
            data=str(data),
            items=items,
            problems=problems,
            fingerprint=fingerprint_files([json_path], extra=[f"split={chosen}"]),
        )


def _read_json(path: Path) -> Any:
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataFormatError(f"cannot read {path} as JSON: {exc}; re-download PathMMU's data.json") from exc


def _subsets_of(raw: Any, path: Path) -> dict[str, Mapping[str, Any]]:
    """Return ``{subset: {split: records}}`` for either accepted layout."""
    if not isinstance(raw, dict):
        raise DataFormatError(f"{path} is not a PathMMU file: expected a JSON object at the top level")
    if raw and all(key in _SPLITS for key in raw):
        # Per-subset layout ({split: [records]}): only the file name can say which subset it is.
        stem = path.stem.casefold().removesuffix("_mapping")
        for subset in SUBSETS:
            if subset.casefold() == stem:
                return {subset: raw}
        raise DataFormatError(
            f"{path} holds one subset's splits but its name does not say which subset; "
            "point --data at PathMMU's data.json (or name the file e.g. socialpath_mapping.json)"
        )
    out: dict[str, Mapping[str, Any]] = {}
    for subset, per_split in raw.items():
        if not isinstance(per_split, dict):
            raise DataFormatError(
                f"{path}: subset {subset!r} is not an object of splits; point --data at PathMMU's data.json"
            )
        out[subset] = per_split
    return out


def _load_split(
    records: list[Any], subset: str, split: str, file: Path, root: Path, problems: list[Problem]
) -> list[Item]:
    items: list[Item] = []
    seen: set[str] = set()
    for pos, rec in enumerate(records):
        where = f"{subset}/{split}[{pos}]"
        if not isinstance(rec, dict):
            problems.append(
                Problem(str(file), where, "record is not a JSON object; skipped", kind="malformed")
            )
            continue
        missing = [k for k in ("No", "question", "options", "answer") if rec.get(k) in (None, "")]
        if missing:
            problems.append(
                Problem(str(file), where, f"record lacks {', '.join(missing)}; skipped", kind="malformed")
            )
            continue
        number = rec["No"]
        # Upstream numbers records with an int; text is accepted too. Anything else (a boolean,
        # a float, a list) is refused rather than turned into an id by str().
        if isinstance(number, bool) or not isinstance(number, (int, str)):
            problems.append(
                Problem(
                    str(file),
                    where,
                    f"No is {json.dumps(number)}, which is not an integer or text; record skipped",
                    kind="bad_id",
                )
            )
            continue
        item_id = f"pathmmu/{subset}/{split}/{str(number).strip()}"
        where = item_id
        if item_id in seen:
            problems.append(
                Problem(
                    str(file),
                    where,
                    "duplicate No in this split; the later record was skipped",
                    kind="duplicate",
                )
            )
            continue
        built = _build_item(rec, item_id, subset, split, file, root, problems)
        if built is not None:
            seen.add(item_id)
            items.append(built)
    return items


def _build_item(
    rec: Mapping[str, Any],
    item_id: str,
    subset: str,
    split: str,
    file: Path,
    root: Path,
    problems: list[Problem],
) -> Item | None:
    raw_options = rec["options"]
    if (
        not isinstance(raw_options, list)
        or len(raw_options) < 2
        or not all(isinstance(o, str) for o in raw_options)
    ):
        problems.append(
            Problem(
                str(file),
                item_id,
                "options must be a list of at least two strings; skipped",
                kind="malformed",
            )
        )
        return None
    choices: list[str] = []
    for i, opt in enumerate(raw_options):
        label, text = strip_label(opt, expected=LETTERS[i])
        if label != LETTERS[i]:
            problems.append(
                Problem(
                    str(file),
                    item_id,
                    f"option {i + 1} {opt!r} is not labelled {LETTERS[i]}; it is used as option {LETTERS[i]}",
                    severity="warning",
                    kind="malformed",
                )
            )
        choices.append(text)

    answer_index = _match_answer(str(rec["answer"]), choices, item_id, file, problems)
    if answer_index is None:
        return None

    images, item_problems = _image(rec.get("img"), item_id, file, root, problems)
    if images is None:
        return None
    metadata = {k: v for k, v in rec.items() if k not in _CORE_KEYS}
    metadata["answer_raw"] = rec["answer"]
    # As written ("A) text"): the owner protocol renders them the way the official code does.
    metadata["options_raw"] = list(raw_options)
    return Item(
        id=item_id,
        benchmark="pathmmu",
        split=split,
        task=subset,
        subset=subset,
        question=str(rec["question"]).strip(),
        choices=tuple(choices),
        answer_index=answer_index,
        images=images,
        metadata=metadata,
        problems=item_problems,
    )


def _match_answer(
    answer: str, choices: list[str], item_id: str, file: Path, problems: list[Problem]
) -> int | None:
    """Resolve the answer to an option index; ``None`` (with an error Problem) when impossible."""
    parsed = parse_answer_label(answer)
    by_text = [i for i, c in enumerate(choices) if normalize_text(c) == normalize_text(answer)]
    if parsed.letter is not None and LETTERS.index(parsed.letter) < len(choices):
        index = LETTERS.index(parsed.letter)
        if parsed.text is not None and normalize_text(parsed.text) != normalize_text(choices[index]):
            problems.append(
                Problem(
                    str(file),
                    item_id,
                    f"answer {answer!r} names option {parsed.letter} but its text differs from "
                    f"{choices[index]!r}; the letter {parsed.letter} is kept as the answer",
                    severity="warning",
                    kind="answer_mismatch",
                )
            )
        return index
    # No usable label: the answer may be an option's text (which can itself look like "T. cruzi").
    if not by_text and parsed.text is not None:
        by_text = [i for i, c in enumerate(choices) if normalize_text(c) == normalize_text(parsed.text)]
    if len(by_text) == 1:
        return by_text[0]
    problems.append(
        Problem(
            str(file),
            item_id,
            f"answer {answer!r} matches none of the {len(choices)} options; "
            "the record cannot be scored and was skipped",
            kind="answer_mismatch",
        )
    )
    return None


def _image(
    img: Any, item_id: str, file: Path, root: Path, problems: list[Problem]
) -> tuple[tuple[ImageRef, ...] | None, tuple[str, ...]]:
    """The item's image reference and problems; ``(None, …)`` when the record must be skipped."""
    if not isinstance(img, str) or not img.strip():
        problems.append(
            Problem(
                str(file),
                item_id,
                "record names no image file (img); kept as missing_image",
                severity="warning",
                kind="missing_image",
            )
        )
        return (), ("missing_image",)
    # The key is the path relative to the data folder, the same for every question on the image.
    # Joining onto images/ itself (not the data folder) keeps a symlinked images/ folder usable.
    relative = f"images/{img.strip()}"
    try:
        path = safe_join(root / "images", img.strip())
    except UnsafePathError as exc:
        problems.append(Problem(str(file), item_id, f"{exc}; record skipped", kind="unsafe_path"))
        return None, ()
    ref = ImageRef(key=relative, path=path)
    if not path.is_file():
        problems.append(
            Problem(
                str(file),
                item_id,
                f"image file {relative} not found; the item is kept and counted as missing_image",
                severity="warning",
                kind="missing_image",
            )
        )
        return (ref,), ("missing_image",)
    return (ref,), ()


def pathmmu_option_text(raw: str) -> str:
    """An option's text as PathMMU's ``construct_prompt`` renders it: ``raw.split(")")[1].strip()``.

    The official code (PathMMU-Benchmark/PathMMU ``eval/utils/data_utils.py``) keeps only what lies
    between the label's ")" and the option's *second* ")": ``"A) Carcinoma (invasive) type"``
    becomes ``"Carcinoma (invasive"``. The owner protocol reproduces that cut. An option with no
    ")" at all, which the official code cannot render (it skips the question), is kept whole.
    """
    parts = raw.split(")")
    return parts[1].strip() if len(parts) > 1 else raw.strip()


def _raw_options(item: Item) -> list[str]:
    # The loader keeps the options as written in data.json ("A) text"); items from elsewhere get
    # the "A) " label the released data always carries.
    raw = item.metadata.get("options_raw")
    if isinstance(raw, list) and len(raw) == len(item.choices) and all(isinstance(o, str) for o in raw):
        return list(raw)
    return [f"{letter(i)}) {c}" for i, c in enumerate(item.choices)]


#: The owner-row group of PathMMU's pooled ``test`` + ``test_tiny`` rows (the paper's "ALL").
PATHMMU_ALL = "ALL"
_PATHMMU_POOLED = ("test_tiny", "test")


def _owner_rows(records: Sequence[Record], builder: OwnerRows) -> list[dict[str, Any]]:
    """Instance-weighted accuracy per subset and overall, per split, plus the paper's ALL rows."""
    order = SUBSETS
    regrouped = [Record(**{**r.to_dict(), "task": r.subset or r.task}) for r in records]
    rows = builder.per_task(regrouped, order)
    # The paper's ALL = test ∪ test_tiny, per subset and overall; only where both splits are
    # present (with one of them, "ALL" would silently be Tiny or the rest of the test set).
    pooled = [r for r in regrouped if r.split in _PATHMMU_POOLED]
    splits_of: dict[str, set[str]] = defaultdict(set)
    for r in pooled:
        splits_of[r.task].add(r.split)
    if {s for ss in splits_of.values() for s in ss} != set(_PATHMMU_POOLED):
        return rows
    both = [t for t in order if len(splits_of.get(t, ())) == 2]
    both += sorted(t for t, ss in splits_of.items() if len(ss) == 2 and t not in order)
    all_rows = [builder.instance(PATHMMU_ALL, t, [r for r in pooled if r.task == t]) for t in both]
    all_rows.append(builder.instance(PATHMMU_ALL, "overall", pooled))
    for row in all_rows:
        row["pooled_splits"] = list(_PATHMMU_POOLED)
    # Beside Tiny and test, before any other split (val).
    at = max(i for i, row in enumerate(rows) if row["split_or_group"] in _PATHMMU_POOLED) + 1
    return rows[:at] + all_rows + rows[at:]

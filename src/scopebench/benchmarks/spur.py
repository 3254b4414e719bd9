"""SPUR: scientific-figure perception, understanding and reasoning questions (BUPT-Reasoning-Lab).

Data layout (the ``dataset/`` folder of https://github.com/BUPT-Reasoning-Lab/SPUR)::

    <folder>/single-panel_qa_pair.json     perception questions on one panel
    <folder>/multi-panel_qa_pair.json      understanding questions across panels
    <folder>/reason_qa_pair.json           reasoning questions on the figure and its text
    <folder>/[images/|origin_images/|oringin_images/]<figure id>.png|.jpg|.jpeg

Each record has ``QUESTION_INDEX`` (``<paper>_<figure>_<n>``), ``QUESTION_TAG``, ``QUESTION``,
``OPTION`` (every option in one string), ``ANSWER`` (a letter) and ``EVIDENCE``, plus
``figure_type`` / ``experiment_type`` and, in the multi-panel file, generation leftovers
(``is_success``, ``raw_response``, ``relation_number``); all of them are kept in metadata. The
figure is named after the question index without its last ``_<n>``.

Task mapping — *inferred*: the SPUR paper names seven abilities but publishes no mapping from the
files' tags to them, so this one is read off the tag names:

=============  ====================================================  ======  ==================
file           tag (brackets, prefixes and case ignored)             task    perception_level
=============  ====================================================  ======  ==================
single-panel   Numerical                                             NP      perception
single-panel   Graphical                                             MP      perception
single-panel   Spatial                                               IL      perception
multi-panel    Numerical, Morphological, Spatial                     TA      understanding
multi-panel    Cross-Modality relation                               HI      understanding
reason         Qualitative                                           Qual    reasoning
reason         Quantitative                                          Quant   reasoning
=============  ====================================================  ======  ==================

A record with a tag outside this table is skipped with an ``unknown_tag`` problem naming the tag.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scopebench.benchmarks._options import split_labelled_options
from scopebench.benchmarks.base import Benchmark, LoadedBenchmark, OwnerPrompt, Problem, fingerprint_files
from scopebench.benchmarks.registry import register_benchmark
from scopebench.errors import DataFormatError, DataNotFoundError, UnsafePathError
from scopebench.items import LETTERS, ImageRef, Item, Record, letter, safe_join

if TYPE_CHECKING:
    from scopebench.scoring.aggregate import OwnerRows

__all__ = ["FILES", "SPUR_TASKS", "TASK_MAP", "SpurBenchmark", "figure_id_of", "normalize_tag"]

#: SPUR's tasks in the paper's order (the owner aggregation's rows).
SPUR_TASKS: tuple[str, ...] = ("NP", "MP", "IL", "TA", "HI", "Qual", "Quant")

logger = logging.getLogger(__name__)

#: File kind → (file name, perception level).
FILES: dict[str, tuple[str, str]] = {
    "single": ("single-panel_qa_pair.json", "perception"),
    "multi": ("multi-panel_qa_pair.json", "understanding"),
    "reason": ("reason_qa_pair.json", "reasoning"),
}

#: (file kind, normalized tag) → task. Inferred from the tag names; see the module docstring.
TASK_MAP: dict[tuple[str, str], str] = {
    ("single", "numerical"): "NP",
    ("single", "graphical"): "MP",
    ("single", "spatial"): "IL",
    ("multi", "numerical"): "TA",
    ("multi", "morphological"): "TA",
    ("multi", "spatial"): "TA",
    ("multi", "cross-modality relation"): "HI",
    ("reason", "qualitative"): "Qual",
    ("reason", "quantitative"): "Quant",
}

_IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")
_CORE_KEYS = frozenset({"QUESTION_INDEX", "QUESTION_TAG", "QUESTION", "OPTION", "ANSWER", "EVIDENCE"})
# Tag prefixes naming the file kind, which the file itself already tells.
_TAG_PREFIX = re.compile(
    r"^(?:single[-_ ]?(?:image|panel)|multi[-_ ]?(?:image|panel)|reason(?:ing)?)\s*[-_:]?\s*"
)
_INDEX_RE = re.compile(r"^(?P<figure>.+)_(?P<n>\d+)$")
_ANSWER_RE = re.compile(r"^\s*[\[\(]?\s*([A-Za-z])\s*[\]\)]?\s*\.?\s*$")


def normalize_tag(tag: str) -> str:
    """Reduce a SPUR tag to its ability name: ``"[Single-image - Numerical]"`` → ``"numerical"``."""
    text = " ".join(tag.strip().strip("[]").split()).casefold()
    return _TAG_PREFIX.sub("", text).strip(" -_")


def figure_id_of(question_index: str) -> str | None:
    """The figure's file stem: the question index without its last ``_<n>`` (``None`` if absent)."""
    m = _INDEX_RE.match(question_index.strip())
    return m.group("figure") if m else None


# SPUR api_test/base.py SYSTEM_INSTRUCTION, verbatim (including its odd spacing and the stray "]").
_SPUR_SYSTEM = (
    " You are a helpful assistant specialized in analyzing academic images. Please answer this question."
    " Input: {question} {options} {image}"
    " Answer with the option’s letter from the given choices.Please solve the problem step by step."
    " Make sure to follow this output format strictly:"
    " <ANSWER> the correct answer (A or B or C or D or E) of question here] </ANSWER>"
    " <EVIDENCE> the explain of your answer here </EVIDENCE>"
)


@register_benchmark("spur")
class SpurBenchmark(Benchmark):
    """Loader for SPUR's three question files and their figure images."""

    title = "SPUR — scientific figure perception (single panel), understanding (multi panel), reasoning"
    splits = ("test",)
    tasks = ("NP", "MP", "IL", "TA", "HI", "Qual", "Quant")
    default_split = "test"
    data_help = (
        "A folder holding SPUR's single-panel_qa_pair.json, multi-panel_qa_pair.json and "
        "reason_qa_pair.json, with the figure images (<figure id>.png/.jpg/.jpeg, the question index "
        "without its last _<n>) in the folder itself or an images/ (or the repo's oringin_images/) "
        "subfolder. Get them from the "
        "dataset/ folder of https://github.com/BUPT-Reasoning-Lab/SPUR. A missing question file is "
        "reported and the others are loaded; questions whose figure is missing are kept as missing_image."
    )

    # Owner protocol (SPUR's api_test code) -------------------------------------------------------

    published_key = "spur"
    answer_prefix = "<ANSWER>"
    owner_description = (
        "SPUR: accuracy per task (NP, MP, IL, TA, HI, Qual, Quant) and instance-weighted overall"
    )

    def owner_prompt(self, item: Item) -> OwnerPrompt:
        """SPUR's system instruction and question for ``item``."""
        # The released code sends QUESTION + "\n {Options}:" + the raw OPTION string; we render the
        # parsed options one per line with their letters, which carries the same content.
        opts = " ".join(f"{letter(i)}. {c}" for i, c in enumerate(item.choices))
        return OwnerPrompt(f"{item.question}\n {{Options}}:{opts}", _SPUR_SYSTEM)

    def owner_rows(
        self, records: Sequence[Record], *, items: Mapping[str, Mapping[str, Any]], rows: OwnerRows
    ) -> list[dict[str, Any]]:
        """Accuracy per task NP, MP, IL, TA, HI, Qual, Quant and instance-weighted ``overall``."""
        return rows.per_task(records, SPUR_TASKS)

    def load(self, data: str | Path, split: str | None = None) -> LoadedBenchmark:
        """Load the three question files.

        Args:
            data: The folder holding the JSON files (and the images).
            split: Only ``test`` exists.

        Returns:
            Items in file order (single, multi, reason), with every problem found.

        Raises:
            DataNotFoundError: When none of the three files is in the folder.
            DataFormatError: When a file is not a JSON list.
        """
        self.check_split(split)
        root = self.require_path(data, "SPUR data folder")
        if root.is_file():
            root = root.parent  # a path to one of the JSON files names its folder
        images = _index_images(root)
        items: list[Item] = []
        problems: list[Problem] = []
        read: list[Path] = []
        for kind, (name, level) in FILES.items():
            path = root / name
            if not path.is_file():
                problems.append(
                    Problem(
                        file=str(path),
                        record="-",
                        message=f"{name} not found; its {level} questions are not loaded "
                        "(get it from dataset/ of https://github.com/BUPT-Reasoning-Lab/SPUR)",
                        severity="warning",
                        kind="missing_file",
                    )
                )
                continue
            read.append(path)
            records = _read_list(path)
            items.extend(_load_file(records, kind, level, path, root, images, problems))
        if not read:
            raise DataNotFoundError(
                f"no SPUR question files in {root}; expected {', '.join(n for n, _ in FILES.values())} "
                "from dataset/ of https://github.com/BUPT-Reasoning-Lab/SPUR"
            )
        missing = sum(1 for it in items if "missing_image" in it.problems)
        if missing:
            logger.warning("SPUR: %d of %d items have no figure image in %s", missing, len(items), root)
        return LoadedBenchmark(
            name=self.name,
            data=str(data),
            items=items,
            problems=problems,
            fingerprint=fingerprint_files(read),
        )


def _read_list(path: Path) -> list[Any]:
    try:
        with open(path, encoding="utf-8") as fh:
            raw = json.load(fh)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataFormatError(
            f"cannot read {path} as JSON: {exc}; re-download it from SPUR's dataset/"
        ) from exc
    if not isinstance(raw, list):
        raise DataFormatError(f"{path} is not a SPUR question file: expected a JSON list of records")
    return raw


#: Where figures are looked for, in order: our documented ``images/``, the released code's
#: ``origin_images/`` and the GitHub repo's actual folder name ``oringin_images/`` (sic).
IMAGE_SUBFOLDERS = ("images", "origin_images", "oringin_images")


def _index_images(root: Path) -> dict[str, str]:
    """Map each image stem to its path relative to ``root``, listing each folder once.

    ``images/`` wins over the folder itself, and .png over .jpg over .jpeg, so the choice is
    deterministic when a figure exists twice.
    """
    found: dict[str, str] = {}
    folders = [(root / sub, f"{sub}/") for sub in IMAGE_SUBFOLDERS] + [(root, "")]
    for folder, prefix in folders:
        if not folder.is_dir():
            continue
        entries = [e for e in folder.iterdir() if e.suffix.lower() in _IMAGE_SUFFIXES and e.is_file()]
        for entry in sorted(entries, key=lambda e: (e.stem, _IMAGE_SUFFIXES.index(e.suffix.lower()), e.name)):
            found.setdefault(entry.stem, prefix + entry.name)
    return found


def _load_file(
    records: list[Any],
    kind: str,
    level: str,
    file: Path,
    root: Path,
    images: Mapping[str, str],
    problems: list[Problem],
) -> list[Item]:
    items: list[Item] = []
    seen: set[str] = set()
    for pos, rec in enumerate(records):
        where = f"record {pos}"
        if not isinstance(rec, dict):
            problems.append(
                Problem(str(file), where, "record is not a JSON object; skipped", kind="malformed")
            )
            continue
        absent = [
            k for k in ("QUESTION_INDEX", "QUESTION_TAG", "QUESTION", "OPTION", "ANSWER") if not rec.get(k)
        ]
        if absent:
            problems.append(
                Problem(str(file), where, f"record lacks {', '.join(absent)}; skipped", kind="malformed")
            )
            continue
        index = rec["QUESTION_INDEX"]
        # Upstream indexes are text ("2010027917_6_1"); an int is accepted, anything else (a
        # boolean, a float, a list) is refused rather than turned into an id by str().
        if isinstance(index, bool) or not isinstance(index, (int, str)):
            problems.append(
                Problem(
                    str(file),
                    where,
                    f"QUESTION_INDEX is {json.dumps(index)}, which is not text or an integer; record skipped",
                    kind="bad_id",
                )
            )
            continue
        qid = str(index).strip()
        item_id = f"spur/{kind}/{qid}"
        if item_id in seen:
            problems.append(
                Problem(
                    str(file),
                    qid,
                    "QUESTION_INDEX repeats in this file; the later record was skipped",
                    kind="duplicate",
                )
            )
            continue
        item = _build_item(rec, qid, item_id, kind, level, file, root, images, problems)
        if item is not None:
            seen.add(item_id)
            items.append(item)
    return items


def _build_item(
    rec: Mapping[str, Any],
    qid: str,
    item_id: str,
    kind: str,
    level: str,
    file: Path,
    root: Path,
    images: Mapping[str, str],
    problems: list[Problem],
) -> Item | None:
    tag = str(rec["QUESTION_TAG"])
    task = TASK_MAP.get((kind, normalize_tag(tag)))
    if task is None:
        known = sorted(name for (k, name) in TASK_MAP if k == kind)
        problems.append(
            Problem(
                str(file),
                qid,
                f"unknown QUESTION_TAG {tag!r} for the {kind} file (known tag names: {', '.join(known)}); "
                "skipped",
                kind="unknown_tag",
            )
        )
        return None

    scored = _choices_and_answer(rec, qid, file, problems)
    if scored is None:
        return None
    choices, answer_index = scored
    figure_id = figure_id_of(qid)
    if figure_id is None:
        problems.append(
            Problem(
                str(file),
                qid,
                "QUESTION_INDEX does not end with _<number>; the whole index is used as the figure name",
                severity="warning",
                kind="malformed",
            )
        )
        figure_id = qid
    found = _image(figure_id, qid, file, root, images, problems)
    if found is None:
        return None
    image, missing = found
    metadata: dict[str, Any] = {
        "tag": tag,
        "perception_level": level,
        "figure_id": figure_id,
        "evidence": rec.get("EVIDENCE"),
    }
    metadata.update({k: v for k, v in rec.items() if k not in _CORE_KEYS})
    return Item(
        id=item_id,
        benchmark="spur",
        split="test",
        task=task,
        subset=kind,
        question=str(rec["QUESTION"]).strip(),
        choices=tuple(choices),
        answer_index=answer_index,
        images=(image,),
        metadata=metadata,
        problems=("missing_image",) if missing else (),
    )


def _choices_and_answer(
    rec: Mapping[str, Any], qid: str, file: Path, problems: list[Problem]
) -> tuple[list[str], int] | None:
    """The record's options and answer index; ``None`` (with the problem) when it cannot be scored."""
    choices = split_labelled_options(str(rec["OPTION"]))
    if len(choices) < 2:
        problems.append(
            Problem(
                str(file),
                qid,
                f"OPTION holds {len(choices)} labelled option(s) ({str(rec['OPTION'])[:80]!r}); "
                "the record cannot be scored and was skipped",
                kind="malformed",
            )
        )
        return None
    m = _ANSWER_RE.match(str(rec["ANSWER"]))
    answer_index = LETTERS.index(m.group(1).upper()) if m else None
    if answer_index is None or answer_index >= len(choices):
        problems.append(
            Problem(
                str(file),
                qid,
                f"ANSWER {rec['ANSWER']!r} is not one of the letters A–{LETTERS[len(choices) - 1]} of its "
                f"{len(choices)} options; the record cannot be scored and was skipped",
                kind="answer_mismatch",
            )
        )
        return None
    return list(choices), answer_index


def _image(
    figure_id: str, qid: str, file: Path, root: Path, images: Mapping[str, str], problems: list[Problem]
) -> tuple[ImageRef, bool] | None:
    """The figure's reference and whether it is missing; ``None`` when it would escape ``root``."""
    relative = images.get(figure_id)
    missing = relative is None
    if relative is None:
        # Not found under any suffix: refer to the name the user is most likely to provide.
        relative = f"images/{figure_id}.png" if (root / "images").is_dir() else f"{figure_id}.png"
    head, _, tail = relative.partition("/")
    # Only a known image subfolder is split off; anything else (e.g. "../x") is joined whole so
    # that safe_join can refuse it.
    folder, name = (head, tail) if head in IMAGE_SUBFOLDERS else ("", relative)
    try:
        # Joined onto the image folder itself, so a symlinked images/ folder stays usable.
        path = safe_join(root / folder if folder else root, name)
    except UnsafePathError as exc:
        problems.append(Problem(str(file), qid, f"{exc}; record skipped", kind="unsafe_path"))
        return None
    if missing:
        problems.append(
            Problem(
                str(file),
                qid,
                f"figure {figure_id} (.png/.jpg/.jpeg) not found in {root} or its "
                f"{'/, '.join(IMAGE_SUBFOLDERS)}/ folders; "
                "the item is kept and counted as missing_image",
                severity="warning",
                kind="missing_image",
            )
        )
    return ImageRef(key=relative, path=path), missing

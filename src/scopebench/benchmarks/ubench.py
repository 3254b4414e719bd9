"""μ-Bench perception (``jnirschl/uBench``): microscopy questions at two granularities, and detection.

One dataset row is one image with its metadata, a ``questions`` dict and a ``captions`` dict
(schema in ``tests/fixtures/ubench/SCHEMA.md``). A row yields:

* one multiple-choice item per question in ``questions`` — the coarse-grained ``modality``,
  ``submodality``, ``domain``, ``subdomain`` and ``stain`` and the fine-grained
  ``classification`` — each with its own ``options`` and ``answer_idx`` (a string such as ``"1"``
  in the data). Item id ``ubench/<image_id>/<task>``, subset = the source ``dataset`` column;
* one ``detection`` item when the row has boxes (``bbox``, else ``polygon``, else the older
  revision's ``instances``): id ``ubench/<image_id>/detection``, or
  ``ubench/<image_id>/detection/<class>`` when the boxes carry several class names (one item per
  class, as μ-Bench's own detection evaluation asks one question per (image, class)).

Captions. ``captions`` is keyed ``<task>_<n>``; each entry holds one templated sentence per option
(``"A micrograph acquired through {class}."``) and its own ``answer_idx``. An item's
:attr:`~scopebench.items.Item.captions` are those of the lowest-numbered entry whose option count
and answer agree with the question; metadata keeps which one (``caption_key``) and every variant
of the task (``caption_variants``). When no entry agrees the item has no captions and a
``caption_mismatch`` warning says so.

Cognition. μ-Bench Cognition (121 expert questions on 54 images; §3, App. C.5) is not public. A
user who has it in μ-Bench's schema — rows whose ``questions["cognition"]`` holds ``question``,
``options`` (six, one of them "None of the above") and ``answer_idx`` — loads it here: one item
``ubench/<image_id>/cognition`` per row, task and granularity ``cognition`` (the owner aggregation's
cognition column). Its captions for contrastive models are the question followed by each option,
as μ-Bench scores cognition (App. D), unless the row carries ``captions["cognition_<n>"]``. A
question without six options or without "None of the above" is kept with a ``cognition_format``
warning.

A null question with captions. When ``questions[<task>]`` is null but the row has captions for
that task, the item is still built — contrastive models are evaluated on the captions alone, which
is how μ-Bench scores them — with the choices recovered from the caption sentences by undoing the
template (``"…through light microscopy."`` → ``"light microscopy"``), the generic question
:data:`CAPTION_QUESTION` for generative models, and ``metadata["question_source"] = "captions"``
(``"questions"`` otherwise) so such items can be filtered out. The row's ``null_field`` warning
names it. Without captions a null question yields no item (and the warning says that too).

Box format — *assumed*, the Hub schema does not say: pixel coordinates of the original image.
A ``bbox`` entry is ``{"x1", "y1", "x2", "y2"}`` (optionally under ``"points"``, with a
``"className"``), the SuperAnnotate layout that μ-Bench's detection evaluation reads
(``Ale9806/eVLLM``, ``src/evlm/inference/generative_inference_detection.py``), or a list
``[x1, y1, x2, y2]``. A ``polygon`` entry is a flat ``[x1, y1, x2, y2, …]`` list, a list of
``[x, y]`` pairs or of ``{"x", "y"}`` points; its target is the bounding box of its points. Boxes
reaching more than a pixel outside the image are kept with a ``box_out_of_range`` warning. The class
asked for is the box's ``className`` (else the row's ``label_name``), except in the datasets where
the official evaluation names the objects itself (:data:`DETECTION_CLASS_PROMPTS`).
"""

from __future__ import annotations

import functools
import io
import logging
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scopebench.benchmarks._hf import (
    HFData,
    ImageColumn,
    LazyImage,
    gc_paused,
    open_hf_data,
    read_text_columns,
    source_problems,
)
from scopebench.benchmarks._ubench_boxes import _decode, box_from_bbox, box_from_polygon
from scopebench.benchmarks.base import Benchmark, LoadedBenchmark, OwnerPrompt, Problem, Severity
from scopebench.benchmarks.registry import register_benchmark
from scopebench.errors import DataFormatError
from scopebench.items import LETTERS, Box, ImageRef, Item, Record, letter

if TYPE_CHECKING:
    from scopebench.scoring.aggregate import OwnerRows

__all__ = [
    "CAPTION_QUESTION",
    "COARSE_TASKS",
    "COGNITION_OPTIONS",
    "COGNITION_TASKS",
    "DETECTION_CLASS_PROMPTS",
    "FINE_TASKS",
    "HUB_ID",
    "UbenchBenchmark",
    "box_from_bbox",
    "box_from_polygon",
    "untemplate",
]

logger = logging.getLogger(__name__)

#: The Hugging Face dataset id of μ-Bench perception.
HUB_ID = "jnirschl/uBench"
#: Coarse-grained perception questions, in the paper's order.
COARSE_TASKS: tuple[str, ...] = ("modality", "submodality", "domain", "subdomain", "stain")
#: Fine-grained perception questions.
FINE_TASKS: tuple[str, ...] = ("classification",)
#: μ-Bench Cognition (reasoning): not public; loaded when a user's rows carry ``questions["cognition"]``.
COGNITION_TASKS: tuple[str, ...] = ("cognition",)
#: Options a cognition question has in μ-Bench (§3: one correct, five distractors, one of which is
#: "None of the above"); other counts load with a ``cognition_format`` warning.
COGNITION_OPTIONS = 6
_PERCEPTION_TASKS = COARSE_TASKS + FINE_TASKS
_QUESTION_TASKS = _PERCEPTION_TASKS + COGNITION_TASKS
#: The question shown to generative models for an item built from captions alone.
CAPTION_QUESTION = "Which of the following best describes this image?"
#: Datasets whose detection class the official evaluation names itself (eVLLM
#: ``add_class_name_prompt``): their labels are cell states, the boxes are organelles or nuclei.
DETECTION_CLASS_PROMPTS: dict[str, str] = {
    "wu_et_al_2023": "mitochondria",
    "held_et_al_2010_galt": "nucleus",
    "held_et_al_2010_h2b": "nucleus",
    "held_et_al_2010_mt": "nucleus",
}

_IMAGE = "image"
# Columns read into Item fields rather than metadata (metadata keeps every scalar column).
_NESTED = ("questions", "captions", "bbox", "polygon", "instances")
_VARIANT_KEY = re.compile(r"^(?P<task>.+)_(?P<n>\d+)$")
_INT = re.compile(r"^\s*[+-]?\d+\s*$")
# Boxes may overhang the image by rounding; more than this many pixels is reported.
_BOX_SLACK = 1.0


@register_benchmark("ubench")
class UbenchBenchmark(Benchmark):
    """Loader for μ-Bench perception from the Hub, a ``save_to_disk`` folder or parquet/arrow files."""

    title = "μ-Bench perception — microscopy modality/domain/stain (coarse), classification (fine), detection"
    splits = ("test",)
    tasks = (*COARSE_TASKS, *FINE_TASKS, *COGNITION_TASKS, "detection")
    default_split = "test"
    data_help = (
        f"The Hugging Face dataset {HUB_ID} (17,315 images, split test; CC-BY-SA-4.0). Pass the id "
        f"itself (needs internet), a folder written by datasets.load_dataset({HUB_ID!r}).save_to_disk(DIR), "
        "the folder of its Arrow shards as the Hub repository lays them out (perception/0.1.0/"
        "ubench-test-0000N-of-00007.arrow), or parquet files of it. On an offline machine, download "
        "elsewhere with `huggingface-cli download jnirschl/uBench --repo-type dataset --local-dir DIR` "
        "and pass DIR/perception/0.1.0."
    )

    # Owner protocol (eVLLM, the μ-Bench authors' code) -----------------------------------------

    published_key = "ubench"
    owner_macro_rows = True
    owner_description = (
        "μ-Bench: macro-average over tasks (coarse, fine, cognition; all items and pathology only); "
        "CI by stratified bootstrap within tasks (percentile; basic, as eVLLM, under --protocol owner)"
    )

    def owner_prompt(self, item: Item) -> OwnerPrompt:
        """The generative prompt of eVLLM (the μ-Bench authors' code) for ``item``, byte for byte."""
        # Byte for byte as Ale9806/eVLLM src/evlm/inference/generative_inference.py builds it:
        # prompt + "\n" + "Question:" + question + "\n" + "\n".join(options), each option prefixed
        # "A) " by add_alphabet (src/evlm/inference/utils.py). No space after "Question:" and no
        # trailing newline (the paper's Fig. 19 shows one; the code has none).
        opts = "\n".join(f"{letter(i)}) {c}" for i, c in enumerate(item.choices))
        return OwnerPrompt(
            f"Answer with a single letter, no extra details.\nQuestion:{item.question}\n{opts}"
        )

    def owner_rows(
        self, records: Sequence[Record], *, items: Mapping[str, Mapping[str, Any]], rows: OwnerRows
    ) -> list[dict[str, Any]]:
        """Macro-averages over tasks for coarse, fine and cognition, on all items and pathology only.

        Coarse: modality, submodality, domain, subdomain, stain; fine: classification; cognition:
        any other multiple-choice task. The pathology view keeps items whose metadata ``domain`` is
        ``pathology``. The 95% CI is a stratified percentile bootstrap, or under ``--protocol
        owner`` μ-Bench's own basic bootstrap (:func:`~scopebench.scoring.aggregate.macro_row`).
        """

        def is_pathology(r: Record) -> bool:
            meta = items.get(r.item_id, {}).get("metadata") or {}
            return str(meta.get("domain", "")).strip().lower() == "pathology"

        groups = {
            "coarse": [r for r in records if r.task in COARSE_TASKS],
            "fine": [r for r in records if r.task in FINE_TASKS],
            "cognition": [r for r in records if r.task not in COARSE_TASKS + FINE_TASKS],
        }
        out = []
        for name, recs in groups.items():
            for view, sel in (("all", recs), ("pathology", [r for r in recs if is_pathology(r)])):
                row = rows.macro(name, view, sel)
                if row is not None:
                    out.append(row)
        return out

    def load(self, data: str | Path, split: str | None = None) -> LoadedBenchmark:
        """Load μ-Bench rows into items, images left lazy.

        Args:
            data: A Hub dataset id, a ``save_to_disk`` folder, a folder of parquet/arrow files or
                one such file.
            split: Only ``test`` exists.

        Returns:
            Items row by row (the question tasks in :attr:`tasks` order, then detection), with
            every problem found.

        Raises:
            DataNotFoundError: When the data cannot be found (or the Hub reached).
            DataFormatError: When the data are not μ-Bench rows (no image or question columns).
        """
        chosen = self.check_split(split) or "test"
        if not str(data).strip():
            data = HUB_ID  # no --data: the official `load_dataset("jnirschl/uBench", split="test")`
        src = open_hf_data(data, chosen, what="μ-Bench data", hub_help=self.data_help)
        problems = source_problems(src, chosen)
        builder = _RowBuilder(src, chosen, problems)
        items = builder.build_all()
        logger.info("μ-Bench: %d items from %d rows of %s", len(items), len(src.dataset), src.source)
        return LoadedBenchmark(
            name=self.name, data=str(data), items=items, problems=problems, fingerprint=src.fingerprint
        )


# --- parsing helpers ------------------------------------------------------------------------------


def _as_index(value: Any) -> int | None:
    """``answer_idx`` as an int (the data store strings such as ``"1"``); ``None`` if not a number."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and _INT.match(value):
        return int(value)
    return None


def _options(value: Any) -> tuple[str, ...] | None:
    """The options as stripped texts, or ``None`` when they are not 2–26 non-empty strings."""
    # Rows come from Arrow as plain lists and dicts; concrete type checks keep 17k rows fast.
    if not isinstance(value, (list, tuple)) or not 2 <= len(value) <= len(LETTERS):
        return None
    try:
        out = tuple([o.strip() for o in value])
    except AttributeError:  # a null (or otherwise non-text) option
        return None
    return out if all(out) else None


def untemplate(template: str | None, sentence: str) -> str:
    """Recover the class from a caption: ``("A … through {class}.", "A … through EM.")`` → ``"EM"``.

    Sentences that do not follow the template (``"none of the above"``) come back unchanged.
    """
    if not template or "{class}" not in template:
        return sentence
    head, _, tail = template.partition("{class}")
    pattern = re.escape(head) + "(?P<cls>.+?)" + re.escape(tail)
    m = re.fullmatch(pattern, sentence.strip(), flags=re.DOTALL)
    return m.group("cls").strip() if m else sentence


@functools.lru_cache(maxsize=256)
def _variant_key(key: str) -> tuple[str, int] | None:
    """``"modality_1"`` → ``("modality", 1)``; ``None`` for a key without a ``_<n>`` suffix.

    Cached: every row repeats the same few struct keys.
    """
    m = _VARIANT_KEY.match(key)
    return (m.group("task"), int(m.group("n"))) if m else None


def _image_size(data: bytes) -> tuple[int, int] | None:
    """Width and height from the image header only, or ``None`` when unreadable."""
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as img:
            return img.size
    except Exception:  # a broken image is reported when a model asks for it, not here
        return None


def _float32_tidy(value: Any) -> Any:
    """``0.10000000149011612`` (a float32 read as float64) → ``0.1``, the value as written."""
    if isinstance(value, float):
        import numpy as np

        return float(str(np.float32(value)))
    return value


# --- row → items ----------------------------------------------------------------------------------


class _RowBuilder:
    """Turns the dataset's rows into items, recording every problem against the row's image id."""

    def __init__(self, src: HFData, split: str, problems: list[Problem]) -> None:
        from datasets import ClassLabel, Value

        self.src = src
        self.split = split
        self.problems = problems
        features = dict(src.dataset.features)
        if _IMAGE not in features:
            raise DataFormatError(
                f"{src.source} is not μ-Bench data: it has no {_IMAGE!r} column "
                f"(columns: {', '.join(features)}); pass {HUB_ID} or a copy of it"
            )
        if "questions" not in features and "captions" not in features:
            raise DataFormatError(
                f"{src.source} is not μ-Bench perception data: it has neither 'questions' nor "
                f"'captions' (columns: {', '.join(features)})"
            )
        self.scalars = [
            name for name, f in features.items() if isinstance(f, (Value, ClassLabel)) and name != _IMAGE
        ]
        self.float32 = {
            n for n in self.scalars if isinstance(features[n], Value) and features[n].dtype == "float32"
        }
        label = features.get("label")
        self.label_names: list[str] | None = list(label.names) if isinstance(label, ClassLabel) else None
        self.nested = [n for n in _NESTED if n in features]
        self.question_keys = self._struct_keys(features.get("questions"))
        self.images = ImageColumn(src.dataset, _IMAGE)
        self.seen: set[str] = set()
        self._report_unknown_keys(features)

    @staticmethod
    def _struct_keys(feature: Any) -> set[str] | None:
        """The fields of a struct column (``None`` when the column is not a struct)."""
        return set(feature) if isinstance(feature, dict) else None

    def _report_unknown_keys(self, features: Mapping[str, Any]) -> None:
        for column in ("questions", "captions"):
            keys = self._struct_keys(features.get(column))
            for key in sorted(keys or ()):
                m = _VARIANT_KEY.match(key)
                task = key if key in _QUESTION_TASKS else (m.group("task") if m else key)
                if task not in _QUESTION_TASKS:
                    self.problem(
                        f"{column}[{key!r}]",
                        f"{column} has entries under {key!r}, which is not a μ-Bench task "
                        f"({', '.join(_QUESTION_TASKS)}); they are not loaded",
                        severity="warning",
                        kind="unknown_task",
                    )
        keys = self.question_keys
        # Cognition is a separate (private) set: perception rows lack it, and a cognition-only file
        # lacks the perception tasks; only a file holding some perception task warns of the others.
        if keys is not None and any(k == t or k.startswith(f"{t}_") for t in _PERCEPTION_TASKS for k in keys):
            for task in _PERCEPTION_TASKS:
                if not any(k == task or k.startswith(f"{task}_") for k in keys):
                    self.problem(
                        f"questions[{task!r}]",
                        f"the data have no {task} questions at all; no {task} items are built "
                        "(except from captions)",
                        severity="warning",
                        kind="missing_field",
                    )

    def problem(
        self, record: str, message: str, *, severity: Severity = "error", kind: str = "malformed"
    ) -> None:
        """Record one problem against this data source."""
        self.problems.append(Problem(self.src.source, record, message, severity=severity, kind=kind))

    def build_all(self) -> list[Item]:
        """Build every row's items, in row order."""
        rows = read_text_columns(self.src.dataset, [*self.scalars, *self.nested])
        image_null = self.images.nulls()
        items: list[Item] = []
        with gc_paused():
            for i, row in enumerate(rows):
                items.extend(self.build_row(i, row, image_null[i]))
        return items

    def build_row(self, i: int, row: Mapping[str, Any], image_missing: bool) -> list[Item]:
        """The items of row ``i`` (none when the row cannot be used, with the problem recorded)."""
        nulls: list[str] = []
        raw_id = row.get("image_id")
        if isinstance(raw_id, str) and raw_id.strip():
            rid = raw_id.strip()
        else:
            rid = f"row-{i}"
            if "image_id" in row:
                nulls.append("image_id (items are named after the row number)")
        if rid in self.seen:
            self.problem(
                rid, f"image_id repeats an earlier row (row {i}); this row was skipped", kind="duplicate"
            )
            return []
        self.seen.add(rid)

        metadata: dict[str, Any] = {}
        for col in self.scalars:
            value = row.get(col)
            metadata[col] = _float32_tidy(value) if col in self.float32 else value
            if value is None and col != "image_id":
                nulls.append(col + (" (subset left empty)" if col == "dataset" else ""))
        if self.label_names is not None and isinstance(metadata.get("label"), int):
            idx = metadata["label"]
            metadata["label_class"] = self.label_names[idx] if 0 <= idx < len(self.label_names) else None
        subset = row.get("dataset") if isinstance(row.get("dataset"), str) else None

        images: tuple[ImageRef, ...] = ()
        flags: tuple[str, ...] = ()
        if image_missing:
            flags = ("missing_image",)
            self.problem(
                rid,
                "the row has no image; its items are kept and counted as missing_image",
                severity="warning",
                kind="missing_image",
            )
        else:
            key = f"ubench:{rid}"
            images = (ImageRef(key=key, loader=LazyImage(self.images, i, what=key)),)

        ctx = _RowContext(rid, self.split, subset, images, flags, metadata)
        out: list[Item] = []
        questions = row.get("questions")
        if questions is None and "questions" in row:
            nulls.append("questions (only caption items are built)")
        captions = row.get("captions")
        if captions is None and "captions" in row:
            nulls.append("captions (items have no captions)")
        variants = self._caption_variants(captions)
        for task in _QUESTION_TASKS:
            entry, qkey = self._question_entry(questions, task)
            task_captions = variants.get(task, [])
            if entry is None:
                if isinstance(questions, dict) and any(
                    k == task or k.startswith(f"{task}_") for k in questions
                ):
                    how = "item built from its captions" if task_captions else f"no {task} item"
                    nulls.append(f"questions[{task!r}] ({how})")
                if task_captions:
                    item = self._caption_item(ctx, task, task_captions)
                    if item is not None:
                        out.append(item)
                continue
            item = self._question_item(ctx, task, qkey, entry, task_captions)
            if item is not None:
                out.append(item)
        out.extend(self._detection_items(ctx, i, row))
        if nulls:
            self.problem(rid, "null fields: " + "; ".join(nulls), severity="warning", kind="null_field")
        return out

    # --- questions and captions -------------------------------------------------------------------

    @staticmethod
    def _question_entry(questions: Any, task: str) -> tuple[Mapping[str, Any] | None, str]:
        """The task's question: ``questions[task]``, else its lowest-numbered ``<task>_<n>`` entry."""
        if not isinstance(questions, dict):
            return None, task
        entry = questions.get(task)
        if isinstance(entry, dict):
            return entry, task
        numbered = sorted(
            (parsed[1], key)
            for key, value in questions.items()
            if (parsed := _variant_key(key)) is not None and parsed[0] == task and isinstance(value, dict)
        )
        if numbered:
            key = numbered[0][1]
            return questions[key], key
        return None, task

    @staticmethod
    def _caption_variants(captions: Any) -> dict[str, list[tuple[str, Mapping[str, Any]]]]:
        """Non-null caption entries by task, lowest ``<n>`` first."""
        found: dict[str, list[tuple[int, str, Mapping[str, Any]]]] = {}
        if isinstance(captions, dict):
            for key, entry in captions.items():
                parsed = _variant_key(key)
                if parsed is not None and isinstance(entry, dict):
                    found.setdefault(parsed[0], []).append((parsed[1], key, entry))
        return {task: [(k, e) for _, k, e in sorted(v, key=lambda t: t[0])] for task, v in found.items()}

    def _question_item(
        self,
        ctx: _RowContext,
        task: str,
        qkey: str,
        entry: Mapping[str, Any],
        variants: list[tuple[str, Mapping[str, Any]]],
    ) -> Item | None:
        record = f"{ctx.rid} questions[{qkey!r}]"
        choices = _options(entry.get("options"))
        question = entry.get("question")
        if choices is None or not isinstance(question, str) or not question.strip():
            self.problem(
                record,
                "the question needs a question text and 2–26 non-empty options; item skipped",
                kind="malformed",
            )
            return None
        answer = _as_index(entry.get("answer_idx"))
        if answer is None or not 0 <= answer < len(choices):
            self.problem(
                record,
                f"answer_idx {entry.get('answer_idx')!r} is not an option index (0–{len(choices) - 1}); "
                "the item cannot be scored and was skipped",
                kind="answer_mismatch",
            )
            return None
        metadata = ctx.metadata_for(task, "questions")
        if qkey != task:
            metadata["question_key"] = qkey
        if isinstance(entry.get("id"), str):
            metadata["question_id"] = entry["id"]
        captions: tuple[str, ...] | None = None
        if variants:
            metadata["caption_variants"] = {k: list(e.get("options") or []) for k, e in variants}
            for key, cap in variants:
                opts = _options(cap.get("options"))
                if (
                    opts is not None
                    and len(opts) == len(choices)
                    and _as_index(cap.get("answer_idx")) == answer
                ):
                    captions = opts
                    metadata["caption_key"] = key
                    break
            else:
                self.problem(
                    record,
                    f"none of the {task} captions ({', '.join(k for k, _ in variants)}) has "
                    f"{len(choices)} options with answer {answer}; the item has no captions",
                    severity="warning",
                    kind="caption_mismatch",
                )
        if task in COGNITION_TASKS:
            captions = self._cognition_captions(record, question.strip(), choices, captions, metadata)
        return ctx.item(task, question.strip(), choices, answer, captions, metadata)

    def _cognition_captions(
        self,
        record: str,
        question: str,
        choices: tuple[str, ...],
        captions: tuple[str, ...] | None,
        metadata: dict[str, Any],
    ) -> tuple[str, ...]:
        """Check a cognition question's format; its captions are question + option (μ-Bench App. D).

        μ-Bench scores contrastive models on cognition with each caption "the concatenation of the
        question string and the candidate answer string"; captions the row carries win.
        """
        has_none = any(" ".join(c.lower().rstrip(".").split()) == "none of the above" for c in choices)
        if len(choices) != COGNITION_OPTIONS or not has_none:
            self.problem(
                record,
                f"a μ-Bench cognition question has {COGNITION_OPTIONS} options, one of them "
                f"'None of the above'; this one has {len(choices)}"
                + ("" if has_none else " and no 'None of the above'")
                + "; the item is kept as given",
                severity="warning",
                kind="cognition_format",
            )
        if captions is not None:
            return captions
        metadata["caption_source"] = "question + option"
        return tuple(f"{question} {c}" for c in choices)

    def _caption_item(
        self, ctx: _RowContext, task: str, variants: list[tuple[str, Mapping[str, Any]]]
    ) -> Item | None:
        key, cap = variants[0]
        record = f"{ctx.rid} captions[{key!r}]"
        sentences = _options(cap.get("options"))
        answer = _as_index(cap.get("answer_idx"))
        if sentences is None or answer is None or not 0 <= answer < len(sentences):
            self.problem(
                record,
                f"the {task} question is null and its caption entry has no usable options/answer_idx "
                f"({cap.get('answer_idx')!r}); no {task} item",
                kind="answer_mismatch" if sentences is not None else "malformed",
            )
            return None
        template = cap.get("question") if isinstance(cap.get("question"), str) else None
        choices = tuple(untemplate(template, s) for s in sentences)
        metadata = ctx.metadata_for(task, "captions")
        metadata["caption_key"] = key
        metadata["caption_template"] = template
        metadata["caption_variants"] = {k: list(e.get("options") or []) for k, e in variants}
        return ctx.item(task, CAPTION_QUESTION, choices, answer, sentences, metadata)

    # --- detection --------------------------------------------------------------------------------

    def _detection_items(self, ctx: _RowContext, i: int, row: Mapping[str, Any]) -> list[Item]:
        default_label = str(row.get("label_name") or "object")
        parsed = self._boxes(ctx.rid, row, default_label)
        if parsed is None:
            return []
        source, boxes = parsed
        if not boxes:
            return []
        self._check_ranges(ctx, i, boxes)
        groups: dict[str, list[Box]] = {}
        for box in boxes:
            groups.setdefault(box.label, []).append(box)
        dataset = row.get("dataset")
        out = []
        for label, targets in groups.items():
            class_name = DETECTION_CLASS_PROMPTS.get(dataset, label) if isinstance(dataset, str) else label
            metadata = ctx.metadata_for("detection", None)
            metadata.update(class_name=class_name, box_label=label, box_source=source, n_boxes=len(targets))
            suffix = "detection" if len(groups) == 1 else f"detection/{label}"
            out.append(
                Item(
                    id=f"ubench/{ctx.rid}/{suffix}",
                    benchmark="ubench",
                    split=ctx.split,
                    task="detection",
                    subset=ctx.subset,
                    question=f"Locate every {class_name} in the image.",
                    images=ctx.images,
                    metadata=metadata,
                    kind="detection",
                    targets=tuple(targets),
                    problems=ctx.flags,
                )
            )
        return out

    def _boxes(self, rid: str, row: Mapping[str, Any], default_label: str) -> tuple[str, list[Box]] | None:
        """``(column, boxes)`` from the first non-empty geometry column; ``None`` after an error."""
        for column in ("bbox", "polygon", "instances"):
            raw = row.get(column)
            if not raw:
                continue
            if not isinstance(raw, Sequence) or isinstance(raw, (str, bytes)):
                self.problem(rid, f"{column} is not a list; no detection item", kind="malformed")
                return None
            try:
                if column == "bbox":
                    return column, [box_from_bbox(e, default_label) for e in raw]
                if column == "polygon":
                    return column, [box_from_polygon(e, default_label) for e in raw]
                return column, self._instance_boxes(raw, default_label)
            except (ValueError, TypeError) as exc:
                self.problem(
                    rid,
                    f"{column}: {exc}; the detection item was skipped (the row's questions are kept)",
                    kind="malformed",
                )
                return None
        return None

    @staticmethod
    def _instance_boxes(raw: Sequence[Any], default_label: str) -> list[Box]:
        """Boxes of the older revision's ``instances`` (SuperAnnotate: polygon/point/bbox per object)."""
        entries = [_decode(e) for e in raw]
        typed = [e for e in entries if isinstance(e, Mapping)]
        bboxes = [e for e in typed if e.get("type") == "bbox"]
        if bboxes:
            return [box_from_bbox(e, default_label) for e in bboxes]
        polygons = [e for e in typed if e.get("type") == "polygon"]
        if polygons:
            return [box_from_polygon(e, default_label) for e in polygons]
        raise ValueError("instances hold no 'bbox' or 'polygon' entries")

    def _check_ranges(self, ctx: _RowContext, i: int, boxes: Sequence[Box]) -> None:
        """Warn when boxes leave the image (reads the image header only; skipped without image)."""
        if not ctx.images:
            return
        try:
            size = _image_size(self.images.encoded(i, what=ctx.images[0].key))
        except Exception:  # an unreadable image is reported when a model needs it
            size = None
        if size is None:
            return
        w, h = size
        bad = [
            b
            for b in boxes
            if min(b.x1, b.y1) < -_BOX_SLACK or b.x2 > w + _BOX_SLACK or b.y2 > h + _BOX_SLACK
        ]
        if bad:
            b = bad[0]
            self.problem(
                ctx.rid,
                f"{len(bad)} of {len(boxes)} boxes reach outside the {w}×{h} image (first: "
                f"({b.x1:g}, {b.y1:g}, {b.x2:g}, {b.y2:g})); kept as given — check the coordinate format",
                severity="warning",
                kind="box_out_of_range",
            )


class _RowContext:
    """What every item of one row shares."""

    __slots__ = ("flags", "images", "metadata", "rid", "split", "subset")

    def __init__(
        self,
        rid: str,
        split: str,
        subset: str | None,
        images: tuple[ImageRef, ...],
        flags: tuple[str, ...],
        metadata: dict[str, Any],
    ) -> None:
        self.rid = rid
        self.split = split
        self.subset = subset
        self.images = images
        self.flags = flags
        self.metadata = metadata

    def metadata_for(self, task: str, question_source: str | None) -> dict[str, Any]:
        """A fresh copy of the row's metadata with the task's granularity."""
        out = dict(self.metadata)
        out["granularity"] = "coarse" if task in COARSE_TASKS else "fine" if task in FINE_TASKS else task
        if question_source is not None:
            out["question_source"] = question_source
        return out

    def item(
        self,
        task: str,
        question: str,
        choices: tuple[str, ...],
        answer: int,
        captions: tuple[str, ...] | None,
        metadata: dict[str, Any],
    ) -> Item:
        """A multiple-choice item of this row."""
        return Item(
            id=f"ubench/{self.rid}/{task}",
            benchmark="ubench",
            split=self.split,
            task=task,
            subset=self.subset,
            question=question,
            choices=choices,
            answer_index=answer,
            images=self.images,
            captions=captions,
            metadata=metadata,
            problems=self.flags,
        )

"""The μ-Bench row schema our build writes (``tests/fixtures/ubench/SCHEMA.md``), plus build columns.

The μ-Bench columns come first, in the viewer's order; the build's own provenance columns follow
(the ``ubench`` loader keeps every scalar column as item metadata).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "BUILD_COLUMNS",
    "GENERATED_FIELDS",
    "QUESTION_TASKS",
    "UBENCH_COLUMNS",
    "features",
]

#: The question tasks, as the ``ubench`` loader names them.
QUESTION_TASKS: tuple[str, ...] = (
    "modality",
    "submodality",
    "domain",
    "subdomain",
    "stain",
    "classification",
)
#: μ-Bench's columns in the viewer's order (``label`` is a ClassLabel, ``image`` an Image).
UBENCH_COLUMNS: tuple[str, ...] = (
    "image_id", "image", "label", "label_name", "dataset", "domain", "institution", "license",
    "microns_per_pixel", "modality", "ncbitaxon_id", "ncbitaxon_name", "pmid", "split", "stain",
    "subdomain", "submodality", "synthetic", "captions", "questions",
)  # fmt: skip
#: Provenance columns the build adds (strings unless noted).
BUILD_COLUMNS: tuple[str, ...] = (
    "source_path", "pixel_md5", "file_sha256", "dhash", "dup_group", "conversion", "source_format",
    "width", "height", "bit_depth", "channels", "modality_id", "submodality_id",
)  # fmt: skip
_INT_COLUMNS = {"width", "height", "bit_depth", "channels"}
#: Fields of each entry of the ``generated`` column (``build generate``): LLM-written items and
#: descriptions with their provenance (``model`` is the backend identity as JSON text).
GENERATED_FIELDS: tuple[str, ...] = (
    "id", "task", "kind", "question", "options", "answer_idx", "explanation", "description", "model",
    "system", "prompt", "raw", "seed", "attempt",
)  # fmt: skip


def _entry() -> dict[str, Any]:
    from datasets import Sequence, Value

    return {
        "id": Value("string"),
        "name": Value("string"),
        "question": Value("string"),
        "answer_idx": Value("string"),
        "options": Sequence(Value("string")),
    }


def features(label_names: list[str]) -> Any:
    """The ``datasets.Features`` of a built dataset whose classes are ``label_names``."""
    from datasets import ClassLabel, Features, Image, Value

    out: dict[str, Any] = {}
    for col in UBENCH_COLUMNS:
        if col == "image":
            out[col] = Image()
        elif col == "label":
            out[col] = ClassLabel(names=label_names or ["unlabelled"])
        elif col == "microns_per_pixel":
            out[col] = Value("float32")
        elif col == "synthetic":
            out[col] = Value("bool")
        elif col == "questions":
            out[col] = {task: _entry() for task in QUESTION_TASKS}
        elif col == "captions":
            out[col] = {f"{task}_0": _entry() for task in QUESTION_TASKS}
        else:
            out[col] = Value("string")
    for col in BUILD_COLUMNS:
        out[col] = Value("int32") if col in _INT_COLUMNS else Value("string")
    out["generated"] = [_generated_entry()]
    return Features(out)


def _generated_entry() -> dict[str, Any]:
    from datasets import Sequence, Value

    entry: dict[str, Any] = {f: Value("string") for f in GENERATED_FIELDS}
    entry.update(options=Sequence(Value("string")), seed=Value("int64"), attempt=Value("int32"))
    return entry

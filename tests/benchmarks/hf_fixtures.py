"""Builders of tiny Hugging Face datasets in the real μ-Bench and MicroVQA feature schemas.

The μ-Bench rows reuse the real values quoted in ``tests/fixtures/ubench/SCHEMA.md``: image ids,
labels and metadata of the viewer rows, the five ``questions["classification"]`` option lists and
answers, and the modality caption template. Everything else — the coarse question texts, the other
caption templates, detection rows, nulls and broken answers — is generated here to exercise the
loader, and says so. Images are small solid-colour PNGs of distinct sizes.
"""

from __future__ import annotations

import io
import shutil
from pathlib import Path
from typing import Any

from PIL import Image as PILImage

# --- shared -----------------------------------------------------------------------------------------


def png(width: int, height: int, color: tuple[int, int, int] = (120, 30, 200)) -> bytes:
    """Encoded PNG bytes of a solid-colour image."""
    buf = io.BytesIO()
    PILImage.new("RGB", (width, height), color).save(buf, format="PNG")
    return buf.getvalue()


def image_cell(width: int, height: int) -> dict[str, Any]:
    return {"bytes": png(width, height), "path": None}


# --- μ-Bench ----------------------------------------------------------------------------------------

#: `label` names in index order, as confirmed from the initial dataset_info.json (entries 0–63; the
#: source list is cut off after entry 64).
UBENCH_LABELS = [
    "lymphocyte", "neutrophil", "basophil", "monocyte", "eosinophil", "platelet", "erythroblast",
    "immature granulocyte", "irregular_contours", "intermediate", "smooth_contours", "elongated_shape",
    "round_shape", "coarse_texture", "fine_texture", "very_weak", "moderate", "weak", "strong",
    "leishmania_haptomonad", "hela_metaphase", "tobacco_leaf_chloroplast", "cardiac_muscle",
    "zebrafish_retina", "metaphase", "g2", "anaphase", "g1", "s", "prophase", "telophase", "golgi_twin",
    "diffuse", "interphase", "partly_disassembled", "prometaphase", "late_anaphase", "early_anaphase",
    "apoptosis", "binucleate", "bipolar_spindle", "aster", "midbody", "low-grade-lsil", "negative-nilm",
    "high-grade-hsil", "carcinoma-scc", "alnus_normal", "corylus_avellana_normal",
    "corylus_avellana_abnormal", "non_pollen", "debris", "adipose", "stroma", "lympho", "tumor", "complex",
    "mucosa", "empty", "background", "smooth_muscle", "normal_mucosa", "cancer_stroma", "lymphocytes",
]  # fmt: skip

#: The real classification question of the five SCHEMA.md rows.
BLOOD_QUESTION = (
    "A Giemsa-stained light micrograph displaying human peripheral blood cells. As a blood cell "
    "recognition system, identify the correct cell type:"
)
#: image_id → (options, answer_idx) of the five real `questions["classification"]` rows.
REAL_CLASSIFICATION: dict[str, tuple[list[str], str]] = {
    "ddd6f474-11a6-4876-bfac-651f6fdb669c": (
        ["platelet", "eosinophil", "neutrophil", "immature granulocyte", "basophil", "none of the above"],
        "4",
    ),
    "7ff4c714-1238-4245-8680-e2174e1802fe": (
        ["immature granulocyte", "lymphocyte", "basophil", "platelet", "eosinophil", "none of the above"],
        "3",
    ),
    "e551d6a5-69bb-4613-b395-42e8c90785f7": (
        ["eosinophil", "platelet", "erythroblast", "basophil", "lymphocyte", "none of the above"],
        "0",
    ),
    "76b94418-5c38-4c1e-add4-7a3094cbc0b6": (
        ["erythroblast", "eosinophil", "neutrophil", "basophil", "monocyte", "none of the above"],
        "0",
    ),
    "e3fa96ce-9b29-44da-82c7-afb27d8f3b45": (
        ["neutrophil", "lymphocyte", "eosinophil", "monocyte", "immature granulocyte", "none of the above"],
        "3",
    ),
}
#: The real modality caption template (SCHEMA.md); the other templates are generated.
TEMPLATES = {
    "modality": "A micrograph acquired through {class}.",
    "modality_alt": "An image captured with {class}.",
    "submodality": "A micrograph taken with {class}.",
    "domain": "A micrograph from the field of {class}.",
    "subdomain": "A micrograph relevant to {class}.",
    "stain": "A micrograph of a sample stained with {class}.",
    "classification": "A micrograph showing a {class}.",
}
#: Generated question texts for the coarse tasks (the real ones are not public in SCHEMA.md).
COARSE_QUESTIONS = {
    "modality": "Which microscopy modality was used to acquire this image?",
    "submodality": "Which microscopy technique was used to acquire this image?",
    "domain": "Which domain does this image belong to?",
    "subdomain": "Which subdomain does this image belong to?",
    "stain": "Which stain or contrast agent was used in this image?",
}
#: Distractor pools for the generated coarse questions.
POOLS = {
    "modality": ["fluorescence microscopy", "light microscopy", "electron microscopy"],
    "submodality": ["brightfield microscopy", "confocal microscopy", "transmission electron microscopy"],
    "domain": ["pathology", "cell biology", "botany"],
    "subdomain": ["hematopathology", "cell cycle", "plant anatomy"],
    "stain": ["Giemsa", "H&E", "DAPI"],
}
NONE = "none of the above"
COARSE = ("modality", "submodality", "domain", "subdomain", "stain")
CAPTION_KEYS = (
    "modality_0",
    "modality_1",
    "submodality_0",
    "domain_0",
    "subdomain_0",
    "stain_0",
    "classification_0",
)


def ubench_features(*, old_revision: bool = False) -> Any:
    """The μ-Bench feature schema (SCHEMA.md), current revision or the older one with ``instances``."""
    from datasets import ClassLabel, Features, Image, List, Value

    entry = {
        "id": Value("string"),
        "name": Value("string"),
        "question": Value("string"),
        "answer_idx": Value("string"),
        "options": List(Value("string")),
        "tags": Value("string"),
    }
    cols: dict[str, Any] = {
        "image_id": Value("string"),
        "image": Image(),
        "label": ClassLabel(names=UBENCH_LABELS),
        "label_name": Value("string"),
    }
    for name in ("dataset", "domain", "institution", "license"):
        cols[name] = Value("string")
    cols["microns_per_pixel"] = Value("float32")
    for name in ("modality", "ncbitaxon_id", "ncbitaxon_name", "pmid", "split", "stain", "subdomain"):
        cols[name] = Value("string")
    cols["submodality"] = Value("string")
    cols["synthetic"] = Value("bool")
    if old_revision:
        cols["captions"] = {"modality_0": entry}
        cols["questions"] = {"modality": entry, "classification": entry}
        cols["instances"] = List(
            {"className": Value("string"), "type": Value("string"), "points": Value("string")}
        )
    else:
        cols["captions"] = {key: entry for key in CAPTION_KEYS}
        cols["questions"] = {key: entry for key in (*COARSE, "classification")}
        box = {"x1": Value("float32"), "y1": Value("float32"), "x2": Value("float32"), "y2": Value("float32")}
        cols["bbox"] = List(box)
        cols["polygon"] = List(List(Value("float32")))
    return Features(cols)


def q_entry(question: str, options: list[str], answer: str, name: str) -> dict[str, Any]:
    return {
        "id": f"q-{name}",
        "name": name,
        "question": question,
        "answer_idx": answer,
        "options": options,
        "tags": None,
    }


def caption_entry(template: str, options: list[str], answer: str, name: str) -> dict[str, Any]:
    sentences = [o if o == NONE else template.replace("{class}", o) for o in options]
    return {
        "id": "cap-id",
        "name": name,
        "question": template,
        "answer_idx": answer,
        "options": sentences,
        "tags": None,
    }


def coarse_options(task: str, value: str, pos: int) -> list[str]:
    """Three options with ``value`` at ``pos`` (distractors from the pool), then "none of the above"."""
    others = [p for p in POOLS[task] if p != value][:2]
    others.insert(pos, value)
    return [*others, NONE]


def ubench_row(
    image_id: str,
    label: int,
    size: tuple[int, int] | None,
    *,
    dataset: str | None = "acevedo_et_al_2020",
    meta: dict[str, Any] | None = None,
    classification: tuple[list[str], str] | None = None,
    question: str = BLOOD_QUESTION,
) -> dict[str, Any]:
    """One current-revision row; questions and captions for every task agree by default."""
    base: dict[str, Any] = {
        "image_id": image_id,
        "image": image_cell(*size) if size else None,
        "label": label,
        "label_name": UBENCH_LABELS[label],
        "dataset": dataset,
        "domain": "pathology",
        "institution": "hosp_barcelona",
        "license": "CC-BY-4.0",
        "microns_per_pixel": 0.1,
        "modality": "light microscopy",
        "ncbitaxon_id": "NCBITaxon_9606",
        "ncbitaxon_name": "Homo sapiens",
        "pmid": "32346559",
        "split": "test",
        "stain": "Giemsa",
        "subdomain": "hematopathology",
        "submodality": "brightfield microscopy",
        "synthetic": False,
        "bbox": None,
        "polygon": None,
    }
    base.update(meta or {})
    questions: dict[str, Any] = {}
    captions: dict[str, Any] = {}
    for k, task in enumerate(COARSE):
        if base[task] is None:  # a row without the value has neither question nor captions for it
            questions[task] = None
            captions[f"{task}_0"] = None
            continue
        pos = k % 3
        opts = coarse_options(task, base[task], pos)
        questions[task] = q_entry(COARSE_QUESTIONS[task], opts, str(pos), task)
        captions[f"{task}_0"] = caption_entry(TEMPLATES[task], opts, str(pos), task)
    captions["modality_1"] = caption_entry(
        TEMPLATES["modality_alt"], questions["modality"]["options"], "0", "modality"
    )
    opts, ans = classification or REAL_CLASSIFICATION[image_id]
    questions["classification"] = q_entry(question, opts, ans, "classification")
    captions["classification_0"] = caption_entry(TEMPLATES["classification"], opts, ans, "classification")
    base["questions"] = questions
    base["captions"] = captions
    return base


#: The generated image ids of the detection / edge-case rows.
HELD_ID = "0a9c2d4e-0000-4000-8000-000000000007"
CONTOUR_ID = "0a9c2d4e-0000-4000-8000-000000000008"
WU_ID = "0a9c2d4e-0000-4000-8000-000000000009"
TEXTURE_ID = "0a9c2d4e-0000-4000-8000-000000000010"
NO_IMAGE_ID = "0a9c2d4e-0000-4000-8000-000000000011"
BASOPHIL_ID = "ddd6f474-11a6-4876-bfac-651f6fdb669c"
PLATELET_ID = "7ff4c714-1238-4245-8680-e2174e1802fe"
EOSINOPHIL_ID = "e551d6a5-69bb-4613-b395-42e8c90785f7"
ERYTHROBLAST_ID = "76b94418-5c38-4c1e-add4-7a3094cbc0b6"
MONOCYTE_ID = "e3fa96ce-9b29-44da-82c7-afb27d8f3b45"
LYMPHOCYTE_ID = "f3ddd116-f34b-45dd-a8d8-66166b829b6a"

#: Image size of each row (None: the row has no image).
UBENCH_SIZES: dict[str, tuple[int, int] | None] = {
    BASOPHIL_ID: (40, 30),
    PLATELET_ID: (24, 24),
    EOSINOPHIL_ID: (32, 16),
    ERYTHROBLAST_ID: (20, 20),
    MONOCYTE_ID: (16, 24),
    LYMPHOCYTE_ID: (28, 28),
    HELD_ID: (32, 24),
    CONTOUR_ID: (12, 12),
    WU_ID: (20, 20),
    TEXTURE_ID: (18, 18),
    NO_IMAGE_ID: None,
}

_FLUO = {
    "domain": "cell biology",
    "modality": "fluorescence microscopy",
    "submodality": "confocal microscopy",
    "subdomain": "cell cycle",
    "stain": "DAPI",
    "institution": "embl",
    "license": "CC-BY-4.0",
    "ncbitaxon_id": "NCBITaxon_9606",
    "pmid": "20360735",
}


def ubench_rows() -> list[dict[str, Any]]:
    """The eleven current-revision rows (see tests/fixtures/ubench/README.md for what each tests)."""
    s = UBENCH_SIZES
    rows = [
        # (a)1 + (b) row 1: everything present and agreeing.
        ubench_row(BASOPHIL_ID, 2, s[BASOPHIL_ID]),
        ubench_row(PLATELET_ID, 5, s[PLATELET_ID]),
        ubench_row(EOSINOPHIL_ID, 4, s[EOSINOPHIL_ID]),
        ubench_row(ERYTHROBLAST_ID, 6, s[ERYTHROBLAST_ID], dataset=None),
        ubench_row(MONOCYTE_ID, 3, s[MONOCYTE_ID]),
        # (a)2: the synthetic jung_et_al_2022 row; its classification options are generated.
        ubench_row(
            LYMPHOCYTE_ID,
            0,
            s[LYMPHOCYTE_ID],
            dataset="jung_et_al_2022",
            meta={
                "institution": "catholic_univ_korea",
                "license": "CC-BY-NC-4.0",
                "microns_per_pixel": 0.16,
                "ncbitaxon_id": "NCBITaxon_synthetic",
                "ncbitaxon_name": "synthetic",
                "pmid": "35596153",
                "synthetic": True,
            },
            classification=(["lymphocyte", "monocyte", "basophil", "neutrophil", "platelet", NONE], "0"),
        ),
        ubench_row(
            HELD_ID,
            24,
            s[HELD_ID],
            dataset="held_et_al_2010_h2b",
            meta={
                **_FLUO,
                "bbox": [{"x1": 2, "y1": 3, "x2": 10, "y2": 12}, {"x1": 15, "y1": 4, "x2": 30, "y2": 20}],
            },
            classification=(["metaphase", "anaphase", "prophase", "g2", NONE], "0"),
            question="A fluorescence micrograph of HeLa cell nuclei. Identify the cell cycle phase:",
        ),
        ubench_row(
            CONTOUR_ID,
            8,
            s[CONTOUR_ID],
            dataset="burgess_et_al_2024_contour",
            meta={**_FLUO, "polygon": [[1, 1, 8, 2, 5, 9]]},
            classification=(["smooth_contours", "irregular_contours", NONE], "1"),
            question="A fluorescence micrograph of a nucleus. Describe its contour:",
        ),
        ubench_row(
            WU_ID,
            22,
            s[WU_ID],
            dataset="wu_et_al_2023",
            meta={
                "modality": "electron microscopy",
                "submodality": "transmission electron microscopy",
                "domain": "cell biology",
                "subdomain": "cell cycle",
                "stain": None,
                "bbox": [{"x1": 0, "y1": 0, "x2": 50, "y2": 10}],
            },
            classification=(["cardiac_muscle", "zebrafish_retina", NONE], "0"),
            question="An electron micrograph of tissue. Identify the tissue:",
        ),
        ubench_row(
            TEXTURE_ID,
            13,
            s[TEXTURE_ID],
            dataset="burgess_et_al_2024_texture",
            meta={**_FLUO, "bbox": [{"x1": 10, "y1": 0, "x2": 5, "y2": 4}]},
            classification=(["coarse_texture", "fine_texture", NONE], "0"),
            question="A fluorescence micrograph of a nucleus. Describe its texture:",
        ),
        ubench_row(NO_IMAGE_ID, 1, None, classification=(["neutrophil", "basophil", NONE], "0")),
    ]
    by_id = {r["image_id"]: r for r in rows}
    # Platelet: modality_0 disagrees on the answer, so modality_1 (which agrees) is attached.
    by_id[PLATELET_ID]["captions"]["modality_0"]["answer_idx"] = "2"
    by_id[PLATELET_ID]["captions"]["modality_1"]["answer_idx"] = "0"
    # Eosinophil: the stain question is null; its stain captions remain (a caption-built item).
    by_id[EOSINOPHIL_ID]["questions"]["stain"] = None
    # Erythroblast: subdomain answer_idx out of range (skipped with an error).
    by_id[ERYTHROBLAST_ID]["questions"]["subdomain"]["answer_idx"] = "7"
    # Monocyte: no captions at all, and a null stain question (no stain item).
    by_id[MONOCYTE_ID]["captions"] = None
    by_id[MONOCYTE_ID]["questions"]["stain"] = None
    # Lymphocyte: the classification captions have 4 options for a 6-option question.
    cap = by_id[LYMPHOCYTE_ID]["captions"]["classification_0"]
    cap["options"] = [*cap["options"][:3], NONE]
    return rows


def ubench_dataset(rows: list[dict[str, Any]] | None = None, *, old_revision: bool = False) -> Any:
    from datasets import Dataset

    rows = rows if rows is not None else (ubench_old_rows() if old_revision else ubench_rows())
    columns = {name: [r[name] for r in rows] for name in ubench_features(old_revision=old_revision)}
    return Dataset.from_dict(columns, features=ubench_features(old_revision=old_revision))


OLD_ID = "913ab0f2-4dc5-4215-9070-cf1f6098d82a"
OLD_DET_ID = "0a9c2d4e-0000-4000-8000-0000000000a1"


def _instance(cls: str, kind: str, points: str) -> dict[str, str]:
    return {"className": cls, "type": kind, "points": points}


def ubench_old_rows() -> list[dict[str, Any]]:
    """Two older-revision rows: (a)3 (label 5 platelet, label_name monocyte) and one with instances.

    The instances follow the SuperAnnotate triples (polygon, point, bbox per object) that μ-Bench's
    detection evaluation reads; their ``points`` are stored as JSON text.
    """
    first = ubench_row(OLD_ID, 5, (16, 16), classification=(["monocyte", "platelet", NONE], "0"))
    first["label_name"] = "monocyte"
    second = ubench_row(OLD_DET_ID, 8, (16, 16), dataset="burgess_et_al_2024_contour", meta=_FLUO,
                        classification=(["irregular_contours", "smooth_contours", NONE], "0"))  # fmt: skip
    for row in (first, second):
        row["questions"] = {
            "modality": row["questions"]["modality"],
            "classification": row["questions"]["classification"],
        }
        row["captions"] = {"modality_0": row["captions"]["modality_0"]}
        del row["bbox"], row["polygon"]
    first["instances"] = None
    second["instances"] = [
        _instance("nucleus", "polygon", "[1, 1, 5, 1, 5, 6]"),
        _instance("nucleus", "point", '{"x": 3, "y": 3}'),
        _instance("nucleus", "bbox", '{"x1": 1, "y1": 1, "x2": 5, "y2": 6}'),
        _instance("golgi", "polygon", "[8, 8, 12, 9, 10, 14]"),
        _instance("golgi", "point", '{"x": 10, "y": 10}'),
        _instance("golgi", "bbox", '{"x1": 8, "y1": 8, "x2": 12, "y2": 14}'),
        _instance("nucleus", "bbox", '{"x1": 9, "y1": 1, "x2": 14, "y2": 5}'),
    ]
    return [first, second]


# --- writers: the three on-disk layouts -----------------------------------------------------------


def write_saved(ds: Any, folder: Path) -> Path:
    """``Dataset.save_to_disk`` (two shards)."""
    ds.save_to_disk(str(folder), num_shards=2)
    return folder


def write_parquet_dir(ds: Any, folder: Path, split: str = "test", shards: int = 2) -> Path:
    """The Hub parquet layout: ``data/<split>-0000i-of-0000n.parquet``."""
    data = folder / "data"
    data.mkdir(parents=True, exist_ok=True)
    for i in range(shards):
        ds.shard(num_shards=shards, index=i, contiguous=True).to_parquet(
            str(data / f"{split}-{i:05d}-of-{shards:05d}.parquet")
        )
    return folder


def write_arrow_repo(ds: Any, folder: Path) -> Path:
    """μ-Bench's Hub layout: ``perception/0.1.0/ubench-test-0000i-of-00002.arrow`` + dataset_info.json."""
    staging = folder / "_staging"
    ds.save_to_disk(str(staging), num_shards=2)
    target = folder / "perception" / "0.1.0"
    target.mkdir(parents=True)
    for i in range(2):
        shutil.copy(staging / f"data-{i:05d}-of-00002.arrow", target / f"ubench-test-{i:05d}-of-00002.arrow")
    shutil.copy(staging / "dataset_info.json", target / "dataset_info.json")
    shutil.rmtree(staging)
    return target


# --- MicroVQA -------------------------------------------------------------------------------------


def microvqa_features() -> Any:
    """The 27 features of ``jmhb/microvqa``, in card order (SCHEMA.md)."""
    from datasets import Features, Image, List, Value

    s, i = Value("string"), Value("int64")
    return Features(
        {
            "key_question": i,
            "key_image": i,
            "images_list": List(Image()),
            "question": s,
            "choices": List(s),
            "correct_index": i,
            "correct_answer": s,
            "question_0": s,
            "answer_0": s,
            "comments_0": s,
            "incorrect_answer_0": s,
            "question_1": s,
            "choices_1": List(s),
            "correct_index_1": i,
            "question_2": s,
            "choices_2": List(s),
            "correct_index_2": i,
            "question_3": s,
            "choices_3": List(s),
            "correct_index_3": i,
            "task": i,
            "task_str": s,
            "context_image_generation": s,
            "context_motivation": s,
            "images_source": s,
            "image_caption": s,
            "key_person": i,
        }
    )


TASK_STR = {1: "expert_visual_understanding", 2: "hypothesis_generation", 3: "experiment_proposal"}


def microvqa_row(
    key_question: int,
    key_image: int,
    sizes: list[tuple[int, int]],
    task: int,
    choices: list[str],
    correct: int,
    *,
    correct_answer: str | None = None,
) -> dict[str, Any]:
    """One row; texts are generated, the stage fields are filled so every column has values."""
    return {
        "key_question": key_question,
        "key_image": key_image,
        "images_list": [image_cell(w, h) for w, h in sizes],
        "question": f"Question {key_question} about image set {key_image}?",
        "choices": choices,
        "correct_index": correct,
        "correct_answer": correct_answer if correct_answer is not None else choices[min(correct, 3)],
        "question_0": f"Original question {key_question}",
        "answer_0": "original answer",
        "comments_0": "",
        "incorrect_answer_0": "",
        "question_1": f"Stage 1 question {key_question}",
        "choices_1": choices,
        "correct_index_1": correct,
        "question_2": None,
        "choices_2": None,
        "correct_index_2": None,
        "question_3": None,
        "choices_3": None,
        "correct_index_3": None,
        "task": task,
        "task_str": TASK_STR[task],
        "context_image_generation": "Images were acquired on a confocal microscope.",
        "context_motivation": "We study organelle dynamics.",
        "images_source": "author",
        "image_caption": f"Caption of image set {key_image}.",
        "key_person": 7,
    }  # fmt: skip


def microvqa_rows() -> list[dict[str, Any]]:
    """Six rows: 1 and 3 images, a shared image set (97), a correct_answer mismatch, a bad index,
    an empty image list, and an image set (100) whose rows disagree on the image count."""
    four = ["alpha", "beta", "gamma", "delta"]
    return [
        microvqa_row(500, 97, [(20, 10)], 1, four, 1),
        microvqa_row(501, 96, [(20, 10), (12, 14), (30, 8)], 2, four, 2),
        microvqa_row(
            502, 97, [(20, 10)], 3, ["one", "two", "three", "four", "five"], 0, correct_answer="two"
        ),
        microvqa_row(503, 99, [(8, 8)], 1, four, 4),
        microvqa_row(504, 100, [], 2, four, 3),
        microvqa_row(505, 100, [(8, 8)], 3, four, 0),
    ]


def microvqa_dataset(rows: list[dict[str, Any]] | None = None) -> Any:
    from datasets import Dataset

    rows = rows if rows is not None else microvqa_rows()
    feats = microvqa_features()
    return Dataset.from_dict({name: [r[name] for r in rows] for name in feats}, features=feats)


# --- MMMU -------------------------------------------------------------------------------------------


def mmmu_features() -> Any:
    """MMMU's columns (``MMMU/MMMU``, every subject configuration): options as a Python-list string,
    the answer as a letter, seven image columns of which most rows fill only the first."""
    from datasets import Features, Image, Value

    s = Value("string")
    image_columns = {f"image_{n}": Image() for n in range(1, 8)}
    return Features({"id": s, "question": s, "options": s, "explanation": s, **image_columns,
                     "img_type": s, "answer": s, "topic_difficulty": s, "question_type": s,
                     "subfield": s})  # fmt: skip


def mmmu_dataset() -> Any:
    """Four rows of MMMU's ``Art`` validation layout: one image, two images, an open question
    (``options`` is ``"[]"``: no multiple choice) and an answer letter beyond the options."""
    from datasets import Dataset

    def row(n: int, options: str, answer: str, images: list[tuple[int, int]], kind: str) -> dict[str, Any]:
        cells = {f"image_{k}": None for k in range(1, 8)}
        cells.update({f"image_{k + 1}": image_cell(w, h) for k, (w, h) in enumerate(images)})
        return {"id": f"validation_Art_{n}", "question": f"<image 1> Which style is shown in work {n}?",
                "options": options, "explanation": "", **cells, "img_type": "['Paintings']",
                "answer": answer, "topic_difficulty": "Easy", "question_type": kind,
                "subfield": "Fine Arts"}  # fmt: skip

    styles = "['Baroque', 'Cubism', 'Rococo', 'Impressionism']"
    rows = [
        row(1, styles, "B", [(11, 7)], "multiple-choice"),
        row(2, styles, "D", [(9, 5), (6, 4)], "multiple-choice"),
        row(3, "[]", "1848", [(5, 5)], "open"),
        row(4, "['Oil', 'Fresco']", "C", [(7, 7)], "multiple-choice"),
    ]
    feats = mmmu_features()
    return Dataset.from_dict({name: [r[name] for r in rows] for name in feats}, features=feats)


def write_hub_cache(ds: Any, cache: Path, repo_id: str, split: str = "test", config: str = "default") -> Path:
    """Leave ``ds`` in ``cache`` as ``datasets.load_dataset(repo_id)`` leaves a Hub download.

    The parquet builder prepares the Arrow files; they go where a download of ``repo_id`` lands
    (``<owner>___<name>/<config>/0.0.0/<hash>/<name>-<split>.arrow``), which is where
    ``load_dataset`` looks when ``HF_HUB_OFFLINE`` is set.
    """
    import json

    from datasets.naming import camelcase_to_snakecase
    from datasets.packaged_modules.parquet.parquet import Parquet

    owner, name = repo_id.split("/")
    name = camelcase_to_snakecase(name)  # as datasets names the cache folder and files
    source = cache.parent / f"{name}-{config}-source"
    source.mkdir(parents=True, exist_ok=True)
    ds.to_parquet(str(source / f"{split}.parquet"))
    builder = Parquet(cache_dir=str(source / "build"), dataset_name=name,
                      data_files={split: [str(source / f"{split}.parquet")]})  # fmt: skip
    builder.download_and_prepare()
    target = cache / f"{owner}___{name}" / config / "0.0.0" / "0123456789abcdef"
    shutil.copytree(builder.cache_dir, target)
    info_file = target / "dataset_info.json"
    info = json.loads(info_file.read_text())
    info["config_name"] = config  # the parquet builder names its config after the files' hash
    info_file.write_text(json.dumps(info))
    return target

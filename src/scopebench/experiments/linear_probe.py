"""The linear-probe baseline (μ-Bench §C.7): frozen image features → a linear classifier per task.

Pipeline, per task (label = the item's correct option text)::

    features ─► StandardScaler ─► PCA(95 % variance, whitened) ─► LogisticRegression(C, seed)

trained on a training split (the demo's generated ``train`` split, or the user's ``--train`` data)
and evaluated on the benchmark's multiple-choice items of the same task. Reported per task:
balanced accuracy and macro-F1 (``sklearn.metrics``) and accuracy with its 95 % Wilson score
interval; overall: accuracy over every evaluated item with its interval. Nothing is dropped silently:
items of a task with no (or single-class) training data, unreadable images and test labels absent
from training are counted and listed in ``predictions.jsonl``; unreadable images and unseen labels
count as wrong.

Features (:func:`extract_features`):

* ``handcrafted`` — :func:`handcrafted_features`, deterministic scikit-image descriptors (runs
  offline, no model): per-channel intensity histograms, GLCM texture properties, LBP histograms and
  shape properties of the Otsu foreground (see the function for the exact list);
* ``clip:<folder or hub id>`` / ``openclip:…`` — the image embedding of a contrastive backend (its
  vision tower and projection, L2-normalised, as CLIP_benchmark's linear probe uses), computed with
  the backend's own ``encode_images``;
* ``dinov2:<folder or hub id>[?pool=cls|mean]`` / ``vision:<…>[?pool=pooler|cls|mean]`` — a frozen
  ``transformers`` vision encoder (:mod:`scopebench.models.vision_features`); ``dinov2:`` with the
  default CLS pooling gives the DINOv2 features of μ-Bench §C.7 (384 dims for ViT-S/14).

Optional: ``optuna_trials > 0`` tunes the inverse regularisation ``C`` per task by stratified
cross-validation on the training split (Optuna, seeded TPE sampler; extra ``scopebench[probe]``).

This lives in ``scoring`` rather than ``probes``: it needs no run of the engine (``probes`` holds the
analyses built on runs) and, like the rest of ``scoring``, turns predictions into reported metrics.
"""

from __future__ import annotations

import json
import logging
import math
import warnings
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from scopebench.display import progress
from scopebench.errors import DataFormatError, ImageLoadError, MissingDependencyError, ModelSpecError
from scopebench.items import ImageRef, Item
from scopebench.models import ModelOptions, ModelSpec, load_model, parse_spec
from scopebench.models.contrastive import ContrastiveBackend
from scopebench.models.vision_features import VisionEncoder, parse_vision_spec
from scopebench.report.published import PUBLISHED_NOTE, load_published
from scopebench.scoring.intervals import proportion_ci

__all__ = [
    "CONTRASTIVE_SCHEMES",
    "HANDCRAFTED_FEATURES",
    "HANDCRAFTED_VERSION",
    "FeatureSet",
    "ProbeResult",
    "TaskResult",
    "check_features",
    "extract_features",
    "handcrafted_features",
    "make_pipeline",
    "run_linear_probe",
    "write_probe_outputs",
]

log = logging.getLogger(__name__)

#: Bumped whenever :func:`handcrafted_features` changes (recorded in every result).
HANDCRAFTED_VERSION = "1"
_MAX_SIDE = 512  # larger images are downscaled first, to bound the cost of GLCM/LBP
_HIST_BINS = 16
_GLCM_LEVELS = 32
_GLCM_DISTANCES = (1, 2, 4, 8)
_GLCM_PROPS = ("contrast", "dissimilarity", "homogeneity", "energy", "correlation", "ASM")
_LBP = ((8, 1.0), (16, 2.0))  # (points, radius), "uniform" patterns: P + 2 bins each
_SHAPE = ("fg_area_fraction", "eccentricity", "solidity", "perimeter2_over_4pi_area", "extent",
          "log1p_components")  # fmt: skip


def _feature_names() -> tuple[str, ...]:
    names = [f"hist_{c}_{b}" for c in "rgb" for b in range(_HIST_BINS)]
    names += [f"{s}_{c}" for c in "rgb" for s in ("mean", "std")]
    names += [f"glcm_{p}_d{d}" for d in _GLCM_DISTANCES for p in _GLCM_PROPS]
    names += [f"lbp_p{p}_r{r:g}_{b}" for p, r in _LBP for b in range(p + 2)]
    names += [f"shape_{s}" for s in _SHAPE]
    return tuple(names)


#: Names of the handcrafted features, in vector order.
HANDCRAFTED_FEATURES: tuple[str, ...] = _feature_names()


def handcrafted_features(image: Any) -> np.ndarray:
    """Deterministic scikit-image descriptors of one image (``len(HANDCRAFTED_FEATURES)`` floats).

    1. **Intensity**: per RGB channel, a 16-bin histogram over 0–255 (fractions of pixels), the mean
       and the standard deviation (scaled to 0–1).
    2. **GLCM texture**: grey levels quantised to 32, ``graycomatrix`` (symmetric, normalised) at
       distances 1, 2, 4, 8 px and angles 0, 45, 90, 135°; ``graycoprops`` contrast,
       dissimilarity, homogeneity, energy, correlation and ASM, averaged over the angles.
    3. **LBP**: histograms of rotation-invariant uniform local binary patterns
       (``local_binary_pattern``, method ``uniform``) with 8 points at radius 1 and 16 at radius 2.
    4. **Shape** of the largest connected component of the Otsu foreground (pixels brighter than
       ``threshold_otsu`` — bright objects on a dark background, as in fluorescence):
       foreground area fraction, eccentricity, solidity, perimeter² / (4π·area) (≈ 1 for a disc,
       larger for irregular contours), extent, and log(1 + number of components). All zero for a
       constant image.

    Images whose longer side exceeds 512 px are first downscaled to 512 px (bilinear).

    Args:
        image: A PIL image (any mode; converted to RGB).
    """
    from PIL import Image
    from skimage.color import rgb2gray
    from skimage.feature import graycomatrix, graycoprops, local_binary_pattern
    from skimage.filters import threshold_otsu
    from skimage.measure import label, regionprops
    from skimage.util import img_as_ubyte

    img = image.convert("RGB")
    if max(img.size) > _MAX_SIDE:
        scale = _MAX_SIDE / max(img.size)
        img = img.resize((max(1, round(img.width * scale)), max(1, round(img.height * scale))),
                         Image.Resampling.BILINEAR)  # fmt: skip
    rgb = np.asarray(img)
    feats: list[float] = []
    for c in range(3):
        ch = rgb[..., c]
        hist = np.bincount((ch // (256 // _HIST_BINS)).ravel(), minlength=_HIST_BINS) / ch.size
        feats += hist.tolist()
    for c in range(3):
        ch = rgb[..., c] / 255.0
        feats += [float(ch.mean()), float(ch.std())]
    gray = rgb2gray(rgb)
    gray8 = img_as_ubyte(gray)
    q = (gray8 // (256 // _GLCM_LEVELS)).astype(np.uint8)
    glcm = graycomatrix(q, distances=list(_GLCM_DISTANCES), angles=[0, np.pi / 4, np.pi / 2, 3 * np.pi / 4],
                        levels=_GLCM_LEVELS, symmetric=True, normed=True)  # fmt: skip
    with np.errstate(invalid="ignore", divide="ignore"):
        props = {p: np.nan_to_num(graycoprops(glcm, p)).mean(axis=1) for p in _GLCM_PROPS}  # (distances,)
    for d in range(len(_GLCM_DISTANCES)):
        feats += [float(props[p][d]) for p in _GLCM_PROPS]
    for points, radius in _LBP:
        codes = local_binary_pattern(gray8, points, radius, method="uniform")
        hist = np.bincount(codes.astype(int).ravel(), minlength=points + 2)[: points + 2] / codes.size
        feats += hist.tolist()
    feats += _shape_features(gray, threshold_otsu, label, regionprops)
    return np.asarray(feats, dtype=np.float64)


def _shape_features(gray: np.ndarray, threshold_otsu: Any, label: Any, regionprops: Any) -> list[float]:
    if float(gray.max()) == float(gray.min()):
        return [0.0] * len(_SHAPE)
    mask = gray > threshold_otsu(gray)
    labels = label(mask)
    regions = regionprops(labels)
    if not regions:
        return [0.0] * len(_SHAPE)
    big = max(regions, key=lambda r: r.area)
    area = float(big.area)
    return [
        area / mask.size,
        float(big.eccentricity),
        float(big.solidity),
        float(big.perimeter) ** 2 / (4 * math.pi * area),
        float(big.extent),
        math.log1p(len(regions)),
    ]


# Feature extraction ------------------------------------------------------------------------------


@dataclass(slots=True)
class FeatureSet:
    """Features of a list of images (one row per image reference given).

    Attributes:
        matrix: ``(n, d)`` float array; rows of failed images are zeros.
        ok: ``(n,)`` bool, False where the image could not be read.
        errors: Error message per failed row index.
        identity: What produced the features (extractor, model identity, version).
    """

    matrix: np.ndarray
    ok: np.ndarray
    errors: dict[int, str]
    identity: dict[str, Any]


#: Model schemes whose backends embed images (the feature extractors ``--features`` accepts).
CONTRASTIVE_SCHEMES = ("clip", "openclip")

_FEATURES_HELP = (
    "valid values: handcrafted, dinov2:<folder or hub id>, vision:<folder or hub id>, "
    "clip:<folder or hub id>, openclip:<model>, or the folder or preset name of a contrastive "
    "(CLIP-like) model"
)


def check_features(features: str) -> ModelSpec | None:
    """Check a ``--features`` value before any data or model loading.

    A model feature spec goes through the same model-spec resolution as ``--model``
    (:func:`scopebench.models.parse_spec`: presets, local folders, ``scheme:argument``), so it
    accepts exactly what a contrastive ``--model`` accepts.

    Returns:
        The parsed contrastive model spec; ``None`` for ``handcrafted`` and vision encoders.

    Raises:
        ModelSpecError: When ``features`` is neither ``handcrafted`` nor a contrastive model spec; the
            message lists the valid feature values (not every model scheme).
    """
    if features == "handcrafted":
        return None
    if parse_vision_spec(features) is not None:  # raises on a malformed dinov2:/vision: spec
        return None

    try:
        spec = parse_spec(features)
    except ModelSpecError as exc:
        if features.partition(":")[0] in CONTRASTIVE_SCHEMES:  # e.g. "clip:" without a model
            raise ModelSpecError(f"--features {features!r}: {exc}") from exc
        raise ModelSpecError(f"--features {features!r} is not a feature set; {_FEATURES_HELP}") from exc
    if spec.scheme not in CONTRASTIVE_SCHEMES:
        raise ModelSpecError(
            f"--features {features!r} is not a contrastive model (it names a {spec.scheme!r} model, which "
            f"has no image embedding); {_FEATURES_HELP}"
        )
    return spec


def _load_backend(spec: str, device: str, batch_size: int | None) -> Any:
    parsed = check_features(spec)
    vision = parse_vision_spec(spec)
    if vision is not None:  # a frozen vision encoder: no text tower, no predict()
        return VisionEncoder(vision, device=device, batch_size=batch_size)
    backend = load_model(parsed or spec, ModelOptions(device=device, batch_size=batch_size))
    if not isinstance(backend, ContrastiveBackend):  # a scheme registered by a plugin, say
        backend.close()
        raise ModelSpecError(f"--features {spec!r} is not a contrastive model; {_FEATURES_HELP}")
    # HF backends load their weights on the first predict(); an empty call loads them, answers nothing.
    backend.predict([])
    return backend


def extract_features(
    features: str,
    refs: Sequence[ImageRef | None],
    *,
    device: str = "auto",
    batch_size: int | None = None,
    backend: Any = None,
) -> FeatureSet:
    """Compute features for every image reference (each unique :attr:`ImageRef.key` once).

    Args:
        features: ``handcrafted``, ``dinov2:…``, ``vision:…``, ``clip:…`` or ``openclip:…``.
        refs: One reference per row; ``None`` (an item without image) gives a failed row.
        device: Device for model features.
        batch_size: Images per model call (default: the backend's).
        backend: An already loaded contrastive backend (reused between train and test).

    Raises:
        ModelSpecError: When ``features`` names no contrastive backend.
    """
    keys: dict[str, ImageRef] = {}
    for r in refs:
        if r is not None:
            keys.setdefault(r.key, r)
    by_key: dict[str, np.ndarray] = {}
    key_errors: dict[str, str] = {}
    if features == "handcrafted":
        identity: dict[str, Any] = {"features": "handcrafted", "version": HANDCRAFTED_VERSION,
                                    "dimension": len(HANDCRAFTED_FEATURES)}  # fmt: skip
        with progress(len(keys), desc="handcrafted features", unit="image") as bar:
            for key, ref in keys.items():
                try:
                    by_key[key] = handcrafted_features(ref.load())
                except ImageLoadError as exc:
                    key_errors[key] = str(exc)
                bar.update(1)
    else:
        model = backend if backend is not None else _load_backend(features, device, batch_size)
        identity = {"features": features, "model_identity": model.identity()}
        step = max(1, batch_size or model.encode_batch)
        todo = list(keys.items())
        with progress(len(todo), desc=f"image features × {features}", unit="image") as bar:
            for start in range(0, len(todo), step):
                pixels, ok_keys = [], []
                for key, ref in todo[start : start + step]:
                    try:
                        pixels.append(ref.load())
                        ok_keys.append(key)
                    except ImageLoadError as exc:
                        key_errors[key] = str(exc)
                if pixels:
                    for key, emb in zip(ok_keys, model.encode_images(pixels), strict=True):
                        by_key[key] = np.asarray(emb, dtype=np.float64)
                bar.update(len(todo[start : start + step]))
        if backend is None:
            model.close()
    dim = next(iter(by_key.values())).shape[0] if by_key else 0
    matrix = np.zeros((len(refs), dim))
    ok = np.zeros(len(refs), dtype=bool)
    errors: dict[int, str] = {}
    for i, r in enumerate(refs):
        if r is None:
            errors[i] = "item has no image"
        elif r.key in by_key:
            matrix[i], ok[i] = by_key[r.key], True
        else:
            errors[i] = key_errors.get(r.key, "image could not be read")
    return FeatureSet(matrix=matrix, ok=ok, errors=errors, identity=identity)


# The probe ---------------------------------------------------------------------------------------


def make_pipeline(seed: int, C: float = 1.0, max_iter: int = 5000) -> Any:
    """``StandardScaler → PCA(0.95, whiten) → LogisticRegression(C, random_state=seed)``."""
    from sklearn.decomposition import PCA
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    return Pipeline(
        [
            ("scale", StandardScaler()),
            # A float n_components keeps the fewest components explaining 95 % of the variance
            # (full SVD: deterministic).
            ("pca", PCA(n_components=0.95, whiten=True, svd_solver="full")),
            ("logreg", LogisticRegression(C=C, max_iter=max_iter, random_state=seed)),
        ]
    )


@dataclass(slots=True)
class TaskResult:
    """The probe's result on one task.

    Attributes:
        task: Task name.
        status: ``evaluated``, ``no_training_data`` or ``single_class_training`` (not evaluated).
        n_train: Training items used (readable image).
        n_train_failed: Training items left out because their image could not be read.
        n_test: Test (benchmark) items of the task.
        classes: Class labels seen in training.
        n_unseen_label: Test items whose correct answer never occurs in training (count as wrong).
        n_errors: Test items whose image could not be read (count as wrong).
        correct: Correct predictions.
        accuracy: ``correct / n_test``.
        ci_low: Lower bound of the 95 % Wilson score interval of the accuracy.
        ci_high: Upper bound.
        balanced_accuracy: Mean recall over the test classes (``sklearn.metrics``).
        macro_f1: Unweighted mean F1 over the test classes.
        chance: Balanced accuracy of a constant or random guess: 1 / number of test classes.
        pca_components: Components kept by the PCA.
        C: Inverse regularisation strength used.
        cv_balanced_accuracy: Best cross-validated balanced accuracy (Optuna search only).
    """

    task: str
    status: str
    n_train: int = 0
    n_train_failed: int = 0
    n_test: int = 0
    classes: list[str] = field(default_factory=list)
    n_unseen_label: int = 0
    n_errors: int = 0
    correct: int = 0
    accuracy: float = float("nan")
    ci_low: float = float("nan")
    ci_high: float = float("nan")
    balanced_accuracy: float = float("nan")
    macro_f1: float = float("nan")
    chance: float = float("nan")
    pca_components: int | None = None
    C: float | None = None
    cv_balanced_accuracy: float | None = None


@dataclass(slots=True)
class ProbeResult:
    """Everything one linear-probe evaluation produced.

    Attributes:
        tasks: One row per task of the benchmark's classification items.
        overall: ``n``, ``correct``, ``accuracy`` and CI over every evaluated item.
        skipped: Benchmark items not evaluated, by reason (``detection``, ``no_answer``,
            ``no_training_data``, ``single_class_training``).
        predictions: One dict per benchmark item (evaluated or not), with its status.
        config: Seed, features identity, C, Optuna trials, pipeline description.
    """

    tasks: list[TaskResult]
    overall: dict[str, Any]
    skipped: dict[str, int]
    predictions: list[dict[str, Any]]
    config: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict (NaN → ``None``)."""
        safe: dict[str, Any] = _json_safe(
            {
                "config": self.config,
                "overall": self.overall,
                "tasks": [asdict(t) for t in self.tasks],
                "skipped": self.skipped,
            }
        )
        return safe


def _json_safe(x: Any) -> Any:
    if isinstance(x, float) and math.isnan(x):
        return None
    if isinstance(x, dict):
        return {k: _json_safe(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_json_safe(v) for v in x]
    return x


def _tune_C(X: np.ndarray, y: list[str], seed: int, trials: int) -> tuple[float, float]:
    """Best ``C`` (log-uniform 1e-4…1e4) by stratified k-fold balanced accuracy; (C, cv score)."""
    try:
        import optuna
    except ImportError as exc:
        raise MissingDependencyError("optuna", "probe", "--optuna-trials (hyper-parameter search)") from exc
    from sklearn.model_selection import StratifiedKFold, cross_val_score

    folds = max(2, min(5, min(Counter(y).values())))
    cv = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)

    def objective(trial: Any) -> float:
        c = trial.suggest_float("C", 1e-4, 1e4, log=True)
        return float(cross_val_score(make_pipeline(seed, c), X, y, cv=cv, scoring="balanced_accuracy").mean())

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.TPESampler(seed=seed))
    study.optimize(objective, n_trials=trials)
    return float(study.best_params["C"]), float(study.best_value)


def _classification(items: Sequence[Item]) -> list[Item]:
    return [it for it in items if it.kind == "mcq" and it.answer_index is not None]


def run_linear_probe(
    train_items: Sequence[Item],
    test_items: Sequence[Item],
    features: str = "handcrafted",
    *,
    seed: int = 0,
    C: float = 1.0,
    optuna_trials: int = 0,
    device: str = "auto",
    batch_size: int | None = None,
) -> ProbeResult:
    """Train one probe per task on ``train_items`` and evaluate it on ``test_items``.

    Args:
        train_items: Labelled training items (label = correct option text).
        test_items: The benchmark's items (detection and unanswerable items are counted, skipped).
        features: ``handcrafted``, ``dinov2:…``, ``vision:…``, ``clip:…`` or ``openclip:…``.
        seed: Seed of the logistic regression, the CV folds, the Optuna sampler and the bootstrap.
        C: Inverse regularisation strength when no search is run.
        optuna_trials: Trials of the Optuna search of ``C`` per task (0: no search).
        device: Device for model features.
        batch_size: Images per model call.

    Raises:
        DataFormatError: When there is no training item with a label at all.
        MissingDependencyError: When ``optuna_trials > 0`` and Optuna is not installed.
    """
    check_features(features)
    train = _classification(train_items)
    if not train:
        raise DataFormatError(
            "the training data holds no multiple-choice item with an answer; the probe needs labelled "
            "training images (label = the correct option's text)"
        )
    skipped: Counter[str] = Counter()
    predictions: list[dict[str, Any]] = []
    for it in test_items:
        if it.kind != "mcq" or it.answer_index is None:
            reason = "detection" if it.kind == "detection" else "no_answer"
            skipped[reason] += 1
            predictions.append({"item_id": it.id, "task": it.task, "status": reason})
    train_by_task, test_by_task = _by_task(train), _by_task(_classification(test_items))
    feats = _task_features(features, train_by_task, test_by_task, device=device, batch_size=batch_size)
    results: list[TaskResult] = []
    all_outcomes: list[float] = []
    for task in sorted(test_by_task):
        items = test_by_task[task]
        if task not in train_by_task:
            results.append(TaskResult(task=task, status="no_training_data", n_test=len(items)))
            skipped["no_training_data"] += len(items)
            predictions += [{"item_id": it.id, "task": task, "label": it.answer_text,
                             "status": "no_training_data"} for it in items]  # fmt: skip
            continue
        res, outcomes = _probe_task(
            task, items, train_by_task[task], feats, seed, C, optuna_trials, predictions
        )
        if res.status == "single_class_training":
            skipped["single_class_training"] += len(items)
        results.append(res)
        all_outcomes += outcomes
    if skipped:
        log.warning("linear probe: items not evaluated: %s", dict(skipped))
    config = {
        "seed": seed,
        "features": feats.train.identity,
        "C": C,
        "optuna_trials": optuna_trials,
        "pipeline": "StandardScaler → PCA(n_components=0.95, whiten=True, svd_solver=full) → "
        "LogisticRegression(lbfgs, max_iter=5000)",
        "n_train_items": len(train),
        "n_test_items": len(test_items),
        "benchmarks": sorted({it.benchmark for it in test_items}),
    }
    return ProbeResult(results, _overall(results, all_outcomes), dict(skipped), predictions, config)


def _by_task(items: Sequence[Item]) -> dict[str, list[Item]]:
    out: dict[str, list[Item]] = {}
    for it in items:
        out.setdefault(it.task, []).append(it)
    return out


@dataclass
class _TaskFeatures:
    """The features of every training and test item of the tasks that have both, by item id."""

    train: Any
    test: Any
    train_row: dict[str, int]
    test_row: dict[str, int]
    train_items: list[Item]


def _task_features(
    features: str,
    train_by_task: dict[str, list[Item]],
    test_by_task: dict[str, list[Item]],
    *,
    device: str,
    batch_size: int | None,
) -> _TaskFeatures:
    """Extract the features of the tasks with training data (one model load for all of them)."""
    backend = None if features == "handcrafted" else _load_backend(features, device, batch_size)
    try:
        trained = [t for t in test_by_task if t in train_by_task]
        tr_all = [it for t in trained for it in train_by_task[t]]
        te_all = [it for t in trained for it in test_by_task[t]]
        f_train = extract_features(features, [it.images[0] if it.images else None for it in tr_all],
                                   device=device, batch_size=batch_size, backend=backend)  # fmt: skip
        f_test = extract_features(features, [it.images[0] if it.images else None for it in te_all],
                                  device=device, batch_size=batch_size, backend=backend)  # fmt: skip
    finally:
        if backend is not None:
            backend.close()
    return _TaskFeatures(
        f_train,
        f_test,
        {it.id: i for i, it in enumerate(tr_all)},
        {it.id: i for i, it in enumerate(te_all)},
        tr_all,
    )


def _probe_task(
    task: str,
    items: list[Item],
    train_items: list[Item],
    feats: _TaskFeatures,
    seed: int,
    C: float,
    optuna_trials: int,
    predictions: list[dict[str, Any]],
) -> tuple[TaskResult, list[float]]:
    """Fit one task's probe and predict its test items; the result and each item's outcome."""
    idx = [feats.train_row[it.id] for it in train_items]
    usable = [i for i in idx if feats.train.ok[i]]
    X = feats.train.matrix[usable]
    y = [feats.train_items[i].answer_text or "" for i in usable]
    classes = sorted(set(y))
    res = TaskResult(
        task=task, status="evaluated", n_train=len(usable), n_train_failed=len(idx) - len(usable),
        n_test=len(items), classes=classes,
    )  # fmt: skip
    if len(classes) < 2:
        res.status = "single_class_training"
        predictions += [{"item_id": it.id, "task": task, "label": it.answer_text,
                         "status": "single_class_training"} for it in items]  # fmt: skip
        return res, []
    c_used = C
    if optuna_trials > 0 and min(Counter(y).values()) < 2:
        # Stratified cross-validation needs two examples of every class.
        log.warning("task %s: a class has a single training example; no search, C=%g", task, C)
    elif optuna_trials > 0:
        c_used, res.cv_balanced_accuracy = _tune_C(X, y, seed, optuna_trials)
    pipe = make_pipeline(seed, c_used).fit(X, y)
    res.C, res.pca_components = c_used, int(pipe.named_steps["pca"].n_components_)
    rows = [feats.test_row[it.id] for it in items]
    ok_rows = [r for r in rows if feats.test.ok[r]]
    matrix = feats.test.matrix[ok_rows] if ok_rows else None
    pred_ok = dict(zip(ok_rows, pipe.predict(matrix), strict=True)) if ok_rows else {}
    proba_ok = dict(zip(ok_rows, pipe.predict_proba(matrix), strict=True)) if ok_rows else {}
    y_true, y_pred, outcomes = [], [], []
    for it, r in zip(items, rows, strict=True):
        label = it.answer_text or ""
        pred = str(pred_ok[r]) if r in pred_ok else None
        outcome = 1.0 if pred == label else 0.0
        y_true.append(label)
        # An unreadable image has no prediction: a label no class has, so it counts as wrong.
        y_pred.append(pred if pred is not None else "<no prediction>")
        outcomes.append(outcome)
        entry: dict[str, Any] = {"item_id": it.id, "task": task, "label": label, "predicted": pred,
                                 "correct": bool(outcome)}  # fmt: skip
        if pred is None:
            entry.update(status="error", error=feats.test.errors.get(r, "no features"))
        else:
            probs = zip(pipe.classes_, proba_ok[r], strict=True)
            entry.update(status="ok", probabilities={str(c): round(float(p), 6) for c, p in probs})
        predictions.append(entry)
    res.n_errors = sum(p is None for p in (pred_ok.get(r) for r in rows))
    _score_task(res, y_true, y_pred, outcomes)
    return res, outcomes


def _score_task(res: TaskResult, y_true: list[str], y_pred: list[str], outcomes: list[float]) -> None:
    """Fill ``res``'s accuracy (Wilson interval), balanced accuracy, macro-F1 and chance level."""
    from sklearn.metrics import balanced_accuracy_score, f1_score

    test_classes = sorted(set(y_true))
    res.n_unseen_label = sum(label not in res.classes for label in y_true)
    res.correct = int(sum(outcomes))
    res.accuracy = res.correct / len(outcomes)
    ci = proportion_ci(outcomes)
    res.ci_low, res.ci_high = ci.low, ci.high
    with warnings.catch_warnings():
        # "<no prediction>" is a predicted class absent from y_true: sklearn warns, then ignores
        # it for recall (the item still counts as a miss of its true class).
        warnings.simplefilter("ignore")
        res.balanced_accuracy = float(balanced_accuracy_score(y_true, y_pred))
    res.macro_f1 = float(f1_score(y_true, y_pred, labels=test_classes, average="macro", zero_division=0))
    res.chance = 1.0 / len(test_classes)


def _overall(results: Sequence[TaskResult], outcomes: list[float]) -> dict[str, Any]:
    """The probe's overall row: accuracy over every evaluated item, macro means over the tasks."""
    ci = proportion_ci(outcomes)
    evaluated = [r for r in results if r.status == "evaluated"]
    return {
        "n": len(outcomes),
        "correct": int(sum(outcomes)),
        "accuracy": float(np.mean(outcomes)) if outcomes else float("nan"),
        "ci_low": ci.low,
        "ci_high": ci.high,
        "ci_method": ci.method,
        "macro_balanced_accuracy": float(np.mean([r.balanced_accuracy for r in evaluated]))
        if evaluated
        else float("nan"),
        "macro_f1": float(np.mean([r.macro_f1 for r in evaluated])) if evaluated else float("nan"),
        "tasks_evaluated": len(evaluated),
    }


def _published_lines(result: ProbeResult) -> list[str]:
    """The seed paper's linear-probe values for the benchmark probed (μ-Bench §C.7), if any."""
    lines = []
    for bench in result.config.get("benchmarks") or []:
        for r in load_published(bench):
            if "linear probe" in str(r["model"]).lower() and r["value"] is not None:
                lines.append(
                    f"- {r['model']} ({r['source_table']}), {r['subset_or_task']}: {r['value']:.2f}%"
                )
    if not lines:
        return []
    return ["", f"Published ({PUBLISHED_NOTE}; compare with the overall accuracy above, which weights "
            "tasks by their items):", *lines]  # fmt: skip


def write_probe_outputs(result: ProbeResult, out_dir: str | Path, *, title: str = "") -> list[Path]:
    """Write ``linear_probe.json``, ``linear_probe.md``, ``linear_probe.csv`` and ``predictions.jsonl``."""
    import csv

    root = Path(out_dir)
    root.mkdir(parents=True, exist_ok=True)
    payload = result.to_dict()
    payload["title"] = title
    (root / "linear_probe.json").write_text(json.dumps(payload, indent=2), encoding="utf-8")
    cols = ["task", "status", "n_train", "n_test", "accuracy", "ci_low", "ci_high", "balanced_accuracy",
            "macro_f1", "chance", "n_errors", "n_unseen_label", "pca_components", "C",
            "cv_balanced_accuracy"]  # fmt: skip
    with open(root / "linear_probe.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(cols)
        for t in result.tasks:
            d = asdict(t)
            w.writerow(["" if d[c] is None or (isinstance(d[c], float) and math.isnan(d[c])) else d[c]
                        for c in cols])  # fmt: skip

    def pct(x: float | None) -> str:
        return "–" if x is None or math.isnan(x) else f"{100 * x:.1f}%"

    trials = int(result.config.get("optuna_trials") or 0)
    md = [f"# {title or 'Linear probe'}", "", f"Features: `{result.config['features'].get('features')}`, "
          f"seed {result.config['seed']}. {result.config['pipeline']}.", ""]  # fmt: skip
    if trials:
        md += [f"`C` searched per task by Optuna ({trials} trials, seeded TPE, log-uniform in [1e-4, 1e4]) "
               "maximising the stratified-CV balanced accuracy on the training items: the table gives "
               "the best `C` and its CV score (a task whose smallest class has one example keeps "
               f"`C` = {result.config['C']:g}, CV –).", ""]  # fmt: skip
    else:
        md += [f"`C` = {result.config['C']:g} for every task (no search).", ""]
    head = ["task", "status", "train", "test", "accuracy", "95% CI", "balanced acc.", "macro-F1", "chance",
            "PCA comp.", "C", *(["CV bal. acc."] if trials else [])]  # fmt: skip
    md += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for t in result.tasks:
        ci = "–" if math.isnan(t.ci_low) else f"[{100 * t.ci_low:.1f}, {100 * t.ci_high:.1f}]"
        cells = [
            t.task,
            t.status,
            t.n_train,
            t.n_test,
            pct(t.accuracy),
            ci,
            pct(t.balanced_accuracy),
            pct(t.macro_f1),
            pct(t.chance),
            "–" if t.pca_components is None else t.pca_components,
            "–" if t.C is None else f"{t.C:.4g}",
            *([pct(t.cv_balanced_accuracy)] if trials else []),
        ]
        md.append("| " + " | ".join(str(c) for c in cells) + " |")
    o = result.overall
    ci = "–" if math.isnan(o["ci_low"]) else f"[{100 * o['ci_low']:.1f}, {100 * o['ci_high']:.1f}]"
    md += ["", f"Overall accuracy over {o['n']} evaluated items: {pct(o['accuracy'])} {ci}."]
    if result.skipped:
        md.append(
            "Not evaluated: " + ", ".join(f"{k}: {v} item(s)" for k, v in sorted(result.skipped.items()))
        )
    md += _published_lines(result)
    (root / "linear_probe.md").write_text("\n".join(md) + "\n", encoding="utf-8")
    with open(root / "predictions.jsonl", "w", encoding="utf-8") as fh:
        for p in result.predictions:
            fh.write(json.dumps(p, sort_keys=True) + "\n")
    return [
        root / n for n in ("linear_probe.json", "linear_probe.md", "linear_probe.csv", "predictions.jsonl")
    ]

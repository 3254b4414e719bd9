"""Weight interpolation between two contrastive models of one architecture (μ-Bench §E.2).

``θ = α·θ_base + (1 − α)·θ_tuned`` for every floating-point tensor of the state dict, so ``α = 1`` is
the base model and ``α = 0`` the fine-tuned one, exactly (the products ``1·x`` and ``0·y`` are exact
in floating point; the sum is computed in float32 and cast back to the stored dtype).

Two checkpoint layouts are read, both at the state-dict level with the ``safetensors`` library (no
model class is instantiated, so any transformers architecture works and nothing is re-initialised):

* **transformers folders** (``save_pretrained`` layout of CLIPModel / SiglipModel / AlignModel):
  ``model.safetensors``, a sharded ``model.safetensors.index.json``, or a legacy
  ``pytorch_model.bin``. The merged folder gets one ``model.safetensors`` plus every non-weight file
  (``config.json``, tokenizer and processor files) copied from the *tuned* model, and loads with
  ``clip:<DIR>``.
* **open_clip checkpoints**: a single ``.pt`` / ``.pth`` / ``.bin`` / ``.safetensors`` file (a raw
  state dict or ``{"state_dict": …}``; a DistributedDataParallel ``module.`` prefix is stripped, as
  open_clip does). The merged weights go to ``DIR/open_clip_merged.safetensors`` (for a
  ``.safetensors`` input) or ``DIR/open_clip_merged.pt``, loadable as ``openclip:ARCH@<file>``.
  This path only reads and writes tensors, so it needs no open_clip; loading the result through
  open_clip is not tested on our machines (open_clip needs torchvision, which we cannot install).

Tensors that are not floating point (integer ``position_ids`` buffers, boolean masks) are not
interpolated: they are copied from the tuned model, and the keys are listed in the provenance file
``DIR/scopebench_merge.json`` (with the base/tuned/merged weight digests and the formula).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import shutil
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from scopebench.engine import RunConfig, run_benchmark
from scopebench.errors import MissingDependencyError, ModelError
from scopebench.models.contrastive import weights_digest
from scopebench.scoring.accuracy import outcomes
from scopebench.scoring.intervals import proportion_ci
from scopebench.store import load_run

__all__ = [
    "DEFAULT_GRID",
    "MERGE_FILE",
    "MergeResult",
    "SweepRow",
    "alpha_label",
    "check_compatible",
    "interpolate_state_dicts",
    "load_state_dict",
    "merge_models",
    "parse_alphas",
    "plot_sweep",
    "sweep_alphas",
    "write_sweep_outputs",
]

log = logging.getLogger(__name__)

#: Provenance file written into every merged model folder.
MERGE_FILE = "scopebench_merge.json"
_MERGE_VERSION = 1
# Weight files of a transformers folder: never copied from the tuned model (the merge replaces them).
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".h5", ".msgpack")
_CHECKPOINT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")
_SHOW = 5  # differences listed per kind in an incompatibility error


@dataclass(slots=True)
class MergeResult:
    """What :func:`merge_models` did (also written to ``DIR/scopebench_merge.json``).

    Attributes:
        out_dir: The merged model folder.
        weights_file: The merged weights file inside ``out_dir``.
        layout: ``transformers`` (a ``clip:`` folder) or ``open_clip`` (a single checkpoint).
        alpha: Weight of the base model.
        base: The base model location (absolute).
        tuned: The tuned model location (absolute).
        base_digest: :func:`~scopebench.models.contrastive.weights_digest` of the base weights.
        tuned_digest: Digest of the tuned weights.
        merged_digest: Digest of the merged weights.
        interpolated: Number of floating-point tensors interpolated.
        parameters: Number of scalar values interpolated.
        copied_from_tuned: Keys of non-float tensors copied from the tuned model.
        differing_copied: Those of them whose values differ between base and tuned.
        files_copied: Non-weight files copied from the tuned folder (config, tokenizer, processor).
    """

    out_dir: Path
    weights_file: Path
    layout: str
    alpha: float
    base: str
    tuned: str
    base_digest: str | None
    tuned_digest: str | None
    merged_digest: str | None
    interpolated: int
    parameters: int
    copied_from_tuned: list[str] = field(default_factory=list)
    differing_copied: list[str] = field(default_factory=list)
    files_copied: list[str] = field(default_factory=list)

    @property
    def model_spec(self) -> str:
        """The spec that loads the merged model (``openclip:`` needs ``ARCH@`` prepended)."""
        return (
            f"clip:{self.out_dir}" if self.layout == "transformers" else f"openclip:ARCH@{self.weights_file}"
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe provenance."""
        d = asdict(self)
        d["out_dir"], d["weights_file"] = str(self.out_dir), str(self.weights_file)
        return d


def _torch() -> Any:
    try:
        import safetensors  # noqa: F401  (checked here so the error names the right extra)
        import torch
    except ImportError as exc:
        raise MissingDependencyError("torch/safetensors", "hf", "merging model weights") from exc
    return torch


def _layout(path: Path) -> str:
    if path.is_dir():
        return "transformers"
    if path.is_file() and path.suffix in _CHECKPOINT_SUFFIXES:
        return "open_clip"
    if not path.exists():
        raise ModelError(f"model not found: {path}; give a saved transformers folder or a checkpoint file")
    raise ModelError(
        f"{path} is neither a model folder (save_pretrained layout) nor a checkpoint file "
        f"({', '.join(_CHECKPOINT_SUFFIXES)})"
    )


def _read_file(path: Path) -> dict[str, Any]:
    torch = _torch()
    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        return dict(load_file(str(path), device="cpu"))
    try:
        # weights_only: a checkpoint is data, never code to execute.
        obj = torch.load(str(path), map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many types for unreadable/unsafe pickles
        raise ModelError(f"cannot read checkpoint {path}: {exc}") from exc
    if isinstance(obj, Mapping) and isinstance(obj.get("state_dict"), Mapping):
        obj = obj["state_dict"]
    if not isinstance(obj, Mapping) or not all(torch.is_tensor(v) for v in obj.values()):
        raise ModelError(f"{path} does not hold a state dict of tensors (nor a {{'state_dict': …}} dict)")
    return dict(obj)


def _folder_weight_files(folder: Path) -> list[Path]:
    for index_name in ("model.safetensors.index.json", "pytorch_model.bin.index.json"):
        index = folder / index_name
        if index.is_file():
            shards = sorted(set(json.loads(index.read_text(encoding="utf-8"))["weight_map"].values()))
            return [folder / s for s in shards]
    for name in ("model.safetensors", "pytorch_model.bin"):
        if (folder / name).is_file():
            return [folder / name]
    raise ModelError(
        f"{folder} holds no model.safetensors, pytorch_model.bin or sharded index; "
        "give a folder written by save_pretrained"
    )


def load_state_dict(path: str | Path) -> dict[str, Any]:
    """Read every tensor of a transformers folder or an open_clip checkpoint file (on CPU).

    Raises:
        ModelError: When the location holds no readable weights.
        MissingDependencyError: When torch or safetensors is not installed.
    """
    p = Path(path).expanduser()
    if _layout(p) == "transformers":
        state: dict[str, Any] = {}
        for f in _folder_weight_files(p):
            state.update(_read_file(f))
        return state
    raw = _read_file(p)
    # open_clip strips a DistributedDataParallel prefix when loading; do the same so a checkpoint
    # saved from DDP training matches one saved without it.
    if raw and all(k.startswith("module.") for k in raw):
        raw = {k.removeprefix("module."): v for k, v in raw.items()}
    return raw


def _listing(title: str, keys: list[str]) -> str:
    shown = ", ".join(keys[:_SHOW]) + (f", … ({len(keys) - _SHOW} more)" if len(keys) > _SHOW else "")
    return f"  {len(keys)} {title}: {shown}"


def check_compatible(base: Mapping[str, Any], tuned: Mapping[str, Any]) -> None:
    """Refuse two state dicts that do not have the same keys with the same shapes.

    Raises:
        ModelError: Listing the first few keys missing from the tuned model, the extra keys it has,
            and the shape mismatches, with the count of each.
    """
    missing = sorted(set(base) - set(tuned))
    extra = sorted(set(tuned) - set(base))
    shapes = [
        f"{k} {tuple(base[k].shape)} vs {tuple(tuned[k].shape)}"
        for k in sorted(set(base) & set(tuned))
        if tuple(base[k].shape) != tuple(tuned[k].shape)
    ]
    if not (missing or extra or shapes):
        return
    lines = ["the two models do not have the same architecture (same keys and shapes are required):"]
    if missing:
        lines.append(_listing("key(s) of the base model missing from the tuned model", missing))
    if extra:
        lines.append(_listing("key(s) only in the tuned model", extra))
    if shapes:
        lines.append(_listing("shape mismatch(es) (base vs tuned)", shapes))
    lines.append("Merge a fine-tuned model with the exact base checkpoint it was trained from.")
    raise ModelError("\n".join(lines))


def interpolate_state_dicts(
    base: Mapping[str, Any], tuned: Mapping[str, Any], alpha: float
) -> tuple[dict[str, Any], list[str], list[str]]:
    """``α·base + (1 − α)·tuned`` for every float tensor; non-float tensors come from ``tuned``.

    Args:
        base: State dict of the base model.
        tuned: State dict of the tuned model (same keys and shapes: see :func:`check_compatible`).
        alpha: Weight of the base model, in ``[0, 1]``.

    Returns:
        The merged state dict (keys in the tuned model's order, each tensor in its stored dtype),
        the keys copied from ``tuned`` (non-float), and those of them whose values differ.
    """
    torch = _torch()
    check_compatible(base, tuned)
    merged: dict[str, Any] = {}
    copied: list[str] = []
    differing: list[str] = []
    for key, t in tuned.items():
        b = base[key]
        if not (t.is_floating_point() and b.is_floating_point()):
            merged[key] = t.clone().contiguous()
            copied.append(key)
            if not torch.equal(b.to(t.dtype), t):
                differing.append(key)
            continue
        # float32 (or float64 when stored so) arithmetic; half-precision weights are cast back.
        work = torch.promote_types(t.dtype, torch.float32)
        mixed = alpha * b.to(work) + (1.0 - alpha) * t.to(work)
        merged[key] = mixed.to(t.dtype).contiguous()
    return merged, copied, differing


def _digest(path: Path) -> str | None:

    return weights_digest(path)


def _versions() -> dict[str, str]:
    out = {}
    for name in ("scopebench", "torch", "safetensors", "transformers"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def merge_models(base: str | Path, tuned: str | Path, alpha: float, out_dir: str | Path) -> MergeResult:
    """Interpolate two models' weights and save a loadable model with its provenance.

    Args:
        base: Base model: a transformers folder or an open_clip checkpoint file.
        tuned: Fine-tuned model of the same architecture and layout.
        alpha: Weight of the base model in ``[0, 1]`` (1 → base, 0 → tuned).
        out_dir: Folder to write (created; weights in it are replaced).

    Returns:
        A :class:`MergeResult` (also saved as ``out_dir/scopebench_merge.json``).

    Raises:
        ModelError: For a missing model, mismatched layouts or architectures, or ``alpha`` out of range.
    """
    if not 0.0 <= alpha <= 1.0:
        raise ModelError(f"--alpha must lie in [0, 1] (1 = base model, 0 = tuned model); got {alpha}")
    base_p, tuned_p = Path(base).expanduser().resolve(), Path(tuned).expanduser().resolve()
    layout = _layout(base_p)
    if _layout(tuned_p) != layout:
        raise ModelError(
            f"cannot merge a {layout} checkpoint ({base_p}) with a {_layout(tuned_p)} one ({tuned_p}); "
            "both must be transformers folders or both open_clip checkpoint files"
        )
    out = Path(out_dir).expanduser().resolve()
    if out in (base_p, tuned_p):
        raise ModelError(f"--out {out} is one of the input models; write the merge to a new folder")
    if layout == "transformers":
        _check_configs(base_p, tuned_p)
    base_sd, tuned_sd = load_state_dict(base_p), load_state_dict(tuned_p)
    merged, copied, differing = interpolate_state_dicts(base_sd, tuned_sd, alpha)
    del base_sd, tuned_sd
    copied_set = set(copied)
    n_params = sum(int(v.numel()) for k, v in merged.items() if k not in copied_set)
    out.mkdir(parents=True, exist_ok=True)
    files_copied = _copy_model_files(tuned_p, out) if layout == "transformers" else []
    if layout == "transformers":
        weights = out / "model.safetensors"
    else:
        weights = out / ("open_clip_merged" + (".safetensors" if tuned_p.suffix == ".safetensors" else ".pt"))
    _save(merged, weights)
    result = MergeResult(
        out_dir=out,
        weights_file=weights,
        layout=layout,
        alpha=float(alpha),
        base=str(base_p),
        tuned=str(tuned_p),
        base_digest=_digest(base_p),
        tuned_digest=_digest(tuned_p),
        merged_digest=_digest(out if layout == "transformers" else weights),
        interpolated=len(merged) - len(copied),
        parameters=n_params,
        copied_from_tuned=copied,
        differing_copied=differing,
        files_copied=files_copied,
    )
    if differing:
        log.warning(
            "%d non-float tensor(s) differ between the models and were taken from the tuned one: %s",
            len(differing),
            ", ".join(differing[:_SHOW]),
        )
    provenance = {
        "scopebench_merge_version": _MERGE_VERSION,
        "formula": "theta = alpha * theta_base + (1 - alpha) * theta_tuned (float tensors); "
        "non-float tensors and all non-weight files from the tuned model",
        **result.to_dict(),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "packages": _versions(),
    }
    (out / MERGE_FILE).write_text(json.dumps(provenance, indent=2, sort_keys=True), encoding="utf-8")
    return result


def _copy_model_files(tuned: Path, out: Path) -> list[str]:
    """Copy the tuned folder's non-weight files (config, processor…) into ``out``; their names.

    Weights an earlier merge left in ``out`` are removed first, so none outlives this merge.
    """
    for stale in out.iterdir():
        if stale.is_file() and (stale.suffix in _WEIGHT_SUFFIXES or stale.name.endswith(".index.json")):
            stale.unlink()
    copied = []
    for f in sorted(tuned.iterdir()):
        skip = f.suffix in _WEIGHT_SUFFIXES or f.name.endswith(".index.json") or f.name == MERGE_FILE
        if f.is_file() and not skip:
            shutil.copy2(f, out / f.name)
            copied.append(f.name)
    return copied


def _check_configs(base: Path, tuned: Path) -> None:
    """Two transformers folders must describe the same model family (``model_type``)."""
    types = []
    for p in (base, tuned):
        cfg = p / "config.json"
        if not cfg.is_file():
            raise ModelError(f"{p} has no config.json; give a folder written by save_pretrained")
        types.append(json.loads(cfg.read_text(encoding="utf-8")).get("model_type"))
    if types[0] != types[1]:
        raise ModelError(
            f"the base model is a {types[0]!r} model and the tuned one a {types[1]!r} model; "
            "only two models of the same architecture can be merged"
        )


def _save(state: Mapping[str, Any], path: Path) -> None:
    if path.suffix == ".safetensors":
        from safetensors.torch import save_file

        # The "format" metadata is what transformers checks before loading a safetensors file.
        save_file(dict(state), str(path), metadata={"format": "pt"})
    else:
        _torch().save({"state_dict": dict(state)}, str(path))


# α sweeps ----------------------------------------------------------------------------------------

#: The default grid of ``--sweep``: 0, 0.1, …, 1.
DEFAULT_GRID: tuple[float, ...] = tuple(round(0.1 * k, 1) for k in range(11))


def alpha_label(alpha: float) -> str:
    """Folder name of one α of a sweep: ``alpha-0.50`` (more decimals only when needed)."""
    text = f"{alpha:.2f}"
    return f"alpha-{text if float(text) == alpha else repr(float(alpha))}"


def parse_alphas(text: str | None) -> list[float]:
    """``"0,0.5,1"`` → ``[0.0, 0.5, 1.0]`` (sorted, unique); ``None``/``""`` → :data:`DEFAULT_GRID`.

    Raises:
        ModelError: For a value that is not a number in ``[0, 1]``.
    """
    if not text:
        return list(DEFAULT_GRID)
    out = set()
    for part in text.split(","):
        if not part.strip():
            continue
        try:
            a = float(part)
        except ValueError:
            raise ModelError(
                f"--sweep expects comma-separated numbers such as 0,0.5,1; got {part!r}"
            ) from None
        if not 0.0 <= a <= 1.0:
            raise ModelError(f"every α of --sweep must lie in [0, 1]; got {a}")
        out.add(a)
    if not out:
        raise ModelError("--sweep got no α values; give e.g. --sweep 0,0.5,1 or just --sweep")
    return sorted(out)


@dataclass(slots=True)
class SweepRow:
    """Accuracy of the merged model at one α.

    Attributes:
        alpha: Weight of the base model.
        n: Scored items.
        correct: Correct answers (unparsed or failed items count as wrong).
        accuracy: ``correct / n``.
        ci_low: Lower bound of the 95% Wilson score interval.
        ci_high: Upper bound.
        ci_method: The interval's method (``wilson``).
        by_task: Accuracy per task.
        run_dir: The α's run directory.
        model_dir: The merged model folder.
        merged_digest: Digest of the merged weights.
    """

    alpha: float
    n: int
    correct: int
    accuracy: float
    ci_low: float
    ci_high: float
    ci_method: str
    by_task: dict[str, float]
    run_dir: str
    model_dir: str
    merged_digest: str | None


def _reusable(model_dir: Path, alpha: float, base_digest: str | None, tuned_digest: str | None) -> bool:
    """Whether ``model_dir`` already holds this exact merge (a resumed sweep skips re-merging)."""
    prov = model_dir / MERGE_FILE
    if not prov.is_file() or base_digest is None or tuned_digest is None:
        return False
    p = json.loads(prov.read_text(encoding="utf-8"))
    return (
        p.get("alpha") == alpha
        and p.get("base_digest") == base_digest
        and p.get("tuned_digest") == tuned_digest
        and Path(p.get("weights_file", "")).is_file()
        and _digest(Path(p["out_dir"]) if p.get("layout") == "transformers" else Path(p["weights_file"]))
        == p.get("merged_digest")
    )


def sweep_alphas(
    base: str | Path,
    tuned: str | Path,
    alphas: list[float],
    out_dir: str | Path,
    evaluation: RunConfig,
    *,
    openclip_arch: str | None = None,
) -> list[SweepRow]:
    """Merge at every α and evaluate each merge on a benchmark (each α a resumable run).

    Layout: ``OUT/alpha-<a>/model/`` (the merged model) and ``OUT/alpha-<a>/run/`` (an ordinary run
    directory). A re-run reuses merged folders whose provenance matches and resumes the runs.

    Args:
        base: Base model (transformers folder or open_clip checkpoint).
        tuned: Fine-tuned model.
        alphas: Weights of the base model to evaluate.
        out_dir: Root folder of the sweep.
        evaluation: The run each merge is evaluated with (benchmark, data, split, limit, seed,
            device, batch size…); its ``model`` is replaced by each merged model's spec.
        openclip_arch: open_clip architecture name, needed to load open_clip checkpoints.

    Returns:
        One :class:`SweepRow` per α, in increasing α.
    """
    root = Path(out_dir)
    base_p, tuned_p = Path(base).expanduser().resolve(), Path(tuned).expanduser().resolve()
    if _layout(base_p) == "open_clip" and not openclip_arch:
        raise ModelError("evaluating open_clip checkpoints needs their architecture: pass --openclip-arch")
    base_digest, tuned_digest = _digest(base_p), _digest(tuned_p)
    rows = []
    for alpha in alphas:
        folder = root / alpha_label(alpha)
        model_dir = (folder / "model").resolve()
        if _reusable(model_dir, alpha, base_digest, tuned_digest):
            log.info("α=%s: reusing the merged model in %s", alpha, model_dir)
            prov = json.loads((model_dir / MERGE_FILE).read_text(encoding="utf-8"))
            weights, merged_digest = Path(prov["weights_file"]), prov.get("merged_digest")
        else:
            res = merge_models(base_p, tuned_p, alpha, model_dir)
            weights, merged_digest = res.weights_file, res.merged_digest
        spec = (
            f"clip:{model_dir}"
            if _layout(base_p) == "transformers"
            else f"openclip:{openclip_arch}@{weights}"
        )
        result = run_benchmark(dataclasses.replace(evaluation, model=spec), folder / "run")
        records = [r for r in load_run(result.run_dir).records if r.kind == "mcq"]
        values = outcomes(records, "wrong")
        ci = proportion_ci(values)
        tasks: dict[str, list[float]] = {}
        for r, v in zip(records, values, strict=True):
            tasks.setdefault(r.task, []).append(v)
        rows.append(
            SweepRow(
                alpha=alpha,
                n=len(values),
                correct=int(sum(values)),
                accuracy=float(sum(values) / len(values)) if values else float("nan"),
                ci_low=ci.low,
                ci_high=ci.high,
                ci_method=ci.method,
                by_task={t: sum(v) / len(v) for t, v in sorted(tasks.items())},
                run_dir=str(result.run_dir),
                model_dir=str(model_dir),
                merged_digest=merged_digest,
            )
        )
    return rows


def write_sweep_outputs(rows: list[SweepRow], out_dir: str | Path, *, title: str = "") -> list[Path]:
    """Write ``sweep.json``, ``sweep.csv``, ``sweep.md`` and the plot ``sweep.png`` / ``sweep.svg``.

    Returns:
        The files written.
    """
    import csv

    root = Path(out_dir)
    root.mkdir(parents=True, exist_ok=True)
    tasks = sorted({t for r in rows for t in r.by_task})
    payload = {"title": title, "rows": [asdict(r) for r in rows]}
    (root / "sweep.json").write_text(json.dumps(payload, indent=2), encoding="utf-8")
    head = ["alpha", "n", "correct", "accuracy", "ci_low", "ci_high", *[f"task={t}" for t in tasks]]
    with open(root / "sweep.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(head)
        for r in rows:
            w.writerow([r.alpha, r.n, r.correct, f"{r.accuracy:.6f}", f"{r.ci_low:.6f}", f"{r.ci_high:.6f}",
                        *[f"{r.by_task[t]:.6f}" if t in r.by_task else "" for t in tasks]])  # fmt: skip
    md = [
        "| α (base weight) | n | accuracy | 95% CI | " + " | ".join(tasks) + " |",
        "|---" * (4 + len(tasks)) + "|",
    ]
    for r in rows:
        cells = [f"{100 * r.by_task[t]:.1f}%" if t in r.by_task else "" for t in tasks]
        md.append(
            f"| {r.alpha:g} | {r.n} | {100 * r.accuracy:.1f}% | "
            f"[{100 * r.ci_low:.1f}, {100 * r.ci_high:.1f}] | " + " | ".join(cells) + " |"
        )
    note = "α = 1 is the base model, α = 0 the tuned model; unanswered items count as wrong."
    (root / "sweep.md").write_text((f"# {title}\n\n" if title else "") + "\n".join(md) + f"\n\n{note}\n")
    return [
        root / "sweep.json",
        root / "sweep.csv",
        root / "sweep.md",
        *plot_sweep(rows, root / "sweep", title),
    ]


def plot_sweep(rows: list[SweepRow], stem: Path, title: str = "") -> list[Path]:
    """Accuracy vs α with the 95% CI as a band (and thin per-task lines), as PNG and SVG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from scopebench.report.plots import save_figure

    xs = [r.alpha for r in rows]
    fig, ax = plt.subplots(figsize=(6.8, 3.5))  # 5 inches of axes + the legend beside them
    for t in sorted({t for r in rows for t in r.by_task}):
        pts = [(r.alpha, 100 * r.by_task[t]) for r in rows if t in r.by_task]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], lw=0.8, alpha=0.45, label=t)
    ax.fill_between(xs, [100 * r.ci_low for r in rows], [100 * r.ci_high for r in rows],
                    color="#4C72B0", alpha=0.2, lw=0)  # fmt: skip
    ax.plot(xs, [100 * r.accuracy for r in rows], "o-", color="#4C72B0", lw=2, label="overall (95% CI)")
    ax.set_xlabel("α  (0 = tuned model, 1 = base model)")
    ax.set_ylabel("accuracy (%)")
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(0, 100)
    # Right of the axes: "best" still put it over task lines that span the whole α range.
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    if title:
        ax.set_title(title, fontsize=9)
    fig.tight_layout()
    return save_figure(fig, stem)

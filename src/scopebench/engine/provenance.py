"""What a run records about itself in ``run.json``: its data, model, settings and versions.

Split out of :mod:`scopebench.engine.runner` so that other writers of provenance (the review
app's exports) use the same fields without reaching into the runner's private functions.
"""

from __future__ import annotations

import functools
import platform
import time
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scopebench.benchmarks import LoadedBenchmark
from scopebench.benchmarks.registry import benchmark_origin
from scopebench.items import Item
from scopebench.models import Backend, ModelSpec
from scopebench.models.registry import scheme_origin
from scopebench.parsing import PARSER_VERSION
from scopebench.parsing.boxes import BOX_PARSER_VERSION
from scopebench.protocols import PROTOCOL_VERSION

if TYPE_CHECKING:
    from scopebench.config import RunConfig

__all__ = ["box_provenance", "package_versions", "plugin_provenance", "run_provenance"]


def box_provenance(config: RunConfig, items: Sequence[Item]) -> dict[str, Any]:
    """run.json's detection-scoring and owner-template versions (null where they do not apply)."""
    detection = any(it.kind == "detection" for it in items)
    return {
        "box_repair": config.box_repair if detection else None,
        "box_parser_version": BOX_PARSER_VERSION if detection else None,
        # The owners' templates have revisions (2: byte-exact); a run never mixes two. Null under
        # the default protocol, so default-protocol runs are not tied to owner-template changes.
        "owner_protocol_version": PROTOCOL_VERSION if config.protocol == "owner" else None,
    }


@functools.cache
def package_versions() -> dict[str, str]:
    """Installed versions of scopebench and the libraries that change a run's numbers."""
    names = ["scopebench", "torch", "transformers", "open_clip_torch", "vllm", "datasets", "numpy", "scipy"]
    out = {}
    for n in names:
        try:
            out[n] = metadata.version(n)
        except metadata.PackageNotFoundError:
            continue
    return out


def run_provenance(
    config: RunConfig, loaded: LoadedBenchmark, items: Sequence[Item], backend: Backend, spec: ModelSpec
) -> dict[str, Any]:
    """Everything ``run.json`` records about a run: data, model, settings, versions, platform."""
    import hashlib

    exclude_fp = (
        hashlib.sha256("\n".join(sorted(config.exclude_ids)).encode()).hexdigest()[:16]
        if config.exclude_ids
        else None
    )
    data = config.data
    if data and Path(data).exists():
        data = str(Path(data).resolve())
    return {
        "benchmark": config.benchmark,
        "data": data,
        "data_fingerprint": loaded.fingerprint,
        "split": config.split,
        "limit": config.limit,
        "tasks": list(config.tasks) if config.tasks else None,
        "exclude_fingerprint": exclude_fp,
        "transform": config.transform,
        "strategy": config.strategy,
        "seed": config.seed,
        "model": config.model,
        "model_identity": backend.identity(),
        "protocol": config.protocol,
        "mode": backend.mode if config.mode is None else config.mode,
        "no_image": config.no_image,
        "batch_size": config.batch_size,
        "parser_version": PARSER_VERSION,
        "answer_format": config.answer_format,
        # Left None for greedy runs, so resuming a run made before --gen-arg existed is not refused.
        "gen_args": dict(config.gen_args) or None,
        # Detection scoring only: left None on runs without detection items, so that resuming
        # a multiple-choice run made before these keys existed is not refused.
        **box_provenance(config, items),
        "scopebench_version": package_versions().get("scopebench", "unknown"),
        "packages": dict(package_versions()),
        "device": config.device,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "n_items": len(items),
        "label": config.label,
        # Records the loader could not turn into a usable item: kept here so a run never loses a
        # record without a trace (``scopebench validate`` lists the same problems).
        "unusable_records": [str(p) for p in loaded.problems if p.severity == "error"],
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        **plugin_provenance(config, spec),
    }


def plugin_provenance(config: RunConfig, spec: ModelSpec) -> dict[str, Any]:
    """``{"plugins": …}`` naming the distribution or file of a plugin benchmark or model, if any.

    Absent for built-ins, so run.json of runs without plugins is unchanged.
    """
    origins = {"benchmark": benchmark_origin(config.benchmark), "model": scheme_origin(spec)}
    used = {k: v for k, v in origins.items() if v is not None}
    return {"plugins": used} if used else {}

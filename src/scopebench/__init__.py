"""scopebench: evaluate vision-language models on microscopy, pathology and figure benchmarks.

Importing this package is cheap: it never imports torch, transformers, ray or vllm; backends import
them when they are used. The Python API (:func:`evaluate`, :func:`load_benchmark`,
:func:`load_model`, :func:`load_run`, :func:`compare`, :class:`Results`) is imported on first use;
docs/api.md shows it at work.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scopebench.errors import ScopebenchError
from scopebench.items import Box, ImageRef, Item, Record

if TYPE_CHECKING:
    from scopebench.api import compare, evaluate, load_benchmark, load_model, load_run
    from scopebench.results import AccuracyRow, OwnerRow, Results

__all__ = [
    "AccuracyRow",
    "Box",
    "ImageRef",
    "Item",
    "OwnerRow",
    "Record",
    "Results",
    "ScopebenchError",
    "__version__",
    "compare",
    "evaluate",
    "load_benchmark",
    "load_model",
    "load_run",
]

__version__ = "0.1.0"

# Names importable from the package whose modules load the engine, the registries and pandas:
# imported on first access (PEP 562), so `import scopebench` stays light.
_LAZY = {
    "compare": "scopebench.api",
    "evaluate": "scopebench.api",
    "load_benchmark": "scopebench.api",
    "load_model": "scopebench.api",
    "load_run": "scopebench.api",
    "AccuracyRow": "scopebench.results",
    "OwnerRow": "scopebench.results",
    "Results": "scopebench.results",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value  # later lookups skip this hook
        return value
    raise AttributeError(f"module 'scopebench' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

"""Item transforms: how a probe changes a benchmark before the engine runs it.

A transform is ``fn(items, arg, seed) -> items`` registered under a name; a run names it as
``NAME`` or ``NAME:ARG`` (``RunConfig.transform``), the probe layer hands the engine the hook that
applies it after loading (:func:`transform_hook`; the engine applies no transform of its own), and
the spec and seed are part of the run's provenance. So a probe's evaluations are ordinary runs: they
resume, cache and report like any other. Transforms must be deterministic for a seed and must keep
images lazy (wrap :class:`~scopebench.items.ImageRef` loaders; never decode eagerly).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Sequence

from scopebench.errors import ScopebenchError
from scopebench.items import Item

__all__ = ["TransformFn", "apply_transform", "available_transforms", "register_transform", "transform_hook"]

TransformFn = Callable[[Sequence[Item], str, int], list[Item]]

_REGISTRY: dict[str, TransformFn] = {}
# Modules that register transforms when imported (kept lazy: corruptions pull in scipy/skimage).
_MODULES = ("scopebench.transforms.image", "scopebench.transforms.text")


def register_transform(name: str) -> Callable[[TransformFn], TransformFn]:
    """Decorator registering a transform under ``name``."""

    def deco(fn: TransformFn) -> TransformFn:
        _REGISTRY[name] = fn
        return fn

    return deco


def _load_all() -> None:
    for module in _MODULES:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise


def available_transforms() -> list[str]:
    """Names of every registered transform."""
    _load_all()
    return sorted(_REGISTRY)


def apply_transform(spec: str, items: Sequence[Item], seed: int) -> list[Item]:
    """Apply the transform ``NAME[:ARG]`` to ``items`` with ``seed``.

    Raises:
        ScopebenchError: For an unknown transform name.
    """
    name, _, arg = spec.partition(":")
    if name not in _REGISTRY:
        _load_all()
    if name not in _REGISTRY:
        raise ScopebenchError(
            f"unknown item transform {name!r}; known: {', '.join(available_transforms()) or 'none'}"
        )
    return _REGISTRY[name](items, arg, seed)


def transform_hook(spec: str | None, seed: int) -> Callable[[list[Item]], list[Item]] | None:
    """The engine's item hook applying ``spec`` with ``seed`` (``None`` without a transform).

    A :func:`functools.partial` of :func:`apply_transform`, so it pickles to Ray workers.
    """
    return None if not spec else functools.partial(apply_transform, spec, seed=seed)

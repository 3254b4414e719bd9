"""One generic name → object registry, with lazy imports and ``did you mean …?`` suggestions.

Benchmarks, model schemes and chain-of-thought strategies are each a :class:`Registry`. A target is
either the object itself or a ``"module:attr"`` string imported on first use, so ``import
scopebench`` never imports torch, transformers or ``datasets``. Entry-point plugins
(:mod:`scopebench.plugins`) are looked up by the registry's users, which know the base class a
plugin must subclass.

An unknown name raises the registry's own error type (a :class:`~scopebench.errors.ScopebenchError`,
so the CLI prints it without a traceback) with the closest known name, found by
:func:`difflib.get_close_matches`.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Iterable
from typing import Any, Generic, TypeVar

from scopebench.errors import ScopebenchError

__all__ = ["Registry", "did_you_mean"]

T = TypeVar("T")


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """``" (did you mean 'x'?)"`` for the known name closest to ``name``; ``""`` when none is close.

    Closeness is :func:`difflib.get_close_matches` with its default cutoff 0.6 (a ratio of matching
    characters), compared case-insensitively so ``PathMMU`` suggests ``pathmmu``.
    """
    by_lower = {k.lower(): k for k in known}
    close = difflib.get_close_matches(name.lower(), list(by_lower), n=1)
    return f" (did you mean {by_lower[close[0]]!r}?)" if close else ""


class Registry(dict[str, Any], Generic[T]):
    """Names → objects of one kind, imported lazily from ``"module:attr"`` targets.

    It is a ``dict`` of name → target (so ``reg[name] = target``, ``in``, ``pop`` and
    ``monkeypatch.setitem`` work as on the plain dicts it replaces); :meth:`load` imports.

    Args:
        kind: What the names name, for messages (``"benchmark"``, ``"model spec"``).
        error: The exception type raised for an unknown name.
    """

    def __init__(self, kind: str, error: type[ScopebenchError]) -> None:
        super().__init__()
        self.kind = kind
        self.error = error

    def add(self, name: str, target: str | T) -> None:
        """Register ``name`` → ``target`` (an object, or ``"module:attr"`` imported on first use)."""
        self[name] = target

    def names(self) -> list[str]:
        """The registered names, sorted."""
        return sorted(self)

    def target(self, name: str) -> str | T:
        """What ``name`` was registered with (nothing is imported).

        Raises:
            ScopebenchError: Of the registry's type, for an unknown name.
        """
        if name not in self:
            raise self.unknown(name)
        target: str | T = self[name]
        return target

    def load(self, name: str) -> T:
        """The object registered as ``name``, importing its module on first use.

        Raises:
            ScopebenchError: Of the registry's type, for an unknown name.
        """
        target = self.target(name)
        if isinstance(target, str):
            module_name, _, attr = target.partition(":")
            obj: T = getattr(importlib.import_module(module_name), attr)
            self[name] = obj  # imported once
            return obj
        return target

    def unknown(
        self,
        name: str,
        known: Iterable[str] | None = None,
        listing: str | None = None,
        *,
        compare: str | None = None,
    ) -> ScopebenchError:
        """The error for an unknown ``name``: the closest known name, then what is known.

        Args:
            name: The name that was asked for.
            known: The names to suggest from (default: the registered ones; a caller adds
                entry-point names or presets).
            listing: What follows the suggestion (default: ``choose one of: <known names>``).
            compare: The part of ``name`` to find a close known name for (default: all of it;
                a model spec ``hff:M`` compares its scheme ``hff``).
        """
        names = sorted(known) if known is not None else self.names()
        listing = listing if listing is not None else f"choose one of: {', '.join(names)}"
        return self.error(f"unknown {self.kind} {name!r}{did_you_mean(compare or name, names)}; {listing}")

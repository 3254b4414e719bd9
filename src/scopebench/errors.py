"""Exception types for errors a user can fix.

Every error a user can cause (a wrong path, a malformed file, an unknown model spec) raises a
subclass of :class:`ScopebenchError` whose message says what went wrong *and what to do*. The CLI
prints that message and exits non-zero without a traceback; anything else is a bug and keeps its
traceback.
"""

from __future__ import annotations

__all__ = [
    "BenchmarkNotFoundError",
    "ConfigMismatchError",
    "DataFormatError",
    "DataNotFoundError",
    "ImageLoadError",
    "LanguageFileError",
    "MissingDependencyError",
    "ModelError",
    "ModelSpecError",
    "NoItemsError",
    "PluginError",
    "RunAbortedError",
    "RunDirReadOnlyError",
    "RunInterruptedError",
    "RunLockedError",
    "ScopebenchError",
    "StoreDamagedError",
    "UnsafePathError",
    "UsageError",
    "reason",
]


class ScopebenchError(Exception):
    """Base class for errors whose message is meant for the user."""


class BenchmarkNotFoundError(ScopebenchError):
    """An unknown benchmark name was asked for."""


class DataNotFoundError(ScopebenchError):
    """A data file or folder that a benchmark needs does not exist."""


class DataFormatError(ScopebenchError):
    """A data file exists but cannot be read as the benchmark's format."""


class UnsafePathError(ScopebenchError):
    """An image reference points outside the benchmark's data folder."""


class ImageLoadError(ScopebenchError):
    """An image could not be opened or decoded."""


class LanguageFileError(ScopebenchError, ValueError):
    """A parser language file (``parsing/languages/<code>.toml``) has an unknown key or slot."""


class ModelSpecError(ScopebenchError):
    """A model spec string cannot be resolved to a backend."""


class ModelError(ScopebenchError):
    """A backend failed in a way the user can act on (bad weights folder, server refused)."""


class MissingDependencyError(ScopebenchError):
    """An optional dependency is not installed; the message names the extra to install."""

    def __init__(self, package: str, extra: str, purpose: str) -> None:
        super().__init__(
            f"{purpose} needs the Python package '{package}', which is not installed. "
            f"Install it with: pip install 'scopebench[{extra}]'"
        )
        self.package = package
        self.extra = extra


class ConfigMismatchError(ScopebenchError):
    """A run directory holds results made with a different configuration."""


class NoItemsError(ScopebenchError):
    """A run would evaluate no item (all excluded, filtered out, unusable or of another kind)."""


class RunAbortedError(ScopebenchError):
    """A run stopped on purpose (too many failures); finished work is kept."""


class RunInterruptedError(RunAbortedError):
    """A run stopped by Ctrl-C; finished work is kept (the CLI exits 130, as shells expect)."""


class RunLockedError(ScopebenchError):
    """Another process is writing to the run directory (one writer per folder)."""


class RunDirReadOnlyError(ScopebenchError):
    """A run directory, or a file a command must write, cannot be written (reading a run needs none)."""


class StoreDamagedError(DataFormatError):
    """A run's ``records.sqlite`` is damaged; the message says how to salvage what is readable."""


class PluginError(ScopebenchError):
    """A third-party benchmark or backend (entry point or plugin file) could not be loaded."""


class UsageError(ScopebenchError, TypeError):
    """The Python API was called with an option it has not (also a ``TypeError``, as Python's own)."""


def reason(exc: BaseException) -> str:
    """A third-party exception's message for the middle of a sentence (no trailing period)."""
    return str(exc).strip().rstrip(".").strip()

"""One place for what the user sees while work runs: progress bars and log set-up."""

from __future__ import annotations

import logging
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tqdm.auto import tqdm

__all__ = ["adopt_library_logs", "configure_logging", "is_quiet", "progress", "set_quiet", "shown"]

_QUIET = False


def set_quiet(quiet: bool) -> None:
    """Turn progress bars off (``--quiet``)."""
    global _QUIET
    _QUIET = quiet


def configure_logging(verbosity: int = 0, quiet: bool = False) -> None:
    """Set up ``logging`` for the CLI: warnings by default, info with ``-v``, debug with ``-vv``."""
    level = logging.ERROR if quiet else [logging.WARNING, logging.INFO, logging.DEBUG][min(verbosity, 2)]
    if quiet:
        # transformers' and datasets' own log lines and bars ("Loading checkpoint shards",
        # "Map: 100%") read these when first imported, which in scopebench is always later, lazily.
        for var, value in (
            ("TRANSFORMERS_VERBOSITY", "error"),
            ("DATASETS_VERBOSITY", "error"),
            ("HF_DATASETS_DISABLE_PROGRESS_BARS", "1"),
            ("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1"),
        ):
            os.environ.setdefault(var, value)
        _quiet_loaded_hf()
    if quiet or not sys.stderr.isatty():
        # Hugging Face's own bars ("Loading weights", downloads) read this when transformers and
        # huggingface_hub are first imported, which in scopebench is always later, lazily.
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, _ShownOnce) for f in handler.filters):
            handler.addFilter(_ShownOnce())
        if isinstance(handler, logging.StreamHandler) and not isinstance(handler.formatter, _Shown):
            handler.setFormatter(_Shown("%(levelname)s %(name)s: %(message)s"))
    logging.getLogger("scopebench").setLevel(level)
    set_quiet(quiet)


def shown(text: str) -> str:
    """``text`` as the user may see it anywhere: the home folder written ``~`` (``/home/me/x`` → ``~/x``).

    Console lines, progress bars and the files a run shares (``records.jsonl``, ``metrics.json``)
    show paths as the user would type them; the full spec stays in ``run.json`` only.
    """
    home = os.path.expanduser("~").rstrip("/\\")
    if not home or home in ("/", ".") or home not in text:
        return text
    return re.sub(re.escape(home) + r"(?=[/\\\s\"'<>&:,;)\]]|$)", "~", text)


class _Shown(logging.Formatter):
    """The CLI's log line format, with paths as :func:`shown` writes them."""

    def format(self, record: logging.LogRecord) -> str:
        """The formatted line, home folder written ``~``."""
        return shown(super().format(record))


def adopt_library_logs(*names: str) -> None:
    """Print the log lines of libraries ``names`` through the CLI's handler only.

    ``datasets`` and ``huggingface_hub`` give their logger a stderr handler of their own when
    imported. Once the CLI has set up logging, that handler is removed (call this after importing
    them), so each line prints once, in the CLI's format, with paths as :func:`shown` writes them.
    Without the CLI's set-up (the Python API) the libraries keep their own handlers.
    """
    if not any(isinstance(h.formatter, _Shown) for h in logging.getLogger().handlers):
        return
    for name in names:
        logger = logging.getLogger(name)
        for handler in list(logger.handlers):
            if type(handler) is logging.StreamHandler:
                logger.removeHandler(handler)


class _ShownOnce(logging.Filter):
    """Drop records that a handler below the root already printed.

    ``datasets``, ``huggingface_hub`` and ``transformers`` attach their own stderr handler to their
    library logger and still propagate, so without this filter each of their warnings prints twice.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        """Whether no logger between the record's and the root has a handler of its own."""
        logger: logging.Logger | None = logging.getLogger(record.name)
        while logger is not None and logger is not logging.getLogger():
            if logger.handlers:
                return False
            logger = logger.parent if logger.propagate else None
        return True


@contextmanager
def progress(total: int, desc: str, unit: str = "item") -> Iterator[tqdm[Any]]:
    """A progress bar with rate and ETA on stderr; silent under ``--quiet`` or when not a TTY."""
    # Imported here: tqdm.auto loads asyncio and package metadata (≈0.1 s), which every CLI
    # invocation, `--help` included, would pay through this module.
    from tqdm.auto import tqdm

    bar = tqdm(
        total=total,
        desc=shown(desc),  # a model spec may name a file under the home folder
        unit=unit,
        disable=_QUIET or None,  # None: tqdm disables itself when stderr is not a terminal
        dynamic_ncols=True,
        smoothing=0.1,
    )
    try:
        yield bar
    finally:
        bar.close()


def _quiet_loaded_hf() -> None:
    """Silence transformers/datasets if they were imported before ``--quiet`` took effect."""
    if "transformers" in sys.modules:
        sys.modules["transformers"].logging.set_verbosity_error()
        sys.modules["transformers"].logging.disable_progress_bar()
    if "datasets" in sys.modules:
        sys.modules["datasets"].logging.set_verbosity_error()
        sys.modules["datasets"].disable_progress_bars()


def is_quiet() -> bool:
    """Whether ``--quiet`` is on (see :func:`set_quiet`)."""
    return _QUIET

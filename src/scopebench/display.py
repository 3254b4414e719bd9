"""One place for what the user sees while work runs: progress bars and log set-up."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.measure import Measurement
from rich.table import Table
from tqdm.auto import tqdm

__all__ = [
    "OutConsole",
    "configure_logging",
    "out_console",
    "print_wide",
    "progress",
    "set_quiet",
    "whole_token_widths",
]

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
    logging.getLogger("scopebench").setLevel(level)
    set_quiet(quiet)


@contextmanager
def progress(total: int, desc: str, unit: str = "item") -> Iterator[tqdm]:
    """A progress bar with rate and ETA on stderr; silent under ``--quiet`` or when not a TTY."""
    bar = tqdm(
        total=total,
        desc=desc,
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


class OutConsole(Console):
    """A stdout console that prints nothing under ``--quiet`` (errors go to stderr consoles)."""

    @property
    def quiet(self) -> bool:
        """True under ``--quiet`` (see :func:`set_quiet`) or when made quiet itself."""
        return _QUIET or self._own_quiet

    @quiet.setter
    def quiet(self, value: bool) -> None:
        self._own_quiet = value


def out_console(piped_width: int = 120) -> OutConsole:
    """The stdout console of a CLI module, silent under ``--quiet``.

    It is as wide as the terminal, or ``piped_width`` columns when stdout is not a terminal.
    """
    return OutConsole(width=None if sys.stdout.isatty() else piped_width)


def whole_token_widths(table: Table) -> Table:
    """Give each column of ``table`` (rows added) a minimum width of its longest word.

    A rich column narrower than a word cuts it with "…" (or folds it mid-word): a run name,
    a model spec or a URL would no longer copy. Columns still wrap between words.
    """
    for col in table.columns:
        cells = [str(c) for c in col.cells if isinstance(c, str)]
        longest = max((len(tok) for c in [str(col.header), *cells] for tok in c.split()), default=1)
        col.min_width = max(col.min_width or 0, longest)
    return table


def print_wide(console: Console, table: Table) -> None:
    """Print ``table`` with whole words (see :func:`whole_token_widths`).

    It is wider than the console if it must be: the terminal soft-wraps such lines, which copy
    back as one line, where rich would have cut a name.
    """
    whole_token_widths(table)
    need = Measurement.get(console, console.options.update(width=10_000), table).minimum
    console.print(table, width=max(console.width, need), crop=False)

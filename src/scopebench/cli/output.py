"""The CLI's stdout consoles: silent under ``--quiet``, tables that never cut a word."""

from __future__ import annotations

import sys
from typing import Any

from rich.console import Console
from rich.measure import Measurement
from rich.table import Table

from scopebench.display import is_quiet, shown

__all__ = ["OutConsole", "out_console", "print_wide", "whole_token_widths"]


class OutConsole(Console):
    """A stdout console that prints nothing under ``--quiet`` (errors go to stderr consoles).

    Text and table titles are printed as :func:`~scopebench.display.shown` writes paths: a run
    folder or a model spec under the home folder appears with ``~``, never as an absolute path.
    """

    def print(self, *objects: Any, **kwargs: Any) -> None:
        """``Console.print`` with paths in text and table titles shown as the user typed them."""
        for obj in objects:
            if isinstance(obj, Table) and isinstance(obj.title, str):
                obj.title = shown(obj.title)
        super().print(*(shown(o) if isinstance(o, str) else o for o in objects), **kwargs)

    @property
    def quiet(self) -> bool:
        """True under ``--quiet`` (see :func:`set_quiet`) or when made quiet itself."""
        return is_quiet() or self._own_quiet

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

"""`--quiet`: stdout consoles print nothing; Hugging Face's log lines and bars are silenced."""

from __future__ import annotations

import io
import logging
import os

import pytest

from scopebench import display
from scopebench.cli.output import OutConsole, print_wide


@pytest.fixture
def restore_quiet(monkeypatch):
    for var in ("TRANSFORMERS_VERBOSITY", "DATASETS_VERBOSITY", "HF_DATASETS_DISABLE_PROGRESS_BARS"):
        monkeypatch.delenv(var, raising=False)
    root = logging.getLogger()
    handlers = list(root.handlers)
    yield
    display.set_quiet(False)
    root.handlers[:] = handlers
    logging.getLogger("scopebench").setLevel(logging.NOTSET)


def test_out_console_is_silent_only_under_quiet(restore_quiet):
    buf = io.StringIO()
    display.set_quiet(False)  # an earlier in-process `main(["-q", …])` leaves it on
    con = OutConsole(file=buf, width=80)
    con.print("table")
    assert buf.getvalue() == "table\n"
    display.configure_logging(quiet=True)
    con.print("hidden")
    assert buf.getvalue() == "table\n"
    display.set_quiet(False)
    con.print("again")
    assert buf.getvalue() == "table\nagain\n"


def test_quiet_silences_transformers_even_when_already_imported(restore_quiet):
    transformers = pytest.importorskip("transformers")
    tlog = transformers.utils.logging
    before = tlog.get_verbosity()
    tlog.enable_progress_bar()
    try:
        display.configure_logging(quiet=True)
        assert os.environ["TRANSFORMERS_VERBOSITY"] == "error"
        assert os.environ["HF_DATASETS_DISABLE_PROGRESS_BARS"] == "1"
        assert not tlog.is_progress_bar_enabled()
        assert tlog.get_verbosity() == tlog.ERROR
    finally:
        tlog.set_verbosity(before)
        tlog.enable_progress_bar()


def test_print_wide_never_cuts_a_name_with_an_ellipsis():
    from rich.console import Console
    from rich.table import Table

    from scopebench.cli.report import _print_table

    name = "runs/demo/clip-vit-b32:clip:openai/clip-vit-base-patch32"
    buf = io.StringIO()
    narrow = Console(file=buf, width=40)
    plain = Table(title="t")
    for h in ("run", "accuracy"):
        plain.add_column(h)
    plain.add_row(name, "54.2% [51.0, 57.3]")
    narrow.print(plain)
    assert "…" in buf.getvalue()  # what rich does by default at 40 columns
    buf = io.StringIO()
    narrow = Console(file=buf, width=40)
    print_wide(narrow, plain)
    text = buf.getvalue()
    assert "…" not in text
    assert name in text  # whole, on one line
    assert "[51.0," in text and "57.3]" in text  # prose may wrap, between words only
    # The compare/report command tables go through it.
    import scopebench.cli.report as rep

    buf = io.StringIO()
    old = rep.console
    rep.console = Console(file=buf, width=40)
    try:
        _print_table("compare", ["run", "accuracy"], [[name, "54.2%"]])
    finally:
        rep.console = old
    assert name in buf.getvalue() and "…" not in buf.getvalue()

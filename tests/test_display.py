"""`--quiet`: stdout consoles print nothing; Hugging Face's log lines and bars are silenced."""

from __future__ import annotations

import io
import logging
import os

import pytest

from scopebench import display


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
    con = display.OutConsole(file=buf, width=80)
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

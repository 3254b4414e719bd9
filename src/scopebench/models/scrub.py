"""Keep API keys out of records, run stores, exports and every log record.

A server or proxy may echo the key in an error: verbatim, base64-encoded (a ``Basic`` header),
percent-encoded in a URL, as hex, or cut off by its own truncation. :func:`scrub_secrets` removes
each of those forms, and any piece of 8 or more characters of them, from a text; callers scrub the
*whole* text before cutting it to a snippet (a cut after the scrub cannot leave a piece behind).

:func:`register_secret` also wraps :mod:`logging`'s record factory, so every log record of every
logger (ours, httpx's, a user's handler added later, pytest's ``caplog``) is scrubbed when it is
created, not only the texts we remember to pass through the scrubber.
"""

from __future__ import annotations

import base64
import logging
import threading
from typing import Any
from urllib.parse import quote, quote_plus

__all__ = ["MIN_PIECE", "forget_secrets", "register_secret", "scrub_secrets"]

#: Shortest piece of a secret (or of an encoded form) that is removed on its own.
MIN_PIECE = 8
_MASK = "***"
_MIN_EXACT = 4  # a shorter "key" would mask ordinary words

_lock = threading.Lock()
_exact: set[str] = set()  # forms shorter than MIN_PIECE: removed only whole
_pieces: set[str] = set()  # every MIN_PIECE-long substring of every longer form
_factory_installed = False


def _forms(secret: str) -> set[str]:
    """The secret as it may appear in a text: verbatim, URL-, hex- and base64-encoded."""
    raw = secret.encode("utf-8")
    forms = {secret, quote(secret, safe=""), quote_plus(secret), raw.hex(), raw.hex().upper()}
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        for shift in range(3):
            # base64 of a text that holds the secret depends on where the secret starts modulo 3;
            # keep the characters that only the secret's own bits determine.
            text = encode(b"\0" * shift + raw).decode("ascii").rstrip("=")
            head = -(-8 * shift // 6)  # characters touched by the shift bytes
            tail = 1 if (shift + len(raw)) % 3 else 0  # last character mixes in padding bits
            forms.add(text[head : len(text) - tail])
    return {f for f in forms if f}


def register_secret(secret: str | None) -> None:
    """Scrub ``secret`` (and its encoded forms) from every later :func:`scrub_secrets` and log record."""
    if not secret:
        return
    with _lock:
        for form in _forms(secret):
            if len(form) >= MIN_PIECE:
                _pieces.update(form[i : i + MIN_PIECE] for i in range(len(form) - MIN_PIECE + 1))
            elif form == secret and len(form) >= _MIN_EXACT:
                # A short key ("EMPTY" for a local server) is removed whole; its encoded fragments
                # are too short to tell from ordinary text.
                _exact.add(form)
        _install_factory()


def forget_secrets() -> None:
    """Stop scrubbing every registered secret (tests; a process that has dropped its keys)."""
    with _lock:
        _exact.clear()
        _pieces.clear()


def scrub_secrets(text: str) -> str:
    """``text`` with every registered secret, encoded form and 8+-character piece of one as ``***``."""
    if not _pieces and not _exact:
        return text
    for form in sorted(_exact, key=len, reverse=True):
        text = text.replace(form, _MASK)
    if not _pieces or len(text) < MIN_PIECE:
        return text
    spans: list[list[int]] = []
    for i in range(len(text) - MIN_PIECE + 1):
        if text[i : i + MIN_PIECE] in _pieces:
            if spans and i <= spans[-1][1]:
                spans[-1][1] = i + MIN_PIECE
            else:
                spans.append([i, i + MIN_PIECE])
    if not spans:
        return text
    out, at = [], 0
    for start, end in spans:
        out += [text[at:start], _MASK]
        at = end
    out.append(text[at:])
    return "".join(out)


def _scrub_record(record: logging.LogRecord) -> None:
    try:
        message = record.getMessage()
    except Exception:  # a bad format string is logging's own error to report
        return
    clean = scrub_secrets(message)
    if clean != message:
        record.msg, record.args = clean, None
    if record.exc_info and record.exc_info[0] is not None and not record.exc_text:
        # Formatted now, scrubbed, and cached where every Formatter looks first.
        record.exc_text = scrub_secrets(logging.Formatter().formatException(record.exc_info))
    if record.stack_info:
        record.stack_info = scrub_secrets(record.stack_info)


def _install_factory() -> None:
    global _factory_installed
    if _factory_installed:
        return
    previous = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        _scrub_record(record)
        return record

    logging.setLogRecordFactory(factory)
    _factory_installed = True

"""Errors of the review application, each mapped to one HTTP status by the web layer.

They are :class:`~scopebench.errors.ScopebenchError` subclasses, so the CLI prints their message
without a traceback, and the web layer answers with that message and the class's status code.
"""

from __future__ import annotations

from scopebench.errors import ScopebenchError

__all__ = ["Conflict", "Forbidden", "Invalid", "NotFound", "ReviewError", "TooLarge", "Unauthenticated"]


class ReviewError(ScopebenchError):
    """Base class; ``status`` is the HTTP status the web layer answers with."""

    status = 400


class Invalid(ReviewError):
    """A request or file whose content is wrong (a missing field, a score out of range)."""

    status = 400


class Unauthenticated(ReviewError):
    """No valid session: log in first."""

    status = 401


class Forbidden(ReviewError):
    """Logged in, but this role or membership may not do this."""

    status = 403


class NotFound(ReviewError):
    """No such project, item or image visible to this user."""

    status = 404


class Conflict(ReviewError):
    """The action does not fit the item's state (answering twice, rating before answering)."""

    status = 409


class TooLarge(ReviewError):
    """An upload over the size or pixel limit."""

    status = 413

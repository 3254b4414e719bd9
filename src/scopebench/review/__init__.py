"""The expert review web application (``scopebench review``).

Experts answer each benchmark item blind (answer, confidence and time stored before the key is
shown), then judge it on the project's rubric; disagreements and uncertain verdicts go to a senior's
arbitration queue; the accepted items, a decision log, every review event and the experts' first
answers (as ordinary run directories) come out. See docs/review.md.

This package needs the ``review`` extra (FastAPI, SQLAlchemy, Alembic, argon2…); nothing here is
imported by ``import scopebench``.
"""

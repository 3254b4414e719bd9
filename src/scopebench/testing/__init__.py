"""Helpers for tests and demos that ship with the package (the tiny random-weight models).

Nothing in the evaluation path imports this package: the ``tiny`` model scheme and ``scopebench
tiny-models`` load it by name.
"""

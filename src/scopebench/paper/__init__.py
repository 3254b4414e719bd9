"""From runs to a paper: the paper tables, the forest plot and the evaluation grid (``scopebench eval``).

This layer sits above :mod:`scopebench.results` (it reads runs as typed :class:`~scopebench.results.Results`)
and below the CLI and the Python API (docs/architecture.md).
"""

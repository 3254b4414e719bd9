"""The ingest step's settings, apart from its implementation.

``build run`` validates every step's ``build.yaml`` section before it decides which steps to reuse;
keeping this class away from :mod:`.step` (NumPy, the image codecs, the Ray executor) lets a re-run
that reuses every step skip importing them.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_MAX_PIXELS", "IngestConfig"]

#: Default pixel limit (width × height × planes): 8192 × 8192 (a worker's peak is measured in docs/build.md).
DEFAULT_MAX_PIXELS = 8192 * 8192


@dataclass(frozen=True)
class IngestConfig:
    """The ingest step's settings (``build.yaml``'s ``ingest:`` section).

    Attributes:
        max_pixels: Images declaring more pixels are ``oversized_image`` problems, refused from
            the header before anything is decoded; 0: no limit.
    """

    max_pixels: int = DEFAULT_MAX_PIXELS

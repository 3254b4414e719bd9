"""scopebench: evaluate vision-language models on microscopy, pathology and figure benchmarks.

Importing this package is cheap: it never imports torch, transformers, ray or vllm; backends import
them when they are used.
"""

from scopebench.errors import ScopebenchError
from scopebench.items import Box, ImageRef, Item, Record

__all__ = ["Box", "ImageRef", "Item", "Record", "ScopebenchError", "__version__"]

__version__ = "0.1.0"

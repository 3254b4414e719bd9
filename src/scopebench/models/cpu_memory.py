"""glibc's allocator, kept from handing a CPU model's activations back to the kernel between layers.

A model on the CPU allocates its activations afresh at every layer and frees them right after:
megabytes each (ViT-B/32 on 32 images: 5–20 MB per tensor, about 750 MB per batch). glibc's malloc
returns a freed block of that size to the kernel, either at once (blocks above its mmap
threshold) or by trimming the top of its heap (once more than its trim threshold lies free
there), so the next layer maps it again and the kernel zeroes every page on first touch. Measured
on 2 cores with a ViT-B/32-sized CLIP at 1,000 items (``bench/bench_contrastive.py``): about a
million minor page faults per run with glibc's defaults, 56–79 thousand with these settings, and
the run 0.96× the time of a plain script's model-only loop instead of 1.08×.

:func:`keep_freed_memory` sets the two thresholds so that blocks up to glibc's largest mmap
threshold (32 MiB) come from the heap and up to 1 GiB of freed memory stays there for the next
layer; :func:`release_freed_memory` gives the free memory back when a backend closes. Nothing is
changed on another C library, or when the user has chosen the allocator's settings or another
allocator (any ``MALLOC_*`` variable, ``GLIBC_TUNABLES`` with ``glibc.malloc``, or jemalloc,
tcmalloc or mimalloc in ``LD_PRELOAD``): those settings win.
"""

from __future__ import annotations

import ctypes
import logging
import os
import threading
from collections.abc import Mapping
from typing import Any

__all__ = ["keep_freed_memory", "release_freed_memory", "user_allocator_settings"]

log = logging.getLogger(__name__)

# mallopt's parameter numbers (glibc's malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
#: glibc refuses an mmap threshold above half its largest heap: 32 MiB on 64-bit systems.
MMAP_THRESHOLD = 32 << 20
#: Free memory at the heap's top kept for reuse before glibc trims it.
TRIM_THRESHOLD = 1 << 30

_lock = threading.Lock()
#: The C library whose thresholds this process set (``None`` until set).
_tuned: Any = None
_OTHER_ALLOCATORS = ("jemalloc", "tcmalloc", "mimalloc")


def user_allocator_settings(environ: Mapping[str, str] | None = None) -> str | None:
    """What in the environment already chooses the allocator or its settings, or ``None``.

    Args:
        environ: The environment to read (default: this process's).
    """
    env = os.environ if environ is None else environ
    for name in sorted(env):
        if name.startswith("MALLOC_"):
            return name
    if "glibc.malloc" in env.get("GLIBC_TUNABLES", ""):
        return "GLIBC_TUNABLES"
    preload = env.get("LD_PRELOAD", "")
    if any(lib in preload for lib in _OTHER_ALLOCATORS):
        return "LD_PRELOAD"
    return None


def _libc() -> Any:
    """This process's C library when it is glibc with ``mallopt`` and ``malloc_trim``, else ``None``."""
    try:
        # glibc names itself here; musl and macOS have no such value (platform.libc_ver() would
        # read the whole interpreter binary to find out).
        if not (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc"):
            return None
    except (AttributeError, ValueError, OSError):
        return None
    try:
        libc = ctypes.CDLL(None)
        return libc if hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") else None
    except OSError:
        return None


def keep_freed_memory(device: str) -> bool:
    """Keep freed blocks in glibc's heap for reuse, once per process, when a model runs on the CPU.

    Args:
        device: The model's device; anything but a CPU leaves the allocator alone (activations
            then live in the accelerator's memory).

    Returns:
        Whether the thresholds are set now (by this call or an earlier one).
    """
    global _tuned
    if not str(device).startswith("cpu"):
        return _tuned is not None
    with _lock:
        if _tuned is not None:
            return True
        chosen = user_allocator_settings()
        libc = None if chosen else _libc()
        if libc is None:
            if chosen:
                log.debug("allocator left as %s sets it", chosen)
            return False
        # Setting either threshold turns off glibc's own adjustment of both, so both are set.
        mmap_set = libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
        if mmap_set and libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD):
            _tuned = libc
        return _tuned is not None


def release_freed_memory() -> None:
    """Give the heap's free memory back to the kernel (after a CPU model is dropped)."""
    if _tuned is not None:
        _tuned.malloc_trim(0)

"""glibc's allocator keeps a CPU model's freed activations for reuse (scopebench.models.cpu_memory).

The effect is checked by its cause, not by a clock: a child process allocates and frees eight
16 MiB blocks per round, as a model's layers do. With glibc's defaults the freed blocks go back to
the kernel (the process's resident memory falls back after each round) and every round faults each
page in again (8 × 4,096 pages); kept, they stay resident and the later rounds fault almost none.
The fault counts are checked where the kernel backs the heap with 4 KiB pages (transparent huge
pages not set to ``always``, which would fault 2 MiB at a time).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from scopebench.models import cpu_memory
from scopebench.models.cpu_memory import user_allocator_settings

_GLIBC = (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc") if hasattr(os, "confstr") else False

# Rounds 3–10 of allocating, touching and freeing eight 16 MiB blocks with the C library's own
# malloc (numpy would ask the kernel for huge pages and hide the faults).
_ROUNDS = textwrap.dedent(
    """
    import ctypes, os, resource, sys
    from scopebench.models.cpu_memory import keep_freed_memory
    def resident():
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    tuned = keep_freed_memory(sys.argv[1])
    before = resident()
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.free.argtypes = [ctypes.c_void_p]
    size = 16 << 20
    for n in range(10):
        if n == 2:
            start = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        blocks = [libc.malloc(size) for _ in range(8)]
        for b in blocks:
            ctypes.memset(b, 1, size)
        for b in blocks:
            libc.free(b)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - start
    print(tuned, faults, (resident() - before) >> 20)
    """
)

#: Pages the eight rounds touch: what they fault when nothing is kept.
_PAGES = 8 * 8 * (16 << 20) // 4096


def _four_kib_pages() -> bool:
    """Whether the heap's pages fault in 4 KiB at a time (transparent huge pages not ``always``)."""
    try:
        setting = Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text(encoding="ascii")
    except OSError:
        return True
    return "[always]" not in setting


def _rounds(device: str, **env: str) -> tuple[bool, int, int]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "GLIBC_TUNABLES"}
    out = subprocess.run(
        [sys.executable, "-c", _ROUNDS, device],
        env={**clean, **env},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return out[0] == "True", int(out[1]), int(out[2])


@pytest.mark.skipif(not _GLIBC, reason="the thresholds are glibc's")
def test_a_cpu_model_s_freed_blocks_are_reused_not_faulted_in_again() -> None:
    tuned, faults, kept_mib = _rounds("cpu")
    assert tuned
    assert kept_mib >= 100, kept_mib  # the eight blocks (128 MiB) stay for the next round
    untouched, faults_default, kept_default = _rounds("cuda")  # an accelerator's model: glibc's defaults
    assert not untouched
    assert kept_default < 32, kept_default  # handed back to the kernel
    if _four_kib_pages():
        assert faults < _PAGES // 20, faults  # reused: a few pages of bookkeeping at most
        assert faults_default > _PAGES // 2, faults_default


@pytest.mark.skipif(not _GLIBC, reason="the thresholds are glibc's")
def test_the_user_s_allocator_settings_win() -> None:
    tuned, faults, kept_mib = _rounds("cpu", MALLOC_ARENA_MAX="2")
    assert not tuned
    assert kept_mib < 32, kept_mib
    if _four_kib_pages():
        assert faults > _PAGES // 2, faults


@pytest.mark.parametrize(
    ("environ", "chosen"),
    [
        ({}, None),
        ({"MALLOC_TRIM_THRESHOLD_": "131072"}, "MALLOC_TRIM_THRESHOLD_"),
        ({"MALLOC_ARENA_MAX": "2", "PATH": "/bin"}, "MALLOC_ARENA_MAX"),
        ({"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=131072"}, "GLIBC_TUNABLES"),
        ({"GLIBC_TUNABLES": "glibc.cpu.hwcaps=-AVX2"}, None),
        ({"LD_PRELOAD": "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"}, "LD_PRELOAD"),
        ({"LD_PRELOAD": "/opt/libtcmalloc_minimal.so.4"}, "LD_PRELOAD"),
        ({"LD_PRELOAD": "/usr/lib/libfaketime.so.1"}, None),
    ],
)
def test_what_counts_as_the_user_s_choice(environ: dict[str, str], chosen: str | None) -> None:
    assert user_allocator_settings(environ) == chosen


def test_nothing_is_changed_off_glibc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cpu_memory, "_tuned", None)
    monkeypatch.setattr(cpu_memory, "_libc", lambda: None)
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    assert cpu_memory.keep_freed_memory("cpu") is False
    cpu_memory.release_freed_memory()  # nothing to give back, and no error

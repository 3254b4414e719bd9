"""One writer per run directory: an exclusive ``flock`` on ``RUN/.lock`` held for the run's lifetime.

Why ``flock``: the kernel releases it when the holding process dies, however it dies (``kill -9``,
an OOM kill, a node reboot of a local disk), so a lock left by a dead run is never "stale" in a way
that needs cleaning up: the next run simply takes it. The file's content (pid, host, command,
start time) only serves the message that names the other writer; it is not what locks.

A second ``scopebench run`` on the same ``--out`` (or ``--fresh`` while a run writes there) is
refused at once, before it touches anything. Runs into different folders (probes, strategy and
merge sweeps) each take their own folder's lock, so nested runs work.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from scopebench.errors import RunDirReadOnlyError, RunLockedError

__all__ = ["LOCK_FILE", "RunLock", "check_unlocked", "lock_holder"]

LOCK_FILE = ".lock"


def lock_holder(run_dir: Path) -> dict[str, Any] | None:
    """Who holds the run directory's lock now (pid, host, command, started), or ``None``.

    Tests the lock without taking it for longer than the test (a shared probe lock would not tell;
    an exclusive non-blocking one does and is released at once).
    """
    path = run_dir / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read_info(fd)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def check_unlocked(run_dir: Path) -> None:
    """Refuse at once when another process writes to ``run_dir`` (before minutes of model loading).

    Only a pre-check: :class:`RunLock` is what excludes a second writer (two runs starting at the
    same moment both pass here, and one of them is refused when it takes the lock).

    Raises:
        RunLockedError: When the folder's lock is held.
    """
    info = lock_holder(run_dir)
    if info is not None:
        raise _locked(run_dir, info)


def _locked(run_dir: Path, info: dict[str, Any]) -> RunLockedError:
    return RunLockedError(
        f"the run directory {run_dir} is in use by {_describe(info)}. Only one run may write to a "
        "folder: wait for it to finish (or stop it), or choose another --out"
    )


def _read_info(fd: int) -> dict[str, Any]:
    os.lseek(fd, 0, os.SEEK_SET)
    raw = os.read(fd, 65536)
    try:
        info = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return {}
    return info if isinstance(info, dict) else {}


def _describe(info: dict[str, Any]) -> str:
    if not info:
        return "another process (it has not written its details yet)"
    cmd = str(info.get("command", "?"))
    if len(cmd) > 160:
        cmd = cmd[:160] + "…"
    started = info.get("started", "?")
    return f"process {info.get('pid', '?')} on {info.get('host', '?')} (started {started}: {cmd})"


class RunLock:
    """The exclusive writer lock of one run directory (a context manager).

    Args:
        run_dir: The run directory (must exist).

    Raises:
        RunLockedError: On entering, when another process holds the lock.
        RunDirReadOnlyError: On entering, when the lock file cannot be created (read-only folder).
    """

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.path = run_dir / LOCK_FILE
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock or raise at once (never waits)."""
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except PermissionError as exc:
            raise RunDirReadOnlyError(
                f"cannot write to the run directory {self.run_dir} ({exc.strerror}): a run needs write "
                "access. Choose another --out; to read this run, `scopebench report` / `compare` / "
                "`export` work on a read-only folder (give them --out for their files)"
            ) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            info = _read_info(fd)
            os.close(fd)
            raise _locked(self.run_dir, info) from None
        # Ours now: a lock left by a dead process was released by the kernel when it died.
        info = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            # Capped: _read_info reads 64 KiB, and a longer command line (thousands of arguments)
            # would leave the holder's details unreadable.
            "command": " ".join(sys.argv)[:4096],
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(info).encode("utf-8"), 0)
        self._fd = fd

    def release(self) -> None:
        """Release the lock (the file stays; its content no longer means anything once unlocked)."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)

    def __enter__(self) -> RunLock:
        if self._fd is None:  # already taken by an explicit acquire()
            self.acquire()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()

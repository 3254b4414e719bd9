"""The ``openai:`` response cache under concurrent writers and a writer killed mid-write.

These are the properties weighed against diskcache (``bench/bench_cache.py``): several runs
share ``~/.cache/scopebench/openai`` at once, and a run can be killed at any moment. Writers are
separate Python processes (as separate runs are).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from scopebench.models.openai_api import ResponseCache

SRC = str(Path(__file__).resolve().parents[2] / "src")

_WRITER = """
import sys
from pathlib import Path
from scopebench.models.openai_api import ResponseCache

root, tag, n, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
cache = ResponseCache(Path(root))
print("ready", flush=True)
i = 0
while n < 0 or i < n:
    # Ten keys every writer rewrites over and over (same content), and keys of this writer only.
    for key in (f"{i % 10:064x}", f"{tag}{i:063x}"):
        cache.put(key, "m", "s", {"key": key, "pad": "x" * size})
    if i < 3:
        print("wrote", i, flush=True)  # the test kills the writer after its third round of puts
    i += 1
"""


def _writer(root: Path, tag: str, n: int, size: int) -> subprocess.Popen[str]:
    # SRC first, then whatever the caller's PYTHONPATH holds (a machine may install dependencies there).
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [SRC, os.environ.get("PYTHONPATH")]))}
    return subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(root), tag, str(n), str(size)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_two_writer_processes_at_once_lose_nothing(tmp_path: Path) -> None:
    n = 1000  # about a second of writing each: the two overlap although they start apart
    procs = [_writer(tmp_path, tag, n, 500) for tag in ("a", "b")]
    for p in procs:
        assert p.wait() == 0
    cache = ResponseCache(tmp_path)
    keys = [f"{i:064x}" for i in range(10)] + [f"{t}{i:063x}" for t in "ab" for i in range(n)]
    for key in keys:
        reply = cache.get(key)
        assert reply is not None and reply["key"] == key and len(reply["pad"]) == 500
    assert len(list(tmp_path.rglob("*.json"))) == 10 + 2 * n  # no temporary file left, none extra


def test_a_writer_killed_mid_write_leaves_no_damaged_entry(tmp_path: Path) -> None:
    # 2 MB replies: a write takes long enough that a kill lands inside one most of the time.
    proc = _writer(tmp_path, "k", -1, 2_000_000)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    # Killed once it says it has written three rounds (an event, not a guess at its speed): it is
    # then inside a later write, the 2 MB ones taking longest.
    for k in range(3):
        assert proc.stdout.readline().strip() == f"wrote {k}"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    entries = [p for p in tmp_path.rglob("*.json") if not p.name.startswith(".tmp-")]
    assert len(entries) >= 6, "the writer's first three rounds (two entries each) are not all there"
    cache = ResponseCache(tmp_path)
    for path in entries:
        json.loads(path.read_text(encoding="utf-8"))  # every entry file is whole
        reply = cache.get(path.stem)
        assert reply is not None and reply["key"] == path.stem
    # The cache takes new entries after the crash; a leftover temporary file is no entry.
    cache.put("f" * 64, "m", "s", {"ok": True})
    assert cache.get("f" * 64) == {"ok": True}
    assert all(cache.get(p.name) is None for p in tmp_path.rglob(".tmp-*"))

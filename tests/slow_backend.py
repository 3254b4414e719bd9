"""A deterministic backend for crash/resume/lock tests (run in a subprocess), paced by the test.

Without ``gate`` it sleeps ``delay`` seconds per batch. With ``gate=FILE`` it answers a batch
only once FILE holds a number at least the count of items it would then have answered: the test
writes that allowance and waits for the records to appear, so how far a run gets before a kill
or a second writer is an event the test controls, never a matter of how fast the machine is.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from pathlib import Path

from scopebench.items import Item
from scopebench.models import Backend, Response

#: Seconds a gated batch waits for its allowance before failing: a safety cap against a test that
#: never opens the gate (a hang), far above any wait a working test makes; it decides no verdict.
GATE_CAP_S = 600.0


def allow(gate: Path, n_items: int) -> None:
    """Let a gated run answer up to ``n_items`` items in all (written atomically)."""
    tmp = gate.with_suffix(".tmp")
    tmp.write_text(str(n_items), encoding="utf-8")
    tmp.replace(gate)


def _allowance(gate: Path) -> int:
    try:
        return int(gate.read_text(encoding="utf-8") or 0)
    except (OSError, ValueError):
        return 0


class SlowBackend(Backend):
    """Answers a hash-determined option, after ``delay`` seconds or once ``gate`` allows it."""

    mode = "baseline"
    needs_images = False
    default_batch_size = 2
    model_args = frozenset({"delay", "gate"})

    answered = 0

    def predict(self, items: Sequence[Item]) -> list[Response]:
        gate = self.options.extra.get("gate")
        if gate:
            self._wait_for_allowance(Path(str(gate)), self.answered + len(items))
        else:
            time.sleep(float(self.options.extra.get("delay", 0.05)))
        self.answered += len(items)
        out = []
        for it in items:
            h = int(hashlib.sha256(it.id.encode()).hexdigest(), 16)
            out.append(Response(it.id, choice=h % len(it.choices)))
        return out

    @staticmethod
    def _wait_for_allowance(gate: Path, needed: int) -> None:
        cap = time.monotonic() + GATE_CAP_S
        while _allowance(gate) < needed:
            if time.monotonic() > cap:
                raise RuntimeError(f"{gate} never allowed {needed} items (the test stopped pacing)")
            time.sleep(0.01)

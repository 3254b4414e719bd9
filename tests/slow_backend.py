"""A deterministic, deliberately slow backend for crash/resume tests (run in a subprocess)."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence

from scopebench.items import Item
from scopebench.models import Backend, Response


class SlowBackend(Backend):
    """Answers a hash-determined option after sleeping ``delay`` seconds per batch."""

    mode = "baseline"
    needs_images = False
    default_batch_size = 2
    model_args = frozenset({"delay"})

    def predict(self, items: Sequence[Item]) -> list[Response]:
        time.sleep(float(self.options.extra.get("delay", 0.05)))
        out = []
        for it in items:
            h = int(hashlib.sha256(it.id.encode()).hexdigest(), 16)
            out.append(Response(it.id, choice=h % len(it.choices)))
        return out

"""A backend for CLI tests of the flags that choose which items are (re)done.

It fails on the item ids listed in ``$SCOPEBENCH_FLAKY_FAIL`` (comma-separated) and answers every
other item with option 0, tagging the stored response with ``$SCOPEBENCH_FLAKY_TAG``. Neither
variable is part of the run's identity, so two invocations on one run directory can behave
differently (a server outage, then recovery) and a test can tell from each stored response which
invocation produced it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from scopebench.items import Item
from scopebench.models import Backend, Response


class FlakyBackend(Backend):
    """Errors on the listed items; answers option 0 with a tagged response otherwise."""

    mode = "baseline"
    needs_images = False
    default_batch_size = 4

    def predict(self, items: Sequence[Item]) -> list[Response]:
        fail = set(filter(None, os.environ.get("SCOPEBENCH_FLAKY_FAIL", "").split(",")))
        tag = os.environ.get("SCOPEBENCH_FLAKY_TAG", "")
        return [
            Response(it.id, status="error", error="server unavailable")
            if it.id in fail
            else Response(it.id, choice=0, text=f"answered in invocation {tag}")
            for it in items
        ]

"""``scopebench build``: make a benchmark from image collections, reproducibly.

Steps (each a function here and a ``scopebench build`` subcommand):

* :func:`ingest` — sources → one standardised μ-Bench-format dataset (PNG, hashes, validated
  metadata, near-duplicate groups);
* :func:`make_questions` — coarse and fine-grained multiple-choice questions and captions from the
  metadata and the concept tree;
* :func:`generate` — LLM-written descriptions and questions (PathMMU, μ-Bench cognition, SPUR
  templates) through cached, resumable calls, with failure rows and a cost ledger;
* :func:`filter_questions` — quality gates: figure panels, RefineBot, text shortcut, quotas;
* :func:`split` — image-level splits (near-duplicates together) and a ``test_tiny`` sample;
* :func:`export` — the ``local`` format and a Hugging Face dataset;
* :func:`run_build` — all of them from one ``build.yaml``, cached by content hashes.

Heavy imports (datasets, yaml, tifffile) happen inside the functions, so ``import scopebench``
stays light.
"""

from __future__ import annotations

from typing import Any

__all__ = ["export", "filter_questions", "generate", "ingest", "make_questions", "run_build", "split"]

_WHERE = {
    "ingest": "scopebench.curate.ingestion.step",
    "make_questions": "scopebench.curate.questions",
    "generate": "scopebench.curate.generation.step",
    "filter_questions": "scopebench.curate.filtering.step",
    "split": "scopebench.curate.splits",
    "export": "scopebench.curate.exporting",
    "run_build": "scopebench.curate.pipeline",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        import importlib

        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(name)

"""``scopebench finetune``: LoRA for generative VLMs, contrastive fine-tuning for CLIP models.

Both recipes share :mod:`.loop` (seeded order, accelerate, checkpoints that resume exactly), record
every hyper-parameter, the seed and the data fingerprint in ``finetune.json`` and evaluate a held-out
split through the ordinary engine before and after (docs/finetune.md). Importing this package
imports no torch; the recipes import it when they run.
"""

from scopebench.experiments.finetune.data import CaptionPair, DataSource, fingerprint, read_pairs_file
from scopebench.experiments.finetune.evaluate import EvalSpec, summarise_records
from scopebench.experiments.finetune.loop import LoopConfig, TrainingInterrupted, batch_indices
from scopebench.experiments.finetune.run import (
    FINETUNE_FILE,
    FinetuneResult,
    finetune_contrastive,
    finetune_generative,
    render_report,
)

__all__ = [
    "FINETUNE_FILE",
    "CaptionPair",
    "DataSource",
    "EvalSpec",
    "FinetuneResult",
    "LoopConfig",
    "TrainingInterrupted",
    "batch_indices",
    "finetune_contrastive",
    "finetune_generative",
    "fingerprint",
    "read_pairs_file",
    "render_report",
    "summarise_records",
]

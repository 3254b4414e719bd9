"""The seed papers' robustness and shortcut analyses ("probes"), each built on the engine.

* :mod:`scopebench.experiments.probes.base` — running a probe's conditions and writing its report;
* :mod:`scopebench.experiments.probes.image_probes`,
  :mod:`scopebench.experiments.probes.text_probes` — corruptions, noise, no-image, question swap
  and option permutation;
* :mod:`scopebench.experiments.probes.shortcut`, :mod:`scopebench.experiments.probes.matching` —
  the text-shortcut filter and the question–option matching baselines.

The item transforms a probe's runs name (corruptions, noise images, swap, rotation) live below the
engine, in :mod:`scopebench.transforms`, because the engine applies them. The ``scopebench probe``
commands are in the CLI (:mod:`scopebench.cli.probe`). Nothing here is imported by
``import scopebench``.
"""

# Here, not in matching.py: the CLI's option help names them, and printing help must not import
# the engine (tests/cli/test_import_cost.py).
#: PathMMU's two NSP models and the offline embedding baseline of ``probe matching``.
DEFAULT_MATCHING_MODELS = (
    "nsp:bert-large-uncased",
    "nsp:microsoft/BiomedNLP-BiomedBERT-large-uncased-abstract",
    "embed:default",
)

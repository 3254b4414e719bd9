"""The seed papers' robustness and shortcut analyses ("probes"), each built on the engine.

* :mod:`scopebench.probes.transforms` — the registry of seeded item transforms a run can name;
* :mod:`scopebench.probes.image_transforms` — PathMMU's image corruptions and noise images;
* :mod:`scopebench.probes.text_transforms` — question swap and option rotation;
* :mod:`scopebench.probes.base` — running a probe's conditions and writing its report;
* :mod:`scopebench.probes.image_probes`, :mod:`scopebench.probes.text_probes` — the
  ``scopebench probe`` commands (``corruptions``, ``noise``, ``no-image``, ``swap``,
  ``permutation``);
* :mod:`scopebench.probes.shortcut`, :mod:`scopebench.probes.matching` — the text-shortcut filter
  and the question–option matching baselines (``shortcut``, ``matching``).

Nothing here is imported by ``import scopebench``; the modules load when a probe or transform is used.
"""

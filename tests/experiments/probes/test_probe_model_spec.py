"""A probe parses its model spec once, for its checks and every condition's run."""

from __future__ import annotations

from pathlib import Path

import pytest

import scopebench.models.registry as registry
from scopebench.engine import RunConfig
from scopebench.experiments.probes.base import ProbeRun
from scopebench.experiments.probes.image_probes import no_image_probe


def test_no_image_probe_parses_its_model_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = registry.resolve_preset  # the first step of reading a spec string
    monkeypatch.setattr(registry, "resolve_preset", lambda s: (calls.append(s), real(s))[1])
    model = "frequent-text-loo"  # not a spec the metrics' chance baselines build themselves
    probe = ProbeRun(RunConfig(benchmark="unit", data="6", model=model), tmp_path / "probe")
    try:
        report = no_image_probe(probe)
    finally:
        probe.close()
    # The contrastive check, the model and both conditions' runs (image, no image) share one parse;
    # on main (5c418ce) the same probe read it 18 times.
    assert calls.count(model) == 1
    overall = next(r for r in report["rows"] if r["group"] == "overall")
    assert overall["image_n"] == overall["no_image_n"] == 6  # both conditions ran, on every item
    assert (tmp_path / "probe" / "clean" / "run.json").is_file()
    assert (tmp_path / "probe" / "no-image" / "run.json").is_file()

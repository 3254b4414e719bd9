"""Coverage quotas: targets per modality × domain × task cell, seeded choice, shortfall table."""

from __future__ import annotations

import pytest

from scopebench.curate.card import quota_table_markdown
from scopebench.curate.filtering.quotas import QuotaConfig, apply_quotas, cell_of
from scopebench.errors import DataFormatError


def _items() -> list[dict[str, str]]:
    out = []
    for i in range(6):
        out.append({"id": f"lm-path-mod-{i}", "modality": "LM", "domain": "path", "task": "modality"})
    for i in range(2):
        out.append({"id": f"lm-path-stain-{i}", "modality": "LM", "domain": "path", "task": "stain"})
    for i in range(3):
        out.append({"id": f"em-cell-mod-{i}", "modality": "EM", "domain": "cell", "task": "modality"})
    return out


def test_targets_drop_the_excess_and_report_shortfalls() -> None:
    cfg = QuotaConfig(default=2, cells={"LM|path|modality": 4, "LM|path|stain": 5, "FM|cell|stain": 1})
    got = apply_quotas(_items(), cfg, seed=0)
    table = {r["cell"]: r for r in got.table}
    # LM|path|modality: 6 → 4 (2 dropped); stain: 2 of a target of 5 (shortfall 3);
    # EM|cell|modality takes the default 2 (1 dropped); the listed empty cell shows shortfall 1.
    assert {c: (r["available"], r["kept"], r["dropped"], r["shortfall"]) for c, r in table.items()} == {
        "LM|path|modality": (6, 4, 2, 0),
        "LM|path|stain": (2, 2, 0, 3),
        "EM|cell|modality": (3, 2, 1, 0),
        "FM|cell|stain": (0, 0, 0, 1),
    }
    assert len(got.kept) == 8 and len(got.dropped) == 3
    assert set(got.kept).isdisjoint(got.dropped) and len(set(got.kept) | set(got.dropped)) == 11
    md = quota_table_markdown(got.table)
    assert "| LM | path | stain | 5 | 2 | 2 | 0 | 3 |" in md


def test_the_choice_is_seeded_and_independent_of_order() -> None:
    cfg = QuotaConfig(cells={"LM|path|modality": 3})
    items = _items()
    a = apply_quotas(items, cfg, seed=7)
    assert apply_quotas(list(reversed(items)), cfg, seed=7).kept == a.kept
    # Over several seeds the choice differs (6 choose 3 = 20 possible subsets).
    subsets = {tuple(apply_quotas(items, cfg, seed=s).dropped) for s in range(8)}
    assert len(subsets) > 1
    # A cell without a target, and no default: everything kept.
    assert sum(i.startswith("em-") for i in a.kept) == 3


def test_wildcards_and_missing_values() -> None:
    cfg = QuotaConfig(cells={"LM|*|*": 1})
    got = apply_quotas(_items(), cfg, seed=0)
    assert sum(i.startswith("lm-") for i in got.kept) == 2  # one per LM cell (modality, stain)
    assert cell_of({"modality": "LM", "task": "stain"}) == "LM|?|stain"


def test_bad_quotas() -> None:
    with pytest.raises(DataFormatError, match="modality\\|domain\\|task"):
        QuotaConfig(cells={"LM|path": 2})
    with pytest.raises(DataFormatError, match="0 or more"):
        QuotaConfig(cells={"LM|path|stain": -1})

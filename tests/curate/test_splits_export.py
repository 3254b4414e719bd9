from __future__ import annotations

import json
from pathlib import Path

import pytest

from scopebench.cli import main
from scopebench.curate import export, split
from scopebench.curate.splits import SplitConfig, assign_splits
from scopebench.errors import DataFormatError


def _row(iid: str, source: str, group: str | None = None) -> dict:
    return {
        "image_id": iid,
        "dataset": source,
        "dup_group": group or iid,
        "questions": {"modality": {"x": 1}},
    }


def test_groups_stay_together_and_shares_follow_fractions() -> None:
    rows = [_row(f"a{i}", "A") for i in range(40)] + [
        _row(f"b{i}", "B", "b0" if i < 5 else None) for i in range(20)
    ]
    cfg = SplitConfig(seed=1, fractions={"train": 0.75, "test": 0.25})
    where = assign_splits(rows, cfg)
    assert len({where[f"b{i}"] for i in range(5)}) == 1  # one near-duplicate group, one split
    a_test = sum(where[f"a{i}"] == "test" for i in range(40))
    assert a_test == 10  # stratum A: 40 single images, exactly a quarter
    b_test = sum(where[f"b{i}"] == "test" for i in range(20))
    assert 5 - 1 <= b_test <= 5 + 5  # the 5-image group may overshoot by at most its size
    assert assign_splits(rows, cfg) == where  # deterministic
    assert assign_splits(rows, SplitConfig(seed=2, fractions=cfg.fractions)) != where


def test_bad_fractions() -> None:
    with pytest.raises(DataFormatError, match="sum to 1"):
        SplitConfig(fractions={"train": 0.5, "test": 0.6})
    with pytest.raises(DataFormatError, match="tiny"):
        SplitConfig(fractions={"test_tiny": 1.0})
    with pytest.raises(DataFormatError, match="drawn from the test split"):
        SplitConfig(fractions={"train": 1.0}, tiny=3)


def test_split_and_export_then_local_run(built: dict, tmp_path: Path) -> None:
    root = built["root"]
    r = split(
        root / "questions",
        tmp_path / "split",
        SplitConfig(seed=0, fractions={"train": 0.5, "test": 0.5}, tiny=2),
    )
    st = r.stats
    assert (
        st["leaks"] == 0
        and st["images"]["train"] + st["images"]["test"] == 6
        and st["images"]["test_tiny"] == 2
    )
    assert sum(st["questions"][s] for s in ("train", "test")) == 27
    from datasets import load_from_disk

    dd = load_from_disk(str(tmp_path / "split"))
    by_split = {s: {row["image_id"]: row for row in dd[s]} for s in dd}
    assert set(by_split["test_tiny"]) <= set(by_split["test"])
    groups = {s: {row["dup_group"] for row in rows.values()} for s, rows in by_split.items()}
    assert not groups["train"] & groups["test"]

    e = export(tmp_path / "split", tmp_path / "export")
    tiny = sum(1 for _ in (tmp_path / "export/local/test_tiny.jsonl").open())
    assert (e.stats["local_items"], e.stats["test_tiny_items"]) == (27, tiny)
    assert e.stats["items_per_split"] == {"train": st["questions"]["train"], "test": st["questions"]["test"],
                                          "test_tiny": tiny}  # fmt: skip
    items = [json.loads(x) for x in (tmp_path / "export/local/data.jsonl").read_text().splitlines()]
    assert len({i["id"] for i in items}) == 27
    assert all((tmp_path / "export/local" / i["image"]).is_file() for i in items)
    assert {i["split"] for i in items} == {"train", "test"}
    first = items[0]
    assert first["choices"][first["answer"]] == (
        first["label_name"] if first["task"] == "classification" else first[first["task"]]
    )
    out = tmp_path / "run"
    assert (
        main(
            [
                "-q",
                "run",
                "--bench",
                "local",
                "--data",
                str(tmp_path / "export/local"),
                "--model",
                "frequent",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["overall"]["n"] == 27 and metrics["overall"]["errors"] == 0
    assert (tmp_path / "export/hf/README.md").read_text().count("| src_a |") >= 2

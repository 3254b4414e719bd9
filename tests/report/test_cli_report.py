"""`scopebench report` / `compare` options: policy, baselines, heatmap, reliability SVG, published files."""

import json

import pytest

from scopebench.cli import main
from scopebench.report.published import PUBLISHED_NOTE
from scopebench.report.tables import leaderboard_table


def test_report_policy_exclude_vs_wrong(html_runs, tmp_path):
    run_a = html_runs[0]
    assert main(["report", str(run_a), "--out", str(tmp_path / "w"), "--resamples", "50"]) == 0
    wrong = json.loads((tmp_path / "w" / "a" / "metrics.json").read_text())
    assert wrong["policy"] == "wrong"
    # Run a: 6 correct of 12; 9 answered (one unparsed, one error, one missing image).
    assert (wrong["overall"]["denominator"], wrong["overall"]["accuracy"]) == (12, 0.5)
    assert (wrong["overall"]["unparsed"], wrong["overall"]["errors"], wrong["overall"]["missing_image"]) == (
        1,
        1,
        1,
    )
    assert (
        main(["report", str(run_a), "--out", str(tmp_path / "x"), "--resamples", "50", "--policy", "exclude"])
        == 0
    )
    excl = json.loads((tmp_path / "x" / "a" / "metrics.json").read_text())
    assert excl["policy"] == "exclude"
    assert excl["overall"]["denominator"] == 9
    assert excl["overall"]["accuracy"] == pytest.approx(6 / 9)
    md = (tmp_path / "x" / "a" / "metrics.md").read_text()
    assert "Policy for unparsed answers, errors and missing images/responses: exclude" in md
    assert "baseline:random" in md and "baseline:frequent" in md
    tex = (tmp_path / "x" / "a" / "metrics.tex").read_text()
    assert r"\caption{" in tex and "exclude" in tex


def test_report_files_and_published(html_runs, tmp_path):
    out = tmp_path / "rep"
    assert main(["report", *map(str, html_runs), "--out", str(out), "--resamples", "50", "--published"]) == 0
    for name in ("a", "b"):
        d = out / name
        for f in (
            "metrics.json",
            "metrics.csv",
            "metrics.md",
            "metrics.tex",
            "accuracy_by_task.png",
            "accuracy_by_task.svg",
            "published.md",
            "published.csv",
        ):
            assert (d / f).is_file(), (name, f)
        assert PUBLISHED_NOTE in (d / "published.md").read_text()
        header = (d / "published.csv").read_text().splitlines()[0]
        assert header.startswith("model,source table,test/")


def test_compare_heatmap_baselines_and_policy(html_runs, tmp_path):
    out = tmp_path / "cmp"
    assert (
        main(["compare", *map(str, html_runs), "--out", str(out), "--resamples", "50", "--policy", "exclude"])
        == 0
    )
    for f in ("compare.json", "compare.md", "compare.csv", "compare.tex", "heatmap.png", "heatmap.svg"):
        assert (out / f).is_file(), f
    res = json.loads((out / "compare.json").read_text())
    assert res["policy"] == "exclude"
    # Under exclude the pair uses items both runs answered: a answered 0–8, b answered 0–10 → 9.
    assert res["pairs"][0]["n_common"] == 9
    assert [b["model"] for b in res["baselines"]] == ["random baseline", "frequent baseline"]
    _head, body = leaderboard_table(res)
    assert [row[0] for row in body] == ["model-a", "model-b", "random baseline", "frequent baseline"]
    # Frequent choice = the most frequent answer letter per task (MMMU's definition; no val split,
    # so counted on the items themselves). Answers are i % 3: task NP (even i) and task HI (odd i)
    # each have A, B and C twice, so whichever letter the seeded tie-break picks, 2 of 6 per task
    # are right — 4 of 12, whatever the policy (a baseline always answers).
    assert body[3][2] == "12" and body[3][3].startswith("33.3%")
    assert body[0][5:8] == ["1", "1", "1"]  # run a: one unparsed, one error, one missing image
    assert "frequent baseline" in (out / "compare.md").read_text()
    assert res["leaderboard"][0]["by_task"][0]["group"] in ("task=HI", "task=NP")

"""`report --published` on PathMMU: Tiny beside the paper's Tiny, ALL beside the paper's ALL."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from scopebench.cli import main
from scopebench.report.published import load_published, published_leaderboard, published_rows

FIXTURES = Path(__file__).parents[1] / "fixtures"


def test_pathmmu_published_all_columns_are_keyed_all_not_test():
    rows = [r for r in load_published("pathmmu") if r["source_table"].startswith("PathMMU Table 1")]
    splits = {r["split_or_group"] for r in rows}
    # Table 1's columns are Validation, Tiny and ALL (= test ∪ test_tiny); nothing is "test" alone.
    assert splits == {"val", "test_tiny", "ALL"}
    freq = {
        (r["split_or_group"], r["subset_or_task"]): r["value"]
        for r in rows
        if r["model"] == "Frequent Choice"
    }
    assert freq[("test_tiny", "SocialPath")] == 27.7 and freq[("ALL", "SocialPath")] == 26.7
    assert freq[("test_tiny", "overall")] == 27.7 and freq[("ALL", "overall")] == 25.5
    noise = {r["split_or_group"] for r in load_published("pathmmu") if "Table 3" in r["source_table"]}
    assert noise == {"test_tiny", "ALL"}


def test_published_rows_put_all_beside_the_pooled_row_and_never_beside_test():
    # A run's owner columns as the aggregation writes them: Tiny, the rest of the test set, ALL.
    owner = [
        {"split_or_group": s, "subset_or_task": t}
        for s in ("test_tiny", "test", "ALL")
        for t in ("SocialPath", "overall")
    ]
    head, body = published_rows({"benchmark": "pathmmu", "owner": {"rows": owner}})
    assert head == ["model", "source table", "test_tiny/SocialPath", "test_tiny/overall", "ALL/SocialPath",
                    "ALL/overall"]  # fmt: skip
    frequent = next(r for r in body if r[0] == "Frequent Choice" and "Table 1" in r[1])
    assert frequent[2:] == ["27.7", "27.7", "26.7", "25.5"]
    board = published_leaderboard("pathmmu", ["test/SocialPath"])
    assert board == []  # the 1,620-item test rows have no published counterpart


def test_report_published_on_a_pathmmu_run(tmp_path: Path):
    run = tmp_path / "run"
    data = FIXTURES / "pathmmu" / "socialpath_mapping.json"
    argv = ["-q", "run", "--bench", "pathmmu", "--data", str(data), "--model", "frequent", "--out", str(run)]
    assert main(argv) == 0
    out = tmp_path / "rep"
    assert main(["-q", "report", str(run), "--out", str(out), "--resamples", "50", "--published"]) == 0
    (folder,) = [p for p in out.iterdir() if p.is_dir()]
    metrics = json.loads((folder / "metrics.json").read_text())
    owner = {(r["split_or_group"], r["subset_or_task"]): r for r in metrics["owner"]["rows"]}
    # The run's Tiny and ALL rows: C is the val split's frequent letter (see tests/scoring).
    counts = {key: (r["n"], r["correct"]) for key, r in owner.items()}
    assert counts[("test_tiny", "SocialPath")] == (235, 65)
    assert counts[("ALL", "SocialPath")] == (1855, 456)
    table = list(csv.reader(io.StringIO((folder / "published.csv").read_text())))
    head = table[0]
    assert "test_tiny/SocialPath" in head and "ALL/SocialPath" in head and "test/SocialPath" not in head
    frequent = next(r for r in table[1:] if r[0] == "Frequent Choice" and "Table 1" in r[1])
    assert frequent[head.index("test_tiny/SocialPath")] == "27.7"
    assert frequent[head.index("ALL/SocialPath")] == "26.7"

import json
from pathlib import Path

import pytest

from scopebench.engine import RunStore
from scopebench.errors import ConfigMismatchError
from scopebench.items import Record
from scopebench.scoring.bootstrap import paired_diff_ci
from scopebench.scoring.compare import compare_runs, mcnemar_exact, paired_comparison


def make_run(root: Path, name: str, correct: list[bool], *, bench="spur", fingerprint="fp", offset=0) -> Path:
    d = root / name
    d.mkdir()
    cfg = {
        "benchmark": bench,
        "model": name,
        "data_fingerprint": fingerprint,
        "protocol": "p",
        "parser_version": 1,
    }
    (d / "run.json").write_text(json.dumps(cfg))
    recs = [
        Record(f"q/{i + offset}", name, "ok", choice=0, correct=c, task="NP", split="test", answer_index=0)
        for i, c in enumerate(correct)
    ]
    with RunStore(d / "records.sqlite") as store:
        store.add(recs)
    return d


def test_mcnemar_known_values():
    assert mcnemar_exact(1, 8) == pytest.approx(0.0390625)
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(3, 3) == pytest.approx(1.0)
    assert mcnemar_exact(0, 5) == pytest.approx(2 / 32)


def test_paired_comparison_counts():
    a = {str(i): v for i, v in enumerate([True] * 5 + [False] * 3 + [True, False])}
    b = {str(i): v for i, v in enumerate([True] * 5 + [True] * 3 + [False, False])}
    res = paired_comparison(a, b, seed=0, resamples=500)
    assert (res["b_a_right_b_wrong"], res["c_a_wrong_b_right"], res["n_common"]) == (1, 3, 10)
    assert res["difference"] == pytest.approx(-0.2)
    assert res["mcnemar_p"] == pytest.approx(0.625)
    assert res["ci_low"] <= -0.2 <= res["ci_high"]


def test_paired_bootstrap_seeded_and_degenerate():
    a = [True, False, True, True, False, True, False, True] * 5
    b = [True, True, False, True, False, False, False, True] * 5
    x, y, z = (paired_diff_ci(a, b, seed=s) for s in (1, 1, 2))
    assert (x.low, x.high) == (y.low, y.high) != (z.low, z.high)
    same = paired_diff_ci(a, a, seed=0)
    assert (same.low, same.high, same.method) == (0.0, 0.0, "degenerate")


def test_compare_runs_leaderboard_and_warnings(tmp_path):
    r1 = make_run(tmp_path, "weak", [True] * 2 + [False] * 8)
    r2 = make_run(tmp_path, "strong", [True] * 9 + [False], fingerprint="other")
    res = compare_runs([r1, r2], seed=0, resamples=200)
    assert [e["model"] for e in res["leaderboard"]] == ["strong", "weak"]
    pair = res["pairs"][0]
    assert (pair["model_a"], pair["b_a_right_b_wrong"], pair["c_a_wrong_b_right"]) == ("strong", 7, 0)
    assert pair["mcnemar_p"] == pytest.approx(2 / 128)
    assert any("data_fingerprint" in w for w in res["warnings"])
    r3 = make_run(tmp_path, "shifted", [True] * 10, offset=5)
    res = compare_runs([r1, r3], seed=0, resamples=200)
    assert any("item set" in w for w in res["warnings"])
    assert res["pairs"][0]["n_common"] == 5


def test_compare_runs_rejects_mixed_benchmarks(tmp_path):
    r1 = make_run(tmp_path, "a", [True])
    r2 = make_run(tmp_path, "b", [True], bench="pathmmu")
    with pytest.raises(ConfigMismatchError):
        compare_runs([r1, r2])


def test_compare_without_shared_items_says_so(tmp_path):
    from scopebench.report.tables import pairwise_rows

    r1 = make_run(tmp_path, "a", [True] * 4)
    r2 = make_run(tmp_path, "b", [False] * 4, offset=10)
    res = compare_runs([r1, r2], seed=0, resamples=50)
    pair = res["pairs"][0]
    assert pair["n_common"] == 0 and pair["test"] == "no shared items"
    assert pair["mcnemar_p"] != pair["mcnemar_p"]  # NaN: no test
    assert pairwise_rows(res["pairs"]) == [["a", "b", "0", "no shared items", "", "", "", "no test"]]
    assert "a and b share no items: no paired test" in res["warnings"]


def test_compare_warnings_name_runs_by_distinguishing_path(tmp_path):
    for d in ("x", "y"):
        (tmp_path / d).mkdir()
    r1 = make_run(tmp_path / "x", "run", [True] * 4)
    r2 = make_run(tmp_path / "y", "run", [True] * 5, fingerprint="other")
    res = compare_runs([r1, r2], seed=0, resamples=50)
    assert "runs differ in data_fingerprint: x/run='fp', y/run='other'" in res["warnings"]
    assert any(
        w.startswith("runs differ in item set (x/run: 4, y/run: 5 items; 4 shared)") for w in res["warnings"]
    )


def test_compare_run_with_itself_warns(tmp_path):
    r1 = make_run(tmp_path, "a", [True, False])
    res = compare_runs([r1, r1], seed=0, resamples=50)
    assert any(
        "a-2 is the same run directory as a" in w and "compared with itself" in w for w in res["warnings"]
    )


def test_compare_warns_when_box_repair_differs(tmp_path):
    # The same replies score up to 0.16 higher with --box-repair (issue 12 §3): a comparison of a
    # repaired and an unrepaired run is not like for like, and must say so.
    runs = [make_run(tmp_path, n, [True, False] * 3) for n in ("plain", "repaired")]
    for run, repair in zip(runs, (False, True), strict=True):
        cfg = json.loads((run / "run.json").read_text())
        (run / "run.json").write_text(json.dumps({**cfg, "box_repair": repair, "box_parser_version": 2}))
    res = compare_runs(runs, seed=0, resamples=50)
    assert res["warnings"] == ["runs differ in box_repair: plain=False, repaired=True"]

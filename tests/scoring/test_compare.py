import json
from pathlib import Path

import pytest

from scopebench.config import ReportConfig
from scopebench.errors import ConfigMismatchError
from scopebench.items import Record
from scopebench.scoring.bootstrap import paired_diff_ci
from scopebench.scoring.compare import compare_runs, mcnemar_exact, paired_comparison
from scopebench.store import RunStore


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
    res = compare_runs([r1, r2], ReportConfig(seed=0, resamples=200))
    assert [e["model"] for e in res["leaderboard"]] == ["strong", "weak"]
    pair = res["pairs"][0]
    assert (pair["model_a"], pair["b_a_right_b_wrong"], pair["c_a_wrong_b_right"]) == ("strong", 7, 0)
    assert pair["mcnemar_p"] == pytest.approx(2 / 128)
    assert any("data_fingerprint" in w for w in res["warnings"])
    r3 = make_run(tmp_path, "shifted", [True] * 10, offset=5)
    res = compare_runs([r1, r3], ReportConfig(seed=0, resamples=200))
    assert any("item set" in w for w in res["warnings"])
    assert res["pairs"][0]["n_common"] == 5


def test_compare_runs_rejects_mixed_benchmarks(tmp_path):
    r1 = make_run(tmp_path, "a", [True])
    r2 = make_run(tmp_path, "b", [True], bench="pathmmu")
    with pytest.raises(
        ConfigMismatchError, match=r"^runs are of different benchmarks \(pathmmu, spur\); compare runs of one"
    ):
        compare_runs([r1, r2])


def test_compare_pairs_record_and_use_the_callers_seed_and_resamples(tmp_path):
    # The pair's paired bootstrap takes compare's seed and resamples (recorded for the paper's
    # methods section), and its interval is reproducible from them.
    r1 = make_run(tmp_path, "a", [True, False, True, True, False, True])
    r2 = make_run(tmp_path, "b", [False, False, True, True, True, False])
    res = compare_runs([r1, r2], ReportConfig(seed=5, resamples=40))
    (pair,) = res["pairs"]
    assert (pair["seed"], pair["resamples"], pair["ci_method"]) == (5, 40, "paired-bootstrap-percentile")
    a = dict(enumerate([True, False, True, True, False, True]))
    b = dict(enumerate([False, False, True, True, True, False]))
    again = paired_comparison({f"q/{i}": v for i, v in a.items()}, {f"q/{i}": v for i, v in b.items()},
                              seed=5, resamples=40)  # fmt: skip
    assert (pair["ci_low"], pair["ci_high"]) == (again["ci_low"], again["ci_high"])
    row = res["leaderboard"][0]
    assert [r["group"] for r in row["by_subset"]] == [] and row["by_task"][0]["group"] == "task=NP"


def test_compare_without_shared_items_says_so(tmp_path):
    from scopebench.report.tables import pairwise_rows

    r1 = make_run(tmp_path, "a", [True] * 4)
    r2 = make_run(tmp_path, "b", [False] * 4, offset=10)
    res = compare_runs([r1, r2], ReportConfig(seed=0, resamples=50))
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
    res = compare_runs([r1, r2], ReportConfig(seed=0, resamples=50))
    assert "runs differ in data_fingerprint: x/run='fp', y/run='other'" in res["warnings"]
    assert any(
        w.startswith("runs differ in item set (x/run: 4, y/run: 5 items; 4 shared)") for w in res["warnings"]
    )


def test_compare_run_with_itself_warns(tmp_path):
    r1 = make_run(tmp_path, "a", [True, False])
    res = compare_runs([r1, r1], ReportConfig(seed=0, resamples=50))
    assert f"a-2 is the same run directory as a ({r1}): a run compared with itself" in res["warnings"]


def test_compare_warns_when_only_one_run_used_a_judge(tmp_path):
    r1, r2 = make_run(tmp_path, "a", [True, False]), make_run(tmp_path, "b", [True, True])
    cfg = json.loads((r2 / "run.json").read_text())
    (r2 / "run.json").write_text(json.dumps({**cfg, "judge": {"spec": "hf:judge"}}))
    res = compare_runs([r1, r2], ReportConfig(seed=0, resamples=50))
    assert (
        "runs differ in answer-extraction judge: a=None, b='hf:judge'; each run's metrics.json gives "
        "judge_free_accuracy for a comparison without any judge"
    ) in res["warnings"]


def test_compare_warns_when_box_repair_differs(tmp_path):
    # The same replies score up to 0.16 higher with --box-repair: a comparison of a
    # repaired and an unrepaired run is not like for like, and must say so.
    runs = [make_run(tmp_path, n, [True, False] * 3) for n in ("plain", "repaired")]
    for run, repair in zip(runs, (False, True), strict=True):
        cfg = json.loads((run / "run.json").read_text())
        (run / "run.json").write_text(json.dumps({**cfg, "box_repair": repair, "box_parser_version": 2}))
    res = compare_runs(runs, ReportConfig(seed=0, resamples=50))
    assert res["warnings"] == ["runs differ in box_repair: plain=False, repaired=True"]


def test_run_labels_and_folder_names(tmp_path, monkeypatch):
    from scopebench.scoring.compare import run_folder_names, run_labels

    monkeypatch.chdir(tmp_path)
    a, b = Path("sweep/alpha-0.5/run"), Path("sweep/alpha-1/run")
    assert run_labels([a, b]) == ["alpha-0.5/run", "alpha-1/run"]
    assert run_folder_names([a, b]) == ["alpha-0.5_run", "alpha-1_run"]
    assert run_labels(["runs/demo/random", "runs/pm/clip"]) == ["random", "clip"]
    # Relative and absolute spellings of one directory are one run: later ones get -2, -3.
    assert run_labels([a, tmp_path / a, "x/c", a]) == ["run", "run-2", "c", "run-3"]
    assert run_folder_names([a, b, a]) == ["alpha-0.5_run", "alpha-1_run", "alpha-0.5_run-2"]
    # A path that runs out of parts keeps all of them (the root "/" is no name part).
    assert run_labels(["/r", "/q/r"]) == ["r", "q/r"]
    assert run_labels(["/r/s/t", "/q/s/t", "/z"]) == ["r/s/t", "q/s/t", "z"]


def test_paired_comparison_fields_and_empty():
    a = {"3": True, "1": False, "2": True, "9": True}
    b = {"2": False, "1": False, "3": True, "7": False}
    res = paired_comparison(a, b, seed=4, resamples=300)
    # shared items 1, 2, 3 in sorted order: A = F, T, T; B = F, F, T
    iv = paired_diff_ci([False, True, True], [False, False, True], seed=4, resamples=300)
    assert res == {
        "n_common": 3,
        "accuracy_a": pytest.approx(2 / 3),
        "accuracy_b": pytest.approx(1 / 3),
        "difference": pytest.approx(1 / 3),
        **iv.fields(),
        "b_a_right_b_wrong": 1,
        "c_a_wrong_b_right": 0,
        "mcnemar_p": 1.0,
        "test": "McNemar exact (two-sided binomial on discordant pairs)",
    }
    assert (res["resamples"], res["seed"]) == (300, 4)
    empty = paired_comparison({"1": True}, {"2": True}, seed=0, resamples=50)
    assert empty["n_common"] == 0 and empty["test"] == "no shared items"
    for k in ("accuracy_a", "accuracy_b", "difference", "mcnemar_p"):
        assert empty[k] != empty[k], k


def _add_items(run: Path, n: int) -> None:
    from helpers import make_items

    with RunStore(run / "records.sqlite") as store:
        store.add_items(make_items(n))


def _run_with(root: Path, name: str, recs: list[Record], **cfg) -> Path:
    d = root / name
    d.mkdir()
    base = {
        "benchmark": "spur",
        "model": name,
        "data_fingerprint": "fp",
        "protocol": "p",
        "parser_version": 1,
    }
    (d / "run.json").write_text(json.dumps({**base, **cfg}))
    with RunStore(d / "records.sqlite") as store:
        store.add(recs)
    return d


def _mcq(i: int, model: str, status: str = "ok", correct: bool | None = True) -> Record:
    return Record(f"unit/{i:03d}", model, status, correct=correct, task="NP", split="test", answer_index=0)  # type: ignore[arg-type]


def test_compare_runs_rows_pairs_and_policy(tmp_path):
    # good: 3 of 4 right; weird: 1 right, 1 unparsed (wrong under "wrong", out under "exclude"),
    # plus a detection record that never counts; empty: no mcq record at all (accuracy NaN).
    good = _run_with(tmp_path, "good", [_mcq(i, "good", correct=i != 3) for i in range(4)], seed=7)
    weird = _run_with(
        tmp_path,
        "weird",
        [
            _mcq(0, "weird"),
            _mcq(1, "weird", "unparsed", None),
            _mcq(2, "weird", correct=False),
            Record("unit/009", "weird", "ok", kind="detection", task="NP"),
        ],
        protocol="q",
        parser_version=2,
    )
    empty = _run_with(tmp_path, "empty", [Record("unit/050", "empty", "ok", kind="detection")])
    _add_items(good, 4)
    res = compare_runs([empty, weird, good], ReportConfig(seed=3, resamples=100))
    assert (res["benchmark"], res["policy"], res["seed"], res["resamples"]) == ("spur", "wrong", 3, 100)
    board = res["leaderboard"]
    assert [r["model"] for r in board] == ["good", "weird", "empty"]  # NaN accuracy sorts last
    top = board[0]
    assert top["run"] == str(good) and top["source"] == "this run"
    assert top["overall"]["accuracy"] == pytest.approx(0.75) and top["overall"]["n"] == 4
    assert top["config"] == {"data_fingerprint": "fp", "protocol": "p", "parser_version": 1, "seed": 7}
    assert [r["group"] for r in top["by_task"]] == ["task=NP"]
    assert [(r["group"], r["accuracy"]) for r in top["owner"]][:1] == [("test/NP", 0.75)]
    assert board[1]["overall"]["accuracy"] == pytest.approx(1 / 3)
    # Chance baselines only from the first run given (empty has no item summaries): none.
    assert res["baselines"] == []
    pairs = {(p["model_a"], p["model_b"]): p for p in res["pairs"]}
    assert set(pairs) == {("good", "weird"), ("good", "empty"), ("weird", "empty")}
    gw = pairs[("good", "weird")]
    assert (gw["run_a"], gw["run_b"]) == (str(good), str(weird))
    # shared 0, 1, 2: good T, T, T; weird T, F(unparsed), F
    assert (gw["n_common"], gw["b_a_right_b_wrong"], gw["c_a_wrong_b_right"]) == (3, 2, 0)
    assert "runs differ in protocol: empty='p', weird='q', good='p'" in res["warnings"]
    assert "runs differ in parser_version: empty=1, weird=2, good=1" in res["warnings"]
    assert not any("data_fingerprint" in w for w in res["warnings"])
    assert "weird and empty share no items: no paired test" in res["warnings"]

    ex = compare_runs([good, weird], ReportConfig(seed=3, resamples=100, policy="exclude"))
    assert ex["policy"] == "exclude"
    gw = ex["pairs"][0]
    assert (gw["model_a"], gw["n_common"], gw["b_a_right_b_wrong"]) == ("good", 2, 1)
    assert ex["leaderboard"][1]["overall"]["accuracy"] == pytest.approx(0.5)
    base = {b["model"]: b for b in ex["baselines"]}
    assert set(base) == {"random baseline", "frequent baseline"}
    assert base["random baseline"]["source"] == "baseline on good's items"
    assert base["random baseline"]["overall"]["n"] == 4
    assert base["random baseline"]["owner"][0]["group"] == "test/t1"


def test_compare_needs_a_run():
    from scopebench.errors import DataFormatError

    with pytest.raises(DataFormatError, match=r"^compare needs at least one run directory$"):
        compare_runs([])


def test_compare_runs_default_seed_is_zero(tmp_path):
    # The seed a compare without --seed records (and draws its bootstraps from) is 0, as documented.
    res = compare_runs([make_run(tmp_path, "only", [True, False, True])], ReportConfig(resamples=50))
    assert (res["seed"], res["resamples"], res["policy"]) == (0, 50, "wrong")


def test_compare_scores_each_run_under_its_own_protocol_seed_and_resamples(tmp_path):
    # A μ-Bench run made under the owner protocol gets the owner's basic bootstrap on its macro
    # rows, drawn from compare's seed and resamples: the leaderboard's rows are exactly what the
    # run's own metrics give (a compare that scored it under "default", or with another seed or
    # resample count, would print another interval beside the same accuracy).
    from scopebench.scoring.metrics import compute_metrics

    recs = [
        Record(f"u/{t}/{i}", "m", "ok", choice=0, correct=i < k, task=t, answer_index=0)
        for t, n, k in (("modality", 12, 11), ("stain", 9, 4))
        for i in range(n)
    ]
    owner = _run_with(tmp_path, "owner", recs, benchmark="ubench", protocol="owner")
    res = compare_runs([owner], ReportConfig(seed=5, resamples=200))
    recs.sort(key=lambda r: r.item_id)  # the order a run's store gives them back (the draws follow it)
    want = compute_metrics(recs, benchmark="ubench", seed=5, resamples=200, protocol="owner")
    rows = res["leaderboard"][0]["owner"]
    assert rows == want["owner"]["rows"]
    assert rows[0]["ci_method"] == "stratified-bootstrap-basic"
    default = compute_metrics(recs, benchmark="ubench", seed=5, resamples=200, protocol="default")
    assert (rows[0]["ci_low"], rows[0]["ci_high"]) != (
        default["owner"]["rows"][0]["ci_low"],
        default["owner"]["rows"][0]["ci_high"],
    )
    other = compute_metrics(recs, benchmark="ubench", seed=6, resamples=200, protocol="owner")
    assert (rows[0]["ci_low"], rows[0]["ci_high"]) != (
        other["owner"]["rows"][0]["ci_low"],
        other["owner"]["rows"][0]["ci_high"],
    )

import json
import math
from pathlib import Path

import numpy as np
import pytest

from scopebench.benchmarks.registry import get_benchmark
from scopebench.items import Record
from scopebench.scoring.accuracy import accuracy_row
from scopebench.scoring.aggregate import owner_aggregation
from scopebench.scoring.bootstrap import bootstrap_ci, stratified_macro_ci
from scopebench.scoring.metrics import compute_metrics

FIXTURES = Path(__file__).parents[1] / "fixtures"


def rec(i, correct, task="t", subset=None, split="test", status="ok", kind="mcq", extra=None):
    return Record(
        item_id=f"x/{i}",
        model="m",
        status=status,
        choice=0 if status == "ok" else None,
        correct=correct if status == "ok" else None,
        task=task,
        subset=subset,
        split=split,
        answer_index=0,
        kind=kind,
        extra=extra or {},
    )


def test_accuracy_row_counts_and_ci():
    recs = [rec(i, i < 6) for i in range(10)] + [
        rec(10, None, status="unparsed"),
        rec(11, None, status="error"),
    ]
    row = accuracy_row("overall", recs, "wrong", seed=1, resamples=500)
    assert (row.n, row.correct, row.denominator, row.unparsed, row.errors) == (12, 6, 12, 1, 1)
    assert row.accuracy == pytest.approx(0.5)
    assert row.ci_low < 0.5 < row.ci_high
    # A single proportion carries its Wilson interval (was: a percentile bootstrap); nothing random.
    assert (row.ci_method, row.resamples, row.seed) == ("wilson", 0, None)
    assert (row.ci_low, row.ci_high) == pytest.approx((0.253781597633706, 0.746218402366294), abs=1e-12)
    excl = accuracy_row("overall", recs, "exclude", seed=1)
    assert excl.denominator == 10 and excl.accuracy == pytest.approx(0.6)
    assert excl.ci_low < 0.6 < excl.ci_high


def test_ci_reproducible_by_seed():
    x = [1, 0, 1, 1, 0, 1, 0, 1, 1, 1, 0, 0, 1]
    a, b, c = bootstrap_ci(x, seed=7), bootstrap_ci(x, seed=7), bootstrap_ci(x, seed=8)
    assert (a.low, a.high) == (b.low, b.high)
    assert (a.low, a.high) != (c.low, c.high)


@pytest.mark.parametrize("values,p", [([1, 1, 1], 1.0), ([0, 0], 0.0), ([1], 1.0)])
def test_ci_degenerate(values, p):
    iv = bootstrap_ci(values, seed=0)
    assert (iv.low, iv.high, iv.method) == (p, p, "degenerate")


def test_ci_empty_is_nan():
    iv = bootstrap_ci([], seed=0)
    assert math.isnan(iv.low) and math.isnan(iv.high)


def test_compute_metrics_mcq_only_and_metadata_and_localization():
    recs = [
        rec(0, True, task="a"),
        rec(1, False, task="a"),
        rec(2, True, task="b"),
        rec(3, None, task="detection", kind="detection", extra={"grit": 0.5, "class_name": "cell"}),
        rec(4, None, task="detection", kind="detection", extra={"grit": 1.0, "class_name": "cell"}),
        rec(5, None, task="detection", kind="detection", extra={"grit": 0.2, "class_name": "nucleus"}),
    ]
    items = {
        "x/0": {"metadata": {"domain": "pathology", "stain": "H&E"}},
        "x/1": {"metadata": {"domain": "cell biology"}},
        "x/2": {"metadata": {"domain": "pathology"}},
    }
    m = compute_metrics(recs, benchmark="unit", items=items, seed=3, resamples=200)
    assert m["overall"]["n"] == 3 and m["overall"]["correct"] == 2
    assert [r["group"] for r in m["by_task"]] == ["task=a", "task=b"]
    dom = {r["group"]: r for r in m["by_metadata"]["domain"]}
    assert dom["domain=pathology"]["accuracy"] == 1.0
    # 2 of 2: the Wilson interval keeps doubt below 100% (a bootstrap said [1.0, 1.0]).
    assert dom["domain=pathology"]["ci_high"] == 1.0 > 0.6 > dom["domain=pathology"]["ci_low"] > 0.3
    assert [r["group"] for r in m["by_metadata"]["stain"]] == ["stain=H&E"]
    loc = {r["group"]: r["score"] for r in m["localization"]}
    assert loc["class=cell"] == pytest.approx(0.75)
    assert loc["overall"] == pytest.approx((0.75 + 0.2) / 2)
    assert m["owner"] is None
    for key in ("schema_version", "benchmark", "policy", "overall", "by_task", "by_subset", "by_split"):
        assert key in m
    assert m["bootstrap"] == {
        "method": "bootstrap-percentile",
        "confidence": 0.95,
        "resamples": 200,
        "seed": 3,
    }
    assert m["intervals"]["proportion"] == "wilson"


def test_ubench_macro_coarse_fine_pathology():
    # modality 3/4, stain 1/2 -> coarse macro = (0.75 + 0.5)/2 = 0.625 (instance-weighted would be 4/6)
    recs = [rec(i, i < 3, task="modality") for i in range(4)] + [
        rec(10, True, task="stain"),
        rec(11, False, task="stain"),
        rec(20, True, task="classification"),
        rec(21, False, task="classification"),
        rec(22, False, task="classification"),
        rec(30, True, task="counting"),
    ]
    items = {
        f"x/{i}": {"metadata": {"domain": "pathology" if i in (0, 3, 10, 20) else "cell"}} for i in range(40)
    }
    own = owner_aggregation(recs, benchmark="ubench", items=items, seed=0, resamples=300)
    assert own is not None
    rows = {(r["split_or_group"], r["subset_or_task"]): r for r in own["rows"]}
    assert rows["coarse", "all"]["accuracy"] == pytest.approx(0.625)
    assert rows["coarse", "all"]["tasks"] == {"modality": 0.75, "stain": 0.5}
    assert rows["coarse", "all"]["ci_method"] == "stratified-bootstrap-percentile"
    # pathology: modality {0: right, 3: wrong} = 0.5, stain {10: right} = 1.0 -> 0.75
    assert rows["coarse", "pathology"]["accuracy"] == pytest.approx(0.75)
    assert rows["fine", "all"]["accuracy"] == pytest.approx(1 / 3)
    assert rows["fine", "pathology"]["accuracy"] == 1.0
    assert rows["cognition", "all"]["accuracy"] == 1.0


def test_stratified_ci_reproducible_and_contains_point():
    strata = [(30, 47), (12, 31)]
    a = stratified_macro_ci(strata, seed=5)
    b = stratified_macro_ci(strata, seed=5)
    c = stratified_macro_ci(strata, seed=6)
    assert (a.low, a.high) == (b.low, b.high) != (c.low, c.high)
    point = (30 / 47 + 12 / 31) / 2
    assert a.low < point < a.high
    assert stratified_macro_ci([(3, 3), (0, 2)], seed=0).method == "degenerate"


def test_pathmmu_instance_weighted_per_split():
    recs = [
        rec(0, True, task="PubMed", subset="PubMed", split="test_tiny"),
        rec(1, False, task="PubMed", subset="PubMed", split="test_tiny"),
        rec(2, True, task="Atlas", subset="Atlas", split="test_tiny"),
        rec(3, True, task="Atlas", subset="Atlas", split="test"),
    ]
    own = owner_aggregation(recs, benchmark="pathmmu", seed=0)
    assert own is not None
    got = [(r["split_or_group"], r["subset_or_task"], r["accuracy"]) for r in own["rows"]]
    assert got == [
        ("test_tiny", "PubMed", 0.5),
        ("test_tiny", "Atlas", 1.0),
        ("test_tiny", "overall", pytest.approx(2 / 3)),
        ("test", "Atlas", 1.0),
        ("test", "overall", 1.0),
        # ALL = test ∪ test_tiny: only Atlas has both splits; overall pools all four records.
        ("ALL", "Atlas", 1.0),
        ("ALL", "overall", 0.75),
    ]


def test_pathmmu_all_pools_test_and_test_tiny_per_subset_and_overall():
    # Two subsets with both splits (and a val split, which ALL leaves out), hand-counted:
    #   SocialPath  test_tiny 1/2, test 2/3  → ALL 3/5
    #   EduContent  test_tiny 1/1, test 0/2  → ALL 1/3
    #   overall     test_tiny 2/3, test 2/5  → ALL 4/8
    outcomes = {
        ("SocialPath", "test_tiny"): [True, False],
        ("SocialPath", "test"): [True, True, False],
        ("EduContent", "test_tiny"): [True],
        ("EduContent", "test"): [False, False],
        ("SocialPath", "val"): [True, True, True, True],
    }
    recs, k = [], 0
    for (subset, split), oks in outcomes.items():
        for ok in oks:
            recs.append(rec(k, ok, task=subset, subset=subset, split=split))
            k += 1
    own = owner_aggregation(recs, benchmark="pathmmu", seed=0, resamples=200)
    assert own is not None
    rows = {(r["split_or_group"], r["subset_or_task"]): r for r in own["rows"]}
    got = {key: (r["n"], r["correct"]) for key, r in rows.items()}
    assert got[("ALL", "SocialPath")] == (5, 3)
    assert got[("ALL", "EduContent")] == (3, 1)
    assert got[("ALL", "overall")] == (8, 4)
    assert rows[("ALL", "overall")]["accuracy"] == 0.5
    # Tiny rows are unchanged by the pooling; ALL n = n_test + n_tiny.
    assert got[("test_tiny", "SocialPath")] == (2, 1) and got[("test_tiny", "overall")] == (3, 2)
    assert got[("test", "overall")] == (5, 2)
    for subset in ("SocialPath", "EduContent", "overall"):
        assert got[("ALL", subset)][0] == got[("test", subset)][0] + got[("test_tiny", subset)][0]
    # Paper order: Tiny, test, ALL (subsets in the paper's order, then overall), then val.
    order = [key for key in rows if key[0] != "val"]
    assert order[-3:] == [("ALL", "SocialPath"), ("ALL", "EduContent"), ("ALL", "overall")]
    assert list(rows)[-1] == ("val", "overall")
    assert rows[("ALL", "overall")]["pooled_splits"] == ["test_tiny", "test"]
    assert "ALL pools test and test_tiny" in own["description"]


def test_pathmmu_all_needs_both_splits():
    only_tiny = [rec(0, True, task="PubMed", subset="PubMed", split="test_tiny")]
    own = owner_aggregation(only_tiny, benchmark="pathmmu", seed=0)
    assert own is not None and all(r["split_or_group"] != "ALL" for r in own["rows"])


def test_pathmmu_all_on_the_released_socialpath_mapping_is_1855():
    # data/socialpath_mapping.json (PathMMU-Benchmark/PathMMU): 1,620 test + 235 test_tiny records;
    # the paper's SocialPath ALL column counts 1,855.
    lb = get_benchmark("pathmmu").load(FIXTURES / "pathmmu" / "socialpath_mapping.json")
    recs = [
        Record(it.id, "m", "ok", choice=0, correct=it.answer_index == 0, task=it.task, subset=it.subset,
               split=it.split, answer_index=it.answer_index)
        for it in lb.items
    ]  # fmt: skip
    own = owner_aggregation(recs, benchmark="pathmmu", seed=0, resamples=50)
    assert own is not None
    n = {(r["split_or_group"], r["subset_or_task"]): r["n"] for r in own["rows"]}
    assert n[("test_tiny", "SocialPath")] == 235 and n[("test", "SocialPath")] == 1620
    assert n[("ALL", "SocialPath")] == n[("ALL", "overall")] == 1855


def test_spur_and_microvqa_tasks():
    spur = [
        rec(0, True, task="HI"),
        rec(1, False, task="NP"),
        rec(2, True, task="NP"),
        rec(3, False, task="Quant"),
    ]
    own = owner_aggregation(spur, benchmark="spur", seed=0)
    assert own is not None
    got = [(r["subset_or_task"], r["accuracy"]) for r in own["rows"]]
    assert got == [("NP", 0.5), ("HI", 1.0), ("Quant", 0.0), ("overall", 0.5)]
    mv = [rec(0, True, task="2"), rec(1, False, task="1"), rec(2, None, task="3", status="unparsed")]
    own = owner_aggregation(mv, benchmark="microvqa", seed=0)
    assert own is not None
    got = [(r["subset_or_task"], r["accuracy"], r["unparsed"]) for r in own["rows"]]
    assert got == [("1", 0.0, 0), ("2", 1.0, 0), ("3", 0.0, 1), ("overall", pytest.approx(1 / 3), 1)]


def test_localization_easy_hard_split_and_cis():
    from scopebench.scoring.metrics import localization_section

    def det(i: int, grit: float, cls: str) -> Record:
        return rec(i, None, task="detection", kind="detection", extra={"grit": grit, "class_name": cls})

    recs = [det(0, 0.5, "cell"), det(1, 1.0, "cell"), det(2, 0.2, "nucleus"), det(3, 0.4, "nucleus"),
            det(4, 0.9, "nucleus"), det(5, 0.6, "mitochondria")]  # fmt: skip
    items = {
        "x/0": {"metadata": {"dataset": "PCST"}},
        "x/1": {"metadata": {"dataset": "PCST"}},
        "x/2": {"metadata": {"dataset": "PCST"}},
        "x/3": {"metadata": {"dataset": "PCST"}},
        "x/4": {"metadata": {"dataset": "CellCognition"}},  # nucleus: easy here, hard in PCST
        "x/5": {"metadata": {"grit_split": "hard"}},  # an explicit split wins
    }
    rows = {r["group"]: r for r in localization_section(recs, items, seed=1, resamples=500)}
    assert rows["class=PCST/cell"]["score"] == pytest.approx(0.75)
    assert rows["class=PCST/nucleus"]["score"] == pytest.approx(0.3)
    assert rows["split=easy"]["score"] == pytest.approx((0.75 + 0.9) / 2)
    assert rows["split=hard"]["score"] == pytest.approx((0.3 + 0.6) / 2)
    assert rows["overall"]["score"] == pytest.approx((0.75 + 0.3 + 0.9 + 0.6) / 4)
    assert rows["split=easy"]["n"] == 3 and rows["overall"]["n"] == 6
    # A single (image, class) pair has no interval (was [x, x], "degenerate": read as certain), and
    # neither has a split/overall row that macro-averages it in; the others contain their estimate.
    for g in ("class=CellCognition/nucleus", "class=mitochondria", "split=easy", "split=hard", "overall"):
        assert rows[g]["ci_method"] == "too-few-items", g
        assert math.isnan(rows[g]["ci_low"]) and math.isnan(rows[g]["ci_high"])
    for g in ("class=PCST/cell", "class=PCST/nucleus"):
        assert rows[g]["ci_low"] <= rows[g]["score"] <= rows[g]["ci_high"]
        assert rows[g]["ci_method"] == "bootstrap-percentile" and rows[g]["ci_high"] > rows[g]["ci_low"]
    again = {r["group"]: r for r in localization_section(recs, items, seed=1, resamples=500)}
    assert json.dumps(again, sort_keys=True) == json.dumps(rows, sort_keys=True)  # NaN != NaN
    # With two pairs in every class the macro rows are bootstrapped within each class.
    more = [*recs, det(6, 0.7, "nucleus"), det(7, 0.1, "mitochondria")]
    items2 = {
        **items,
        "x/6": {"metadata": {"dataset": "CellCognition"}},
        "x/7": {"metadata": {"grit_split": "hard"}},
    }
    rows2 = {r["group"]: r for r in localization_section(more, items2, seed=1, resamples=500)}
    assert rows2["overall"]["ci_method"] == "stratified-bootstrap-percentile"
    for r in rows2.values():
        assert r["ci_low"] <= r["score"] <= r["ci_high"]


def test_localization_constant_tiny_class_has_no_interval_but_a_large_one_does():
    from scopebench.scoring.metrics import localization_section

    def det(i: int, grit: float) -> Record:
        return rec(i, None, task="detection", kind="detection", extra={"grit": grit, "class_name": "cell"})

    # 9 images where the model found nothing: [0, 0] would claim certainty → no interval.
    tiny = {r["group"]: r for r in localization_section([det(i, 0.0) for i in range(9)], seed=0)}
    assert tiny["class=cell"]["ci_method"] == "too-few-items" and math.isnan(tiny["class=cell"]["ci_low"])
    # 10 identical scores: the bootstrap's own constant-sample rule applies ([0, 0], "degenerate").
    big = {r["group"]: r for r in localization_section([det(i, 0.0) for i in range(10)], seed=0)}
    assert big["class=cell"]["ci_method"] == "degenerate" and big["class=cell"]["ci_high"] == 0.0
    # 2 different scores are enough for a percentile interval.
    two = {r["group"]: r for r in localization_section([det(0, 0.0), det(1, 1.0)], seed=0, resamples=200)}
    assert two["class=cell"]["ci_method"] == "bootstrap-percentile"


def test_localization_counts_failed_detections_as_zero_never_drops_them():
    from scopebench.scoring.metrics import localization_section

    recs = [
        rec(0, None, task="detection", kind="detection", extra={"grit": 1.0, "class_name": "cell"}),
        # A reply with no box where truths exist: the runner scored it 0 (an empty prediction).
        rec(1, None, task="detection", kind="detection", extra={"grit": 0.0, "class_name": "cell"}),
        # The backend failed: no reply, no grit → a failed detection, 0.
        Record(item_id="x/2", model="m", status="error", error="timeout", task="detection", kind="detection",
               extra={"class_name": "cell"}),
        # An image missing from the data: no reply either → 0.
        Record(item_id="x/3", model="m", status="missing_image", task="detection", kind="detection",
               extra={"class_name": "cell"}),
    ]  # fmt: skip
    rows = {r["group"]: r for r in localization_section(recs, seed=0, resamples=200)}
    # Right: 1/4 = 0.25. Dropping error/missing records would give 1/2; dropping every record
    # without a box would give 1.0.
    assert rows["class=cell"]["score"] == pytest.approx(0.25) and rows["class=cell"]["n"] == 4
    assert rows["overall"]["score"] == pytest.approx(0.25) and rows["overall"]["n"] == 4


def test_stratified_mean_ci_hand_computed():
    from scopebench.scoring.bootstrap import stratified_mean_ci

    # One stratum {0, 1}: a resample's mean is 0, 0.5 or 1 with probability 1/4, 1/2, 1/4, so the
    # 2.5th and 97.5th percentiles of 4000 resamples are 0 and 1.
    iv = stratified_mean_ci([[0.0, 1.0]], seed=0, resamples=4000)
    assert (iv.low, iv.high) == (0.0, 1.0)
    # A constant stratum adds nothing to the spread: the macro mean moves by half as much.
    iv2 = stratified_mean_ci([[0.0, 1.0], [0.5, 0.5]], seed=0, resamples=4000)
    assert (iv2.low, iv2.high) == (0.25, 0.75)
    assert stratified_mean_ci([[0.3]], seed=0).method == "degenerate"
    # Continuous scores: the same seed gives the same interval, another seed another one.
    scores = [list(np.linspace(0, 1, 17) ** 2), list(np.linspace(0.2, 0.9, 11))]
    a, b = stratified_mean_ci(scores, seed=5), stratified_mean_ci(scores, seed=6)
    assert a == stratified_mean_ci(scores, seed=5) and (a.low, a.high) != (b.low, b.high)


def test_grit_split_knows_the_ubench_release_dataset_keys():
    from scopebench.scoring.metrics import _grit_split

    assert _grit_split("nucleus", {"dataset": "held_et_al_2010_h2b"}) == "easy"  # CellCognition
    assert _grit_split("gland", {"dataset": "sirinukunwattana_et_al_2016"}) == "hard"  # GlaS
    assert _grit_split("nucleus", {"dataset": "opencell"}) == "hard"
    assert _grit_split("mitochondria", {"dataset": "wu_et_al_2023"}) == "hard"
    assert _grit_split("irregular_contours", {"dataset": "burgess_et_al_2024_contour"}) is None
    assert _grit_split("nucleus", {"dataset": "burgess_et_al_2024_contour", "grit_split": "easy"}) == "easy"


def test_localization_fallbacks_and_interval_calls():
    from scopebench.scoring.bootstrap import stratified_mean_ci
    from scopebench.scoring.metrics import localization_section

    def det(i, extra, task="detection", subset=None):
        return rec(i, None, task=task, subset=subset, kind="detection", extra=extra)

    recs = [
        det(0, {"grit": 1, "class_name": "cell"}),  # an int score counts as is
        det(1, {"class_name": "cell"}),  # no score (failed detection): 0
        det(2, {"grit": "0.9", "class_name": "cell"}),  # not a number: 0, never parsed
        det(3, {"grit": 0.4}, subset="nucleus"),  # class from the subset…
        det(6, {"grit": 0.6}, subset="nucleus"),
        det(4, {"grit": 0.8}, task="gland"),  # …else from the task
        det(7, {"grit": 0.2}, task="gland"),
        rec(5, True, task="cell"),  # mcq records never count
    ]
    items = {
        "x/3": {"metadata": {"source_dataset": "PCST"}},
        "x/6": {"metadata": {"source_dataset": "PCST"}},
        "x/4": {"metadata": {"dataset": ""}},
    }
    rows = {r["group"]: r for r in localization_section(recs, items, seed=2, resamples=300)}
    assert set(rows) == {"class=cell", "class=PCST/nucleus", "class=gland", "split=hard", "overall"}
    assert rows["class=cell"]["score"] == pytest.approx(1 / 3) and rows["class=cell"]["n"] == 3
    assert rows["class=PCST/nucleus"]["score"] == pytest.approx(0.5)
    assert rows["class=gland"]["score"] == pytest.approx(0.5)
    assert rows["split=hard"]["score"] == pytest.approx(0.5) and rows["split=hard"]["n"] == 2
    assert rows["overall"]["score"] == pytest.approx((1 / 3 + 0.5 + 0.5) / 3)
    cell = bootstrap_ci([1.0, 0.0, 0.0], seed=2, resamples=300)
    assert (rows["class=cell"]["ci_low"], rows["class=cell"]["ci_high"]) == (cell.low, cell.high)
    assert rows["class=cell"]["ci_method"] == cell.method
    over = stratified_mean_ci([[1.0, 0.0, 0.0], [0.4, 0.6], [0.8, 0.2]], seed=2, resamples=300)
    assert (rows["overall"]["ci_low"], rows["overall"]["ci_high"]) == (over.low, over.high)
    assert localization_section([rec(0, True)]) == []
    # One pair: no interval, and none for the overall row that includes it.
    lone = localization_section([det(0, {"grit": 0.5, "class_name": "x"})])
    assert [(r["group"], r["ci_method"]) for r in lone] == [
        ("class=x", "too-few-items"),
        ("overall", "too-few-items"),
    ]
    assert all(r["ci_low"] != r["ci_low"] for r in lone)


def test_grit_split_fallbacks():
    from scopebench.scoring.metrics import _grit_split

    assert _grit_split("Nucleus", {"source_dataset": "CellCognition_2010"}) == "easy"
    assert _grit_split("nucleus", {"grit_split": "medium", "dataset": "PCST"}) == "hard"  # unknown: table
    assert _grit_split("nucleus", {"grit_split": "hard", "dataset": "cellcognition"}) == "hard"
    assert _grit_split("cell", {"dataset": "PCST"}) == "easy"
    assert _grit_split("cell", {}) is None and _grit_split("gland", {"dataset": "other"}) is None


def test_compute_metrics_sections_counts_and_switches():
    from scopebench.scoring.metrics import METRICS_SCHEMA_VERSION

    recs = [
        rec(0, True, task="a", subset="s1", split="test"),
        rec(1, False, task="a", subset="s2", split="val"),
        rec(2, None, task="b", subset="s1", split="test", status="unparsed"),
        rec(3, None, task="detection", kind="detection", extra={"grit": 0.5, "class_name": "cell"}),
    ]
    items = {
        "x/0": {"metadata": {"modality": "light", "domain": ""}},
        "x/1": {"metadata": {"modality": "light", "subdomain": None}},
        "x/2": {"metadata": {"modality": "electron"}},
    }
    m = compute_metrics(recs, benchmark="unit", items=items, seed=1, resamples=100, baselines=False)
    assert m["schema_version"] == METRICS_SCHEMA_VERSION  # its value is pinned against the docs
    assert (m["benchmark"], m["policy"]) == ("unit", "wrong")
    assert m["counts"] == {"records": 4, "mcq": 3, "detection": 1}
    assert (m["overall"]["n"], m["overall"]["correct"]) == (3, 1)
    assert [(r["group"], r["n"]) for r in m["by_subset"]] == [("subset=s1", 2), ("subset=s2", 1)]
    assert [(r["group"], r["n"]) for r in m["by_split"]] == [("split=test", 2), ("split=val", 1)]
    # Empty and missing metadata values make no group; fields nobody has make no table.
    assert set(m["by_metadata"]) == {"modality"}
    assert [(r["group"], r["n"]) for r in m["by_metadata"]["modality"]] == [
        ("modality=electron", 1),
        ("modality=light", 2),
    ]
    assert m["calibration"] is None and m["baselines"] == {}
    assert [r["group"] for r in m["localization"]] == ["class=cell", "overall"]
    ex = compute_metrics(recs, benchmark="unit", policy="exclude", seed=1, resamples=100)
    assert ex["policy"] == "exclude" and ex["overall"]["denominator"] == 2
    assert ex["overall"]["accuracy"] == 0.5 and m["overall"]["accuracy"] == pytest.approx(1 / 3)
    assert ex["by_metadata"] == {} and ex["baselines"] == {}  # no items: nothing to draw from
    scored = [Record("y/0", "m", "ok", choice=0, correct=True, scores=[0.8, 0.2], answer_index=0)]
    assert compute_metrics(scored, benchmark="unit")["calibration"]["brier"] == pytest.approx(0.08)


def test_the_intervals_section_names_each_rows_interval() -> None:
    # metrics.json says which interval each kind of row carries: μ-Bench's basic bootstrap on its
    # macro rows only under its owner protocol; benchmarks without owner macro rows keep the
    # stratified percentile bootstrap under any protocol.
    from scopebench.scoring.metrics import _interval_methods

    default = {
        "proportion": "wilson",
        "macro_average": "stratified-bootstrap-percentile",
        "localization_class": "bootstrap-percentile",
        "localization_macro": "stratified-bootstrap-percentile",
    }
    assert _interval_methods("ubench", "default") == default
    assert _interval_methods("spur", "owner") == default
    assert _interval_methods("nonesuch", "owner") == default
    assert _interval_methods("ubench", "owner") == {**default, "macro_average": "stratified-bootstrap-basic"}


def test_metrics_without_a_seed_record_and_draw_from_seed_0() -> None:
    recs = [
        Record(f"u/{i}", "m", "ok", choice=0, correct=i % 3 != 0, task=("A", "B")[i % 2]) for i in range(12)
    ]
    m = compute_metrics(recs, benchmark="ubench", resamples=50, baselines=False)
    assert m["bootstrap"]["seed"] == 0
    assert m == compute_metrics(recs, benchmark="ubench", resamples=50, baselines=False, seed=0)


def test_metrics_hand_the_items_and_the_seed_to_the_owner_and_baseline_sections() -> None:
    # μ-Bench's pathology rows come from the item summaries' metadata; the baselines record the seed.
    summ = {
        f"u{i}": {
            "id": f"u{i}",
            "task": ("modality", "stain")[i % 2],
            "split": "test",
            "choices": ["a", "b"],
            "answer_index": 0,
            "metadata": {"domain": "pathology" if i < 6 else "other"},
        }
        for i in range(12)
    }
    recs = [
        Record(k, "m", "ok", choice=0, correct=i % 3 != 0, task=s["task"], answer_index=0)
        for i, (k, s) in enumerate(summ.items())
    ]
    m = compute_metrics(recs, benchmark="ubench", items=summ, seed=5, resamples=50)
    assert {r["subset_or_task"] for r in m["owner"]["rows"]} >= {"all", "pathology"}
    assert (m["baselines"]["random"]["seed"], m["baselines"]["frequent"]["seed"]) == (5, 5)

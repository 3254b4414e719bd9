"""Property tests: every interval the metrics write is a valid interval around its estimate.

For random record sets (statuses ok / unparsed / error / missing, policies wrong / exclude, tasks
that end up empty under ``exclude``), every row of every section holds ``0 ≤ low ≤ estimate ≤
high ≤ 1`` and its counts add up to ``n``; ``exclude`` never resamples an excluded record; a
paired difference has the sign of the difference of the accuracies.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scopebench.items import Record
from scopebench.scoring.bootstrap import paired_diff_ci, stratified_macro_ci, stratified_mean_ci
from scopebench.scoring.compare import paired_comparison
from scopebench.scoring.metrics import compute_metrics

EPS = 1e-12
STATUSES = ("ok", "ok", "ok", "unparsed", "error", "missing_image", "missing_response")
TASKS = ("modality", "stain", "classification", "counting", "NP")
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def record_sets(draw: st.DrawFn) -> list[Record]:
    n = draw(st.integers(1, 40))
    out = []
    for i in range(n):
        status = draw(st.sampled_from(STATUSES))
        task = draw(st.sampled_from(TASKS))
        ok = status == "ok"
        out.append(
            Record(
                item_id=f"x/{i}",
                model="m",
                status=status,  # type: ignore[arg-type]
                choice=0 if ok else None,
                correct=draw(st.booleans()) if ok else None,
                task=task,
                subset=draw(st.sampled_from(("s1", "s2", None))),
                split=draw(st.sampled_from(("test", "test_tiny"))),
                answer_index=0,
            )
        )
    return out


def _items(records: list[Record]) -> dict[str, dict[str, Any]]:
    # Every third item is pathology, so μ-Bench's pathology view and the metadata tables have rows.
    return {
        r.item_id: {
            "id": r.item_id,
            "task": r.task,
            "split": r.split,
            "choices": ["a", "b", "c"],
            "answer_index": 0,
            "metadata": {"domain": "pathology" if k % 3 == 0 else "biology"},
        }
        for k, r in enumerate(records)
    }


def accuracy_rows(m: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """Every accuracy row a metrics dict holds (what the report's tables are made of)."""
    yield m["overall"]
    for key in ("by_task", "by_subset", "by_split"):
        yield from m[key]
    for rows in m["by_metadata"].values():
        yield from rows
    yield from (m["owner"] or {}).get("rows", [])
    for base in m["baselines"].values():
        yield base["overall"]
        yield from base["by_task"]
        yield from base["owner"]


def assert_valid_row(row: Mapping[str, Any], policy: str) -> None:
    """low ≤ estimate ≤ high inside [0, 1], and counts that add up."""
    unscorable = row["unparsed"] + row["errors"] + row["missing_image"] + row["missing_response"]
    ok = row["n"] - unscorable
    assert ok >= 0, row
    assert row["denominator"] == (row["n"] if policy == "wrong" else ok), row
    assert 0 <= row["correct"] <= ok, row
    acc, lo, hi = row["accuracy"], row["ci_low"], row["ci_high"]
    if math.isnan(acc):
        # No counted record: no estimate and no interval.
        assert math.isnan(lo) and math.isnan(hi), row
        return
    assert row["ci_method"] not in ("none", ""), row
    assert 0.0 <= lo <= acc + EPS and acc - EPS <= hi <= 1.0, row
    if row.get("weighting", "instance") == "instance":
        assert acc == pytest.approx(row["correct"] / row["denominator"], abs=EPS)
        assert row["ci_method"] == "wilson"


@SETTINGS
@given(
    records=record_sets(),
    policy=st.sampled_from(("wrong", "exclude")),
    bench=st.sampled_from(("ubench", "spur", "pathmmu")),
    protocol=st.sampled_from(("default", "owner")),
)
def test_every_metrics_row_holds_its_estimate(records, policy, bench, protocol):
    m = compute_metrics(
        records,
        benchmark=bench,
        policy=policy,
        items=_items(records),
        seed=3,
        resamples=200,
        protocol=protocol,
    )
    rows = list(accuracy_rows(m))
    assert rows
    for row in rows:
        assert_valid_row(row, policy)
    assert m["overall"]["n"] == len(records)
    assert sum(r["n"] for r in m["by_task"]) == len(records)


@SETTINGS
@given(
    records=record_sets(),
    bench=st.sampled_from(("ubench", "spur")),
    protocol=st.sampled_from(("default", "owner")),
)
def test_exclude_never_resamples_excluded_records(records, bench, protocol):
    # Under exclude, every interval equals the one computed on the answered records alone: the
    # excluded ones (and tasks left empty by them) take no part in any interval.
    kw: dict[str, Any] = {"benchmark": bench, "seed": 5, "resamples": 200, "protocol": protocol}
    mixed = compute_metrics(records, policy="exclude", **kw)
    kept = compute_metrics([r for r in records if r.status == "ok"], policy="exclude", **kw)

    def intervals(m: Mapping[str, Any]) -> dict[str, tuple[float, float]]:
        rows = [m["overall"], *m["by_task"], *(m["owner"] or {}).get("rows", [])]
        return {r["group"]: (r["ci_low"], r["ci_high"]) for r in rows if r["denominator"]}

    got, want = intervals(mixed), intervals(kept)
    assert set(got) == set(want)
    for group, (lo, hi) in want.items():
        assert got[group] == pytest.approx((lo, hi), abs=0, nan_ok=True), group


@given(
    strata=st.lists(st.tuples(st.integers(0, 30), st.integers(0, 30)), min_size=1, max_size=6),
    seed=st.integers(0, 2**16),
)
@SETTINGS
def test_stratified_macro_ignores_empty_strata_and_holds_its_estimate(strata, seed):
    strata = [(min(k, n), n) for k, n in strata]
    iv = stratified_macro_ci(strata, seed=seed, resamples=300)
    kept = [k / n for k, n in strata if n > 0]
    if not kept:
        assert math.isnan(iv.low) and math.isnan(iv.high)
        return
    # An empty stratum counted would shift every resampled macro-average.
    assert iv == stratified_macro_ci([s for s in strata if s[1] > 0], seed=seed, resamples=300)
    point = sum(kept) / len(kept)
    assert 0.0 <= iv.low <= point + EPS and point - EPS <= iv.high <= 1.0


@given(
    values=st.lists(
        st.lists(st.floats(0, 1, allow_nan=False), min_size=0, max_size=12), min_size=1, max_size=4
    ),
    seed=st.integers(0, 1000),
)
@SETTINGS
def test_stratified_mean_holds_its_estimate(values, seed):
    iv = stratified_mean_ci(values, seed=seed, resamples=300)
    kept = [sum(v) / len(v) for v in values if v]
    if not kept:
        assert math.isnan(iv.low)
        return
    point = sum(kept) / len(kept)
    assert iv.low <= point + EPS and point - EPS <= iv.high


@st.composite
def paired_outcomes(draw: st.DrawFn) -> tuple[list[bool], list[bool]]:
    # Each model gets its own accuracy, so clearly separated pairs are drawn as well as close ones.
    n = draw(st.integers(1, 80))
    pa, pb = draw(st.floats(0, 1)), draw(st.floats(0, 1))
    u = draw(st.lists(st.floats(0, 1), min_size=2 * n, max_size=2 * n))
    return [x < pa for x in u[:n]], [x < pb for x in u[n:]]


@SETTINGS
@given(pair=paired_outcomes(), seed=st.integers(0, 1000))
def test_paired_difference_has_the_sign_of_the_accuracies(pair, seed):
    a, b = pair
    res = paired_comparison(
        {str(i): v for i, v in enumerate(a)}, {str(i): v for i, v in enumerate(b)}, seed=seed, resamples=300
    )
    diff = res["accuracy_a"] - res["accuracy_b"]
    assert res["difference"] == pytest.approx(diff, abs=EPS)
    assert res["ci_low"] - EPS <= res["difference"] <= res["ci_high"] + EPS
    assert res["ci_low"] >= -1.0 and res["ci_high"] <= 1.0
    # An interval entirely on one side of 0 agrees with the sign of acc(A) − acc(B).
    if res["ci_low"] > 0:
        assert diff > 0
    if res["ci_high"] < 0:
        assert diff < 0
    # Clearly separated (the discordant-count difference beyond 4 of its bootstrap SDs, which are
    # at most √(b + c)): the interval excludes 0 on the side of the difference.
    b_, c_ = res["b_a_right_b_wrong"], res["c_a_wrong_b_right"]
    if abs(b_ - c_) > 4 * math.sqrt(b_ + c_):
        assert (res["ci_low"] > 0) if diff > 0 else (res["ci_high"] < 0), res
    # Swapping the models mirrors the interval: a flipped sign would show here.
    swapped = paired_diff_ci(b, a, seed=seed, resamples=300)
    assert swapped.low <= -res["difference"] + EPS and -res["difference"] - EPS <= swapped.high


@SETTINGS
@given(
    n=st.integers(30, 200),
    better=st.floats(0.8, 1.0),
    worse=st.floats(0.0, 0.2),
    seed=st.integers(0, 1000),
    order=st.randoms(use_true_random=False),
)
def test_clearly_better_model_lies_above_zero(n, better, worse, seed, order):
    a = [i < round(better * n) for i in range(n)]
    b = [i < round(worse * n) for i in range(n)]
    order.shuffle(b)
    iv = paired_diff_ci(a, b, seed=seed, resamples=500)
    assert iv.method == "paired-bootstrap-percentile"
    assert iv.low > 0.0, (iv, sum(a), sum(b))
    rev = paired_diff_ci(b, a, seed=seed, resamples=500)
    assert rev.high < 0.0

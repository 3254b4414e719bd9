"""Random and frequent-choice baselines on a run's items (hand-computed)."""

from pathlib import Path

import pytest

from scopebench.benchmarks.registry import get_benchmark
from scopebench.items import Item, Record
from scopebench.models.base import ModelOptions
from scopebench.models.baselines import FrequentBackend, FrequentTextLOOBackend, RandomBackend
from scopebench.report.published import load_published
from scopebench.scoring.baselines import baseline_records, baseline_section
from scopebench.scoring.metrics import METRICS_SCHEMA_VERSION, compute_metrics

FIXTURES = Path(__file__).parents[1] / "fixtures"


def summaries() -> list[dict]:
    # Answer letters: NP A, A → frequent letter A (2 of 2); HI A, A, C → A (i4 answers C: ✗).
    # Item 4 has three options (chance 1/3); item 5 has no options (skipped).
    rows = [
        ("NP", ["cat", "dog"], 0),
        ("NP", ["dog", "cat"], 0),
        ("HI", ["Cat.", "dog"], 0),
        ("HI", ["cat", "dog"], 0),
        ("HI", ["bird", "cat", "fish"], 2),
        ("HI", [], None),
    ]
    return [
        {
            "id": f"i{k}",
            "benchmark": "spur",
            "split": "test",
            "task": t,
            "subset": None,
            "question": "?",
            "choices": c,
            "answer_index": a,
            "metadata": {},
            "kind": "mcq",
        }
        for k, (t, c, a) in enumerate(rows)
    ]


def records() -> list[Record]:
    return [
        Record(s["id"], "m", "ok", choice=0, correct=True, task=s["task"], split="test") for s in summaries()
    ]


def _pm(item_id: str, subset: str, split: str, answer: int, n_options: int = 4) -> dict:
    return {
        "id": item_id,
        "benchmark": "pathmmu",
        "split": split,
        "task": subset,
        "subset": subset,
        "question": "?",
        "choices": [f"{item_id} option {j}" for j in range(n_options)],  # no text repeats
        "answer_index": answer,
        "metadata": {},
        "kind": "mcq",
    }


def pathmmu_summaries() -> list[dict]:
    A, B, C, D = range(4)
    return [
        # PubMed has a val split: its letters are counted there (A, C, C, B → C) and C is answered
        # on val (2 of 4 ✓), test (C, A, C, D: 2 of 4) and test_tiny (B, C: 1 of 2).
        *(_pm(f"pv{k}", "PubMed", "val", a) for k, a in enumerate([A, C, C, B])),
        *(_pm(f"pt{k}", "PubMed", "test", a) for k, a in enumerate([C, A, C, D])),
        *(_pm(f"ptt{k}", "PubMed", "test_tiny", a) for k, a in enumerate([B, C])),
        # Atlas has no val items: counted on its own items (A, A, B → A): 2 of 3.
        *(_pm(f"a{k}", "Atlas", "test", a) for k, a in enumerate([A, A, B])),
        # EduContent, in-sample: D, D, D, A and a two-option item answering A → counts [2, 0, 0, 3]:
        # D for the four-option items (3 of 4); the two-option item has no D and gets the next most
        # frequent letter, A (✓).
        *(_pm(f"e{k}", "EduContent", "test", a) for k, a in enumerate([D, D, D, A])),
        _pm("e4", "EduContent", "test", A, n_options=2),
    ]


def test_frequent_choice_is_mmmus_most_frequent_letter_per_subject_hand_counted():
    recs = {r.item_id: r for r in baseline_records(pathmmu_summaries(), seed=0)["frequent"]}
    assert {i: r.choice for i, r in recs.items() if i.startswith("p")} == dict.fromkeys(
        ["pv0", "pv1", "pv2", "pv3", "pt0", "pt1", "pt2", "pt3", "ptt0", "ptt1"], 2
    )
    assert [recs[f"a{k}"].choice for k in range(3)] == [0, 0, 0]
    assert [recs[f"e{k}"].choice for k in range(5)] == [3, 3, 3, 3, 0]
    correct = lambda prefix: sum(r.correct for i, r in recs.items() if i.startswith(prefix))  # noqa: E731
    assert (correct("pv"), correct("pt") - correct("ptt"), correct("ptt")) == (2, 2, 1)
    assert (correct("a"), correct("e")) == (2, 4)


def test_frequent_reference_and_owner_rows_in_the_baseline_section():
    summaries_ = pathmmu_summaries()
    items = {s["id"]: s for s in summaries_}
    recs = [Record(s["id"], "m", "ok", choice=0, task=s["task"], subset=s["subset"], split=s["split"])
            for s in summaries_]  # fmt: skip
    freq = baseline_section(recs, items, benchmark="pathmmu", seed=0, resamples=100)["frequent"]
    assert freq["reference"] == {
        "Atlas": {"split": "evaluated items (in-sample)", "n": 3, "letter_counts": [2, 1, 0, 0]},
        "EduContent": {"split": "evaluated items (in-sample)", "n": 5, "letter_counts": [2, 0, 0, 3]},
        "PubMed": {"split": "val", "n": 4, "letter_counts": [1, 1, 2, 0]},
    }
    owner = {(r["split_or_group"], r["subset_or_task"]): (r["n"], r["correct"]) for r in freq["owner"]}
    assert owner[("test_tiny", "PubMed")] == (2, 1)
    assert owner[("test", "overall")] == (12, 8)  # PubMed 2/4 + Atlas 2/3 + EduContent 4/5
    # ALL pools test and test_tiny: PubMed 4 + 2 items, 2 + 1 correct; overall 14 items, 9 correct.
    assert owner[("ALL", "PubMed")] == (6, 3)
    assert owner[("ALL", "overall")] == (14, 9)
    assert ("ALL", "Atlas") not in owner  # Atlas has no test_tiny items here
    assert owner[("val", "overall")] == (4, 2)


def test_frequent_ties_are_broken_by_the_seed_and_recorded():
    # One task, letters A and B each correct twice: a tie. Each seed picks one letter for every
    # item, always the same one for that seed, and some seeds pick A, others B.
    rows = [_pm(f"t{k}", "PubMed", "test", a) for k, a in enumerate([0, 1, 0, 1])]
    picks = {}
    for seed in range(20):
        got = {r.choice for r in baseline_records(rows, seed=seed)["frequent"]}
        assert len(got) == 1 and got <= {0, 1}
        assert {r.choice for r in baseline_records(rows, seed=seed)["frequent"]} == got
        picks[seed] = got.pop()
    assert set(picks.values()) == {0, 1}
    backend = FrequentBackend("frequent", ModelOptions(seed=5))
    assert backend.identity()["seed"] == 5


def test_frequent_on_the_real_socialpath_release_matches_the_papers_tiny_row():
    # data/socialpath_mapping.json of PathMMU-Benchmark/PathMMU (tests/fixtures/pathmmu): the val
    # split's 155 answers are A 34, B 33, C 47, D 41, so C is the frequent letter; test_tiny has
    # 65 C answers of 235 = 27.7% — PathMMU Table 1's SocialPath Tiny "Frequent Choice" (27.7).
    lb = get_benchmark("pathmmu").load(FIXTURES / "pathmmu" / "socialpath_mapping.json")
    recs = baseline_records([it.to_summary() for it in lb.items], seed=0)["frequent"]
    assert {r.choice for r in recs} == {2}
    tiny = [r for r in recs if r.split == "test_tiny"]
    assert (len(tiny), sum(r.correct for r in tiny)) == (235, 65)
    published = {
        r["split_or_group"]: r["value"]
        for r in load_published("pathmmu")
        if r["model"] == "Frequent Choice" and r["subset_or_task"] == "SocialPath"
    }
    assert round(100 * 65 / 235, 1) == published["test_tiny"] == 27.7
    pooled = [r for r in recs if r.split in ("test", "test_tiny")]
    # The paper's SocialPath ALL is 26.7; on this release no constant letter reaches it (C: 24.6).
    assert (len(pooled), sum(r.correct for r in pooled)) == (1855, 456)


def test_frequent_text_loo_variant_keeps_the_old_leave_one_out_count():
    # Option texts correct: "cat" for i0, i2 (normalised "Cat.") and i3; "dog" for i1; "fish" for
    # i4. Leave-one-out: every item still sees "cat" correct elsewhere (3 or 2 times).
    items = [
        Item(s["id"], "spur", "test", s["task"], "?", tuple(s["choices"]), s["answer_index"])
        for s in summaries()[:5]
    ]
    backend = FrequentTextLOOBackend("frequent-text-loo", ModelOptions())
    backend.prepare(items)
    # i0 cat/dog → cat ✓; i1 dog/cat (answer dog) → cat ✗; i2, i3 → cat ✓; i4 bird/cat/fish → cat ✗.
    assert [r.choice for r in backend.predict(items)] == [0, 1, 0, 0, 1]
    assert backend.predict(items)[4].extra["answer_counts"] == [0, 3, 0]


def test_random_baseline_is_the_random_backend():
    recs = baseline_records(summaries(), seed=7)["random"]
    items = [
        Item(s["id"], "spur", "test", s["task"], "?", tuple(s["choices"]), s["answer_index"])
        for s in summaries()[:5]
    ]
    expect = RandomBackend("random", ModelOptions(seed=7)).predict(items)
    assert [r.choice for r in recs] == [e.choice for e in expect]


def test_baseline_section_rows_and_seed():
    items = {s["id"]: s for s in summaries()}
    sec = baseline_section(records(), items, benchmark="spur", seed=3, resamples=200)
    assert set(sec) == {"random", "frequent"}
    freq = sec["frequent"]
    assert freq["n_skipped"] == 1
    assert (freq["overall"]["n"], freq["overall"]["correct"]) == (5, 4)
    assert freq["overall"]["accuracy"] == pytest.approx(0.8)
    assert freq["seed"] == 3 and freq["overall"]["ci_method"] == "wilson"
    by_task = {r["group"]: (r["n"], r["correct"]) for r in freq["by_task"]}
    assert by_task == {"task=HI": (3, 2), "task=NP": (2, 2)}
    assert [r["subset_or_task"] for r in freq["owner"]] == ["NP", "HI", "overall"]
    assert sec["random"]["expected_accuracy"] == pytest.approx((0.5 * 4 + 1 / 3) / 5)
    again = baseline_section(records(), items, benchmark="spur", seed=3, resamples=200)
    assert again["random"]["overall"] == sec["random"]["overall"]


def test_compute_metrics_has_baselines_only_with_items():
    items = {s["id"]: s for s in summaries()}
    m = compute_metrics(records(), benchmark="spur", items=items, resamples=100)
    assert m["schema_version"] == METRICS_SCHEMA_VERSION == 4
    assert m["baselines"]["frequent"]["overall"]["correct"] == 4
    assert compute_metrics(records(), benchmark="spur", resamples=100)["baselines"] == {}
    assert (
        compute_metrics(records(), benchmark="spur", items=items, resamples=100, baselines=False)["baselines"]
        == {}
    )


def test_item_summaries_that_are_no_scorable_mcq_are_left_out() -> None:
    from scopebench.scoring.baselines import _item

    ok = {"id": "a", "choices": ["x", "y"], "answer_index": 1}  # no "kind": a multiple-choice item
    item = _item(ok)
    assert item is not None and (item.choices, item.answer_index) == (("x", "y"), 1)
    assert _item({**ok, "kind": "detection"}) is None
    assert _item({**ok, "answer_index": None}) is None
    assert _item({**ok, "answer_index": 2}) is None  # no third option
    assert _item({**ok, "choices": []}) is None


def test_baseline_records_carry_the_items_fields() -> None:
    # Each baseline record is an answered ("ok") record of its own item: model name, task, subset,
    # split and key copied, so the owner tables group and score it like a model's.
    items = summaries()
    items[0] = {**items[0], "subset": "PubMed", "split": "val"}
    recs = baseline_records(items, seed=7)
    freq = recs["frequent"]
    got = [(r.item_id, r.model, r.status, r.task, r.subset, r.split, r.answer_index, r.choice, r.correct)
           for r in freq]  # fmt: skip
    assert got == [
        ("i0", "frequent", "ok", "NP", "PubMed", "val", 0, 0, True),
        ("i1", "frequent", "ok", "NP", None, "test", 0, 0, True),
        ("i2", "frequent", "ok", "HI", None, "test", 0, 0, True),
        ("i3", "frequent", "ok", "HI", None, "test", 0, 0, True),
        ("i4", "frequent", "ok", "HI", None, "test", 2, 0, False),
    ]
    assert [(r.model, r.status) for r in recs["random"]] == [("random", "ok")] * 5


def test_summaries_without_task_or_split_are_one_unnamed_task_and_split() -> None:
    # A summary lacking "task"/"split" (hand-made, or written before those keys existed) reads as
    # no task and no split, as a model's record of that item does — not a task named "None".
    bare = [{"id": f"b{i}", "choices": ["x", "y"], "answer_index": a} for i, a in enumerate((1, 1, 0))]
    recs = baseline_records(bare, seed=0)
    assert [(r.task, r.split) for r in recs["frequent"]] == [("", "")] * 3
    assert [(r.task, r.split) for r in recs["random"]] == [("", "")] * 3
    assert [r.choice for r in recs["frequent"]] == [1, 1, 1]  # B is correct twice of three
    section = baseline_section(
        [Record(s["id"], "m", "ok", choice=0) for s in bare],
        {s["id"]: s for s in bare},
        benchmark="spur",
        resamples=50,
    )
    assert section["frequent"]["reference"] == {
        "": {"split": "evaluated items (in-sample)", "n": 3, "letter_counts": [1, 2]}
    }
    assert [r["group"] for r in section["frequent"]["by_task"]] == ["task="]


def test_ubench_baseline_rows_use_the_items_and_the_callers_bootstrap() -> None:
    # μ-Bench's owner rows of each baseline: macro over tasks on all items and on the pathology
    # items (named by the summaries' metadata), with the caller's seed and resamples; the random
    # baseline draws from that seed too. Each section names its model and its overall row.
    from scopebench.scoring.aggregate import owner_aggregation

    summ = [
        {
            "id": f"u{i:02d}",
            "benchmark": "ubench",
            "split": "test",
            "task": ("modality", "stain")[i % 2],
            "choices": ["a", "b", "c"],
            "answer_index": i % 3,
            "metadata": {"domain": "pathology" if i < 10 else "other"},
        }
        for i in range(24)
    ]
    items = {s["id"]: s for s in summ}
    recs = [Record(s["id"], "m", "ok", choice=0, task=s["task"]) for s in summ]
    section = baseline_section(recs, items, benchmark="ubench", seed=5, resamples=200)
    base = baseline_records(summ, seed=5)
    for name in ("random", "frequent"):
        want = owner_aggregation(base[name], benchmark="ubench", items=items, seed=5, resamples=200)
        assert want is not None and section[name]["owner"] == want["rows"]
        assert (section[name]["model"], section[name]["seed"]) == (name, 5)
        assert section[name]["overall"]["group"] == "overall"
        assert section[name]["overall"]["correct"] == sum(bool(r.correct) for r in base[name])
    assert {r["subset_or_task"] for r in section["random"]["owner"]} >= {"all", "pathology"}
    assert (
        baseline_section(recs, items, benchmark="ubench", resamples=50)["random"]["seed"] == 0
    )  # documented

"""Correct keys: every item's answer placed with a seed, balanced per task, never made wrong.

The properties hold for any options (hypothesis); the build test writes a SPUR-template task whose
questions and explanations name panels by letter, with every model answer at B, and checks that the
built benchmark gives the ``frequent`` baseline no more than chance plus one item per task.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from scopebench.cli import main
from scopebench.curate import export, generate, ingest, make_questions, split
from scopebench.curate.balance import Layout, assign_positions, layout, position_stats, relabel, reorder
from scopebench.curate.generation.step import GenerateConfig, read_generated
from scopebench.curate.splits import SplitConfig

_words = st.text(alphabet="abcdefghij ", min_size=1, max_size=8).filter(lambda s: s.strip())


@settings(max_examples=150, deadline=None)
@given(
    options=st.lists(_words, min_size=2, max_size=6, unique_by=lambda s: " ".join(s.split())),
    answer=st.integers(0, 5),
    nota=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_reorder_keeps_the_answer_once_and_nota_last(
    options: list[str], answer: int, nota: bool, seed: int
) -> None:
    # Catches a reorder that loses, repeats or mislabels an option, or moves "None of the above".
    if nota:
        options = [*options[:-1], "None of the above"]
    answer %= len(options)
    lay = layout(options, answer)
    rng = np.random.default_rng(seed)
    for target in lay.slots or (answer,):
        new, idx, order = reorder(options, lay, target, rng)
        assert sorted(new) == sorted(options) and new[idx] == options[answer]
        assert [options[i] for i in order] == new
        if nota:
            assert new[-1] == "None of the above"


@settings(max_examples=100, deadline=None)
@given(
    widths=st.lists(st.sampled_from([2, 3, 4, 6]), min_size=1, max_size=60),
    seed=st.integers(0, 2**32 - 1),
)
def test_assigned_positions_are_even_per_option_count(widths: list[int], seed: int) -> None:
    # Catches a balance that is even overall but not per option count (a 2-option item cannot take C).
    lays = [Layout(k, 0, tuple(range(k))) for k in widths]
    got = assign_positions(lays, np.random.default_rng(seed))
    by_k: dict[int, Counter[int]] = defaultdict(Counter)
    for k, pos in zip(widths, got, strict=True):
        assert 0 <= pos < k
        by_k[k][pos] += 1
    for k, counts in by_k.items():
        full = [counts[i] for i in range(k)]
        assert max(full) - min(full) <= 1, (k, full)


def test_fixed_items_count_first_and_the_rest_fill_in() -> None:
    # Catches balancing that ignores items which must keep their order ("Both A and C" options).
    fixed = [Layout(4, 1, (), "names_positions")] * 3
    free = [Layout(4, 0, (0, 1, 2, 3))] * 9
    got = assign_positions([*fixed, *free], np.random.default_rng(0))
    assert got[:3] == [1, 1, 1] and Counter(got) == Counter({0: 3, 1: 3, 2: 3, 3: 3})


def test_references_follow_their_option_and_panel_letters_stay() -> None:
    # Catches an explanation left pointing at the old letter after its options were shuffled.
    options = ["round", "flat", "oval", "long"]
    lay = layout(options, 1)
    new, idx, order = reorder(options, lay, 3, np.random.default_rng(1))
    text = relabel("Option B is right: Panels A and C show flat cells.", order)
    assert new[idx] == "flat" and text == "Option D is right: Panels A and C show flat cells."


def _sources(root: Path, n: int) -> Path:
    (root / "imgs").mkdir(parents=True)
    rows = ["image,modality,domain,label_name"]
    rng = np.random.default_rng(7)
    for i in range(n):
        Image.fromarray(rng.integers(0, 255, (24, 24, 3), dtype=np.uint8)).save(root / "imgs" / f"f{i}.png")
        rows.append(f"f{i}.png,light microscopy,pathology,{['tumour', 'normal', 'necrosis'][i % 3]}")
    (root / "meta.csv").write_text("\n".join(rows) + "\n")
    (root / "manifest.yaml").write_text(
        "name: panels\ndescription: Multi-panel figures.\nsources:\n"
        "  - name: figs\n    images: imgs\n    metadata: meta.csv\n    license: CC-BY-4.0\n"
    )
    return root / "manifest.yaml"


def _spur_replies(root: Path, n: int) -> tuple[Path, Path]:
    replies, texts = [], ["source,image,caption"]
    for i in range(n):
        q = {
            "question": f"How many nuclei are in Panels A and C of figure {i}?",
            "options": ["3", "5", "7", "9"],
            "answer": "B",  # the writer always puts the answer second
            "explanation": "Panel B is the control; option B counts panels A and C together.",
        }
        replies.append({"item_id": f"spur_np/figs/f{i}.png", "response": json.dumps({"questions": [q]})})
        texts.append(f"figs,f{i}.png,Panels A-D: nuclei under four conditions.")
    (root / "replies.jsonl").write_text("".join(json.dumps(r) + "\n" for r in replies))
    (root / "texts.csv").write_text("\n".join(texts) + "\n")
    return root / "replies.jsonl", root / "texts.csv"


def test_a_spur_task_naming_panels_gives_frequent_no_more_than_chance(tmp_path: Path) -> None:
    # Catches the build that kept every SPUR answer at B (frequent scored 100%) because the
    # question named panels by letter, and a split that undoes the balance per split.
    n = 26
    _sources(tmp_path, n)
    replay, texts = _spur_replies(tmp_path, n)
    ingest(tmp_path / "manifest.yaml", tmp_path / "ingest")
    make_questions(tmp_path / "ingest", tmp_path / "questions")
    cfg = GenerateConfig(model=f"replay:{replay}", tasks=("spur_np",), inputs=str(texts))
    gen = generate(tmp_path / "questions", tmp_path / "gen", cfg)
    recs = [r for r in read_generated(tmp_path / "gen") if r["status"] == "ok"]
    assert len(recs) == n and all(r["shuffled"] and r["shuffle_seed"] == 0 for r in recs)
    counts = gen.stats["answer_positions"]["spur_np"]["counts"]
    assert sum(counts) == n and max(counts) - min(counts) <= 1
    for r in recs:
        letter = "ABCD"[r["answer_idx"]]
        assert r["options"][r["answer_idx"]] == "5"
        # The option reference follows the answer; the panel letters do not move.
        assert r["explanation"] == f"Panel B is the control; option {letter} counts panels A and C together."
        assert "Panels A and C" in r["question"]

    sp = split(
        tmp_path / "gen", tmp_path / "split", SplitConfig(seed=3, fractions={"train": 0.5, "test": 0.5})
    )
    for name, per_task in sp.stats["answer_positions_by_split"].items():
        assert all(s["within_margin"] for s in per_task.values()), (name, per_task)
        spur_counts = per_task["spur_np"]["counts"]
        assert max(spur_counts) - min(spur_counts) <= 1, (name, spur_counts)
    export(tmp_path / "split", tmp_path / "export")
    items = [json.loads(x) for x in (tmp_path / "export/local/data.jsonl").read_text().splitlines()]
    spur = [i for i in items if i["task"] == "spur_np"]
    assert len(spur) == n and all(i["choices"][i["answer"]] == "5" for i in spur)

    # The frequent baseline itself, over the whole benchmark (its letters counted in-sample per task).
    out = tmp_path / "run"
    argv = ["-q", "run", "--bench", "local", "--data", str(tmp_path / "export/local"), "--model", "frequent",
            "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    records = [json.loads(x) for x in (out / "records.jsonl").read_text().splitlines()]
    by_task: dict[str, list[bool]] = defaultdict(list)
    for rec in records:
        by_task[rec["task"]].append(bool(rec["correct"]))
    widths: dict[str, list[int]] = defaultdict(list)
    for i in items:
        widths[i["task"]].append(len(i["choices"]))
    assert set(by_task) == set(widths) and len(by_task["spur_np"]) == n
    for task, right in by_task.items():
        chance = position_stats([0] * len(widths[task]), widths[task])["chance"]
        assert sum(right) / len(right) <= chance + 1 / len(right) + 1e-9, (task, sum(right), len(right))

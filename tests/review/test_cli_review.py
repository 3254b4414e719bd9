"""`scopebench review` from the command line: init, user, member, assign, baseline, export, Label
Studio; the baseline runs are read by `scopebench report` and `compare` with hand-checked accuracy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from review_helpers import KEYS, PASSWORD, write_bench

from scopebench.cli import main


@pytest.fixture
def cli_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    data = write_bench(tmp_path / "bench")
    db = str(tmp_path / "r.db")
    monkeypatch.setenv("SCOPEBENCH_REVIEW_PASSWORD", PASSWORD)
    assert (
        main(
            [
                "review",
                "init",
                "--db",
                db,
                "--name",
                "p",
                "--bench",
                "local",
                "--data",
                str(data),
                "--rubric",
                "pathmmu",
                "--reviewers",
                "1",
                "--alpha-threshold",
                "0.5",
            ]
        )
        == 0
    )
    for name, role in (("ann", "reviewer"), ("bob", "reviewer")):
        assert main(["review", "user", "--db", db, name, "--role", role]) == 0
    assert main(["review", "member", "--db", db, "--project", "p", "ann", "--group", "a"]) == 0
    assert main(["review", "member", "--db", db, "--project", "p", "bob", "--group", "b"]) == 0
    assert main(["review", "assign", "--db", db, "--project", "p"]) == 0
    return {"db": db, "root": tmp_path, "data": data}


def test_import_scopebench_stays_light() -> None:
    import subprocess
    import sys

    code = (
        # --help of the group imports every command module (the review commands' included).
        "import contextlib, io, sys, scopebench, scopebench.cli\n"
        "with contextlib.redirect_stdout(io.StringIO()): scopebench.cli.main(['--help'])\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'fastapi', 'sqlalchemy', 'alembic', 'starlette', 'argon2'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_missing_extra_is_a_message(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "fastapi" else real(name, *a)
    )
    assert main(["review", "init", "--db", "x.db", "--name", "p", "--bench", "local"]) == 2
    assert "pip install 'scopebench[review]'" in capsys.readouterr().err


def test_errors_are_messages(cli_project: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    db = cli_project["db"]
    assert main(["review", "assign", "--db", db, "--project", "nope"]) == 2
    assert "no project 'nope'" in capsys.readouterr().err
    assert (
        main(
            [
                "review",
                "init",
                "--db",
                db,
                "--name",
                "p",
                "--bench",
                "local",
                "--data",
                str(cli_project["data"]),
            ]
        )
        == 2
    )
    assert "exists already" in capsys.readouterr().err
    assert (
        main(
            [
                "review",
                "init",
                "--db",
                db,
                "--name",
                "q",
                "--bench",
                "local",
                "--data",
                str(cli_project["data"]),
                "--rubric",
                "nonsense",
            ]
        )
        == 2
    )
    assert "no rubric 'nonsense'" in capsys.readouterr().err


def _answer_all(db: str, choices: dict[str, dict[str, int]]) -> None:
    from sqlalchemy import select

    from scopebench.review import workflow
    from scopebench.review.db import Assignment, ItemRow, User, open_database

    sessions = open_database(db)
    for name, answers in choices.items():
        with sessions() as s, s.begin():
            user = s.scalar(select(User).where(User.username == name))
            for a, it in s.execute(
                select(Assignment, ItemRow).join(ItemRow).where(Assignment.user_id == user.id)
            ):
                workflow.open_assignment(s, user, a.id)
                workflow.answer(s, user, a.id, answers[it.key], 5)
                workflow.rate(
                    s,
                    user,
                    a.id,
                    {
                        "answerable_without_image": "no",
                        "answer_inferable": "yes",
                        "key_wrong": "no",
                        "atypical": "no",
                    },
                    {},
                )


def test_baseline_is_a_run_that_report_and_compare_read(cli_project: dict[str, Any], tmp_path: Path) -> None:
    db = cli_project["db"]
    # One reviewer per item: ann gets q1, q3; bob q2, q4 (groups a, b alternate). ann right on both,
    # bob right on q2 only.
    _answer_all(db, {"ann": {"local/q1": 0, "local/q3": 2}, "bob": {"local/q2": 1, "local/q4": 3}})
    out = tmp_path / "baseline"
    assert main(["review", "baseline", "--db", db, "--project", "p", "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["a", "b"]
    rep = tmp_path / "rep"
    assert (
        main(
            [
                "report",
                str(out / "a"),
                str(out / "b"),
                "--out",
                str(rep),
                "--resamples",
                "50",
                "--policy",
                "exclude",
            ]
        )
        == 0
    )
    metrics_a = json.loads((rep / "a" / "metrics.json").read_text())
    metrics_b = json.loads((rep / "b" / "metrics.json").read_text())
    assert metrics_a["model"] == "human:a"
    o_a, o_b = metrics_a["overall"], metrics_b["overall"]
    assert (o_a["n"], o_a["denominator"], o_a["correct"], o_a["accuracy"]) == (4, 2, 2, 1.0)
    assert (o_b["n"], o_b["denominator"], o_b["correct"], o_b["accuracy"]) == (4, 2, 1, 0.5)
    assert o_b["missing_response"] == 2
    # With the default policy the items a group has not answered count as wrong: 2 of 4, 1 of 4.
    rep2 = tmp_path / "rep2"
    assert main(["report", str(out / "a"), "--out", str(rep2), "--resamples", "50"]) == 0
    assert json.loads((rep2 / "a" / "metrics.json").read_text())["overall"]["accuracy"] == 0.5
    # compare puts a model run beside the experts, on the same items.
    model_run = tmp_path / "random"
    assert (
        main(
            [
                "run",
                "--bench",
                "local",
                "--data",
                str(cli_project["data"]),
                "--model",
                "random",
                "--out",
                str(model_run),
            ]
        )
        == 0
    )
    cmp_out = tmp_path / "cmp"
    assert main(["compare", str(out / "a"), str(model_run), "--out", str(cmp_out), "--resamples", "50"]) == 0
    result = json.loads((cmp_out / "compare.json").read_text())
    board = {e["model"]: e for e in result["leaderboard"]}
    assert set(board) == {"human:a", "random"}
    assert board["human:a"]["overall"]["accuracy"] == 0.5  # 2 correct of 4 (unanswered count as wrong)
    assert result["pairs"][0]["n_common"] == 4  # paired item by item with the model


def test_gate_refuses_export_until_forced(
    cli_project: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = cli_project["db"]
    _answer_all(db, {"ann": {"local/q1": 0, "local/q3": 2}, "bob": {"local/q2": 1, "local/q4": 3}})
    out = tmp_path / "export"
    # One reviewer per item: no item is rated twice, so α is undefined and the 0.5 gate cannot pass.
    assert main(["review", "export", "--db", db, "--project", "p", "--out", str(out), "--no-hf"]) == 2
    assert "release gate" in capsys.readouterr().err and not out.exists()
    assert (
        main(["review", "export", "--db", db, "--project", "p", "--out", str(out), "--no-hf", "--force"]) == 0
    )
    summary = json.loads((out / "summary.json").read_text())
    assert summary["gate"]["forced"] is True and summary["accepted"] == 4
    events = [json.loads(x)["event"] for x in (out / "events.jsonl").read_text().splitlines()]
    assert "rated" in events


def test_labelstudio_round_trip(cli_project: dict[str, Any], tmp_path: Path) -> None:
    db = cli_project["db"]
    out = tmp_path / "ls"
    assert main(["review", "labelstudio", "export", "--db", db, "--project", "p", "--out", str(out)]) == 0
    tasks = json.loads((out / "tasks.json").read_text())
    config = (out / "config.xml").read_text()
    assert [t["data"]["scopebench_item"] for t in tasks] == list(KEYS)
    assert '<Choices name="answer"' in config and '<Choice value="D"/>' in config  # q4 has four options
    assert '<Rating name="confidence"' in config and '<Choices name="key_wrong"' in config
    assert tasks[0]["data"]["options"].startswith("A. H&E\nB. PAS")
    # A Label Studio JSON export, as its docs describe it: ann (by id 7, mapped) annotates q1.
    result = [
        {"from_name": "answer", "to_name": "question", "type": "choices", "value": {"choices": ["B"]}},
        {"from_name": "confidence", "to_name": "question", "type": "rating", "value": {"rating": 2}},
        {
            "from_name": "answerable_without_image",
            "to_name": "question",
            "type": "choices",
            "value": {"choices": ["no"]},
        },
        {
            "from_name": "answer_inferable",
            "to_name": "question",
            "type": "choices",
            "value": {"choices": ["yes"]},
        },
        {"from_name": "key_wrong", "to_name": "question", "type": "choices", "value": {"choices": ["yes"]}},
        {"from_name": "atypical", "to_name": "question", "type": "choices", "value": {"choices": ["no"]}},
    ]
    export = [
        {
            "id": 1,
            "data": tasks[0]["data"],
            "annotations": [
                {"id": 11, "completed_by": 7, "lead_time": 12.5, "was_cancelled": False, "result": result},
                {"id": 12, "completed_by": 8, "lead_time": 3.0, "was_cancelled": True, "result": []},
            ],
        }
    ]
    path = tmp_path / "ls-export.json"
    path.write_text(json.dumps(export))
    # q1 is assigned to ann already (unanswered), so the import fills her slot.
    assert (
        main(
            [
                "review",
                "labelstudio",
                "import",
                "--db",
                db,
                "--project",
                "p",
                "--file",
                str(path),
                "--user-map",
                "7=ann",
            ]
        )
        == 0
    )
    from sqlalchemy import select

    from scopebench.review.db import Answer, ItemRow, Rating, open_database

    with open_database(db)() as s:
        ans, rating, item = s.execute(
            select(Answer, Rating, ItemRow)
            .join(Rating, Rating.assignment_id == Answer.assignment_id)
            .join(ItemRow, ItemRow.key == "local/q1")
        ).first()
        assert (ans.choice, ans.confidence, ans.seconds, ans.source) == (1, 2, 12.5, "labelstudio")
        assert rating.decision == "drop" and rating.reasons == ["key_wrong=yes"]
        assert item.status == "rejected"  # the only reviewer flagged it


def test_missing_images_are_one_warning_and_shown_on_the_item(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A benchmark whose image is missing: init says so in one line, the item page warns the reviewer."""
    from sqlalchemy import select

    from scopebench.review.db import ItemRow, open_database
    from scopebench.review.workflow import blind_view

    data = write_bench(tmp_path / "bench")
    (tmp_path / "bench" / "images" / "blue.png").unlink()  # q2's image
    db = str(tmp_path / "r.db")
    args = ["review", "init", "--db", db, "--name", "p", "--bench", "local", "--data", str(data)]
    assert main([*args, "--rubric", "hle"]) == 0
    out = " ".join(capsys.readouterr().out.split())  # rich wraps long lines
    assert "warning: 1 image(s) could not be copied into the store (project of 4 items)" in out
    with open_database(db)() as s:
        views = {it.key: blind_view(it) for it in s.scalars(select(ItemRow)).all()}
    assert {k: v["missing_images"] for k, v in views.items()} == {
        "local/q1": 0,
        "local/q2": 1,
        "local/q3": 0,
        "local/q4": 0,  # q4 has no image at all: nothing is missing
    }
    assert views["local/q2"]["images"] == []


def test_baseline_names_the_groups_without_answers(
    cli_project: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Only ann (group a) has answered: a's run is written and group b is named, not silently absent."""
    from sqlalchemy import select

    from scopebench.review import workflow
    from scopebench.review.db import Assignment, User, open_database

    with open_database(cli_project["db"])() as db, db.begin():
        ann = db.scalar(select(User).where(User.username == "ann"))
        slot = db.scalar(select(Assignment.id).where(Assignment.user_id == ann.id))
        workflow.open_assignment(db, ann, slot)
        workflow.answer(db, ann, slot, 0, 3)
    out = tmp_path / "human"
    capsys.readouterr()
    assert main(["review", "baseline", "--db", cli_project["db"], "--project", "p", "--out", str(out)]) == 0
    printed = " ".join(capsys.readouterr().out.split())
    assert sorted(p.name for p in out.iterdir()) == ["a"]
    assert "human:a" in printed and "group 'b': no member has answered yet; no run written" in printed

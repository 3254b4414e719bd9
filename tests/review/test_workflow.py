"""The review protocol end to end through the service layer, checked value by value.

Two reviewers (groups a and b) answer and rate four items; they agree on q1 (keep) and q2 (drop),
disagree on q3 and one is uncertain on q4, so q3 and q4 go to the senior, who accepts q3 and
rejects q4. The export, the decision log and the baseline runs are then checked against the script.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from review_helpers import KEYS, PASSWORD, SCRIPT, build_project, write_bench
from sqlalchemy import select

from scopebench.review import workflow
from scopebench.review.db import Assignment, ItemRow, User
from scopebench.review.errors import Conflict, Forbidden, Invalid, NotFound


@pytest.fixture
def project(tmp_path: Path) -> dict[str, Any]:
    data = write_bench(tmp_path / "bench")
    return build_project(str(tmp_path / "r.db"), tmp_path / "store", data) | {"root": tmp_path}


def _slot(db: Any, username: str, key: str) -> tuple[User, int]:
    user = db.scalar(select(User).where(User.username == username))
    aid = db.scalar(
        select(Assignment.id)
        .join(ItemRow, ItemRow.id == Assignment.item_id)
        .where(ItemRow.key == key, Assignment.user_id == user.id)
    )
    return user, aid


def run_script(sessions: Any) -> None:
    for name, items in SCRIPT.items():
        for key, (choice, scores, verdicts) in items.items():
            with sessions() as db, db.begin():
                user, aid = _slot(db, name, key)
                view = workflow.open_assignment(db, user, aid)
                assert "answer_index" not in view  # the key is not shown before the answer
            with sessions() as db, db.begin():
                user, aid = _slot(db, name, key)
                after = workflow.answer(db, user, aid, choice, 4)
                assert after["answer_index"] == KEYS[key]
                workflow.rate(db, user, aid, scores, verdicts, comment=f"note on {key}")


def test_assignment_is_balanced_and_spans_groups(project: dict[str, Any]) -> None:
    with project["sessions"]() as db:
        rows = db.execute(select(Assignment.user_id, ItemRow.key).join(ItemRow)).all()
    per_user: dict[int, int] = {}
    for uid, _ in rows:
        per_user[uid] = per_user.get(uid, 0) + 1
    # 4 items × 2 reviewers over ann (a) and bob (b); the senior (group seniors) arbitrates and is
    # never assigned (the bug: he took slots like a reviewer, then could not arbitrate them).
    assert per_user == {project["users"]["ann"]: 4, project["users"]["bob"]: 4}


def test_full_protocol(project: dict[str, Any]) -> None:
    sessions = project["sessions"]
    run_script(sessions)
    with sessions() as db:
        status = {it.key: it.status for it in db.scalars(select(ItemRow)).all()}
        q3 = db.scalar(select(ItemRow).where(ItemRow.key == "local/q3"))
        q4 = db.scalar(select(ItemRow).where(ItemRow.key == "local/q4"))
    assert status == {
        "local/q1": "accepted",
        "local/q2": "rejected",
        "local/q3": "arbitration",
        "local/q4": "arbitration",
    }
    assert q3.routed_reasons[0] == "reviewers disagree (drop ×1, keep ×1)"
    assert q4.routed_reasons == ["a reviewer is uncertain: answer=uncertain"]

    with sessions() as db, db.begin():
        senior = db.get(User, project["users"]["senior"])
        ann = db.get(User, project["users"]["ann"])
        queue = workflow.arbitration_queue(db, senior, _project(db, q3))
        assert [q["key"] for q in queue] == ["local/q3", "local/q4"]
        view = workflow.arbitration_view(db, senior, q3.id)
        # The arbiter sees both answers, labelled, never who gave them.
        assert sorted(r["answer"] for r in view["reviews"]) == [0, 2]
        assert {r["label"] for r in view["reviews"]} == {"Reviewer A", "Reviewer B"}
        text = json.dumps(view)
        assert all(s not in text for s in ("ann", "bob", "expert-", "user_id"))
        with pytest.raises(Forbidden):
            workflow.arbitration_view(db, ann, q3.id)
        workflow.arbitrate(
            db,
            senior,
            q3.id,
            "accept",
            "the image does show 40x",
            edit={"question": "What is the objective magnification?"},
        )
        with pytest.raises(Invalid):
            workflow.arbitrate(db, senior, q4.id, "reject", "  ")
        workflow.arbitrate(db, senior, q4.id, "reject", "two tissues fit the image")
        with pytest.raises(Conflict):
            workflow.arbitrate(db, senior, q4.id, "accept", "again")

    _check_dashboard(sessions, project)
    out = project["root"] / "export"
    from scopebench.review.outputs import export_project, write_baseline
    from scopebench.review.store import ImageStore

    with sessions() as db, db.begin():
        proj = _project(db, q3)
        summary = export_project(db, ImageStore(project["root"] / "store"), proj, out, resamples=50)
        runs = write_baseline(db, proj, project["root"] / "baseline")
    assert (summary["accepted"], summary["rejected"], summary["pending"]) == (2, 2, 0)
    rows = [json.loads(line) for line in (out / "data.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == ["q1", "q3"]
    q3row = rows[1]
    assert q3row["question"] == "What is the objective magnification?"
    assert q3row["answer"] == 2 and q3row["context"] == "A field of view of 200 µm."
    assert q3row["review"]["version"] == 2
    assert q3row["review"]["arbitration"]["decision"] == "accept"
    assert q3row["review"]["edits"][0]["reason"] == "arbitration: the image does show 40x"
    reviews = {r["reviewer"]: r for r in q3row["review"]["reviews"]}
    assert reviews["expert-003"]["answer"] == 0 and reviews["expert-003"]["correct_vs_loaded_key"] is False
    assert reviews["expert-004"]["verdicts"]["problem"] == "invalid"
    assert rows[0]["modality"] == "brightfield" and rows[0]["images"][0].startswith("images/")
    decisions = [json.loads(line) for line in (out / "decisions.jsonl").read_text().splitlines()]
    assert [(d["id"], d["reasons"][0]) for d in decisions] == [
        ("q2", "all reviewers: scientific_validity=1, task_alignment=2"),
        ("q4", "senior expert-002: two tissues fit the image"),
    ]
    events = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    kinds = [e["event"] for e in events]
    assert kinds.count("answered") == 8 and kinds.count("rated") == 8 and kinds.count("arbitrated") == 2
    assert kinds.count("item_edited") == 1 and kinds[0] == "project_created"
    edit = next(e for e in events if e["event"] == "item_edited")
    assert edit["who"] == "expert-002" and edit["item"] == "local/q3"
    assert edit["details"]["changes"]["question"]["from"] == "What magnification?"

    # The exported data is a benchmark again: the local loader reads it, images included.
    from scopebench.benchmarks import get_benchmark

    loaded = get_benchmark("local").load(str(out / "data.jsonl"))
    assert [it.id for it in loaded.items] == ["local/q1", "local/q3"]
    assert all(it.images and it.images[0].exists() for it in loaded.items)
    assert [p for p in loaded.problems if p.severity == "error"] == []
    # And the Hugging Face copy holds the same rows.
    import datasets

    hf = datasets.load_from_disk(str(out / "hf"))
    assert hf["id"] == ["q1", "q3"] and hf["answer"] == [0, 2]

    assert sorted(runs) == ["a", "b"]
    _check_baseline(runs)


def _check_dashboard(sessions: Any, project: dict[str, Any]) -> None:
    from scopebench.review.db import Project
    from scopebench.review.stats import dashboard

    with sessions() as db:
        senior = db.get(User, project["users"]["senior"])
        d = dashboard(db, senior, db.get(Project, project["project_id"]), resamples=50)
        with pytest.raises(Forbidden):
            dashboard(db, db.get(User, project["users"]["ann"]), db.get(Project, project["project_id"]))
    assert d["items"] == {"accepted": 2, "rejected": 2}
    prog = {p["username"]: (p["group"], p["assigned"], p["answered"], p["rated"]) for p in d["progress"]}
    assert prog == {"ann": ("a", 4, 4, 4), "bob": ("b", 4, 4, 4)}
    assert d["flags"] == {
        "scientific_validity": 1,
        "task_alignment": 1,
        "visual_reasoning_necessity": 0,
        "problem=invalid": 1,
        "answer=uncertain": 1,
    }
    assert d["baseline"] == {
        "a": {"n": 4, "correct": 3, "accuracy": 0.75},
        "b": {"n": 4, "correct": 2, "accuracy": 0.5},
    }
    # Answers ann [A, B, A, A] vs bob [A, C, C, B]: po = 1/4, pe = 3/4·1/4 + 1/4·1/4 = 1/4, so κ = 0.
    kappa = {k["variable"]: k for k in d["agreement"]["kappa"]}
    assert kappa["answer"]["value"] == pytest.approx(0.0) and kappa["answer"]["n"] == 4
    # Decisions keep/drop/keep/uncertain vs keep/drop/drop/keep: po = 1/2,
    # pe = 2/4·2/4 (keep) + 1/4·2/4 (drop) = 3/8, κ = (1/2 − 3/8) / (1 − 3/8) = 0.2.
    assert kappa["decision"]["value"] == pytest.approx(0.2)
    assert d["agreement"]["alpha"]["scientific_validity"]["level"] == "ordinal"
    # α of the first answers, units (A,A) (B,C) (A,C) (A,B): coincidences o_AA = 2, and one each
    # way for B–C, A–C, A–B; n_A = 4, n_B = n_C = 2, n = 8. D_o = 6/8, D_e = 2·(4·2 + 4·2 + 2·2)/(8·7)
    # = 40/56, α = 1 − 0.75/(40/56) = −0.05. The HLE verdict also named "answer" is a separate
    # variable, "rubric:answer" (it overwrote the choices before: α was 0.0, the verdicts' α).
    alpha = d["agreement"]["alpha"]
    assert alpha["answer"]["value"] == pytest.approx(-0.05) and alpha["answer"]["n_items"] == 4
    # The verdict: ann valid ×3 + uncertain, bob valid ×4: n_valid = 7, n_uncertain = 1,
    # D_o = 2/8, D_e = 2·7·1/56 = 0.25, α = 0.
    assert alpha["rubric:answer"]["value"] == pytest.approx(0.0) and "rubric:decision" not in alpha
    # The release gate names it as the dashboard does (the bug: its message said `answer`, the
    # dashboard's name for the first answers, whose α is -0.05, not the 0.0 it quoted).
    from scopebench.review.db import Project
    from scopebench.review.stats import gate

    with sessions() as db:
        gated = db.get(Project, project["project_id"])
        gated.alpha_threshold = 0.5  # not committed
        ok, failing = gate(gated, d["agreement"])
    assert not ok and "rubric:answer: α = 0.000 < 0.5" in failing
    assert not [f for f in failing if f.startswith("answer:")]


def _project(db: Any, item: ItemRow) -> Any:
    from scopebench.review.db import Project

    return db.get(Project, item.project_id)


def _check_baseline(runs: dict[str, Path]) -> None:
    from scopebench.store.rundir import load_run

    a = load_run(runs["a"])
    assert a.model == "human:a" and a.benchmark == "local"
    by_id = {r.item_id: r for r in a.records}
    assert [by_id[k].correct for k in KEYS] == [True, True, False, True]  # ann: 3 of 4
    assert by_id["local/q3"].extra["item_status"] == "accepted"
    assert by_id["local/q3"].extra["confidence"] == 4 and by_id["local/q3"].extra["seconds"] >= 0
    b = load_run(runs["b"])
    assert [r.correct for r in sorted(b.records, key=lambda r: r.item_id)] == [True, False, True, False]
    # bob answered q4 with B against key A: the item was rejected, so "the item is wrong" is visible.
    q4 = next(r for r in b.records if r.item_id == "local/q4")
    assert q4.extra["item_status"] == "rejected" and q4.extra["correct_vs_final_key"] is False


def test_reviewer_cannot_touch_another_reviewers_slot(project: dict[str, Any]) -> None:
    with project["sessions"]() as db, db.begin():
        ann = db.scalar(select(User).where(User.username == "ann"))
        ann_slot = db.scalar(select(Assignment.id).where(Assignment.user_id == ann.id))
        assert ann_slot is not None
        bob = db.scalar(select(User).where(User.username == "bob"))
        eve = db.scalar(select(User).where(User.username == "eve"))
        for who in (bob, eve):
            with pytest.raises(NotFound):
                workflow.open_assignment(db, who, ann_slot)
            with pytest.raises(NotFound):
                workflow.answer(db, who, ann_slot, 0, 3)


def test_answer_needs_the_question_opened_and_is_final(project: dict[str, Any]) -> None:
    with project["sessions"]() as db, db.begin():
        ann, slot = _slot(db, "ann", "local/q2")
        with pytest.raises(Conflict, match="open the question first"):
            workflow.answer(db, ann, slot, 0, 3)
        workflow.open_assignment(db, ann, slot)
        with pytest.raises(Conflict, match="answer the question first"):
            workflow.rate(db, ann, slot, {}, {})
        with pytest.raises(Invalid, match="confidence"):
            workflow.answer(db, ann, slot, 0, 6)
        with pytest.raises(Invalid, match="choice"):
            workflow.answer(db, ann, slot, 3, 3)  # q2 has three options
        workflow.answer(db, ann, slot, 1, 5)
        with pytest.raises(Conflict, match="first answer is final"):
            workflow.answer(db, ann, slot, 2, 5)


def test_edit_is_versioned_and_reviewers_cannot_edit(project: dict[str, Any]) -> None:
    with project["sessions"]() as db, db.begin():
        admin = db.get(User, project["users"]["admin"])
        ann = db.get(User, project["users"]["ann"])
        q2 = db.scalar(select(ItemRow).where(ItemRow.key == "local/q2"))
        with pytest.raises(Forbidden):
            workflow.edit_item(db, ann, q2.id, {"answer_index": 0}, reason="x")
        with pytest.raises(Invalid, match="answer_index"):
            workflow.edit_item(db, admin, q2.id, {"answer_index": 3}, reason="typo")
        out = workflow.edit_item(
            db, admin, q2.id, {"choices": ["Nucleus", "Mitochondrion", "Golgi"]}, reason="singular"
        )
        assert out["version"] == 2 and out["changes"]["choices"]["to"][1] == "Mitochondrion"


def test_one_group_two_answers_per_item_counts_the_earliest(tmp_path: Path) -> None:
    """Two members of one group answer the same item: the baseline (run and dashboard) takes the
    earlier answer per item, and keeps the other in extra."""
    from scopebench.review.accounts import create_user
    from scopebench.review.db import Project, open_database
    from scopebench.review.outputs import write_baseline
    from scopebench.review.projects import add_member, assign, create_project
    from scopebench.review.rubrics import load_rubric
    from scopebench.review.stats import dashboard
    from scopebench.review.store import ImageStore

    data = write_bench(tmp_path / "bench")
    sessions = open_database(str(tmp_path / "one.db"))
    with sessions() as db, db.begin():
        users = [
            create_user(db, n, PASSWORD, r)
            for n, r in (("x", "reviewer"), ("y", "reviewer"), ("s", "senior"))
        ]
        project, _ = create_project(
            db,
            ImageStore(tmp_path / "store"),
            name="one",
            benchmark="local",
            data=str(data),
            rubric=load_rubric("hle"),
            limit=1,
        )
        for u in users[:2]:
            add_member(db, project, u, "g")
        assign(db, project)  # the senior joins after assignment, so x and y review the item
        senior_id = users[2].id
        pid = project.id
    for name, choice in (("x", 1), ("y", 0)):  # x (wrong) answers first, then y (right)
        with sessions() as db, db.begin():
            user, aid = _slot(db, name, "local/q1")
            workflow.open_assignment(db, user, aid)
            workflow.answer(db, user, aid, choice, 3)
    with sessions() as db, db.begin():
        project = db.get(Project, pid)
        runs = write_baseline(db, project, tmp_path / "base")
        add_member(db, project, db.get(User, senior_id), "boss")
        d = dashboard(db, db.get(User, senior_id), project, resamples=20)
    assert d["baseline"] == {"g": {"n": 1, "correct": 0, "accuracy": 0.0}}
    from scopebench.store.rundir import load_run

    (rec,) = load_run(runs["g"]).records
    assert (rec.choice, rec.correct, rec.extra["reviewer"]) == (1, False, "expert-001")
    assert rec.extra["other_answers"] == [{"reviewer": "expert-002", "choice": 0}]

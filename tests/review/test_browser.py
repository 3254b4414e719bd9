"""The review app in a real headless Chromium (Playwright), the whole review story: two
reviewers answer and rate an item, they disagree, a senior arbitrates; then `scopebench review
export` and `review baseline` run on the same database and their rows and run records are checked
value by value against what was clicked.
Skipped with the reason when Chromium or Playwright is missing (see tests/report/test_html_browser.py).
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from review_helpers import KEYS, PASSWORD, build_project, write_bench
from sqlalchemy import select

CHROMIUM = Path("/usr/bin/chromium")
VERDICTS = ("problem", "answer", "rationale")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not CHROMIUM.is_file(), reason="needs Debian's chromium (bash .ci/install-chromium.sh)"
    ),
    pytest.mark.skipif(
        importlib.util.find_spec("playwright") is None, reason="needs Playwright (the browser extra)"
    ),
]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    from review_helpers import Server

    from scopebench.review.app import AppSettings, create_app

    root = tmp_path_factory.mktemp("browser")
    db = str(root / "r.db")
    info = build_project(db, root / "store", write_bench(root / "bench"))
    with Server(create_app(AppSettings(db=db, store=root / "store"))) as server:
        yield info | {"url": server.url, "db": db, "root": root}


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield b
        b.close()


def _login(browser: Any, url: str, name: str) -> Any:
    page = browser.new_context().new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.errors = errors
    page.goto(url + "/")
    assert page.url.endswith("/login")  # anonymous: sent to the login page
    page.fill("#username", name)
    page.fill("#password", PASSWORD)
    page.click("#login")
    page.wait_for_url(url + "/")
    return page


def _review(
    page: Any, url: str, pid: int, key: str, choice: int, scores: dict[str, int], problem: str
) -> None:
    page.goto(f"{url}/projects/{pid}")
    page.click(f'a.open-item[data-key="{key}"]')
    assert page.locator(".key").count() == 0  # no key before answering
    page.check(f'input[name=choice][value="{choice}"]')
    page.check('input[name=confidence][value="4"]')
    page.click("#submit-answer")
    page.wait_for_selector("#rating-form")
    assert "(key)" in page.inner_text("ol.choices")  # the key now shows
    for k, v in scores.items():
        page.check(f'input[name=score_{k}][value="{v}"]')
    for v in ("problem", "answer", "rationale"):
        page.check(f'input[name=verdict_{v}][value="{problem if v == "problem" else "valid"}"]')
    page.click("#submit-rating")
    # The next unfinished item opens (the project page once none is left).
    page.wait_for_url(lambda u: u.endswith("?saved=1") or u == f"{url}/projects/{pid}")


def test_two_reviewers_disagree_and_a_senior_arbitrates(site: dict[str, Any], browser: Any) -> None:
    from scopebench.review.db import Answer, Arbitration, Assignment, ItemRow, User

    url, pid = site["url"], site["project_id"]
    with site["sessions"]() as db:  # an item ann and bob both review
        rows = db.execute(
            select(ItemRow.key, User.username)
            .join(Assignment, Assignment.item_id == ItemRow.id)
            .join(User, User.id == Assignment.user_id)
        ).all()
    by_key: dict[str, set[str]] = {}
    for key, name in rows:
        by_key.setdefault(key, set()).add(name)
    key = next(k for k, names in sorted(by_key.items()) if names == {"ann", "bob"})
    good = {"scientific_validity": 4, "task_alignment": 4, "visual_reasoning_necessity": 5}
    ann = _login(browser, url, "ann")
    _review(ann, url, pid, key, 0, good, "valid")
    bob = _login(browser, url, "bob")
    _review(bob, url, pid, key, 1, good | {"scientific_validity": 2}, "invalid")
    bob.goto(f"{url}/projects/{pid}")
    assert bob.locator(f'a.open-item[data-key="{key}"]').count() == 1
    senior = _login(browser, url, "senior")
    senior.goto(f"{url}/projects/{pid}/arbitration")
    senior.click(f'a.arbitrate-item[data-key="{key}"]')
    text = senior.inner_text("table.reviews")
    assert "Reviewer A" in text and "Reviewer B" in text and "ann" not in text and "bob" not in text
    assert "reviewers disagree" in senior.inner_text("#routed-reasons")
    senior.check('input[name=decision][value="reject"]')
    senior.fill("#reason", "the image does not support the key")
    senior.click("#submit-decision")
    senior.wait_for_url(f"{url}/projects/{pid}/arbitration")
    senior.goto(f"{url}/projects/{pid}/dashboard")
    assert "human:a" in senior.inner_text("#baseline") and "rejected: 1" in senior.inner_text("#item-status")
    for page in (ann, bob, senior):
        assert page.errors == []
    with site["sessions"]() as db:
        item = db.scalar(select(ItemRow).where(ItemRow.key == key))
        arb = db.scalar(select(Arbitration).where(Arbitration.item_id == item.id))
        answers = sorted(
            db.scalars(select(Answer.choice).join(Assignment).where(Assignment.item_id == item.id)).all()
        )
        seconds = db.scalars(
            select(Answer.seconds).join(Assignment).where(Assignment.item_id == item.id)
        ).all()
    assert (
        item.status == "rejected"
        and arb.decision == "reject"
        and arb.reason == "the image does not support the key"
    )
    assert answers == [0, 1] and all(s > 0 for s in seconds)

    _check_export_and_baseline(site, key)


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _check_export_and_baseline(site: dict[str, Any], key: str) -> None:
    """The CLI's export and baseline after the browser flow, value by value."""
    from scopebench.cli import main
    from scopebench.store.rundir import load_run

    out, runs, db = site["root"] / "export", site["root"] / "human", site["db"]
    assert main(["review", "export", "--db", db, "--project", "demo", "--out", str(out), "--no-hf"]) == 0
    assert main(["review", "baseline", "--db", db, "--project", "demo", "--out", str(runs)]) == 0
    truth = KEYS[key]  # the key the item was loaded with
    routed = [
        "reviewers disagree (drop ×1, keep ×1)",
        "flagged: problem=invalid",
        "flagged: scientific_validity=2",
    ]
    assert _jsonl(out / "data.jsonl") == []  # nothing accepted
    (row,) = _jsonl(out / "decisions.jsonl")
    assert row["id"] == key.removeprefix("local/")
    # senior = expert-002, ann = expert-003, bob = expert-004 (pseudonyms follow account order)
    assert row["reasons"] == ["senior expert-002: the image does not support the key", *routed]
    review = row["review"]
    assert review["status"] == "rejected" and review["routed_reasons"] == routed
    arb = review["arbitration"]
    assert (arb["by"], arb["decision"], arb["reason"]) == (
        "expert-002",
        "reject",
        "the image does not support the key",
    )
    got = {
        r["reviewer"]: (
            r["group"],
            r["answer"],
            r["correct_vs_loaded_key"],
            r["confidence"],
            r["answered_version"],
            r["scores"],
            r["verdicts"],
            r["decision"],
            r["reasons"],
        )
        for r in review["reviews"]
    }
    good = {"scientific_validity": 4, "task_alignment": 4, "visual_reasoning_necessity": 5}
    assert got == {
        "expert-003": ("a", 0, truth == 0, 4, 1, good, dict.fromkeys(VERDICTS, "valid"), "keep", []),
        "expert-004": (
            "b",
            1,
            truth == 1,
            4,
            1,
            good | {"scientific_validity": 2},
            {"problem": "invalid", "answer": "valid", "rationale": "valid"},
            "drop",
            ["scientific_validity=2", "problem=invalid"],
        ),
    }
    assert all(r["seconds"] > 0 for r in review["reviews"])
    assert "ann" not in (out / "decisions.jsonl").read_text()  # pseudonyms only
    pending = _jsonl(out / "pending.jsonl")
    assert sorted(p["id"] for p in pending) == sorted(k.removeprefix("local/") for k in KEYS if k != key)
    kinds = [e["event"] for e in _jsonl(out / "events.jsonl") if e["item"] == key]
    assert [k for k in kinds if k != "assigned"] == [
        "question_opened",
        "answered",
        "rated",
        "question_opened",
        "answered",
        "rated",
        "routed_to_senior",
        "arbitrated",
    ]
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["accepted"], summary["rejected"], summary["pending"]) == (0, 1, 3)

    for group, reviewer, choice in (("a", "expert-003", 0), ("b", "expert-004", 1)):
        run = load_run(runs / group)
        assert run.model == f"human:{group}" and run.benchmark == "local"
        recs = {r.item_id: r for r in run.records}
        assert sorted(recs) == sorted(KEYS)  # one record per project item
        rec = recs[key]
        assert (rec.status, rec.choice, rec.correct, rec.answer_index) == (
            "ok",
            choice,
            choice == truth,
            truth,
        )
        assert rec.extra["reviewer"] == reviewer and rec.extra["confidence"] == 4
        assert rec.extra["item_status"] == "rejected" and rec.extra["item_routed_reasons"] == routed
        assert rec.extra["rating_decision"] == ("keep" if group == "a" else "drop")
        assert rec.extra["correct_vs_final_key"] is (choice == truth) and rec.extra["seconds"] > 0
        others = [r for k, r in recs.items() if k != key]
        assert [r.status for r in others] == ["missing_response"] * 3
        overall = json.loads((runs / group / "metrics.json").read_text())["overall"]
        # 4 items, 1 answered, the 3 unanswered counted wrong (the default policy).
        assert (overall["n"], overall["correct"], overall["missing_response"]) == (4, int(choice == truth), 3)

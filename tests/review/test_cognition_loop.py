"""μ-Bench's cognition loop end to end on a live server: experts submit images with open questions
(metadata from the taxonomy, a licence), `review submissions --out` writes the build's inputs,
`build run` turns each into a six-option item with "None of the above" (replayed model replies),
the items go back to `review init` for checking, and the accepted ones are balanced over A–F."""

from __future__ import annotations

import io
import json
import os
import re
import secrets
from collections import Counter
from pathlib import Path

import httpx
import pytest
from PIL import Image
from review_helpers import PASSWORD, Server, build_project, write_bench

from scopebench.cli import main

NOTA = "None of the above"
QUESTIONS = [  # (question, expert answer, stain)
    ("Which structure is stained brown?", "The nuclei", "IHC(HDab)"),
    ("What process is shown?", "Mitosis", ""),
    ("Which organelle is labelled?", "Mitochondria", ""),
    ("What artefact is visible?", "A fold in the section", "H&E"),
    ("Which cell type dominates?", "Lymphocytes", "H&E"),
    ("What is the scale of the field?", "About 100 µm", ""),
    ("Which tissue is this?", "Liver", "H&E"),
]


def _png(k: int) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (16 + k, 12), (20 * k, 90, 160)).save(buf, format="PNG")
    return buf.getvalue()


def _login(url: str, name: str, password: str) -> tuple[httpx.Client, dict[str, str]]:
    c = httpx.Client(base_url=url, timeout=30)
    r = c.post("/api/login", json={"username": name, "password": password})
    assert r.status_code == 200, r.text
    return c, {"X-CSRF-Token": r.json()["csrf_token"]}


def _submit(client: httpx.Client, h: dict[str, str], pid: int, k: int, **fields: str) -> httpx.Response:
    form = {
        "question": QUESTIONS[k][0],
        "answer": QUESTIONS[k][1],
        "stain": QUESTIONS[k][2],
        "modality": "light microscopy",
        "domain": "pathology",
        "license": "CC BY 4.0",
    } | fields
    return client.post(
        f"/api/projects/{pid}/submissions",
        data=form,
        files={"image": (f"field {k}.png", _png(k), "image/png")},
        headers=h,
    )


def _replies(path: Path, ids: list[int]) -> None:
    """One valid reply per submission; the last item's answer is "None of the above"."""
    rows = []
    for n, sid in enumerate(ids):
        options = [f"option {n}.{j}" for j in range(5)] + [NOTA]
        answer = NOTA if n == len(ids) - 1 else options[0]
        reply = {"questions": [{"question": QUESTIONS[n][0], "options": options, "answer": answer,
                                "explanation": "From the expert's answer."}]}  # fmt: skip
        item = f"open_to_mcq/submissions_demo/submission-{sid}.png"
        rows.append({"item_id": item, "response": json.dumps(reply)})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_cognition_loop_through_the_live_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Catches: metadata not validated or not normalised, exported images without extension, build
    inputs `build run` cannot read, items without exactly one "None of the above", and accepted
    items whose answers are not spread over the letters."""
    from scopebench.review.app import AppSettings, create_app

    db, store = str(tmp_path / "r.db"), tmp_path / "store"
    info = build_project(db, store, write_bench(tmp_path / "bench"))
    pid = info["project_id"]
    with Server(create_app(AppSettings(db=db, store=store))) as server:
        # The body guard refuses an upload before any session exists.
        anon = httpx.post(f"{server.url}/api/projects/{pid}/submissions", files={"image": ("a.png", b"x")})
        assert anon.status_code in (401, 403), anon.text
        ann, h = _login(server.url, "ann", PASSWORD)
        vocab = ann.get("/api/vocabulary").json()
        assert {"light microscopy", "electron microscopy"} <= set(vocab["modality"])
        assert "pathology" in vocab["domain"] and "H&E" in vocab["stain"]
        form = ann.get(f"/projects/{pid}/submit").text
        assert '<datalist id="stains">' in form and '<option value="H&amp;E">' in form
        # The page's form is checked the same way: a misspelt stain gets the nearest known value.
        token = re.search(r'name="csrf_token" value="([^"]+)"', form)
        assert token is not None
        page_form = {"csrf_token": token[1], "question": "Q?", "answer": "A", "stain": "Masson Trichome"}
        page_form |= {"modality": "light microscopy", "domain": "pathology", "license": "MIT"}
        r = ann.post(
            f"/projects/{pid}/submit", data=page_form, files={"image": ("a.png", _png(0), "image/png")}
        )
        assert r.status_code == 400 and "stain &#39;Masson Trichome&#39; is unknown" in r.text, r.text[-800:]
        assert "nearest known values are stain &#39;Masson Trichrome&#39;" in r.text
        # A subdomain given as the domain: refused with the taxonomy's own advice; nothing stored.
        r = _submit(ann, h, pid, 0, domain="cell biology")
        assert r.status_code == 400 and "subdomain of 'biology'" in r.text, r.text
        r = _submit(ann, h, pid, 0, license="my own terms")
        assert r.status_code == 400 and "SPDX" in r.text, r.text
        assert ann.get(f"/api/projects/{pid}/submissions").json() == []
        ids = []
        for k in range(len(QUESTIONS)):
            r = _submit(ann, h, pid, k)
            assert r.status_code == 200, r.text
            ids.append(int(r.json()["id"].removeprefix("submission-")))
        out, replies = tmp_path / "cognition", tmp_path / "replies.jsonl"
        _replies(replies, ids)
        argv = ["review", "submissions", "--db", db, "--store", str(store), "--project", "demo"]
        assert main([*argv, "--out", str(out), "--model", f"replay:{replies}"]) == 0
        meta = (out / "metadata.csv").read_text().splitlines()
        assert meta[0] == "image,modality,domain,stain,license"
        assert meta[1] == f"submission-{ids[0]}.png,light microscopy,pathology,IHC(HDab),CC-BY-4.0"
        assert sorted(p.name for p in (out / "images").iterdir()) == sorted(
            f"submission-{i}.png" for i in ids
        )

        assert main(["build", "run", str(out / "build.yaml")]) == 0
        items = [json.loads(x) for x in (out / "build/export/local/data.jsonl").read_text().splitlines()]
        assert len(items) == len(QUESTIONS) and {i["task"] for i in items} == {"open_to_mcq"}
        for item in items:
            assert len(item["choices"]) == 6 and item["choices"].count(NOTA) == 1
            assert item["choices"][-1] == NOTA  # "None of the above" stays last

        # Back to the review app: the built items, checked by one expert each.
        monkeypatch.setenv("SCOPEBENCH_REVIEW_PASSWORD", secrets.token_urlsafe(24))
        init = ["review", "init", "--db", db, "--store", str(store), "--name", "cog", "--bench", "local"]
        assert main([*init, "--data", str(out / "build/export/local"), "--rubric", "pathmmu"]) == 0
        assert main(["review", "user", "--db", db, "carl", "--role", "reviewer"]) == 0
        for cmd in (["member", "carl", "--group", "a"], ["member", "ann", "--group", "b"], ["assign"]):
            assert (
                main(["review", cmd[0], "--db", db, "--store", str(store), "--project", "cog", *cmd[1:]]) == 0
            )
        # The build balanced all seven (two answers share a letter); the experts remove an item
        # whose letter is its own, so the accepted six, as built, have a letter twice and one never.
        built = Counter("ABCDEF"[i["answer"]] for i in items)
        assert sorted(built.values()) == [1, 1, 1, 1, 1, 2]
        removed = next(i["question"] for i in items if built["ABCDEF"[i["answer"]]] == 1 and i["answer"] < 5)
        _check_items(server.url, os.environ["SCOPEBENCH_REVIEW_PASSWORD"], removed)

    export = tmp_path / "accepted"
    exp = ["review", "export", "--db", db, "--store", str(store), "--project", "cog", "--no-hf"]
    assert main([*exp, "--out", str(export), "--balance", "--seed", "3"]) == 0
    summary = json.loads((export / "summary.json").read_text())
    accepted = [json.loads(x) for x in (export / "data.jsonl").read_text().splitlines()]
    assert summary["accepted"] == len(accepted) == len(QUESTIONS) - 1
    # Five movable items over A–E, the one whose answer is "None of the above" at F: one each.
    letters = Counter("ABCDEF"[row["answer"]] for row in accepted)
    assert letters == Counter("ABCDEF"), letters
    assert summary["balance"]["seed"] == 3
    for row in accepted:
        assert row["choices"][-1] == NOTA
        if "option_order" in row:  # the move is recorded and undoes to the built item
            assert sorted(row["option_order"]) == list(range(6)) and row["balance_seed"] == 3
        else:
            assert row["kept_order_because"] == "answer_is_nota"


def _check_items(url: str, carl_password: str, removed: str) -> None:
    """Both experts answer every item; they rate the item asking ``removed`` as answerable without
    the image (PathMMU's first criterion), which removes it."""
    for name, password in (("carl", carl_password), ("ann", PASSWORD)):
        client, h = _login(url, name, password)
        projects = client.get("/api/projects").json()
        pid = next(p["id"] for p in projects if p["name"] == "cog")
        for entry in client.get(f"/api/projects/{pid}/queue").json():
            view = client.get(f"/api/assignments/{entry['assignment_id']}").json()
            r = client.post(
                f"/api/assignments/{entry['assignment_id']}/answer",
                json={"choice": 0, "confidence": 4},
                headers=h,
            )
            assert r.status_code == 200, r.text
            bad = view["question"] == removed
            scores = {
                "answerable_without_image": "yes" if bad else "no",
                "answer_inferable": "yes",
                "key_wrong": "no",
                "atypical": "no",
            }
            r = client.post(
                f"/api/assignments/{entry['assignment_id']}/rating", json={"scores": scores}, headers=h
            )
            assert r.status_code == 200, r.text


def test_metadata_is_matched_and_normalised_like_ingest() -> None:
    """Catches: values stored as typed instead of the taxonomy's spelling, a licence not in SPDX
    form, and a missing required value accepted."""
    from scopebench.review.cognition import check_metadata
    from scopebench.review.errors import Invalid

    got = check_metadata(" Light-Microscopy ", "PATHOLOGY", "IHC (DAB)", "Apache 2.0 OR MIT")
    assert got == {
        "modality": "light microscopy",
        "domain": "pathology",
        "stain": "IHC(DAB)",
        "license": "Apache-2.0 OR MIT",
    }
    assert check_metadata("light microscopy", "biology", "", "LicenseRef-lab-terms")["stain"] is None
    with pytest.raises(Invalid, match="needs the image's modality"):
        check_metadata("", "biology", "", "MIT")
    with pytest.raises(Invalid, match="needs the image's licence"):
        check_metadata("light microscopy", "biology", "", " ")


def test_balance_rows_spreads_answers_and_keeps_position_naming_items() -> None:
    """Catches: answers left where the model put them, "None of the above" moved out of F, an item
    whose options name positions reshuffled, and a question's "option A" not following its option."""
    from scopebench.review.cognition import balance_rows

    options = ["alpha", "beta", "gamma", "delta", "epsilon", NOTA]
    rows: list[dict[str, object]] = [
        {
            "id": f"q{k}",
            "task": "open_to_mcq",
            "question": "Is option A right?",
            "choices": list(options),
            "answer": 0,
        }
        for k in range(10)
    ]
    rows.append({"id": "fixed", "task": "open_to_mcq", "question": "Q", "answer": 1,
                 "choices": ["Both A and C", "beta", "gamma", "delta", "epsilon", NOTA]})  # fmt: skip
    stats = balance_rows(rows, seed=5)  # type: ignore[arg-type]
    letters = Counter(int(r["answer"]) for r in rows[:10])  # type: ignore[call-overload]
    # Eleven answers over A–E (F is "None of the above"): 3, 2, 2, 2, 2 with the fixed item's B counted
    # first, so the movable items give B one answer.
    assert sorted(letters.values()) == [1, 2, 2, 2, 3] and letters[1] == 1
    assert rows[10]["kept_order_because"] == "names_positions" and rows[10]["answer"] == 1
    for row in rows[:10]:
        choices = row["choices"]
        assert isinstance(choices, list) and choices[-1] == NOTA and choices[row["answer"]] == "alpha"  # type: ignore[index]
        assert row["question"] == f"Is option {'ABCDEF'[row['answer']]} right?"  # type: ignore[index]
    task = stats["answer_positions"]["open_to_mcq"]
    assert stats["seed"] == 5 and task["n"] == 11
    assert task["counts"][:5] == [letters[k] + (k == 1) for k in range(5)] and task["counts"][5] == 0

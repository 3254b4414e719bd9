"""Shared builders of the review tests: a tiny local benchmark and a project with two reviewers."""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path
from typing import Any

from PIL import Image

# Item keys (as loaded by the local loader) and their answer keys.
KEYS = {"local/q1": 0, "local/q2": 1, "local/q3": 2, "local/q4": 0}
HTML_QUESTION = '<script>alert("x")</script> Which <b>stain</b> is shown?'
PASSWORD = "correct horse battery"


def write_bench(folder: Path) -> Path:
    """Four MCQ items, two PNG images (q1 and q3 share one), q1's question carrying HTML."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "images").mkdir(exist_ok=True)
    Image.new("RGB", (8, 6), (200, 30, 30)).save(folder / "images" / "red.png")
    Image.new("RGB", (5, 7), (30, 30, 200)).save(folder / "images" / "blue.png")
    rows = [
        {
            "id": "q1",
            "question": HTML_QUESTION,
            "choices": ["H&E", "PAS", "Giemsa"],
            "answer": 0,
            "image": "images/red.png",
            "task": "stain",
            "modality": "brightfield",
        },
        {
            "id": "q2",
            "question": "Which organelle is green?",
            "choices": ["Nucleus", "Mitochondria", "Golgi"],
            "answer": 1,
            "image": "images/blue.png",
            "task": "organelle",
        },
        {
            "id": "q3",
            "question": "What magnification?",
            "choices": ["10x", "20x", "40x"],
            "answer": 2,
            "image": "images/red.png",
            "task": "optics",
            "context": "A field of view of 200 µm.",
        },
        {
            "id": "q4",
            "question": "Which tissue?",
            "choices": ["Liver", "Kidney", "Lung", "Skin"],
            "answer": 0,
            "task": "stain",
        },
    ]
    path = folder / "data.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def build_project(
    db_url: str,
    store: Path,
    data: Path,
    *,
    rubric: str = "spur-hle",
    threshold: float | None = None,
    seniors_review: bool = False,
) -> dict[str, Any]:
    """Users admin/senior/ann/bob/eve (ann in group a, bob in b, the senior in seniors; eve in no
    project), the project, assignments (to ann and bob; the senior too with ``seniors_review``)."""
    from scopebench.review.accounts import create_user
    from scopebench.review.db import open_database
    from scopebench.review.projects import add_member, assign, create_project
    from scopebench.review.rubrics import load_rubric
    from scopebench.review.store import ImageStore

    sessions = open_database(db_url)
    with sessions() as db, db.begin():
        users = {
            name: create_user(db, name, PASSWORD, role)
            for name, role in (
                ("admin", "admin"),
                ("senior", "senior"),
                ("ann", "reviewer"),
                ("bob", "reviewer"),
                ("eve", "reviewer"),
            )
        }
        project, problems = create_project(
            db,
            ImageStore(store),
            name="demo",
            benchmark="local",
            data=str(data),
            rubric=load_rubric(rubric),
            n_reviewers=2,
            seed=7,
            alpha_threshold=threshold,
            seniors_review=seniors_review,
        )
        add_member(db, project, users["ann"], "a")
        add_member(db, project, users["bob"], "b")
        add_member(db, project, users["senior"], "seniors")
        assign(db, project)
        ids = {n: u.id for n, u in users.items()}
        pid = project.id
    return {"sessions": sessions, "users": ids, "project_id": pid, "problems": problems}


# The scripted review: (answer, scores, verdicts) per reviewer and item.
GOOD = {"scientific_validity": 4, "task_alignment": 5, "visual_reasoning_necessity": 4}
VALID = {"problem": "valid", "answer": "valid", "rationale": "valid"}
SCRIPT: dict[str, dict[str, tuple[int, dict[str, int], dict[str, str]]]] = {
    # ann: 3 of 4 correct; bob: 2 of 4 correct.
    "ann": {
        "local/q1": (0, GOOD, VALID),
        "local/q2": (1, GOOD | {"scientific_validity": 1}, VALID),
        "local/q3": (0, GOOD, VALID),
        "local/q4": (0, GOOD, VALID | {"answer": "uncertain"}),
    },
    "bob": {
        "local/q1": (0, GOOD, VALID),
        "local/q2": (2, GOOD | {"task_alignment": 2}, VALID),
        "local/q3": (2, GOOD, VALID | {"problem": "invalid"}),
        "local/q4": (1, GOOD, VALID),
    },
}


def echo_backend_class() -> type:
    """A generative backend for tests: answers with the image size and the prompt it got."""
    from scopebench.models.base import Backend, Response

    class EchoBackend(Backend):
        mode = "generate"
        model_args = None

        def predict(self, items: Any) -> list[Response]:
            return [
                Response(item_id=it.id, status="error", error="echo answers conversations only")
                for it in items
            ]

        def chat(
            self, conversations: Any, item_ids: Any, *, max_new_tokens: int | None = None
        ) -> list[Response]:
            out = []
            for conv, iid in zip(conversations, item_ids, strict=True):
                img = conv[-1].images[0].load()
                out.append(Response(item_id=iid, text=f"{img.width}x{img.height}: {conv[-1].text}"))
            return out

    return EchoBackend


EchoBackend = echo_backend_class()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """A real uvicorn server on 127.0.0.1 in a background thread."""

    def __init__(self, app: Any) -> None:
        import uvicorn

        # The socket is bound here and handed to uvicorn, so no other process (a parallel test
        # worker) can take the port between choosing it and serving on it.
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.port = int(self.sock.getsockname()[1])
        self.url = f"http://127.0.0.1:{self.port}"
        # As `review serve` runs it: no proxy headers but those the app itself trusts.
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", proxy_headers=False))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def __enter__(self) -> Server:
        self.thread.start()
        # Wait for the event (uvicorn started, or its thread ended on an error); the cap only stops
        # a hang and is far above any start on a loaded machine.
        cap = time.monotonic() + 600
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > cap:
                raise RuntimeError("uvicorn did not start (see its log above)")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join()
        self.sock.close()

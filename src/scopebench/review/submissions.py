"""Expert submissions (μ-Bench's cognition web app): an image, context, an open question, an answer.

Optionally a model answers the question in real time through any scopebench backend that can hold a
conversation (``hf:``, ``vllm:``, ``openai:``…), and the expert gives feedback on its answer. The
submissions are exported as JSONL for ``scopebench build``'s MCQ conversion (docs/review.md).
"""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from scopebench.errors import ScopebenchError
from scopebench.items import ImageRef
from scopebench.models import ModelOptions, load_model
from scopebench.models.base import ChatMessage
from scopebench.review.accounts import log_event, not_found, require_project
from scopebench.review.cognition import image_name
from scopebench.review.db import ImageRow, Project, Submission, User
from scopebench.review.errors import Forbidden, Invalid
from scopebench.review.store import ImageStore

__all__ = [
    "ModelAnswerer",
    "check_quota",
    "create_submission",
    "export_submissions",
    "give_feedback",
    "record_model_answer",
    "submission_dict",
]

SUBMISSION_FORMAT = "scopebench-review-submission/1"


class ModelAnswerer:
    """Answers open questions with one backend, loaded on first use and shared by all requests.

    Args:
        spec: A model spec (``openai:gpt-4o``, ``hf:…``); ``None`` disables model answers.
        base_url: Server for ``openai:`` specs.
    """

    def __init__(self, spec: str | None, base_url: str | None = None) -> None:
        self.spec = spec
        self.base_url = base_url
        self._backend: Any = None
        self._lock = threading.Lock()

    def answer(
        self, question: str, context: str, image_path: Path, item_id: str
    ) -> tuple[str | None, str | None]:
        """``(text, None)`` or ``(None, error)``; a failing model never loses the submission."""
        if self.spec is None:
            return None, None

        prompt = (f"{context}\n\n" if context else "") + question
        try:
            with self._lock:  # one request at a time through one local model
                if self._backend is None:
                    self._backend = load_model(self.spec, ModelOptions(base_url=self.base_url))
                msg = ChatMessage(role="user", text=prompt, images=(ImageRef(key=item_id, path=image_path),))
                resp = self._backend.chat([[msg]], [item_id])[0]
        except ScopebenchError as exc:
            return None, str(exc)
        if resp.status != "ok" or resp.text is None:
            return None, resp.error or resp.status
        return resp.text, None

    def close(self) -> None:
        """Release the backend."""
        if self._backend is not None:
            self._backend.close()


def check_quota(
    db: Session, user: User, project: Project, new_bytes: int, max_count: int, max_bytes: int
) -> None:
    """Refuse an upload that takes the user's uploads in ``project`` past ``max_count`` or ``max_bytes``.

    Raises:
        Forbidden: Over either limit, with what is stored and the limit.
    """
    count, stored = db.execute(
        select(func.count(Submission.id), func.coalesce(func.sum(ImageRow.nbytes), 0))
        .join(
            ImageRow,
            (ImageRow.project_id == Submission.project_id) & (ImageRow.sha256 == Submission.image_sha),
        )
        .where(Submission.project_id == project.id, Submission.user_id == user.id)
    ).one()
    if count + 1 > max_count or stored + new_bytes > max_bytes:
        raise Forbidden(
            f"your uploads in this project are at their quota: {count} of {max_count} uploads, "
            f"{stored:,} + {new_bytes:,} of {max_bytes:,} bytes; ask an admin to raise "
            "--max-uploads-per-user / --max-upload-total-mb"
        )


def create_submission(
    db: Session,
    store: ImageStore,
    user: User,
    project: Project,
    *,
    image: bytes,
    filename: str,
    question: str,
    expert_answer: str,
    context: str = "",
    metadata: dict[str, str | None] | None = None,
    answerer: ModelAnswerer | None = None,
) -> Submission:
    """Store an expert's upload (checked: size, decodable, pixel limit) and the model's answer.

    ``metadata`` is the image's modality, domain, stain and licence as
    :func:`scopebench.review.cognition.check_metadata` returns them.

    Raises:
        Invalid: For an empty question/answer or a file that is not an image.
        TooLarge: For an image over the limits.
    """
    if not question.strip() or not expert_answer.strip():
        raise Invalid("a submission needs a question and your own answer")
    meta = metadata or {}
    info = store.put(image, f"upload {filename!r}")
    if (
        db.scalar(select(ImageRow).where(ImageRow.project_id == project.id, ImageRow.sha256 == info.sha256))
        is None
    ):
        db.add(
            ImageRow(
                project_id=project.id,
                sha256=info.sha256,
                mime=info.mime,
                width=info.width,
                height=info.height,
                nbytes=info.nbytes,
            )
        )
    sub = Submission(
        project_id=project.id,
        user_id=user.id,
        image_sha=info.sha256,
        context=context,
        question=question,
        expert_answer=expert_answer,
        modality=meta.get("modality"),
        domain=meta.get("domain"),
        stain=meta.get("stain"),
        license=meta.get("license"),
    )
    db.add(sub)
    db.flush()
    if answerer is not None and answerer.spec is not None:
        sub.model_spec = answerer.spec
        sub.model_answer, sub.model_error = answerer.answer(
            question, context, store.path(info.sha256), f"submission-{sub.id}"
        )
    log_event(
        db,
        project.id,
        "submitted",
        {"submission": sub.id, "image": info.sha256, "model": sub.model_spec, "model_error": sub.model_error},
        user=user,
    )
    return sub


def record_model_answer(
    db: Session, submission_id: int, spec: str, text: str | None, error: str | None
) -> None:
    """Store the model's answer (or why it failed) on a submission."""
    sub = db.get(Submission, submission_id)
    assert sub is not None
    sub.model_spec, sub.model_answer, sub.model_error = spec, text, error
    log_event(
        db, sub.project_id, "model_answered", {"submission": sub.id, "model": spec, "error": error}, user=None
    )


def _own(db: Session, user: User, submission_id: int) -> tuple[Submission, Project]:
    sub = db.get(Submission, submission_id)
    if sub is None:
        raise not_found(f"submission {submission_id}")
    project = require_project(db, user, sub.project_id)
    if sub.user_id != user.id and user.role != "admin":
        raise not_found(f"submission {submission_id}")
    return sub, project


def give_feedback(db: Session, user: User, submission_id: int, verdict: str, feedback: str) -> Submission:
    """The expert's judgement of the model's answer (correct / partly / wrong) and comments.

    Raises:
        Invalid: For another verdict.
        Forbidden: When the submission had no model answer.
    """
    sub, project = _own(db, user, submission_id)
    if verdict not in ("correct", "partly", "wrong"):
        raise Invalid(f"the model's answer is judged correct, partly or wrong (got {verdict!r})")
    if sub.model_answer is None:
        raise Forbidden("no model answered this submission; there is nothing to give feedback on")
    sub.feedback_correct, sub.feedback = verdict, feedback[:5000]
    log_event(db, project.id, "feedback", {"submission": sub.id, "verdict": verdict}, user=user)
    return sub


def submission_dict(sub: Submission, pseudonym: str, image: str | None = None) -> dict[str, Any]:
    """The JSON form of one submission (one line of the export; ``image``: its exported file)."""
    return {
        "format": SUBMISSION_FORMAT,
        "id": f"submission-{sub.id}",
        "image": image,
        "image_sha256": sub.image_sha,
        "modality": sub.modality,
        "domain": sub.domain,
        "stain": sub.stain,
        "license": sub.license,
        "context": sub.context,
        "question": sub.question,
        "expert_answer": sub.expert_answer,
        "expert": pseudonym,
        "model": sub.model_spec,
        "model_answer": sub.model_answer,
        "model_error": sub.model_error,
        "feedback_verdict": sub.feedback_correct,
        "feedback": sub.feedback,
        "created_at": sub.created_at.isoformat(),
    }


def export_submissions(db: Session, store: ImageStore, project: Project, out_dir: Path) -> Path:
    """Write ``submissions.jsonl`` and the images it names into ``out_dir``.

    Each image is ``images/submission-<id>.<ext>``, the extension of its format (the store keeps
    files by hash alone).
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "images").mkdir(exist_ok=True)
    path = out_dir / "submissions.jsonl"
    rows = db.execute(
        select(Submission, User, ImageRow.mime)
        .join(User, User.id == Submission.user_id)
        .join(
            ImageRow,
            (ImageRow.project_id == Submission.project_id) & (ImageRow.sha256 == Submission.image_sha),
        )
        .where(Submission.project_id == project.id)
        .order_by(Submission.id)
    ).all()
    with open(path, "w", encoding="utf-8") as fh:
        for sub, u, mime in rows:
            name = f"images/{image_name(sub, mime)}"
            if not (out_dir / name).exists():
                shutil.copyfile(store.path(sub.image_sha), out_dir / name)
            fh.write(json.dumps(submission_dict(sub, u.pseudonym, name), ensure_ascii=False) + "\n")
    return path

"""Label Studio interoperability: tasks + a labelling config out, annotations back in.

Out: ``tasks.json`` (one task per item: ``data.image``, ``data.question``, ``data.options``,
``data.scopebench_item``), ``config.xml`` (``Choices`` named ``answer`` with one choice per option
letter, a 1–5 ``Rating`` named ``confidence``, a ``Rating`` per scale criterion, ``Choices`` per
choice criterion and verdict) and ``images/``. In: Label Studio's JSON export of those tasks
(``[{"data": …, "annotations": [{"completed_by": …, "lead_time": …, "result": [{"from_name": …,
"type": "choices"|"rating", "value": {"choices": [...]}|{"rating": n}}]}]}]``), stored as answers
and ratings (source ``labelstudio``) of the matching users.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any
from xml.sax.saxutils import quoteattr

from sqlalchemy import select
from sqlalchemy.orm import Session

from scopebench.items import LETTERS
from scopebench.review import workflow
from scopebench.review.accounts import log_event
from scopebench.review.db import Assignment, ItemRow, Member, Project, User
from scopebench.review.errors import Invalid
from scopebench.review.rubrics import VERDICT_VALUES, Rubric
from scopebench.review.store import ImageStore

__all__ = ["export_labelstudio", "import_labelstudio", "labelling_config"]


def labelling_config(rubric: Rubric, n_options: int) -> str:
    """The Label Studio labelling config (XML) for a rubric and up to ``n_options`` options."""
    lines = [
        "<View>",
        '  <Image name="image" value="$image"/>',
        '  <Text name="question" value="$question"/>',
        '  <Text name="options" value="$options"/>',
        '  <Choices name="answer" toName="question" choice="single" required="true" showInline="true">',
    ]
    lines += [f'    <Choice value="{LETTERS[k]}"/>' for k in range(n_options)]
    lines += ["  </Choices>", '  <Rating name="confidence" toName="question" maxRating="5" required="true"/>']
    for c in rubric.criteria:
        if c.type == "scale":
            lines.append(f'  <Rating name="{c.key}" toName="question" maxRating="{c.max}" required="true"/>')
        else:
            lines.append(f"  <Header value={quoteattr(c.label)}/>")
            lines.append(f'  <Choices name="{c.key}" toName="question" choice="single" required="true">')
            lines += [f"    <Choice value={quoteattr(o)}/>" for o in c.options]
            lines.append("  </Choices>")
    for v in rubric.verdicts:
        lines.append(f'  <Header value="Is the {v} valid?"/>')
        lines.append(f'  <Choices name="verdict_{v}" toName="question" choice="single" required="true">')
        lines += [f'    <Choice value="{o}"/>' for o in VERDICT_VALUES]
        lines.append("  </Choices>")
    return "\n".join([*lines, "</View>", ""])


def export_labelstudio(
    db: Session, store: ImageStore, project: Project, out_dir: Path, *, image_url: str = "images/"
) -> tuple[Path, Path]:
    """Write ``tasks.json``, ``config.xml`` and ``images/`` for Label Studio.

    ``image_url`` prefixes each image file name in the tasks: point it at where the lab serves
    ``images/`` to Label Studio (e.g. its local-files URL).
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "images").mkdir(exist_ok=True)
    items = db.scalars(
        select(ItemRow).where(ItemRow.project_id == project.id).order_by(ItemRow.position)
    ).all()
    tasks = []
    for it in items:
        data: dict[str, Any] = {
            "scopebench_item": it.key,
            "question": it.question,
            "options": "\n".join(f"{LETTERS[k]}. {c}" for k, c in enumerate(it.choices)),
        }
        if it.image_shas:
            sha = it.image_shas[0]
            if not (out_dir / "images" / sha).exists():
                shutil.copyfile(store.path(sha), out_dir / "images" / sha)
            data["image"] = image_url + sha
        tasks.append({"data": data})
    rubric = Rubric.from_dict(project.rubric)
    tasks_path, cfg_path = out_dir / "tasks.json", out_dir / "config.xml"
    tasks_path.write_text(json.dumps(tasks, indent=2, ensure_ascii=False), encoding="utf-8")
    cfg_path.write_text(
        labelling_config(rubric, max((len(it.choices) for it in items), default=2)), encoding="utf-8"
    )
    return tasks_path, cfg_path


def _values(result: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for r in result:
        value = r.get("value", {})
        if r.get("type") == "choices" and value.get("choices"):
            out[str(r.get("from_name"))] = value["choices"][0]
        elif r.get("type") == "rating" and "rating" in value:
            out[str(r.get("from_name"))] = int(value["rating"])
    return out


def _annotator(db: Session, raw: Any, user_map: dict[str, str]) -> User:
    keys = [str(raw.get("email", "")), str(raw.get("id", ""))] if isinstance(raw, dict) else [str(raw)]
    for key in keys:
        name = user_map.get(key, key)
        user = db.scalar(select(User).where(User.username == name))
        if user is not None:
            return user
    raise Invalid(
        f"Label Studio annotator {raw!r} matches no user here; create the user, or map Label Studio "
        "ids/emails to usernames with --user-map ID=USERNAME"
    )


def import_labelstudio(
    db: Session, project: Project, path: Path, *, user_map: dict[str, str] | None = None
) -> int:
    """Store the annotations of a Label Studio JSON export as answers and ratings.

    Cancelled annotations are skipped (and counted in the event log). An annotator's assignment is
    created when missing; one that is already answered is refused (the first answer is final).

    Returns:
        The number of annotations imported.

    Raises:
        Invalid: For a file that is not a Label Studio JSON export of this project's tasks.
    """
    try:
        tasks = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise Invalid(f"cannot read the Label Studio export {path}: {exc}") from exc
    if not isinstance(tasks, list):
        raise Invalid(f"{path} is not a Label Studio JSON export (a list of tasks)")
    user_map = user_map or {}
    n, cancelled = 0, 0
    for task in tasks:
        key = (task.get("data") or {}).get("scopebench_item")
        item = db.scalar(select(ItemRow).where(ItemRow.project_id == project.id, ItemRow.key == key))
        if item is None:
            raise Invalid(
                f"task {task.get('id')} names item {key!r}, which is not in project {project.name!r}"
            )
        for ann in task.get("annotations", []):
            if ann.get("was_cancelled"):
                cancelled += 1
                continue
            user = _annotator(db, ann.get("completed_by"), user_map)
            _import_one(db, project, item, user, ann)
            n += 1
    log_event(
        db, project.id, "labelstudio_import", {"file": path.name, "annotations": n, "cancelled": cancelled}
    )
    return n


def _import_one(db: Session, project: Project, item: ItemRow, user: User, ann: dict[str, Any]) -> None:
    vals = _values(ann.get("result", []))
    if "answer" not in vals or "confidence" not in vals:
        raise Invalid(f"annotation {ann.get('id')} of {item.key} lacks the answer or the confidence")
    letter = str(vals.pop("answer"))
    if letter not in LETTERS[: len(item.choices)]:
        raise Invalid(
            f"annotation {ann.get('id')} answers {letter!r}; "
            f"{item.key} has options A–{LETTERS[len(item.choices) - 1]}"
        )
    if db.scalar(select(Member).where(Member.project_id == project.id, Member.user_id == user.id)) is None:
        db.add(Member(project_id=project.id, user_id=user.id, group="labelstudio"))
    a = db.scalar(select(Assignment).where(Assignment.item_id == item.id, Assignment.user_id == user.id))
    if a is None:
        a = Assignment(item_id=item.id, user_id=user.id, status="assigned")
        db.add(a)
        db.flush()
    workflow.answer(
        db,
        user,
        a.id,
        LETTERS.index(letter),
        vals.pop("confidence"),
        source="labelstudio",
        seconds=float(ann.get("lead_time") or 0.0),
    )
    verdicts = {k.removeprefix("verdict_"): v for k, v in vals.items() if k.startswith("verdict_")}
    scores = {k: v for k, v in vals.items() if not k.startswith("verdict_")}
    workflow.rate(db, user, a.id, scores, verdicts, "", source="labelstudio")

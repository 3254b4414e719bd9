"""The parse stage: a backend's :class:`~scopebench.models.Response` to a request becomes a record.

:func:`parse` reads the reply with the labels of the :class:`~scopebench.protocols.Request` it
answers (never with backend state): the choice parser for free text, the argmax for option scores,
the option index itself for direct choices, and the box parser for detection replies (boxes only:
GRIT is computed at metrics time, :mod:`scopebench.scoring.detection`). The parser is told why
generation stopped (a reply cut at the length limit is read only by an explicit verdict, and its
record says ``truncated``) and the prompt the reply answers (an echo of it is not read). Any
exception while reading one reply becomes that item's ``error`` record (:func:`guarded_parse`).
"""

from __future__ import annotations

import logging
import math
from typing import Literal

from scopebench.errors import ImageLoadError
from scopebench.items import Record
from scopebench.models import Response
from scopebench.models.base import finish_reason
from scopebench.models.sampling import majority
from scopebench.parsing import parse_choice
from scopebench.parsing.boxes import BOX_PARSER_VERSION, parse_boxes
from scopebench.protocols import Request, detection_class

__all__ = ["BoxFormat", "guarded_parse", "parse"]

log = logging.getLogger(__name__)

BoxFormat = Literal["auto", "qwen", "paligemma", "json"]


def parse(
    request: Request,
    response: Response,
    *,
    model: str,
    box_format: BoxFormat = "auto",
    box_repair: bool = False,
) -> Record:
    """Turn the response to ``request`` into the stored record (the run's prediction for its item).

    Args:
        request: The request the response answers (its item, option labels).
        response: The backend's response.
        model: The model spec recorded in the record.
        box_format: How the backend writes boxes (``auto`` tries every format).
        box_repair: Swap reversed corners and clip boxes as they are read (detection items only;
            see :attr:`~scopebench.engine.RunConfig.box_repair`).
    """
    item = request.item
    rec = response_record(request, response, model)
    if response.status != "ok":
        rec.status, rec.error = response.status, response.error or response.status
        return rec
    if item.kind == "detection":
        return _parse_detection(request, response, rec, box_format=box_format, box_repair=box_repair)
    choice: int | None = response.choice
    reason: str | None = None
    if choice is None and isinstance(response.extra.get("samples"), list):
        choice, reason = _read_samples(request, response, rec)
    elif choice is None and response.text is not None:
        parsed = parse_choice(
            response.text,
            item.choices,
            labels=request.labels,
            finish_reason=response.finish_reason,
            prompt=request.text,
        )
        choice, reason = parsed.index, parsed.reason
        rec.extra["parse_method"] = parsed.method
        rec.extra["answer_method"] = "parser"
    elif choice is None and response.scores is not None:
        scores = response.scores
        if len(scores) != len(item.choices) or any(math.isnan(s) for s in scores):
            rec.status, rec.error = "error", "backend returned malformed option scores"
            return rec
        # Ties go to the lowest index: deterministic, and the recorded scores show the tie.
        choice = max(range(len(scores)), key=lambda i: scores[i])
        rec.extra["answer_method"] = "scores"
    elif choice is not None:
        rec.extra["answer_method"] = "choice"
    if choice is None:
        rec.status, rec.error = "unparsed", reason or "no option chosen"
    elif not 0 <= choice < len(item.choices):
        rec.status, rec.error = "error", f"backend chose option {choice} of {len(item.choices)}"
    else:
        rec.choice, rec.correct = choice, choice == item.answer_index
    return rec


def _read_samples(request: Request, response: Response, rec: Record) -> tuple[int | None, str | None]:
    """Read every sample of a sampled reply (:mod:`scopebench.models.sampling`); the majority decides.

    Each sample in ``rec.extra["samples"]`` gains its ``choice`` and ``correct``; the record's reply
    becomes the first one that chose the majority option, so the reply shown is one that gave it.
    """
    item, chosen, reasons = request.item, [], []
    samples = [dict(s) for s in response.extra["samples"]]
    for sample in samples:
        parsed = (
            parse_choice(sample["text"], item.choices, labels=request.labels,
                         finish_reason=finish_reason(sample.get("finish_reason")), prompt=request.text)
            if isinstance(sample.get("text"), str) else None
        )  # fmt: skip
        sample["choice"] = parsed.index if parsed else None
        sample["correct"] = None if sample["choice"] is None else sample["choice"] == item.answer_index
        chosen.append(sample["choice"])
        reasons.append((parsed.reason if parsed else None) or sample.get("error"))
    choice = majority(chosen)
    rec.extra["samples"], rec.extra["answer_method"] = samples, "majority"
    if choice is not None:
        rec.response = next(s["text"] for s in samples if s["choice"] == choice)
    return choice, next((r for r in reasons if r), None)


def _parse_detection(
    request: Request, response: Response, rec: Record, *, box_format: BoxFormat, box_repair: bool
) -> Record:
    """Read the response's boxes into the record; scoring them is the metrics' job.

    The boxes are stored as the model wrote them (on its grid, converted to pixels) unless
    ``box_repair``; the record says which (``box_repair``) and how many boxes were reversed or
    outside the image (``boxes_irregular``), repaired, cut off by truncation or by the parser's
    cap. No score is stored: :func:`scopebench.scoring.detection.record_grit` computes GRIT from
    these boxes and the item's targets when metrics are computed (a reply with no box is an empty
    prediction there: 1 when the image has no target, else 0).
    """
    item = request.item
    if not item.images:
        rec.status, rec.error = "error", "detection item has no image to size its boxes"
        return rec
    try:
        width, height = item.images[0].size()
    except ImageLoadError as exc:
        rec.status, rec.error = "error", str(exc)
        return rec
    cls = detection_class(item)
    parsed = parse_boxes(response.text, width, height, fmt=box_format, label=cls, repair=box_repair)
    rec.extra.update(
        boxes=[[b.x1, b.y1, b.x2, b.y2] for b in parsed.boxes],
        box_format=parsed.format,
        boxes_dropped=parsed.dropped,
        boxes_truncated=parsed.truncated,
        boxes_irregular=parsed.irregular,
        boxes_repaired=parsed.repaired,
        box_repair=box_repair,
        class_name=cls,
        box_parser_version=BOX_PARSER_VERSION,
    )
    return rec


def guarded_parse(
    request: Request,
    response: Response,
    *,
    model: str,
    box_format: BoxFormat = "auto",
    box_repair: bool = False,
) -> Record:
    """:func:`parse`, but any exception becomes this item's ``error`` record.

    One reply the parsers cannot read (3,000 nested brackets once raised ``RecursionError``) must
    not stop the run, and since API replies are cached it would stop every resume on the same
    reply. The record keeps the reply and names the exception, so nothing is dropped silently.
    """
    try:
        return parse(request, response, model=model, box_format=box_format, box_repair=box_repair)
    except Exception as exc:  # any bug in reading one reply is that item's error
        error = f"reading the reply failed: {type(exc).__name__}: {str(exc)[:500]}"
        log.warning("item %s: %s", request.item_id, error)
        rec = response_record(request, response, model)
        rec.status, rec.error = "error", error
        return rec


def response_record(request: Request, response: Response, model: str) -> Record:
    """The ``ok`` record of ``response`` before any reading: the item's copies, reply and scores."""
    item = request.item
    return Record(
        item_id=item.id,
        model=model,
        status="ok",
        task=item.task,
        subset=item.subset,
        split=item.split,
        answer_index=item.answer_index,
        response=response.text,
        scores=response.scores,
        extra=dict(response.extra),
        sample=request.sample(),
        kind=item.kind,
        finish_reason=response.finish_reason,
        truncated=response.finish_reason == "length",
    )

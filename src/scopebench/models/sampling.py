"""Generation beyond greedy (``--gen-arg temperature=… top_p=… n=…``): its checks and its samples.

A generative backend that samples answers each request ``n`` times, sample ``i`` under the seed
``run seed + i``; the :class:`~scopebench.models.Response` then carries every sample in
``extra["samples"]`` (``{"seed", "text", "finish_reason"}`` each, ``error`` for a failed one) and
its ``text`` is the first sample's. The parse stage reads each sample and takes the majority
choice as the record's (:func:`majority`); the metrics add accuracy over samples.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from scopebench.errors import ModelSpecError
from scopebench.models.base import Response

__all__ = ["GEN_ARG_KEYS", "check_gen_args", "gather", "majority", "sample_count", "sample_seeds", "sampling"]

#: What ``--gen-arg`` takes: the sampling temperature, nucleus mass and samples per item.
GEN_ARG_KEYS = ("n", "temperature", "top_p")


def check_gen_args(raw: Mapping[str, Any]) -> dict[str, Any]:
    """``--gen-arg`` values checked and typed: temperature ≥ 0, 0 < top_p ≤ 1, n ≥ 1 (an integer).

    Raises:
        ModelSpecError: For an unknown key or a value of the wrong type or range (the message names
            the known keys and the allowed range).
    """
    unknown = sorted(set(raw) - set(GEN_ARG_KEYS))
    if unknown:
        raise ModelSpecError(f"unknown --gen-arg {', '.join(unknown)}; known: {', '.join(GEN_ARG_KEYS)}")
    out: dict[str, Any] = {}
    for key in GEN_ARG_KEYS:
        if key not in raw:
            continue
        value = raw[key]
        if key == "n":
            ok = isinstance(value, int) and not isinstance(value, bool) and value >= 1
            if not ok:
                raise ModelSpecError(f"--gen-arg n={value!r}: samples per item must be an integer ≥ 1")
            out[key] = value
            continue
        number = _number(key, value)
        if key == "temperature" and number < 0:
            raise ModelSpecError(f"--gen-arg temperature={value!r} must be ≥ 0 (0: greedy)")
        if key == "top_p" and not 0 < number <= 1:
            raise ModelSpecError(f"--gen-arg top_p={value!r} must be in (0, 1]")
        out[key] = number
    return out


def _number(key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ModelSpecError(f"--gen-arg {key}={value!r} must be a number")
    return float(value)


def sample_count(gen_args: Mapping[str, Any]) -> int:
    """Samples per item (``n``, default 1)."""
    return int(gen_args.get("n", 1))


def sampling(gen_args: Mapping[str, Any]) -> bool:
    """Whether the settings draw at random (temperature above 0, or several samples)."""
    return float(gen_args.get("temperature", 0.0)) > 0 or sample_count(gen_args) > 1


def sample_seeds(seed: int, gen_args: Mapping[str, Any]) -> list[int]:
    """The seed of each sample: ``seed + i`` for sample ``i`` (recorded with the sample)."""
    return [seed + i for i in range(sample_count(gen_args))]


def majority(choices: Sequence[int | None]) -> int | None:
    """The option most samples chose; a tie goes to the one chosen first; ``None`` if none parsed.

    Unparsed samples (``None``) do not vote: the record's choice is never guessed for them.
    """
    votes = Counter(c for c in choices if c is not None)
    if not votes:
        return None
    top = max(votes.values())
    return next(c for c in choices if c is not None and votes[c] == top)


def gather(samples: Sequence[Response], seeds: Sequence[int]) -> Response:
    """One item's sample responses as one :class:`Response` (every sample kept, in order).

    The first sample gives the response's text, status and extras; ``extra["samples"]`` lists each
    sample's seed, text and finish reason (and error). An item is an ``error`` only when every
    sample failed: the samples that came back still vote.
    """
    kept: list[dict[str, Any]] = []
    for resp, seed in zip(samples, seeds, strict=True):
        entry: dict[str, Any] = {"seed": seed, "text": resp.text, "finish_reason": resp.finish_reason}
        if resp.status != "ok":
            entry["error"] = resp.error or resp.status
        kept.append(entry)
    good = [r for r in samples if r.status == "ok"]
    head = good[0] if good else samples[0]
    extra = {**head.extra, "samples": kept}
    return dataclasses.replace(head, extra=extra)

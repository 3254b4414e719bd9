"""Raising (or removing) ``--limit`` on an existing run does only the new items; lowering is refused.

Catches a run that refuses every change of the limit (``limit: stored 4, now 8``), so that a trial
run could only be thrown away (``--fresh``) to be extended.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from scopebench.cli import main
from scopebench.engine import RunConfig, run_benchmark
from scopebench.errors import ConfigMismatchError
from scopebench.models import Response
from scopebench.models.baselines import RandomBackend
from scopebench.protocols import Request
from scopebench.transforms import transform_hook


class _CountingRandom(RandomBackend):
    """The ``random`` baseline, recording every item it is asked about (one call per batch)."""

    def __init__(self, config: RunConfig) -> None:
        super().__init__("random", config.model_options())
        self.asked: list[str] = []
        self.calls = 0

    def answer(self, requests: Sequence[Request]) -> list[Response]:
        self.calls += 1
        self.asked += [r.item.id for r in requests]
        return super().answer(requests)


def _cfg(limit: int | None) -> RunConfig:
    return RunConfig(benchmark="unit", data="10", model="random", limit=limit, batch_size=1)


def _stored(run: Path) -> dict[str, dict[str, object]]:
    rows = [json.loads(line) for line in (run / "records.jsonl").read_text().splitlines()]
    return {r["item_id"]: r for r in rows}


def test_raising_the_limit_answers_exactly_the_new_items(tmp_path: Path) -> None:
    run = tmp_path / "run"
    first = _CountingRandom(_cfg(4))
    res4 = run_benchmark(_cfg(4), run, backend=first)
    assert first.asked == [f"unit/{i:03d}" for i in range(4)] and res4.n_new == 4
    kept = _stored(run)

    second = _CountingRandom(_cfg(8))
    res8 = run_benchmark(_cfg(8), run, backend=second)
    # Exactly 4 new backend calls (batch size 1), for items 4-7 only.
    assert second.calls == 4 and second.asked == [f"unit/{i:03d}" for i in range(4, 8)]
    assert res8.n_new == 4 and res8.n_items == 8 and res8.metrics["overall"]["n"] == 8
    after = _stored(run)
    assert sorted(after) == [f"unit/{i:03d}" for i in range(8)]
    assert all(after[k] == v for k, v in kept.items())  # the first four records untouched
    assert json.loads((run / "run.json").read_text())["limit"] == 8

    # Removing the limit: the last two items, nothing else.
    third = _CountingRandom(_cfg(None))
    res_all = run_benchmark(_cfg(None), run, backend=third)
    assert third.asked == ["unit/008", "unit/009"] and res_all.metrics["overall"]["n"] == 10


def test_the_extended_run_equals_a_run_made_at_the_larger_limit(tmp_path: Path) -> None:
    run_benchmark(_cfg(4), tmp_path / "grown")
    grown = run_benchmark(_cfg(8), tmp_path / "grown")
    direct = run_benchmark(_cfg(8), tmp_path / "direct")
    assert _stored(tmp_path / "grown") == _stored(tmp_path / "direct")
    assert grown.metrics["overall"] == direct.metrics["overall"]


@pytest.mark.parametrize("lower", [3, None])
def test_lowering_the_limit_is_refused_with_the_way_out(tmp_path: Path, lower: int | None) -> None:
    run = tmp_path / "run"
    start = 8 if lower is not None else None
    run_benchmark(_cfg(start), run)
    # A stored run without a limit is "larger" than any limit.
    new = lower if lower is not None else 5
    with pytest.raises(ConfigMismatchError, match="never lowered") as exc:
        run_benchmark(_cfg(new), run)
    assert f"--limit {start if start is not None else 'none'}" in str(exc.value) and "--fresh" in str(
        exc.value
    )
    assert len(_stored(run)) == (8 if start is not None else 10)  # nothing was thrown away


def test_a_frequent_choice_run_is_redone_when_its_limit_changes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Frequent choice counts answer letters over the run's items: a larger run answers differently.

    On items 0-3 of ``unit`` the letters A-D are each right once (tie, seeded order); on items 0-7
    twice each — keeping the 4-item answers would mix two reference sets.
    """
    run = tmp_path / "run"
    run_benchmark(RunConfig(benchmark="unit", data="10", model="frequent", limit=4), run)
    with caplog.at_level("WARNING", logger="scopebench"):
        grown = run_benchmark(RunConfig(benchmark="unit", data="10", model="frequent", limit=8), run)
    assert "are discarded and the run is redone with --limit 8" in caplog.text
    assert grown.n_new == 8
    direct = run_benchmark(RunConfig(benchmark="unit", data="10", model="frequent", limit=8), tmp_path / "d")
    assert _stored(run) == _stored(tmp_path / "d") and grown.metrics["overall"] == direct.metrics["overall"]


def test_a_transformed_run_cannot_change_its_limit(tmp_path: Path) -> None:
    """A probe's item transform (here: questions swapped among the items) depends on the item set."""
    run = tmp_path / "run"
    hook = transform_hook("swap-questions", 0)
    run_benchmark(
        RunConfig(benchmark="unit", data="10", model="random", limit=4, transform="swap-questions"),
        run,
        item_hook=hook,
    )
    with pytest.raises(ConfigMismatchError, match="depends on the whole set of evaluated items"):
        run_benchmark(
            RunConfig(benchmark="unit", data="10", model="random", limit=8, transform="swap-questions"),
            run,
            item_hook=hook,
        )


def test_cli_run_with_a_raised_limit_reports_the_new_items(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["run", "--bench", "unit", "--data", "10", "--model", "random", "--out", str(tmp_path / "r")]
    assert main([*argv, "--limit", "4"]) == 0
    capsys.readouterr()
    assert main([*argv, "--limit", "8"]) == 0
    assert "8 items (4 new this time)" in " ".join(capsys.readouterr().out.split())
    assert main([*argv, "--limit", "2"]) == 2
    assert "never lowered" in " ".join(capsys.readouterr().err.split())

"""The Ray executor gives the same records as the local one (local Ray instance, 2 workers)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scopebench.config import EngineConfig
from scopebench.engine import RunConfig, run_benchmark
from scopebench.store import load_run

# Each test starts a local Ray instance: under pytest-xdist (make test: --dist loadgroup) they run
# one after another in one worker, never two Ray clusters at once on one machine.
pytestmark = pytest.mark.xdist_group("ray")


@pytest.mark.slow
def test_ray_executor_equals_local(tmp_path: Path) -> None:
    pytest.importorskip("ray", reason="ray is an optional extra (pip install 'scopebench[ray]')")
    pytest.importorskip("scopebench.benchmarks.local")
    data = tmp_path / "data.jsonl"
    with open(data, "w") as fh:
        for i in range(30):
            row = {"id": f"q{i}", "question": f"Q{i}?", "choices": ["x", "y", "z", "w"], "answer": i % 4}
            fh.write(json.dumps(row) + "\n")
    replay = tmp_path / "answers.jsonl"
    replay.write_text(
        "".join(json.dumps({"item_id": f"local/q{i}", "response": "ABCD?"[i % 5]}) + "\n" for i in range(28))
    )
    results = {}
    # A seeded baseline and parsed replies: the two kinds of answer a worker must reproduce.
    for model in ("random", f"replay:{replay}"):
        for executor in ("local", "ray"):
            cfg = RunConfig(
                benchmark="local",
                data=str(data),
                model=model,
                seed=3,
                batch_size=4,
                engine=EngineConfig(executor=executor, workers=2),
            )
            res = run_benchmark(cfg, tmp_path / f"{executor}-{model[:6]}")
            results[(model, executor)] = (
                [(r.item_id, r.status, r.choice) for r in load_run(res.run_dir).records],
                res.metrics["overall"],
            )
        assert results[(model, "local")] == results[(model, "ray")], model
    overall = results[(f"replay:{replay}", "ray")][1]
    assert (overall["missing_response"], overall["unparsed"]) == (2, 5)


def test_an_unreachable_cluster_address_fails_fast(monkeypatch: pytest.MonkeyPatch) -> None:
    """An address nothing listens at fails with our message after one bounded connection attempt
    (ray.init would retry for minutes); checked by the attempt's timeout, not by the clock."""
    import socket

    import scopebench.engine.executors as executors
    from scopebench.engine.executors import _check_reachable
    from scopebench.errors import ScopebenchError

    attempts: list[float | None] = []
    real = socket.create_connection

    def spy(address: tuple[str, int], timeout: float | None = None) -> socket.socket:
        attempts.append(timeout)
        return real(address, timeout=timeout)

    monkeypatch.setattr(executors.socket, "create_connection", spy)
    with socket.socket() as s:  # a port nothing listens on: bind, read it, close
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ScopebenchError, match=f"no Ray cluster answers at --ray-address 127.0.0.1:{port}"):
        _check_reachable(f"127.0.0.1:{port}")
    with pytest.raises(ScopebenchError, match="no Ray cluster answers"):
        _check_reachable(f"ray://127.0.0.1:{port}")
    assert len(attempts) == 2 and all(t is not None and 0 < t <= 5 for t in attempts)
    _check_reachable("auto")  # Ray's own lookups are left to Ray
    assert len(attempts) == 2


@pytest.mark.slow
def test_ray_init_keeps_the_clis_sigterm_handler() -> None:
    # ray.init replaces SIGTERM's handler with a bare sys.exit, which would skip the export and the
    # exit code 143 of a run stopped by a scheduler.
    pytest.importorskip("ray", reason="ray is an optional extra (pip install 'scopebench[ray]')")
    import signal

    import ray

    from scopebench.engine.executors import RayExecutor
    from scopebench.engine.runner import build_backend, load_items

    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        assert not ray.is_initialized()
        executor = RayExecutor(
            RunConfig(benchmark="demo", data="", model="random"),
            [],
            setup=(load_items, build_backend),
            num_workers=1,
        )
        try:
            assert signal.getsignal(signal.SIGTERM) is handler
        finally:
            executor.close()
    finally:
        signal.signal(signal.SIGTERM, previous)

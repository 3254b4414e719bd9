"""The execution engine: the run store, run directories and the runner."""

from scopebench.engine.rundir import RunData, load_run
from scopebench.engine.runner import RunConfig, RunResult, load_items, make_record, run_benchmark
from scopebench.engine.store import RunStore

__all__ = [
    "RunConfig",
    "RunData",
    "RunResult",
    "RunStore",
    "load_items",
    "load_run",
    "make_record",
    "run_benchmark",
]

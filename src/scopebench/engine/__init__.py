"""The execution engine: plan a run, answer its items with a backend, write records to the store.

Reading a run back is the store's business (:mod:`scopebench.store`).
"""

from scopebench.engine.runner import RunConfig, RunResult, load_items, make_record, run_benchmark

__all__ = ["RunConfig", "RunResult", "load_items", "make_record", "run_benchmark"]

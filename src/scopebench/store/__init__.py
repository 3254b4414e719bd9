"""The run store: records on disk, run directories, the run lock and salvage of damaged stores.

This layer sits below the engine and scoring: it knows records and items, never models or
benchmarks, so the report, comparisons and the review app can read a run without the engine.
"""

from scopebench.store.lock import RunLock, check_unlocked
from scopebench.store.rundir import RunData, load_run
from scopebench.store.runstore import RunStore

__all__ = ["RunData", "RunLock", "RunStore", "check_unlocked", "load_run"]

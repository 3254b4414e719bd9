"""`make mutation`: run mutmut over the number-producing modules and print the score per module.

Mutated (configuration in pyproject.toml, ``[tool.mutmut]``): ``scopebench/parsing/*``,
``scopebench/scoring/*`` and the engine's resume logic — all of
``store/runstore.py`` and the resume functions of ``engine/runner.py`` (:data:`RESUME_FUNCTIONS`;
mutmut mutates the whole file, this script runs and counts only those functions' mutants).

Usage (from the repository root, without PYTHONPATH: mutmut puts ``mutants/src`` first itself)::

    python bench/mutation.py                      # run every selected mutant, then the summary
    python bench/mutation.py --module scoring.compare --module store.runstore   # a subset
    python bench/mutation.py --summary            # only print the table of the last results

The score is ``(killed + timeout) / (killed + timeout + survived + no tests + suspicious)``, i.e. over
the mutants that are not in :data:`EQUIVALENT` (judged unable to change any result); ``killed/all``
is the same without leaving the equivalent ones out. A timeout counts as killed (the mutant made a
test hang: behaviour changed); a "no tests" mutant (code no selected test reaches) counts as a
survivor, since nothing would catch a bug there. Mutants not run yet are shown, not scored.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import yaml

#: Modules mutated and counted, as ``scopebench.<name>``.
MODULES: tuple[str, ...] = (
    "parsing._commits",
    "parsing._labels",
    "parsing.vocabulary",
    "parsing._text",
    "parsing._walk",
    "parsing.boxes",
    "parsing.choice",
    "parsing.judge",
    "scoring.accuracy",
    "scoring.aggregate",
    "scoring.baselines",
    "scoring.bootstrap",
    "scoring.calibration",
    "scoring.compare",
    "scoring.decoupling",
    "scoring.detection",
    "scoring.grit",
    "scoring.intervals",
    "scoring.metrics",
    "scoring.schema",
    "store.runstore",
    "engine.runner",
    "engine.parse",
)

#: The functions of engine/runner.py that decide what a re-run keeps, redoes or reuses.
#: (the lock and item loading are not among them: they decide whether a run starts, not what it reuses).
RESUME_FUNCTIONS: tuple[str, ...] = (
    "_check_config",
    "_discard",
    "run_benchmark",
    "_write_provenance",
    "_answer_and_store",
    "_write_metrics",
    "_execute",
    "_metrics_stamp",
    "_cached_metrics",
)

#: The data file of equivalent mutants (beside this script): module -> {mutmut name: why}.
EQUIVALENT_FILE = Path(__file__).with_name("equivalent_mutants.yaml")


def load_equivalents(path: Path = EQUIVALENT_FILE) -> dict[str, str]:
    """Surviving mutants judged unable to change any result: mutmut's name -> the reason.

    Names are mutmut's and shift when a function is edited, so :func:`stale_equivalents` lists the
    entries that no longer name a surviving mutant.
    """
    groups = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return {name: why for group in groups.values() for name, why in group.items()}


EQUIVALENT: dict[str, str] = load_equivalents()


# mutmut's own exit-code classes (mutmut/stats.py), folded into the four columns we report.
_STATUS = {
    "killed": "killed",
    "caught by type check": "killed",
    "timeout": "timeout",
    "survived": "survived",
    "no tests": "no tests",
    "suspicious": "suspicious",
    "segfault": "killed",
}


def _globs(module: str) -> list[str]:
    if module == "engine.runner":
        return [f"scopebench.engine.runner.x_{f}__mutmut_*" for f in RESUME_FUNCTIONS]
    return [f"scopebench.{module}.*"]


def _pending(modules: list[str], root: Path) -> list[str] | None:
    """Mutants of ``modules`` still to judge: no verdict yet, or surviving and not in EQUIVALENT.

    ``None`` when a module has no ``.meta`` file yet (nothing run: every mutant is pending). Read from
    the last run's ``.meta`` files, so after a source change run the module once without
    ``--pending`` (its changed functions' mutants are only listed once mutmut has regenerated them).
    """
    from mutmut.stats import status_by_exit_code

    names: list[str] = []
    for module in modules:
        meta = root / "mutants" / "src" / "scopebench" / (module.replace(".", "/") + ".py.meta")
        if not meta.is_file():
            return None
        codes = json.loads(meta.read_text(encoding="utf-8"))["exit_code_by_key"]
        for key, code in codes.items():
            status = "not checked" if code is None else _STATUS.get(status_by_exit_code[code], "not checked")
            if _counted(module, key) and _judged(key, status) in (
                "not checked",
                "survived",
                "no tests",
                "suspicious",
            ):
                names.append(key)
    return names


def _counted(module: str, key: str) -> bool:
    if module != "engine.runner":
        return True
    func = key.rsplit("__mutmut_", 1)[0].rsplit(".", 1)[-1]
    return func.removeprefix("x_") in RESUME_FUNCTIONS


def summarise(modules: list[str], root: Path) -> tuple[list[list[str]], Counter[str]]:
    """Table rows (module, mutants, one column per outcome, score) and the overall counts."""
    from mutmut.stats import status_by_exit_code

    rows: list[list[str]] = []
    overall: Counter[str] = Counter()
    for module in modules:
        meta = root / "mutants" / "src" / "scopebench" / (module.replace(".", "/") + ".py.meta")
        if not meta.is_file():
            rows.append([module, "not run", "", "", "", "", "", ""])
            continue
        codes = json.loads(meta.read_text(encoding="utf-8"))["exit_code_by_key"]
        counts: Counter[str] = Counter(
            _judged(key, _STATUS.get(status_by_exit_code[code], "not checked"))
            for key, code in codes.items()
            if _counted(module, key)
        )
        overall.update(counts)
        rows.append([module, *_cells(counts)])
    return rows, overall


def stale_equivalents(modules: list[str], root: Path) -> list[tuple[str, str]]:
    """Entries of :data:`EQUIVALENT` in ``modules`` that no longer name a surviving mutant.

    mutmut names a mutant by its function and a running number, so a change to a function renumbers
    its mutants: an entry judged on the old code may then name a different mutant, which the
    score would silently count as equivalent. Each entry that names a killed mutant, or none, is
    returned with what it names now (``"killed"`` or ``"no such mutant"``). An unrun mutant is not
    conclusive (a module not run in this ``mutants/`` yet): the next run tells.
    """
    from mutmut.stats import status_by_exit_code

    stale: list[tuple[str, str]] = []
    for module in modules:
        meta = root / "mutants" / "src" / "scopebench" / (module.replace(".", "/") + ".py.meta")
        if not meta.is_file():
            continue
        codes = json.loads(meta.read_text(encoding="utf-8"))["exit_code_by_key"]
        prefix = f"scopebench.{module}.x"
        for key in EQUIVALENT:
            if not key.startswith(prefix) or not _counted(module, key):
                continue
            if key not in codes:
                stale.append((key, "no such mutant"))
                continue
            code = codes[key]
            status = "not checked" if code is None else _STATUS.get(status_by_exit_code[code], "not checked")
            if status == "killed":
                stale.append((key, status))
    return stale


def _judged(key: str, status: str) -> str:
    # Only a mutant no test kills can be equivalent; a killed one listed there is simply killed. A
    # listed one that timed out did so under load (it cannot change behaviour), so it is equivalent too.
    return "equivalent" if key in EQUIVALENT and status in ("survived", "no tests", "timeout") else status


def _cells(c: Counter[str]) -> list[str]:
    killed = c["killed"] + c["timeout"]
    judged = killed + c["survived"] + c["no tests"] + c["suspicious"]
    score = f"{100 * killed / judged:.1f}%" if judged else "n/a"
    raw = f"{100 * killed / (judged + c['equivalent']):.1f}%" if judged + c["equivalent"] else "n/a"
    total = sum(c.values())
    cols = ["killed", "survived", "no tests", "timeout", "suspicious", "equivalent"]
    unchecked = f" ({c['not checked']} not run)" if c["not checked"] else ""
    return [f"{total}{unchecked}", *(str(c[k]) for k in cols), raw, score]


def _print_table(rows: list[list[str]], overall: Counter[str]) -> None:
    head = [
        "module", "mutants", "killed", "survived", "no tests", "timeout", "suspicious", "equivalent",
        "killed/all", "score",
    ]  # fmt: skip
    rows = [*rows, ["overall", *_cells(overall)]]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for row in rows:
        print("| " + " | ".join(row) + " |")


def main(argv: list[str] | None = None) -> int:
    """Run mutmut on the selected modules (unless ``--summary``) and print the score table."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--module", action="append", choices=MODULES, help="only this module (repeatable)")
    ap.add_argument("--summary", action="store_true", help="only print the last results")
    ap.add_argument("--equivalents", action="store_true", help="print the equivalent mutants' table")
    ap.add_argument(
        "--pending",
        action="store_true",
        help="run only mutants without a verdict or surviving (mutmut re-runs every mutant it is named)",
    )
    ap.add_argument("--mutmut", default=str(Path(sys.executable).with_name("mutmut")), help="mutmut binary")
    ap.add_argument("--max-children", type=int, default=2, help="parallel mutants (default 2)")
    args = ap.parse_args(argv)
    root = Path(__file__).resolve().parent.parent
    modules = list(args.module or MODULES)
    if args.equivalents:
        print("| mutant | why it cannot change a result |\n|---|---|")
        for name, why in EQUIVALENT.items():
            print(f"| `{name.removeprefix('scopebench.')}` | {why} |")
        return 0
    if not args.summary:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # tests must import mutants/src
        pending = _pending(modules, root) if args.pending else None
        if pending == []:
            print("no mutant left to judge in these modules")
        globs = [g for m in modules for g in _globs(m)] if pending is None else pending
        cmd = ["nice", args.mutmut, "run", "--max-children", str(args.max_children), *globs]
        start = time.perf_counter()
        proc = subprocess.run(cmd, cwd=root, env=env, check=False) if globs else None
        rc = 0 if proc is None else proc.returncode
        print(f"\nmutmut run: exit {rc}, {time.perf_counter() - start:.0f} s wall")
        if rc != 0:
            return rc
    rows, overall = summarise(modules, root)
    _print_table(rows, overall)
    print("\nSurvivors: `mutmut results`; one mutant's diff: `mutmut show NAME`.")
    stale = stale_equivalents(modules, root)
    if stale:
        # A function changed since these were judged: its mutants were renumbered (see above).
        print(f"\n{len(stale)} EQUIVALENT entries no longer name a surviving mutant; re-judge them:")
        for key, now in stale:
            print(f"  {key}: {now}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

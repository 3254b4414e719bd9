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

#: Modules mutated and counted, as ``scopebench.<name>``.
MODULES: tuple[str, ...] = (
    "parsing._labels",
    "parsing._text",
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
    "scoring.grit",
    "scoring.intervals",
    "scoring.metrics",
    "store.runstore",
    "engine.runner",
)

#: The functions of engine/runner.py that decide what a re-run keeps, redoes or reuses.
RESUME_FUNCTIONS: tuple[str, ...] = (
    "_check_config",
    "run_benchmark",
    "_execute",
    "_metrics_stamp",
    "_cached_metrics",
)

#: Surviving mutants that cannot change any result (judged by reading each diff; bench/RESULTS.md
#: gives the same list). Names are mutmut's: valid for the commit in RESULTS.md, they shift when a
#: function is edited, so re-judge survivors after a change rather than trusting an old name.
_NAN = 'float("NAN") is the same NaN as float("nan")'
_SQL = "SQLite keywords and ASCII identifiers are case-insensitive: the same statement"
_CODEC = 'Python codec names are case-insensitive: "UTF-8" is "utf-8"'
_EMPTY = "only reached with no probabilities, where every bin is empty whatever the array's dtype"
EQUIVALENT: dict[str, str] = {
    # scoring/calibration.py
    "scopebench.scoring.calibration.x__normalise__mutmut_3": "without dtype=float an int array stays int, "
    "but / is true division and the uniform branch is float: the same probabilities",
    "scopebench.scoring.calibration.x__normalise__mutmut_5": "as _normalise__mutmut_3 (dtype omitted)",
    "scopebench.scoring.calibration.x_brier_score__mutmut_4": _NAN,
    "scopebench.scoring.calibration.x_expected_calibration_error__mutmut_4": _NAN,
    "scopebench.scoring.calibration.x_reliability_bins__mutmut_75": _NAN,
    "scopebench.scoring.calibration.x_reliability_bins__mutmut_83": _NAN,
    "scopebench.scoring.calibration.x_reliability_bins__mutmut_32": "with no probabilities the clipped "
    "bin index of an empty array is the same empty array",
    "scopebench.scoring.calibration.x_reliability_bins__mutmut_34": "lower clip: the confidence (max of "
    "scores normalised to sum 1) is > 0, so ceil(conf * n) - 1 >= 0 already",
    "scopebench.scoring.calibration.x_reliability_bins__mutmut_35": "upper clip: for non-negative scores "
    "(probabilities, the documented input) conf <= 1, so ceil(conf * n) - 1 <= n - 1 already",
    "scopebench.scoring.calibration.x_reliability_bins__mutmut_45": "as reliability_bins__mutmut_35 "
    "(upper clip n + 1)",
    "scopebench.scoring.calibration.x_reliability_bins__mutmut_40": "float bin indices: idx == b selects "
    "the same items",
    "scopebench.scoring.calibration.x_reliability_bins__mutmut_48": _EMPTY,
    "scopebench.scoring.calibration.x_reliability_bins__mutmut_49": _EMPTY,
    "scopebench.scoring.calibration.x_reliability_bins__mutmut_50": _EMPTY,
    "scopebench.scoring.calibration.x_reliability_bins__mutmut_71": "the mean of an empty selection is "
    "NaN (with a RuntimeWarning): the NaN the else branch gives",
    "scopebench.scoring.calibration.x_reliability_bins__mutmut_79": "as reliability_bins__mutmut_71",
    # scoring/compare.py
    "scopebench.scoring.compare.x_mcnemar_exact__mutmut_1": "b - c == 0 with b = c > 0: the exact two-sided "
    "binomial p-value of the most likely split is 1.0, the value returned for b + c == 0",
    "scopebench.scoring.compare.x_mcnemar_exact__mutmut_12": "0.5 is scipy.stats.binomtest's default p",
    "scopebench.scoring.compare.x_mcnemar_exact__mutmut_13": "two-sided is binomtest's default alternative",
    **{
        f"scopebench.scoring.compare.x_paired_comparison__mutmut_{k}": "zip(xa, xb): both are read "
        "from the same list of shared ids, so strict= cannot matter"
        for k in (13, 16, 17, 25, 28, 29)
    },
    **{f"scopebench.scoring.compare.x_paired_comparison__mutmut_{k}": _NAN for k in (52, 61, 70, 85)},
    "scopebench.scoring.compare.x__acc__mutmut_4": "-2.0 instead of -1.0: any negative key still sorts "
    "a run without accuracy after every accuracy in [0, 1]",
    # scoring/decoupling.py
    "scopebench.scoring.decoupling.x_decoupling_table__mutmut_1": "seed is unused since the Wilson "
    "interval (deleted at once, kept for callers' one set of options)",
    "scopebench.scoring.decoupling.x_decoupling_table__mutmut_2": "as decoupling_table__mutmut_1 (resamples)",
    "scopebench.scoring.decoupling.x_decoupling_table__mutmut_57": "a bool array has the same sum, length "
    "and mean as the float one",
    "scopebench.scoring.decoupling.x_decoupling_table__mutmut_59": "as decoupling_table__mutmut_57",
    "scopebench.scoring.decoupling.x_decoupling_table__mutmut_83": "the mean of an empty group is NaN "
    "(with a RuntimeWarning): the NaN the else branch gives",
    "scopebench.scoring.decoupling.x_decoupling_table__mutmut_87": _NAN,
    # parsing/_text.py
    "scopebench.parsing._text.x__token_match__mutmut_16": "the exactness flag is read only when the "
    "tokens match (callers test the first element first)",
    **{
        f"scopebench.parsing._text.x_equals_option__mutmut_{k}": "zip runs only after len(said) == "
        "len(option) was checked: strict= cannot matter"
        for k in (13, 16, 17)
    },
    # parsing/_labels.py
    "scopebench.parsing._labels.x_read_label__mutmut_57": "the closing mark is one of )]}'\" (the "
    '_CLOSE group), never "X"',
    # store/runstore.py
    "scopebench.store.runstore.xǁRunStoreǁdone_ids__mutmut_4": _SQL,
    "scopebench.store.runstore.xǁRunStoreǁdone_ids__mutmut_5": _SQL,
    "scopebench.store.runstore.xǁRunStoreǁcount__mutmut_4": _SQL,
    "scopebench.store.runstore.xǁRunStoreǁcount__mutmut_5": _SQL,
    "scopebench.store.runstore.xǁRunStoreǁgeneration__mutmut_4": _SQL,
    "scopebench.store.runstore.xǁRunStoreǁset_meta__mutmut_6": _SQL,
    "scopebench.store.runstore.xǁRunStoreǁset_meta__mutmut_7": _SQL,
    "scopebench.store.runstore.xǁRunStoreǁget_meta__mutmut_7": _SQL,
    "scopebench.store.runstore.xǁRunStoreǁget_meta__mutmut_8": _SQL,
    "scopebench.store.runstore.x__has_records__mutmut_4": _SQL,
    "scopebench.store.runstore.x__unreadable_records__mutmut_6": _SQL,
    "scopebench.store.runstore.x__unreadable_records__mutmut_7": _SQL,
    "scopebench.store.runstore.x__unreadable_records__mutmut_14": _CODEC,
    "scopebench.store.runstore.x__unreadable_records__mutmut_25": _CODEC,
    "scopebench.store.runstore.x__unreadable_records__mutmut_29": _CODEC,
    "scopebench.store.runstore.xǁRunStoreǁexport_jsonl__mutmut_15": _CODEC,
    "scopebench.store.runstore.xǁRunStoreǁexport_jsonl__mutmut_19": "json.dumps tests ensure_ascii for "
    "truth: None acts as False",
    "scopebench.store.runstore.xǁRunStoreǁexport_parquet__mutmut_18": "as export_jsonl__mutmut_19",
    # scoring/metrics.py
    "scopebench.scoring.metrics.x__grit_split__mutmut_22": 'an absent dataset reads as "xxxx" instead of '
    '"": no dataset name fragment of the split table occurs in either',
    "scopebench.store.runstore.xǁRunStoreǁexport_jsonl__mutmut_4": "name of the temporary file that is "
    "renamed onto the export at once",
    "scopebench.store.runstore.xǁRunStoreǁexport_jsonl__mutmut_5": "as export_jsonl__mutmut_4",
    "scopebench.store.runstore.xǁRunStoreǁ_connect_readonly__mutmut_17": "prefix of a private temporary "
    "directory's name",
    "scopebench.store.runstore.xǁRunStoreǁ_connect_readonly__mutmut_18": "as _connect_readonly__mutmut_17",
    "scopebench.store.runstore.xǁRunStoreǁ_connect_readonly__mutmut_19": "as _connect_readonly__mutmut_17",
}

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


def _judged(key: str, status: str) -> str:
    # Only a mutant no test kills can be equivalent; a killed one listed there is simply killed.
    return "equivalent" if key in EQUIVALENT and status in ("survived", "no tests") else status


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
        globs = [g for m in modules for g in _globs(m)]
        cmd = ["nice", args.mutmut, "run", "--max-children", str(args.max_children), *globs]
        start = time.perf_counter()
        proc = subprocess.run(cmd, cwd=root, env=env, check=False)
        print(f"\nmutmut run: exit {proc.returncode}, {time.perf_counter() - start:.0f} s wall")
        if proc.returncode != 0:
            return proc.returncode
    rows, overall = summarise(modules, root)
    _print_table(rows, overall)
    print("\nSurvivors: `mutmut results`; one mutant's diff: `mutmut show NAME`.")
    return 0


if __name__ == "__main__":
    sys.exit(main())

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
    "parsing._commits",
    "parsing._labels",
    "parsing._patterns",
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
    # scoring/bootstrap.py
    **{
        f"scopebench.scoring.bootstrap.x_stratified_mean_ci__mutmut_{k}": "dtype omitted: the values are "
        "numbers (scores, or 0/1), whose int or bool array has the same means"
        for k in (3, 5)
    },
    **{f"scopebench.scoring.bootstrap.x_stratified_mean_ci__mutmut_{k}": _NAN for k in (21, 24)},
    "scopebench.scoring.bootstrap.x_stratified_mean_ci__mutmut_30": "size < 1 instead of <= 1: empty "
    "strata were dropped, and a one-value stratum equals its first value anyway",
    "scopebench.scoring.bootstrap.x_stratified_mean_ci__mutmut_34": "v == v[1] instead of v == v[0] "
    "(reached only with two or more values): all equal to one element iff all equal to another",
    "scopebench.scoring.bootstrap.x_stratified_mean_ci__mutmut_55": "rng.integers(n, size=s) is "
    "rng.integers(0, n, size=s): numpy reads a lone bound as high, the same draws from the same seed",
    **{
        f"scopebench.scoring.bootstrap.x_bootstrap_ci__mutmut_{k}": "as stratified_mean_ci__mutmut_3 "
        "(dtype omitted: numeric outcomes)"
        for k in (3, 5)
    },
    **{f"scopebench.scoring.bootstrap.x_bootstrap_ci__mutmut_{k}": _NAN for k in (20, 23)},
    "scopebench.scoring.bootstrap.x_bootstrap_ci__mutmut_27": "as stratified_mean_ci__mutmut_30",
    "scopebench.scoring.bootstrap.x_bootstrap_ci__mutmut_31": "as stratified_mean_ci__mutmut_34",
    **{
        f"scopebench.scoring.bootstrap.x_bootstrap_ci__mutmut_{k}": "scipy's batch size (None, dropped, "
        "at least 2, a budget of 2,000,001): resamples come batch after batch from one stream, so the "
        "interval is the same (tests/scoring/test_bootstrap.py checks batched = unbatched = by hand)"
        for k in (49, 56, 64, 70)
    },
    "scopebench.scoring.bootstrap.x_bootstrap_ci__mutmut_53": "confidence_level dropped: scipy's "
    "default is 0.95, our _CONFIDENCE",
    "scopebench.scoring.bootstrap.x_bootstrap_ci__mutmut_58": 'method="PERCENTILE": scipy lower-cases '
    "the method name",
    # scoring/grit.py
    **{
        f"scopebench.scoring.grit.x_iou_matrix__mutmut_{k}": "dtype omitted: integer corners give an "
        "integer intersection and union, and inter / union is true division: the same IoU"
        for k in (7, 9, 12, 14)
    },
    "scopebench.scoring.grit.x_grit_score__mutmut_9": "with boxes on one side only (unread > 0 and no "
    "read ones, or no ground truth) the IoU matrix is empty, nothing matches and the score is "
    "0 / (#pred + #gt) = 0.0, the value returned early",
    "scopebench.scoring.grit.x_grit_score__mutmut_21": "2 - IoU instead of 1 - IoU: every full "
    "assignment has min(#pred, #gt) pairs, so a constant shift keeps the same optimal assignments",
    **{
        f"scopebench.scoring.grit.x_grit_score__mutmut_{k}": "zip(rows, cols): linear_sum_assignment "
        "returns index arrays of one length, so strict= cannot matter"
        for k in (25, 28, 29)
    },
    **{f"scopebench.scoring.bootstrap.x_stratified_macro_ci__mutmut_{k}": _NAN for k in (17, 20)},
    **{
        f"scopebench.scoring.grit.x_iou_matrix__mutmut_{k}": "the area of a box with reversed corners "
        "(no lower clip at 0): such a box has intersection 0 with every box, so its IoU is 0 whatever "
        "the (negative) union"
        for k in (62, 71, 82, 91)
    },
    **{
        f"scopebench.scoring.grit.x_iou_matrix__mutmut_{k}": "divide= of np.errstate: union 0 implies "
        "intersection 0 (0 / 0 is numpy's invalid, not divide, case), so no x / 0 with x != 0 occurs"
        for k in (103, 105)
    },
    # parsing/boxes.py
    **{
        f"scopebench.parsing.boxes.x__nesting_depth__mutmut_{k}": "None for False: the flags are only "
        "tested for truth"
        for k in (3, 5)
    },
    "scopebench.parsing.boxes.x__json_candidates__mutmut_8": 'a chunk starting with "X" is tried as '
    "JSON: json.loads rejects it, so it is skipped all the same",
    "scopebench.parsing.boxes.x__coords__mutmut_23": 'obj.get("class") without default: None, and '
    'None or "" is "" as before',
    **{f"scopebench.scoring.bootstrap.x_paired_diff_ci__mutmut_{k}": _NAN for k in (30, 33)},
    # scoring/intervals.py
    **{
        f"scopebench.scoring.intervals.x_proportion_ci__mutmut_{k}": "dtype omitted: 0/1 outcomes as "
        "int or bool have the same sum and size"
        for k in (3, 5)
    },
    **{
        f"scopebench.scoring.intervals.x_owner_macro_basic_ci__mutmut_{k}": "dtype omitted: 0/1 outcomes "
        "as int or bool have the same means, and scipy resamples indices, not values"
        for k in (3, 5)
    },
    # parsing/judge.py
    **{
        f"scopebench.parsing.judge.x_build_judge_prompt__mutmut_{k}": "zip(names, choices): names are "
        "built from range(len(choices)), so strict= cannot matter"
        for k in (15, 16)
    },
    "scopebench.parsing.judge.x_read_judge_reply__mutmut_27": "upper-casing for the numbers label "
    "style too: a reply that can match a number label is digits, which upper() leaves alone",
    **{f"scopebench.scoring.intervals.x_owner_macro_basic_ci__mutmut_{k}": _NAN for k in (21, 24)},
    "scopebench.scoring.intervals.x_owner_macro_basic_ci__mutmut_30": "as "
    "bootstrap.stratified_mean_ci__mutmut_30 (size < 1: empty tasks were dropped)",
    "scopebench.scoring.intervals.x_owner_macro_basic_ci__mutmut_34": "as "
    "bootstrap.stratified_mean_ci__mutmut_34 (v[1] for v[0] with two or more values)",
    **{
        f"scopebench.scoring.intervals.x_owner_macro_basic_ci__mutmut_{k}": "scipy.stats.bootstrap's "
        "vectorized flag (None: read from the statistic's axis parameter; False: one call per resample) "
        "changes speed, not the draws or the interval (checked: the same bounds from the same seed)"
        for k in (74, 82, 87)
    },
    "scopebench.scoring.intervals.x_owner_macro_basic_ci__mutmut_80": "confidence_level dropped: "
    "scipy's default is 0.95, our CONFIDENCE",
    "scopebench.scoring.intervals.x_owner_macro_basic_ci__mutmut_86": 'method="BASIC": scipy lower-cases '
    "the method name",
    # scoring/aggregate.py (session 5 removed the entries of _ubench, _row, _per_task and _pathmmu,
    # functions that issue 13 moved into the benchmark modules: their mutants no longer exist. The
    # reasons below that say "as _row__mutmut_5" refer to: seed/resamples passed on to accuracy_row,
    # which deletes them (Wilson interval).)
    **{
        f"scopebench.scoring.aggregate.x_macro_row__mutmut_{k}": "default protocol name: only compared "
        'with "owner", and every caller passes the run\'s protocol'
        for k in (1, 2)
    },
    "scopebench.scoring.aggregate.x_macro_row__mutmut_8": "the per-task rows' group label is never "
    "read (only their counts and accuracies are)",
    "scopebench.scoring.aggregate.x_macro_row__mutmut_27": _NAN,
    "scopebench.scoring.aggregate.x_macro_row__mutmut_108": _NAN,
    **{
        f"scopebench.scoring.aggregate.xǁOwnerRowsǁinstance__mutmut_{k}": "as _row__mutmut_5 (seed/resamples "
        "passed on to accuracy_row, which deletes them)"
        for k in (5, 6)
    },
    **{
        f"scopebench.scoring.aggregate.x_instance_row__mutmut_{k}": "as _row__mutmut_5 (seed/resamples "
        "passed on to accuracy_row, which deletes them)"
        for k in (5, 6, 10, 11)
    },
    # scoring/baselines.py
    "scopebench.scoring.baselines.x__item__mutmut_13": "not choices and ans is None: with no choices "
    "every answer index fails 0 <= ans < 0 next, so the item is still left out",
    **{
        f"scopebench.scoring.aggregate.x_macro_row__mutmut_{k}": "the group label of the totals row, "
        "of which only counts are read"
        for k in (57, 63, 64)
    },
    "scopebench.scoring.aggregate.x_per_task_rows__mutmut_12": "as _per_task__mutmut_12 (second sort "
    "key of a known split, never compared)",
    **{
        f"scopebench.scoring.aggregate.x_per_task_rows__mutmut_{k}": "as _row__mutmut_5 (seed/resamples "
        "passed on to accuracy_row, which deletes them)"
        for k in (31, 32, 45, 46)
    },
    "scopebench.scoring.baselines.x__baseline_runs__mutmut_5": "the initial reference is always replaced: "
    "FrequentBackend is one of the two baselines looped over",
    **{
        f"scopebench.scoring.baselines.x__baseline_runs__mutmut_{k}": "zip(usable, predict(usable)): a "
        "backend returns one response per item, so strict= cannot matter"
        for k in (21, 24, 26)
    },
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
    **{
        f"scopebench.scoring.compare.x_compare_runs__mutmut_{k}": "zip(labels, ...): the labels (one per "
        "run directory), judges and item-id sets are each built from the same list of runs, so strict= "
        "cannot matter"
        for k in (42, 45, 46, 63, 66, 67, 93, 96, 97)
    },
    **{
        f"scopebench.scoring.compare.x_run_labels__mutmut_{k}": "zip over lists built one per unique "
        "path (parts, depth, labels), so strict= cannot matter"
        for k in (23, 26, 27, 46, 49, 50)
    },
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
    # scoring/accuracy.py
    "scopebench.scoring.accuracy.x_accuracy_row__mutmut_24": _NAN,
    "scopebench.scoring.accuracy.x_accuracy_row__mutmut_95": _NAN,
    **{
        f"scopebench.scoring.accuracy.x_group_rows__mutmut_{k}": "seed/resamples passed on to "
        "accuracy_row, which deletes them (Wilson interval, nothing drawn)"
        for k in (12, 13, 17, 18)
    },
    # engine/runner.py (resume functions)
    **{
        f"scopebench.engine.runner.x__metrics_stamp__mutmut_{k}": "default version when scopebench's "
        "own metadata is missing (None, dropped, another string): a stamp is only compared with a stamp "
        "made by the same code, so any constant gives the same reuse decision"
        for k in (10, 12, 15, 16)
    },
    **{
        f"scopebench.engine.runner.x_run_benchmark__mutmut_{k}": 'the default metrics\' key ("basic"): '
        "only compared with a stamp this code wrote, so any spelling gives the same reuse decision"
        for k in (169, 170)
    },
    **{
        f"scopebench.engine.runner.x__check_config__mutmut_{k}": "sort_keys dropped for the stored "
        "config: run.json is written with sort_keys=True, so its objects load (and dump) in sorted order"
        for k in (25, 27)
    },
    "scopebench.engine.runner.x__check_config__mutmut_20": _CODEC,
    "scopebench.engine.runner.x_run_benchmark__mutmut_136": _CODEC,
    "scopebench.store.runstore.x__unreadable_records__mutmut_30": "ok = None for False: only tested "
    "with `not ok`",
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
    # Session 4: scoring modules run for the first time since their sources changed
    "scopebench.scoring.bootstrap.x_bootstrap_ci__mutmut_75": "as bootstrap_ci__mutmut_49 (scipy's batch "
    "size: the same draws batch after batch)",
    "scopebench.scoring.bootstrap.x_stratified_macro_ci__mutmut_30": "n < 1 for n <= 1: strata are kept "
    "only with n > 0, and when every n is 1 every k is 0 or n, so the first test returns already",
    **{
        f"scopebench.scoring.metrics.x__metadata_rows__mutmut_{k}": "seed/resamples of group_rows, passed "
        "on to accuracy_row, which deletes them (Wilson interval)"
        for k in (25, 26, 31, 32)
    },
    **{
        f"scopebench.scoring.metrics.x_judge_section__mutmut_{k}": "seed/resamples of accuracy_row (the "
        "judge-free row), which deletes them (Wilson interval)"
        for k in (61, 62, 66, 67)
    },
    **{f"scopebench.scoring.intervals.x_wilson_interval__mutmut_{k}": _NAN for k in (15, 18)},
    "scopebench.scoring.intervals.x_wilson_interval__mutmut_33": "alpha left to statsmodels' default "
    "0.05 instead of 1 - 0.95 = 0.05000000000000004: bounds differ by at most 3.3e-16 (checked for "
    "every k <= n < 60), no printed digit",
    "scopebench.scoring.intervals.x_wilson_interval__mutmut_65": "upper clip at 2 instead of 1: "
    "max(hi, p) <= 1 already (the Wilson bound is <= 1; statsmodels' never exceeded 1 by rounding: "
    "checked for every k <= n < 200, and k in 0, 1, n - 1, n for n < 3000 and 1e4..1e6)",
    "scopebench.scoring.metrics.x_compute_metrics__mutmut_5": "default protocol name: only compared "
    'with "owner" (owner_aggregation, _interval_methods), never recorded',
    "scopebench.scoring.metrics.x_compute_metrics__mutmut_6": "as compute_metrics__mutmut_5 (default "
    "protocol name)",
    **{
        f"scopebench.scoring.metrics.x_compute_metrics__mutmut_{k}": "seed/resamples for accuracy_row "
        "(directly, through group_rows, _metadata_rows or judge_section), which deletes them: Wilson"
        for k in (54, 67, 81, 95, 104, 105, 157, 158, 162)
    },
    **{
        f"scopebench.scoring.metrics.x_localization_section__mutmut_{k}": "resamples/seed of a too-few-items "
        "interval: a localization row keeps only its bounds (NaN) and method"
        for k in (71, 72)
    },
    **{f"scopebench.scoring.metrics.x_localization_section__mutmut_{k}": _NAN for k in (80, 83)},
    # Session 4: engine.runner's resume functions (names of main at the session's commit)
    "scopebench.engine.runner.x__check_config__mutmut_18": "run.json is written by json.dumps with "
    "ensure_ascii (pure ASCII), which any locale's ASCII-compatible codec reads alike",
    "scopebench.engine.runner.x__check_config__mutmut_29": "sort_keys dropped for the stored config: "
    "run.json is written with sort_keys=True, so its objects load (and dump) in sorted order",
    "scopebench.engine.runner.x__cached_metrics__mutmut_17": _CODEC,
    **{
        f"scopebench.engine.runner.x__execute__mutmut_{k}": "the kinds joined in the 'not evaluated' "
        "warning: ItemKind has two values, so a run that evaluates anything has one unsupported kind "
        "and a backend that leaves one out answers one: a one-element join has no separator"
        for k in (21, 25)
    },
    **{
        f"scopebench.engine.runner.x__execute__mutmut_{k}": "zip(batch, responses): every executor "
        "answers through answer_batch, which turns a count mismatch into one error response per request"
        for k in (109, 112, 113)
    },
    **{
        f"scopebench.engine.runner.x_run_benchmark__mutmut_{k}": "build_backend without the run's parse: "
        "load_model parses the same config.model to an equal ModelSpec (the parse is only repeated)"
        for k in (62, 64)
    },
    **{
        f"scopebench.engine.runner.x_run_benchmark__mutmut_{k}": "the kinds joined in the 'nothing to "
        "evaluate' error: ItemKind has two values and a backend answers one or both, so when it answers "
        "none of the items' kinds each list has one element: no separator is printed"
        for k in (77, 81)
    },
    "scopebench.engine.runner.x_run_benchmark__mutmut_89": "build_judge without check_judge_spec's parse: "
    "it parses the same config.judge to an equal ModelSpec (the parse is only repeated)",
    **{
        f"scopebench.engine.runner.x_run_benchmark__mutmut_{k}": "run.json's encoding (locale default): "
        "json.dumps escapes non-ASCII (ensure_ascii), so every ASCII-compatible codec writes the same bytes"
        for k in (144, 146)
    },
    "scopebench.engine.runner.x_run_benchmark__mutmut_157": _CODEC,
    "scopebench.engine.runner.x_run_benchmark__mutmut_174": "judge_unparsed hands config only to "
    "_labels_of, which reads the backend's rendering of the item, not config",
    **{
        f"scopebench.engine.runner.x_run_benchmark__mutmut_{k}": "the default metrics' stamp key is only "
        "compared with stamps this same code wrote (a stamp also holds the scopebench version)"
        for k in (190, 191)
    },
    # Session 4 (store.runstore, scoring.baselines, scoring.compare, scoring.aggregate)
    **{f"scopebench.store.runstore.xǁRunStoreǁ__init____mutmut_{k}": _SQL for k in (20, 21, 24, 25)},
    **{
        f"scopebench.store.runstore.xǁRunStoreǁ__init____mutmut_{k}": "PRAGMA names are case-insensitive: "
        '"QUICK_CHECK" is quick_check'
        for k in (30, 32)
    },
    "scopebench.store.runstore.xǁRunStoreǁ__init____mutmut_4": "RunStore.readonly is never read "
    "(the connection is opened from the argument)",
    **{f"scopebench.store.runstore.xǁRunStoreǁ_bump_generation__mutmut_{k}": _SQL for k in (3, 6, 7)},
    # add/add_items as renumbered by _json_text (commit 67858e6); before it, add 14, 15 and add_items 12, 13
    **{f"scopebench.store.runstore.xǁRunStoreǁadd__mutmut_{k}": _SQL for k in (10, 11)},
    **{f"scopebench.store.runstore.xǁRunStoreǁadd_items__mutmut_{k}": _SQL for k in (8, 9)},
    "scopebench.store.runstore.x__json_text__mutmut_3": "json.dumps tests ensure_ascii for truth: None "
    "acts as False",
    **{f"scopebench.store.runstore.x__json_text__mutmut_{k}": _CODEC for k in (9, 20, 24)},
    **{f"scopebench.store.runstore.xǁRunStoreǁitems__mutmut_{k}": _SQL for k in (4, 5)},
    **{f"scopebench.store.runstore.xǁRunStoreǁiter_records__mutmut_{k}": _SQL for k in (3, 4)},
    "scopebench.store.runstore.xǁRunStoreǁ_connect_readonly__mutmut_14": "a 0-byte -wal (>= 0) read from "
    "a private copy: a WAL without a header holds no frames, so the copy reads the same pages as "
    "the in-place immutable read",
    "scopebench.store.runstore.xǁRunStoreǁ_connect_readonly__mutmut_15": "a 1-byte -wal read in place "
    "(> 1): SQLite ignores a WAL shorter than its 32-byte header, so the copy would read the same pages",
    **{
        f"scopebench.scoring.baselines.x__item__mutmut_{k}": "Item.benchmark of a baseline item: neither "
        "baseline backend reads it and it is not copied into the record"
        for k in (34, 54, 55, 56, 57, 58, 59, 60, 61)
    },
    **{
        f"scopebench.scoring.baselines.x__item__mutmut_{k}": "Item.question of a baseline item: neither "
        "baseline backend reads it (random draws by seed and id, frequent counts letters per task)"
        for k in (37, 78, 79, 80, 81, 82, 83, 84, 85)
    },
    **{
        f"scopebench.scoring.baselines.x__item__mutmut_{k}": "Item.metadata of a baseline item (None or "
        "the default {}): neither baseline backend reads it and it is not copied into the record"
        for k in (41, 50)
    },
    **{
        f"scopebench.scoring.compare.x_run_labels__mutmut_{k}": "the order of the unique paths: labels are "
        "grown by clashes, which do not depend on order, and are then looked up by path"
        for k in (5, 7)
    },
    "scopebench.scoring.compare.x_run_labels__mutmut_11": "Path.resolve() is always absolute, so the "
    "root is always dropped",
    "scopebench.scoring.compare.x_run_labels__mutmut_36": "depth may grow one past a path's parts: "
    "pp[-d:] is then the whole path, the same label, and distinct resolved paths never clash when whole",
    **{
        f"scopebench.scoring.compare.x_compare_runs__mutmut_{k}": "the default protocol's spelling: "
        'compute_metrics only compares it with "owner"'
        for k in (126, 127)
    },
    **{
        f"scopebench.scoring.aggregate.x_owner_aggregation__mutmut_{k}": "default protocol name: only "
        'compared with "owner" (macro_row, _interval_methods)'
        for k in (4, 5)
    },
    **{
        f"scopebench.scoring.baselines.x__item__mutmut_{k}": "as _item__mutmut_41 (Item.metadata of a "
        "baseline item, read by neither backend)"
        for k in (92, 93, 94)
    },
    **{
        f"scopebench.scoring.baselines.x_baseline_section__mutmut_{k}": "seed/resamples of accuracy_row "
        "(directly or through group_rows), which deletes them: Wilson interval"
        for k in (43, 54)
    },
    "scopebench.scoring.baselines.x_baseline_section__mutmut_82": _NAN,
    **{
        f"scopebench.scoring.aggregate.xǁOwnerRowsǁper_task__mutmut_{k}": "as _row__mutmut_5 (seed/resamples "
        "passed on to accuracy_row, which deletes them)"
        for k in (4, 5)
    },
}

#: Session 4 (bench/RESULTS.md, "Parser modules and engine.parse, session 4"): equivalent mutants of
#: the answer parser (choice-8) and of engine/parse.py, kept in a block of their own.
_PARSER_SESSION_4: dict[str, str] = {
    # engine/parse.py
    "scopebench.engine.parse.x__parse_detection__mutmut_21": "label=None for boxes that carry no class: "
    "the record keeps only each box's corners (and the item's class_name), never a box's label",
    "scopebench.engine.parse.x_parse__mutmut_31": 'reason starts as "" instead of None: it is read only as '
    '`reason or "no option chosen"`, where both are falsy',
    # parsing/judge.py
    "scopebench.parsing.judge.x_build_judge_prompt__mutmut_12": "as build_judge_prompt__mutmut_15 "
    "(strict=None: names are built from range(len(choices)))",
    # parsing/_labels.py
    "scopebench.parsing._labels.x__kind_after__mutmut_37": 'ch is one character of ".:;,!?" already, and of '
    'those only "!" and "?" are in "XX!?XX": the same test',
    "scopebench.parsing._labels.x__kind_after__mutmut_71": "j >= end: with no space after it, a label is "
    "never followed by a letter (the label patterns' lookahead forbids a word character outside the CJK "
    "range handled just before), so neither _TAIL nor a word can match at j == end",
    # parsing/_commits.py
    "scopebench.parsing._commits.x__distinct__mutmut_5": "len(named) >= 1: a single label is dropped only "
    "if it is the placeholder out of range, which the any(in range) guard rules out",
    **{
        f"scopebench.parsing._commits.x__given_up__mutmut_{k}": "rfind(s, None, end) is rfind(s, 0, end)"
        for k in (10, 19)
    },
    # parsing/boxes.py
    "scopebench.parsing.boxes.x__coords__mutmut_21": 'as _coords__mutmut_23 (None or "" is "")',
    "scopebench.parsing.boxes.x__nesting_depth__mutmut_13": "as _nesting_depth__mutmut_3 (None for False, "
    "tested for truth only)",
    # parsing/_walk.py
    "scopebench.parsing._walk.x__named_in_order__mutmut_21": "number labels read without str(int(raw)): "
    'label_index takes int(label) - 1, so "02" and "2" give the same index',
    "scopebench.parsing._walk.x_walk_choice__mutmut_25": "as _named_in_order__mutmut_21 (label_index "
    "converts a number label with int())",
    "scopebench.parsing._walk.x_former_latter__mutmut_21": "the sentence-end scan from 1 instead of 0: a "
    "sentence end at position 0 only moves the window and sentence start by that one punctuation mark, "
    "which names no option and chooses nothing; `before` holds the named pair either way (never empty)",
}
EQUIVALENT.update(_PARSER_SESSION_4)

#: Session 5 (bench/RESULTS.md, "Parser survivors judged, session 5"): equivalent mutants of
#: parsing/_commits.py, and _text.py's _is_negation and ClauseIndex.
_PARSER_SESSION_5_COMMITS_NEGATION: dict[str, str] = {
    # parsing/_commits.py
    "scopebench.parsing._commits.x_decide__mutmut_1": 'default text "XXXX" instead of "": only the '
    'bare/leading-label callers omit text, and XXXX holds no sentence break, "or", "I was … to" or '
    'correction/switch/first-thought marker, so every text rule finds nothing, as with ""',
    **{
        f"scopebench.parsing._commits.x__given_up__mutmut_{k}": f"rfind({ch!r}, 1, first): differs only "
        f"when that {ch!r} is at index 0, and a search from 0 cannot match there (_ABOUT_TO starts with "
        '"I"): the same first thought'
        for k, ch in ((17, "."), (26, "\n"))
    },
    "scopebench.parsing._commits.x__after_correction__mutmut_13": "a marker at the first commitment's "
    "own position: alone it makes every commitment 'later', whose labels decide() already found several "
    "(None, as with no marker); next to a later marker it is neither the max nor after `before`",
    "scopebench.parsing._commits.x_names_a_thing__mutmut_22": 'rstrip("XX.XX") on a case-folded naming '
    'word: no upper-case X to strip, so the same as rstrip(".")',
    **{
        f"scopebench.parsing._commits.x_names_a_thing__mutmut_{k}": f"{how} on an option token: tokens "
        "(_TOKEN, case-folded) hold no full stop, whitespace or upper-case X: nothing stripped either way"
        for k, how in ((27, "rstrip(None)"), (28, 'lstrip(".")'), (29, 'rstrip("XX.XX")'))
    },
    # parsing/_text.py
    "scopebench.parsing._text.xǁClauseIndexǁ_conditional__mutmut_26": "after[:2] is non-empty exactly "
    "when after[:1] is: the same test",
}
EQUIVALENT.update(_PARSER_SESSION_5_COMMITS_NEGATION)


#: Session 5 (bench/RESULTS.md, "Parser survivors judged, session 5"): equivalent mutants of
#: parsing/_text.py's other functions.
_PARSER_SESSION_5_TEXT: dict[str, str] = {
    **{
        f"scopebench.parsing._text.x_resolve__mutmut_{k}": "max's default is used only when there are no "
        "matches, and then the comprehension that reads reach runs over nothing"
        for k in (9, 13)
    },
    "scopebench.parsing._text.x_resolve__mutmut_31": "the window also takes matches starting one token "
    "after m: _beats(other, m) needs other.start <= m.start, so none of them covers m (still linear)",
    **{
        f"scopebench.parsing._text.x__so_is__mutmut_{k}": "differs only at start == 2, where the original's "
        "range(sentences[2], 0) is empty: False either way"
        for k in (3, 4)
    },
    "scopebench.parsing._text.x_clause_starts__mutmut_13": "at i == 0 current is already 0: setting it to 0 "
    "(instead of the elif branches, which can only set it to 0 too) changes nothing",
    "scopebench.parsing._text.x_ruled_out__mutmut_1": "the default of verdict_follows is never used: its "
    "only caller (choice._option_text) always passes verdict_gap(...)",
    "scopebench.parsing._text.x_ruled_out__mutmut_76": "verdict_follows is verdict_gap(...), False when "
    "end >= len(tokens) == len(values): when it holds, end < len(values) already",
    **{
        f"scopebench.parsing._text.x_ruled_out__mutmut_{k}": "return (None) for break-then-return False: "
        "the caller reads the result for truth only (an `or` in choice._option_text)"
        for k in (92, 107)
    },
    "scopebench.parsing._text.x_verdict_gap__mutmut_2": "True past the last token: ruled_out reads it only "
    "as `verdict_follows and end < len(values)`, False there",
    "scopebench.parsing._text.x_more_specific__mutmut_11": "a kept mention of general starting where "
    "specific's first does survives resolve only on the same span with equal (exact, length), i.e. as many "
    "tokens, where len(inner) >= len(outer) returns None anyway",
}
EQUIVALENT.update(_PARSER_SESSION_5_TEXT)


#: Session 5 (bench/RESULTS.md, "Parser survivors judged, session 5"): equivalent mutants of
#: parsing/choice.py: _phrase_commits, _text_then_label, _answer_markers, _read_answer.
_PHRASES_MOD = "scopebench.parsing.choice"
_PHRASES_LEAD_METHOD = (
    "the method of the leading-label commitment: decide reads methods only in all(... == "
    "'leading_label'), never true here (_answer_markers always adds a tag or phrase commitment), and "
    "in _after_correction's later[-1], which holds only commitments after a marker starting past "
    "commits[0].pos >= 0, never the lead at 0"
)
_PHRASES_LEAD_AT_1 = (
    "the lead at pos 1 instead of 0 reorders it only against a commitment at 0, which can only be a "
    "verdict on the same opening label (same label); positions 0-1 lie before or inside that label, "
    "where no marker, sentence break or 'or' can start, so decide sees the same labels, first/last-"
    "position searches and markers (no difference over the 54,853 replies tests/parsing passes to "
    "parse_choice)"
)
_PHRASES_LOOSE_NONE = (
    "loose=None instead of False: _read_answer reads it only as `if not loose` and through _accepts' "
    "`return loose and ...`, used for truth: None acts as False"
)
_PARSER_SESSION_5_CHOICE_PHRASES: dict[str, str] = {
    # _answer_markers: the lead commitment (first-line label, or the opening label after a marker)
    **{
        f"{_PHRASES_MOD}.x__answer_markers__mutmut_{k}": _PHRASES_LEAD_METHOD
        for k in (66, 69, 71, 72, 93, 96, 102, 103)
    },
    **{
        f"{_PHRASES_MOD}.x__answer_markers__mutmut_{k}": "pos omitted: Commit's default pos is 0, "
        "the value written"
        for k in (68, 95)
    },
    **{f"{_PHRASES_MOD}.x__answer_markers__mutmut_{k}": _PHRASES_LEAD_AT_1 for k in (70, 101)},
    f"{_PHRASES_MOD}.x__answer_markers__mutmut_82": "ending=None: _leading_label reads it only as "
    "`(ending and _ends_with_other_label(...))` between `or`s, where None and False are both falsy",
    # _phrase_commits
    **{f"{_PHRASES_MOD}.x__phrase_commits__mutmut_{k}": _PHRASES_LOOSE_NONE for k in (78, 92, 109)},
    f"{_PHRASES_MOD}.x__phrase_commits__mutmut_218": "the groups of _REVERSE_*, _OBJECT_* and "
    '_THATS_MINE_* are a-f and gl: `k in "XXabcdefXX"` holds for the same keys as `k in "abcdef"` '
    '(a-f; "gl" in neither)',
    # _text_then_label (the lead's, after choice-9 moved the `other` look-up after the articles)
    **{
        f"{_PHRASES_MOD}.x__text_then_label__mutmut_{k}": "named_options(…, at_start=None/False/omitted) "
        "for `other`: it is read only when equals_option(words, options[other[0]]) holds, i.e. when the "
        "words are exactly one option's text; that mention starts at word 0 and nothing covers it, so "
        "at_start=True adds no condition there"
        for k in (56, 59, 60)
    },
    # _read_answer
    f"{_PHRASES_MOD}.x__read_answer__mutmut_62": "_accepts never reads its ctx argument",
}
EQUIVALENT.update(_PARSER_SESSION_5_CHOICE_PHRASES)


#: Session 5 (bench/RESULTS.md, "Parser survivors judged, session 5"): equivalent mutants of
#: parsing/choice.py: leading/bare/first-line labels, _lone_commits, parse_choice, _accepts.
_PARSER_SESSION_5_CHOICE_LABELS: dict[str, str] = {
    # parse_choice
    "scopebench.parsing.choice.x_parse_choice__mutmut_58": "MARKS translates exactly the eight characters "
    "of HAS_MARK's class: without a match, translate() is the identity and clean() gives `text` again",
    # _lone_commits: the answer after an _INTRO/_SHORT/_HEDGED_LEAD lead-in
    "scopebench.parsing.choice.x__lone_commits__mutmut_52": "loose=None instead of False: _read_answer "
    "reads loose only for truth (`if not loose`, and `_accepts`, whose `loose and …` is then tested for "
    "truth)",
    **{
        f"scopebench.parsing.choice.x__lone_commits__mutmut_{k}": "loose=True (given or by default): the "
        "three lead-ins' lookaheads put an upper-case label followed by [.!] or the line end at the body's "
        "start, which read_label reads as a strong kind, where _accepts ignores loose; where it reads "
        'nothing (an unclosed "(C."), the loose option-text read cuts its clause at the "(" and names '
        "nothing"
        for k in (56, 59)
    },
    **{
        f"scopebench.parsing.choice.x__lone_commits__mutmut_{k}": "strict_case None/False (or omitted): "
        "its three checks need a lower-case letter, a connective word or a colon after the label, and "
        "the lead-ins' lookaheads allow only an upper-case label followed by [.!] or the line end"
        for k in (53, 57, 60)
    },
    # _bare_label
    "scopebench.parsing.choice.x__bare_label__mutmut_6": "_BULLET (all optional) matches at every "
    "position, so `bullet is not None` is always true already",
    "scopebench.parsing.choice.x__bare_label__mutmut_8": "the `else` branch is dead: _BULLET always "
    "matches (every part optional), so bullet is never None",
    "scopebench.parsing.choice.x__bare_label__mutmut_86": "body is text.strip(): body.lstrip() and "
    "body.rstrip() are both body",
    # _first_line_rule: one in-range leading_label commit, decided without the reply's text
    **{
        f"scopebench.parsing.choice.x__first_line_rule__mutmut_{k}": "method/what passed to decide: with "
        'one in-range commit of method "leading_label" and text "" (no withdrawal, no change, no first '
        'thought), decide always reaches `all(c.method == "leading_label")`, which replaces both'
        for k in (26, 27, 39, 40, 41)
    },
    # _number_dash
    **{
        f"scopebench.parsing.choice.x__number_dash__mutmut_{k}": "what follows a punct-kind label is "
        '[ \\t]* then a non-space character (a punctuation mark or a _TAIL word, none starting with "X"), '
        'so lstrip() and lstrip("XX \\t") stop at the same place as lstrip(" \\t")'
        for k in (2, 4)
    },
    "scopebench.parsing.choice.x__number_dash__mutmut_18": 'a punct-kind "-" is followed by a space or '
    "the end (_kind_after), so after[1:] starts with whitespace and after[2:].lstrip() is "
    "after[1:].lstrip()",
}
EQUIVALENT.update(_PARSER_SESSION_5_CHOICE_LABELS)


#: Session 5 (bench/RESULTS.md, "Parser survivors judged, session 5"): equivalent mutants of
#: parsing/choice.py: option texts, enumerations, contradictions.
_PARSER_SESSION_5_CHOICE_OPTIONS: dict[str, str] = {
    "scopebench.parsing.choice.x__own_gloss__mutmut_6": (
        "tokenize(gloss, None): the words are only compared whole with one option's text "
        "(equals_option), which is at most ctx.span - 1 words long, so cutting them at ctx.span words"
        " changes no comparison"
    ),
    "scopebench.parsing.choice.x__own_gloss__mutmut_8": (
        "tokenize(gloss) without its limit: the words are only compared whole with one option's text "
        "(equals_option), which is at most ctx.span - 1 words long, so cutting them at ctx.span words"
        " changes no comparison"
    ),
    "scopebench.parsing.choice.x__own_text_follows__mutmut_6": (
        "tokenize(…, None): the words are only compared whole with one option's text (equals_option),"
        " which is at most ctx.span - 1 words long, so cutting them at ctx.span words changes no "
        "comparison"
    ),
    "scopebench.parsing.choice.x__own_text_follows__mutmut_8": (
        "tokenize(…) without its limit: the words are only compared whole with one option's text "
        "(equals_option), which is at most ctx.span - 1 words long, so cutting them at ctx.span words"
        " changes no comparison"
    ),
    **{
        f"scopebench.parsing.choice.x__contradiction__mutmut_{k}": (
            "tokenize(…, None) / without its limit, for the clause's or the sentence's words: as "
            "_contradiction__mutmut_25 below"
        )
        for k in (27, 31, 33)
    },
    "scopebench.parsing.choice.x__contradiction__mutmut_25": (
        "tokenize(…, None): the words are only compared whole with one option's text (equals_option),"
        " which is at most ctx.span - 1 words long, so cutting them at ctx.span words changes no "
        "comparison (the loop compares with every option, each within that length)"
    ),
    # the lead's, after choice-9 added the bracketed gloss and the sentence's words to _contradiction
    # (the token-limit entries renumbered 11/13 -> 25/27, and 31/33 added for the sentence)
    **{
        f"scopebench.parsing.choice.x__contradiction__mutmut_{k}": (
            'split(")") with no or a larger maxsplit: only the first piece ([0]) is read, the same for '
            "any maxsplit of at least 1"
        )
        for k in (13, 17)
    },
    "scopebench.parsing.choice.x__option_starts_at__mutmut_7": (
        "tokenize(…, None): named_options(at_start=True) looks only at mentions starting at word 0, "
        "each at most ctx.span - 1 words long, all inside the first ctx.span words either way"
    ),
    "scopebench.parsing.choice.x__option_starts_at__mutmut_9": (
        "tokenize(…) without its limit: as _option_starts_at__mutmut_7"
    ),
    "scopebench.parsing.choice.x__reason_follows__mutmut_4": (
        "split(None) instead of split(None, 1): only word[0] and whether the list is empty are read, "
        "the same for any maxsplit"
    ),
    "scopebench.parsing.choice.x__reason_follows__mutmut_6": (
        "split(None, 2) instead of split(None, 1): as _reason_follows__mutmut_4"
    ),
    "scopebench.parsing.choice.x__option_starts_at_label__mutmut_10": (
        'split("\\n")[0] is the first line, as split("\\n", 1)[0]'
    ),
    "scopebench.parsing.choice.x__option_starts_at_label__mutmut_13": (
        'split("\\n", 2)[0] is the first line, as split("\\n", 1)[0]'
    ),
    "scopebench.parsing.choice.x__enumerates__mutmut_6": (
        "_BULLET ([ \\t]*(?:[-*•+][ \\t]+)?) matches the empty string, so `bullet` is never None and "
        "`bullet or True` is `bullet`'s truth"
    ),
    "scopebench.parsing.choice.x__enumerates__mutmut_7": (
        "the `else 0` → `else 1` branch is dead: _BULLET matches the empty string, so `bullet` is never None"
    ),
    "scopebench.parsing.choice.x__enumerates__mutmut_44": (
        "search from 1, not 0: differs only for a _CONTRASTED word starting at index 0 (the "
        "look-behind sees before pos); _leading_label passes a body that starts with a label read at "
        "index 0 (a letter, digit, bracket or option/choice/letter/number keyword), never "
        "whereas/unlike/than/not/versus/vs/over/instead"
    ),
    "scopebench.parsing.choice.x__ends_with_other_label__mutmut_10": (
        "search from 1, not 0: a match at 0 makes the whole text a separator, the label and its "
        "closing marks; both callers pass text whose first label is that one (body starts with it, or"
        " the first line is only it), so orig finds last == label and returns None, as the mutant "
        "that finds no match"
    ),
    "scopebench.parsing.choice.x__ends_with_other_label__mutmut_28": (
        '_DENIED_BEFORE searched from 1, not 0: differs only for "not"/"no"/"than" starting at index '
        "0 (the look-behind sees before pos), but both callers pass text that opens with the leading "
        "label"
    ),
    "scopebench.parsing.choice.x__ends_with_other_label__mutmut_41": (
        '_NOUN_BEFORE searched from 1, not 0: differs only for a noun ("lane", "grade", …) starting '
        "at index 0, but both callers pass text that opens with the leading label"
    ),
}
EQUIVALENT.update(_PARSER_SESSION_5_CHOICE_OPTIONS)


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

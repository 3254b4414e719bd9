"""Display names of runs in tables, plots and reports, and expanding folders of runs.

A run is named by what a reader of a paper table recognises and what is safe to share:

0. the label recorded in its ``run.json`` (``run --label``, an eval config's model ``name``);
1. its model preset (``biomedclip``), when the run used one;
2. else its model spec, when the spec names no file or folder (``random``, ``openai:gpt-4o``,
   ``hf:Qwen/Qwen2-VL-7B-Instruct``);
3. else (a spec pointing at a local folder or file, e.g. ``clip:/home/me/.cache/…/tiny-clip``)
   the run folder's name, so no absolute path (and no home folder) reaches a written file.

Runs that end up with one name (two runs of one model) are told apart by their folder: the name
gets the shortest path suffix that distinguishes their run folders, ``random (pm-a)``,
``random (pm-b)``; a name that already is the folder name becomes that suffix.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from scopebench.display import shown
from scopebench.errors import DataNotFoundError
from scopebench.models.presets import PRESETS
from scopebench.models.registry import available_schemes
from scopebench.scoring.compare import run_labels
from scopebench.store.rundir import CONFIG_FILE, STORE_FILE

__all__ = [
    "base_name",
    "display_names",
    "expand_run_dirs",
    "is_run_dir",
    "relabel_comparison",
    "run_display_names",
    "scrub_home",
    "shown_path",
]


def _is_pathlike(arg: str) -> bool:
    """Whether a spec (or its argument) names a local file or folder rather than a model id."""
    if not arg:
        return False
    if arg.startswith(("/", "~", ".", "\\")) or (len(arg) > 1 and arg[1] == ":" and arg[0].isalpha()):
        return True  # absolute, home-relative, relative-dotted or a Windows drive path
    try:
        return Path(arg).expanduser().exists()
    except OSError:  # a name too long for the file system is no local path
        return False


def base_name(model: str, run_dir: str | Path) -> tuple[str, bool]:
    """A run's name before clashes are resolved, and whether it is the run folder's name.

    Args:
        model: The model spec of ``run.json`` (a preset name as the user typed it, or a spec).
        run_dir: The run directory.

    Returns:
        ``(name, from_folder)``.
    """
    if model in PRESETS or model in available_schemes():
        return model, False  # a preset or an argument-less scheme (random, frequent): never a path
    _, sep, arg = model.partition(":")
    if _is_pathlike(model) or (sep and _is_pathlike(arg)):
        return Path(run_dir).resolve().name, True
    return model, False


def display_names(
    models: Sequence[str], run_dirs: Sequence[str | Path], recorded: Sequence[str | None] | None = None
) -> list[str]:
    """One unique, path-free display name per run (see the module doc for the rules).

    Args:
        models: Each run's model spec (``run.json``'s ``model``).
        run_dirs: Each run's directory, in the same order.
        recorded: Each run's recorded label (``run.json``'s ``label``), if any.

    Returns:
        Names in the order of ``run_dirs``.
    """
    given = list(recorded) if recorded is not None else [None] * len(models)
    bases = [
        (label, False) if label else base_name(m, d)
        for m, d, label in zip(models, run_dirs, given, strict=True)
    ]
    names = [b for b, _ in bases]
    out = list(names)
    for name in set(names):
        idx = [i for i, n in enumerate(names) if n == name]
        if len(idx) < 2:
            continue
        suffixes = run_labels([run_dirs[i] for i in idx])
        for i, suffix in zip(idx, suffixes, strict=True):
            out[i] = suffix if bases[i][1] else f"{name} ({suffix})"
    return out


def run_display_names(runs: Sequence[Any]) -> list[str]:
    """:func:`display_names` of runs read back (:class:`~scopebench.results.Results` or ``RunData``)."""
    return display_names(
        [str(r.config.get("model", "?")) for r in runs],
        [Path(getattr(r, "run_dir", None) or r.path) for r in runs],
        [r.config.get("label") or None for r in runs],
    )


def shown_path(path: str | Path) -> str:
    """A run folder as a written report may show it: never an absolute path.

    Relative paths stay as given; an absolute one is shown relative to the working directory when
    under it, else as ``…/<parent>/<name>``.
    """
    p = Path(path)
    if not p.is_absolute():
        return str(p)
    try:
        return str(p.relative_to(Path.cwd()))
    except ValueError:
        return "…/" + "/".join(p.parts[-2:])


def scrub_home(text: str) -> str:
    """``text`` with the user's home folder written ``~`` (``/home/me/x`` → ``~/x``).

    For files meant to be shared (the HTML report) whose free text — a record's error message, a
    reply quoting a path — may name a file under the home folder (:func:`scopebench.display.shown`).
    """
    return shown(text)


def relabel_comparison(result: dict[str, Any], names: Mapping[str, str]) -> None:
    """Name the runs of a :func:`~scopebench.scoring.compare.compare_runs` result by display name.

    Leaderboard rows and pairs get ``names[run]`` as ``model`` (the spec stays in ``model_spec``),
    so a spec naming a local folder (``clip:/home/me/…``) never reaches a written file.

    Args:
        result: The comparison (changed in place).
        names: Display name by run directory, as the result's ``run`` fields spell it.
    """
    for e in result["leaderboard"]:
        e["model_spec"], e["model"] = e["model"], names[e["run"]]
    for pair in result["pairs"]:
        pair["model_a"], pair["model_b"] = names[pair["run_a"]], names[pair["run_b"]]


def is_run_dir(path: str | Path) -> bool:
    """Whether ``path`` is a run directory (holds ``run.json`` and ``records.sqlite``)."""
    p = Path(path)
    return (p / CONFIG_FILE).is_file() and (p / STORE_FILE).is_file()


def expand_run_dirs(paths: Sequence[str | Path]) -> list[str]:
    """Run directories of ``paths``: each run as given, each folder of runs as the runs inside it.

    ``runs/demo`` (what ``make demo`` writes: one run folder per model) becomes its run folders
    in name order, at any depth (``runs/`` holding ``demo/random``…); a path that is neither a run
    nor holds one is an error. Paths named twice (``runs/*`` beside ``runs/demo/random``) are kept
    once.

    Raises:
        DataNotFoundError: When a path is no run directory and holds none.
    """
    out: list[str] = []
    for given in paths:
        path = Path(given)
        if is_run_dir(path):
            found = [path]
        else:
            found = (
                sorted({p.parent for p in path.rglob(CONFIG_FILE) if is_run_dir(p.parent)})
                if path.is_dir()
                else []
            )
            if not found:
                raise DataNotFoundError(
                    f"{given} is not a scopebench run directory (no {CONFIG_FILE} / {STORE_FILE}) and "
                    "holds none; pass the --out folder of a `scopebench run`, or a folder of them"
                )
        for p in found:
            if str(p) not in out:
                out.append(str(p))
    return out

"""A run's Markdown/LaTeX tables (``report/tables.py``) against pandas ``to_markdown`` / ``Styler.to_latex``.

Should ``rows_to_markdown`` and ``rows_to_latex`` (hand-written) should become
pandas ``DataFrame.to_markdown`` (tabulate) and ``Styler.to_latex(hrules=True)`` (booktabs), as the
paper tables (``paper/tables.py``) already are. Both sides get the same cells (``_display``: the
strings every writer of a run prints) from metrics with hostile group names (``_``, ``%``, ``&``,
``|``, ``$``, ``#``, braces, ``~``, ``^``, a backslash, ``±``), then:

* the outputs are printed, with their sizes;
* each Markdown table is read back the way GitHub does (split on unescaped ``|``, cells
  stripped) and compared cell for cell with the input;
* each LaTeX table is checked for every special character of the input left unescaped;
* the time to write both tables (best of 20) and to import pandas in a fresh process.

Usage: ``python bench/bench_tables.py``
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from scopebench.report import tables as T

_ROW = {"n": 40, "correct": 21, "denominator": 40, "accuracy": 0.525, "ci_low": 0.3695, "ci_high": 0.6756,
        "unparsed": 2, "errors": 1, "missing_image": 0, "missing_response": 0}  # fmt: skip
GROUPS = [
    "task=cell_type",
    "subset=H&E 40% crop",
    "metadata:stain=PAS | silver",
    "task=cost $5 #1 {x}",
    "task=a~b^c\\d",
    "task=μ-Bench ± x",
]


def hostile_rows() -> list[dict[str, Any]]:
    """Accuracy rows whose group names hold every character a writer must escape."""
    return [{"section": "task", "group": g, **_ROW} for g in GROUPS] + [
        {
            "section": "localization",
            "group": "class=nucleus",
            "n": 3,
            "score": 0.742,
            "ci_low": 0.7,
            "ci_high": 0.781,
        }
    ]


def pandas_markdown(rows: Sequence[dict[str, Any]], escape: bool = False) -> str:
    """What ``rows_to_markdown`` would be on pandas: the same cells, ``to_markdown`` (tabulate).

    ``escape`` adds our ``|`` → ``\\|`` (tabulate has none).
    """
    import pandas as pd

    head = T._head(False)
    cells = [[c.replace("|", "\\|") if escape else c for c in r] for r in T._display(rows)]
    frame = pd.DataFrame(cells, columns=head)
    align = ("left", "left", *["right"] * (len(head) - 2))
    return str(frame.to_markdown(index=False, disable_numparse=True, colalign=align)) + "\n"


def pandas_latex(rows: Sequence[dict[str, Any]], escape: Callable[[str], str]) -> str:
    """What ``rows_to_latex`` would be on pandas: ``Styler.to_latex(hrules=True)`` with ``escape``."""
    import pandas as pd

    head = T._head(False)
    frame = pd.DataFrame(
        [[escape(c) for c in r] for r in T._display(rows)], columns=[escape(h) for h in head]
    )
    return str(
        frame.style.hide(axis="index").to_latex(
            hrules=True, column_format="ll" + "r" * (len(head) - 2), position="t", position_float="centering"
        )
    )


def read_markdown(text: str) -> list[list[str]]:
    """Body cells of a GitHub table: split on unescaped ``|``, stripped, ``\\|`` unescaped."""
    lines = [ln for ln in text.splitlines() if ln.startswith("|")][2:]
    return [[c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", ln.strip())[1:-1]] for ln in lines]


_SAFE = re.compile(r"\\text(asciitilde|asciicircum|backslash)\{\}|\$\\pm\$")


def unescaped_tex(text: str) -> list[str]:
    """Specials of the input left raw in a LaTeX body (``&`` as a cell separator is fine)."""
    body = [ln.removesuffix(r" \\") for ln in text.splitlines() if ln.endswith(r" \\")]
    bad = []
    for ln in body:
        for cell in ln.split(" & "):
            for ch in "%$#_{}~^":
                if re.search(rf"(?<!\\){re.escape(ch)}", _SAFE.sub("", cell)):
                    bad.append(f"{ch!r} in {cell!r}")
    return bad


def best_time(fn: Callable[[], object], repeat: int = 20) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    rows = hostile_rows()
    ours_md, pd_md, pd_md_esc = T.rows_to_markdown(rows), pandas_markdown(rows), pandas_markdown(rows, True)
    ours_tex = T.rows_to_latex(rows)
    pd_tex = pandas_latex(rows, T.tex_escape)
    expected = T._display(rows)
    for name, md in (("ours", ours_md), ("pandas", pd_md), ("pandas + our | escaping", pd_md_esc)):
        ok = read_markdown(md) == expected
        print(f"--- Markdown, {name}: {len(md.encode())} bytes; cells read back intact: {ok}\n{md}")
    for name, tex in (("ours", ours_tex), ("pandas Styler + our escaping", pd_tex)):
        print(
            f"--- LaTeX, {name}: {len(tex.encode())} bytes; unescaped: {unescaped_tex(tex) or 'none'}\n{tex}"
        )
    print(f"--- LaTeX: Styler + our escaping is byte-identical to ours: {pd_tex == ours_tex}")
    import pandas as pd

    frame = pd.DataFrame(expected, columns=T._head(False))
    builtin = str(frame.style.hide(axis="index").format(escape="latex").to_latex(hrules=True))
    print(
        f"--- LaTeX, pandas escape='latex' (cells only; headers and caption unescaped): "
        f"unescaped: {unescaped_tex(builtin) or 'none'}"
    )
    print(
        f"write time, Markdown: ours {1e6 * best_time(lambda: T.rows_to_markdown(rows)):.0f} µs, "
        f"pandas {1e6 * best_time(lambda: pandas_markdown(rows)):.0f} µs"
    )
    print(
        f"write time, LaTeX: ours {1e6 * best_time(lambda: T.rows_to_latex(rows)):.0f} µs, "
        f"pandas {1e6 * best_time(lambda: pandas_latex(rows, T.tex_escape)):.0f} µs"
    )
    code = "import time; t = time.perf_counter(); import pandas; print(time.perf_counter() - t)"
    runs = [
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        for _ in range(5)
    ]
    imp = min(float(r.stdout) for r in runs)
    print(f"import pandas in a fresh process: {imp:.3f} s (best of 5)")


if __name__ == "__main__":
    main()

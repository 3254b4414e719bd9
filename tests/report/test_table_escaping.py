"""Every Markdown/LaTeX table escapes the characters a group, task or model name may hold.

Names come from the data (a local benchmark's task ``a~b``, a metadata value ``PAS | silver``), so
each writer must escape LaTeX's specials (``\\ & % $ # _ { } ~ ^``) and Markdown's ``|``; ``±``
becomes ``$\\pm$`` (pdfLaTeX without a Unicode setup rejects the raw character). These are the
properties compared against pandas (``bench/bench_tables.py``): tabulate does not escape
``|``, and pandas' ``escape="latex"`` leaves headers and captions raw.
"""

from __future__ import annotations

import math
import re
from typing import Any

from scopebench.paper.tables import (
    OURS,
    Cell,
    Column,
    PaperRow,
    PaperTable,
    table_to_latex,
    table_to_markdown,
)
from scopebench.report.tables import rows_to_latex, rows_to_markdown, tex_escape

_ROW = {"n": 40, "correct": 21, "denominator": 40, "accuracy": 0.525, "ci_low": 0.3695, "ci_high": 0.6756,
        "unparsed": 2, "errors": 1, "missing_image": 0, "missing_response": 0}  # fmt: skip


def _rows(*groups: str) -> list[dict[str, Any]]:
    return [{"section": "task", "group": g, **_ROW} for g in groups]


def test_tex_escape_of_each_special() -> None:
    assert tex_escape(r"a\b") == r"a\textbackslash{}b"  # not "\textbackslash\{\}"
    assert tex_escape("&%$#_{}") == r"\&\%\$\#\_\{\}"
    assert tex_escape("~^") == r"\textasciitilde{}\textasciicircum{}"
    assert tex_escape("62.68 ± 0.35") == r"62.68 $\pm$ 0.35"
    assert tex_escape("μ-Bench [37.0, 67.6]") == "μ-Bench [37.0, 67.6]"  # brackets need nothing


def test_run_latex_escapes_every_special_of_a_group_name() -> None:
    tex = rows_to_latex(
        _rows("task=a~b^c\\d", "subset=H&E 40% crop_1", "task=cost $5 #1 {x}"), caption="spur_x"
    )
    lines = [ln for ln in tex.splitlines() if ln.startswith("task &")]
    assert lines == [
        r"task & task=a\textasciitilde{}b\textasciicircum{}c\textbackslash{}d & 40 & 52.5\% & [37.0, 67.6] & 2 & 1 & 0 & 0 \\",
        r"task & subset=H\&E 40\% crop\_1 & 40 & 52.5\% & [37.0, 67.6] & 2 & 1 & 0 & 0 \\",
        r"task & task=cost \$5 \#1 \{x\} & 40 & 52.5\% & [37.0, 67.6] & 2 & 1 & 0 & 0 \\",
    ]
    assert r"\caption{spur\_x}" in tex and r"95\% CI" in tex


def test_run_markdown_escapes_pipes_and_reads_back() -> None:
    md = rows_to_markdown(_rows("metadata:stain=PAS | silver"))
    [line] = [ln for ln in md.splitlines() if ln.startswith("| task")]
    assert line == r"| task | metadata:stain=PAS \| silver | 40 | 52.5% | [37.0, 67.6] | 2 | 1 | 0 | 0 |"
    cells = re.split(r"(?<!\\)\|", line)[1:-1]
    assert len(cells) == 9  # a raw "|" would make it 10 and shift every number one column right


def _paper_table() -> PaperTable:
    cols = [Column("task=a|b", "", "a|b"), Column("task=c_d", "", "c_d"), Column("overall", "", "overall")]
    ours = PaperRow("m~1 & co", OURS, {
        "task=a|b": Cell(50.0, 40.0, 60.0, n=10, method="wilson"),
        "task=c_d": Cell(25.0, 10.0, 45.0, n=10, method="wilson"),
        "overall": Cell(37.5, 30.0, 45.0, n=20, method="wilson"),
    })  # fmt: skip
    pub = PaperRow("GPT-4o", "published: Table 6", {"overall": Cell(62.68, n=None, halfwidth=0.35)})
    return PaperTable("local", cols, [ours, pub], ["wilson"], ["wrong"])


def test_paper_markdown_escapes_pipes_in_headers_and_cells() -> None:
    md = table_to_markdown(_paper_table())
    lines = [ln for ln in md.splitlines() if ln.startswith("|")]
    assert all(len(re.split(r"(?<!\\)\|", ln)[1:-1]) == 5 for ln in lines)  # model, source, 3 columns
    assert r"a\|b" in lines[0] and "c_d" in lines[0]
    assert "**50.0** [40.0, 60.0]" in lines[2] and "62.68 ± 0.35" in lines[3]


def test_paper_latex_escapes_headers_labels_and_published_plus_minus() -> None:
    tex = table_to_latex(_paper_table())
    assert r"a|b & c\_d & overall" in tex  # "|" is an ordinary character in LaTeX text
    assert r"m\textasciitilde{}1 \& co & ours & \textbf{50.0} [40.0, 60.0]" in tex
    assert r"GPT-4o & published: Table 6 & – & – & 62.68 $\pm$ 0.35 \\" in tex
    assert not math.isnan(_paper_table().rows[0].cells["overall"].value)

"""The models × benchmarks summary of `table` and `report`, and runs on different item sets."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pandas as pd
import pytest

from helpers import FIXTURES
from scopebench.cli import main
from scopebench.paper.summary import build_summary, model_labels
from scopebench.paper.tables import build_paper_tables, table_to_latex, table_to_markdown
from scopebench.results import Results
from scopebench.store import load_run

DOC = Path(__file__).resolve().parents[2] / "docs" / "tables.md"


def _organelles(folder: Path) -> None:
    """A three-question Hugging Face dataset (embedded images) saved with ``save_to_disk``."""
    import io

    from datasets import Dataset, Features, Image, List, Value
    from PIL import Image as PILImage

    def cell(width: int, height: int) -> dict[str, object]:
        buf = io.BytesIO()
        PILImage.new("RGB", (width, height), (120, 30, 200)).save(buf, format="PNG")
        return {"bytes": buf.getvalue(), "path": None}

    feats = Features({"image": Image(), "question": Value("string"), "choices": List(Value("string")),
                      "answer": Value("int64")})  # fmt: skip
    Dataset.from_dict(
        {
            "image": [cell(6, 4), cell(5, 5), cell(4, 6)],
            "question": ["Which organelle is green?", "Which stain is it?", "How many nuclei?"],
            "choices": [["nucleus", "mitochondrion", "golgi"], ["H&E", "PAS"], ["1", "2", "3", "4"]],
            "answer": [1, 0, 3],
        },
        features=feats,
    ).save_to_disk(str(folder))


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The docs' commands run in a folder holding their ``bench/`` data."""
    import datasets

    root = tmp_path_factory.mktemp("summary")
    shutil.copytree(FIXTURES / "local", root / "bench")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(datasets.config, "HF_DATASETS_CACHE", str(root / "hf-cache"))
        mp.chdir(root)
        _organelles(root / "bench" / "organelles")
        doc = DOC.read_text(encoding="utf-8")
        section = doc[doc.index("## Across benchmarks") :]
        commands = [ln for ln in re.search(r"```bash\n(.*?)```", section, re.S)[1].splitlines()]  # type: ignore[index]
        assert len(commands) == 5
        for command in commands:
            assert main(["-q", *shlex.split(command)[1:]]) == 0, command
    return root


def test_docs_summary_is_what_table_writes(workdir: Path) -> None:
    """docs/tables.md's example: its printed table is the summary.md the commands write.

    Catches a summary that drifts from the docs (columns, cells, bold) and `report` not writing it.
    """
    doc = DOC.read_text(encoding="utf-8")
    section = doc[doc.index("## Across benchmarks") :]
    shown = re.search(r"```text\n(.*?)```", section, re.S)[1]  # type: ignore[index]
    written = (workdir / "tables" / "summary.md").read_text(encoding="utf-8")
    assert shown in written
    assert (workdir / "reports" / "summary.md").read_text(encoding="utf-8") == written
    csv = pd.read_csv(workdir / "tables" / "summary.csv")
    assert list(csv.columns[2:6]) == [
        "local (items.jsonl)",
        "local (items.jsonl) low",
        "local (items.jsonl) high",
        "local (items.jsonl) n",
    ]
    assert csv["local (items.jsonl) n"].tolist() == [4, 4]


def test_different_item_sets_are_flagged_not_ranked(workdir: Path) -> None:
    """A 3-item and a 4-item run of one benchmark: no bold in that column, a warning, n per row.

    Catches the best bolded across runs that answered different questions.
    """
    data = str(workdir / "bench" / "items.jsonl")
    assert main(["-q", "run", "--bench", "local", "--data", data, "--model", "frequent",
                 "--limit", "3", "--out", str(workdir / "runs" / "trial" / "frequent")]) == 0  # fmt: skip
    runs = [workdir / "runs" / "local" / "random", workdir / "runs" / "trial" / "frequent"]
    results = [Results.from_run(load_run(r)) for r in runs]
    labels = model_labels(results)
    (local,) = build_paper_tables(results, labels)
    assert [c.key for c in local.mixed()][-1] == "overall" and local.best().get("overall") is None
    md = table_to_markdown(local)
    assert "Warning: " in md and "ours (n=4)" in md and "ours (n=3)" in md
    # Columns of one item set still rank: "counting" was answered by the 4-item run only.
    assert local.best() == {"task=counting": {0}}
    summary = build_summary([*results, Results.from_run(load_run(workdir / "runs" / "hf" / "random"))],
                            [*labels, "random"])  # fmt: skip
    assert [c.key for c in summary.mixed()] == ["local (items.jsonl)"]
    latex = table_to_latex(summary)
    # Only the hf column (one run) has a best value; none of the mixed local column is bold.
    assert latex.count(r"\textbf{") == 1
    assert "n=3" in latex and "n=4" in latex

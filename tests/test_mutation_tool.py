"""bench/mutation.py (`make mutation`): the score table and the check for stale equivalent entries.

mutmut names a mutant by its function and a running number, so editing a function renumbers its
mutants; an EQUIVALENT entry judged on the old code may then name another mutant, and the score
would count a killed or new mutant as "equivalent". These tests build the results files mutmut
3.8 writes (``mutants/src/**/<module>.py.meta``) by hand.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("mutmut")  # the dev extra, as `make mutation` needs it

KILLED, SURVIVED = 1, 0  # mutmut's exit codes: pytest failed (killed) / passed (survived)


def _tool() -> ModuleType:
    path = Path(__file__).parents[1] / "bench" / "mutation.py"
    spec = importlib.util.spec_from_file_location("mutation_tool", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _meta(root: Path, module: str, codes: dict[str, int | None]) -> None:
    meta = root / "mutants" / "src" / "scopebench" / (module.replace(".", "/") + ".py.meta")
    meta.parent.mkdir(parents=True, exist_ok=True)
    meta.write_text(json.dumps({"exit_code_by_key": codes, "durations_by_key": {}}), encoding="utf-8")


def test_stale_equivalent_entries_are_named_with_what_they_name_now(tmp_path: Path) -> None:
    tool = _tool()
    base = "scopebench.parsing.choice.x__f__mutmut_"
    tool.EQUIVALENT.clear()
    tool.EQUIVALENT.update(
        {f"{base}1": "a", f"{base}2": "b", f"{base}3": "c", f"{base}4": "d", f"{base}9": "e"}
    )
    # 1 still survives, 2 timed out, 4 is not run yet (no verdict: not conclusive); 3 is killed and 9 gone
    _meta(
        tmp_path,
        "parsing.choice",
        {f"{base}1": SURVIVED, f"{base}2": 36, f"{base}3": KILLED, f"{base}4": None},
    )
    stale = tool.stale_equivalents(["parsing.choice", "parsing.judge"], tmp_path)
    assert stale == [(f"{base}3", "killed"), (f"{base}9", "no such mutant")]


def test_summary_fails_on_stale_entries_and_counts_the_rest(tmp_path: Path, monkeypatch, capsys) -> None:
    tool = _tool()
    base = "scopebench.parsing.judge.x_f__mutmut_"
    tool.EQUIVALENT.clear()
    tool.EQUIVALENT[f"{base}2"] = "judged equivalent"
    _meta(tmp_path, "parsing.judge", {f"{base}1": KILLED, f"{base}2": SURVIVED, f"{base}3": SURVIVED})
    monkeypatch.setattr(tool, "__file__", str(tmp_path / "bench" / "mutation.py"))
    assert tool.main(["--summary", "--module", "parsing.judge"]) == 0
    out = capsys.readouterr().out
    # 1 killed, 1 survived, 1 equivalent: score 1 / 2 judged = 50%, killed/all 1 / 3
    assert "| parsing.judge | 3 | 1 | 1 | 0 | 0 | 0 | 1 | 33.3% | 50.0% |" in out
    _meta(tmp_path, "parsing.judge", {f"{base}1": KILLED, f"{base}2": KILLED, f"{base}3": SURVIVED})
    assert tool.main(["--summary", "--module", "parsing.judge"]) == 1
    assert f"{base}2: killed" in capsys.readouterr().out

"""The package's shape: function-local imports of our own modules, console output, layer contracts.

import-linter (`make lint`, pyproject ``[tool.importlinter]``) checks that dependencies flow
downward. It counts a function-local import like any other, so a lazy import cannot hide an upward
dependency; but lazy imports still hide a module's real dependencies from its reader. This test
allows them only where the allow-list below says why.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "scopebench"

#: Modules whose imports of ``scopebench.*`` modules may stay inside functions, and why.
#: A key is a module name; a key ending in ``.*`` covers every module whose name starts so.
ALLOWED_LOCAL_IMPORTS: dict[str, str] = {
    # The CLI imports a command's modules when that command runs, so `scopebench --help` and a
    # mistyped command answer without loading the engine, pandas, scikit-learn or the review app's
    # SQLAlchemy/FastAPI (the review extra).
    "scopebench.cli.*": "command modules load when their command runs",
    # `build run` validates every section and recognises cached outputs before any step runs; a
    # step's module (datasets, scipy, the engine behind the filter's gates) loads only when that
    # step's configuration class is needed or the step runs (tests/cli/test_import_cost.py).
    "scopebench.curate.pipeline": "a step's module loads when it runs (or its section is validated)",
}

#: Imported modules that may be imported inside a function anywhere, and why.
ALLOWED_LOCAL_TARGETS: dict[str, str] = {
    # matplotlib costs about a second to import; only code that draws a figure pays for it.
    "scopebench.report.plots": "matplotlib loads only when a figure is drawn",
}

#: (module, imported module) pairs allowed for a reason of their own.
ALLOWED_LOCAL_PAIRS: dict[tuple[str, str], str] = {
    ("scopebench.review.app", "scopebench.review"): (
        "the route modules import the app's dependencies (DB, auth, state); create_app registers them"
    ),
    ("scopebench.curate.ingestion.cache", "scopebench.curate.ingestion.pair_scores"): (
        "`build run` imports the cache to recognise unchanged inputs without NumPy; the pair scores "
        "(NumPy arrays) load only when ingest reads or writes them"
    ),
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    ids: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            ids.update(id(n) for n in ast.walk(node))
    return ids


def local_first_party_imports(path: Path) -> list[tuple[int, str]]:
    """``(line, imported module)`` of each ``scopebench`` import inside a function of ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _type_checking_nodes(tree)
    found: dict[int, tuple[int, str]] = {}
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(fn):
            if id(node) in skip:
                continue
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for name in names:
                if name == "scopebench" or name.startswith("scopebench."):
                    found[id(node)] = (node.lineno, name)
    return sorted(found.values())


def _module_allowed(module: str) -> str | None:
    """The allow-list key covering ``module`` (``pkg.*`` covers ``pkg`` and its submodules)."""
    for key in ALLOWED_LOCAL_IMPORTS:
        if module == key or (key.endswith(".*") and (module == key[:-2] or module.startswith(key[:-1]))):
            return key
    return None


def _allowed(module: str, target: str) -> bool:
    if _module_allowed(module) or target in ALLOWED_LOCAL_TARGETS:
        return True
    return (module, target) in ALLOWED_LOCAL_PAIRS


def _sources() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "migrations" not in p.parts)


def test_function_local_first_party_imports_are_only_the_allowed_ones() -> None:
    offenders = [
        f"{path.relative_to(SRC)}:{line} imports {target}"
        for path in _sources()
        for line, target in local_first_party_imports(path)
        if not _allowed(_module_name(path), target)
    ]
    assert not offenders, "import these at module level (or allow-list them with the reason):\n" + "\n".join(
        offenders
    )


def test_every_allow_list_entry_is_still_used() -> None:
    # A stale entry would let a new lazy import in unnoticed.
    used_modules, used_targets, used_pairs = set(), set(), set()
    for path in _sources():
        module = _module_name(path)
        for _, target in local_first_party_imports(path):
            used_modules.add(_module_allowed(module))
            used_targets.add(target)
            used_pairs.add((module, target))
    assert set(ALLOWED_LOCAL_IMPORTS) <= used_modules
    assert set(ALLOWED_LOCAL_TARGETS) <= used_targets
    assert set(ALLOWED_LOCAL_PAIRS) <= used_pairs


def test_the_scan_sees_nested_and_plain_imports_and_skips_type_checking(tmp_path: Path) -> None:
    src = tmp_path / "m.py"
    src.write_text(
        "from typing import TYPE_CHECKING\n"
        "from scopebench.errors import ScopebenchError\n"  # module level: not counted
        "def f():\n"
        "    import scopebench.engine\n"
        "    if TYPE_CHECKING:\n"
        "        from scopebench.store import RunData\n"
        "    def g():\n"
        "        from scopebench.report import tables\n"
        "    import json\n"
        "class C:\n"
        "    async def h(self):\n"
        "        from scopebench import items\n"
    )
    assert local_first_party_imports(src) == [
        (4, "scopebench.engine"),
        (8, "scopebench.report"),
        (12, "scopebench"),
    ]


def test_only_the_cli_creates_a_console() -> None:
    # import-linter cannot forbid a submodule of an external package (it sees `rich` whole, and
    # report/tables.py builds rich tables for the CLI to print), so rich.console is checked here.
    offenders = []
    for path in _sources():
        if _module_name(path) == "scopebench.cli" or _module_name(path).startswith("scopebench.cli."):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.ImportFrom) and node.module == "rich.console") or (
                isinstance(node, ast.Import) and any(a.name == "rich.console" for a in node.names)
            ):
                offenders.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert not offenders


def test_import_linter_contracts_hold() -> None:
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    if lint is None:
        pytest.skip("import-linter is not installed (the dev extra); `make lint` runs it")
    done = subprocess.run(
        [lint, "--no-cache", "--no-logo"],
        cwd=SRC.parent,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(SRC)},
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "broken" in done.stdout and "0 broken" in done.stdout

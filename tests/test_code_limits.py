"""Size limits of the source: no function over 80 lines, no module over 800 (``make lint`` runs this).

Lengths are read from the AST (a function's ``end_lineno - lineno + 1``, its docstring and
comments included), so a formatter cannot hide a long function. Alembic's generated migrations
are left out. An exception is an entry of the allow-lists below, with the reason; an entry whose
function or module is back under the limit fails too, so the lists only shrink.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
MAX_FUNCTION_LINES = 80
MAX_MODULE_LINES = 800

#: ``path relative to src:function name`` → why it may be longer than MAX_FUNCTION_LINES.
FUNCTION_ALLOWED: dict[str, str] = {}

#: ``path relative to src`` → why it may be longer than MAX_MODULE_LINES.
MODULE_ALLOWED: dict[str, str] = {}


def _sources() -> list[Path]:
    return sorted(p for p in SRC.rglob("*.py") if "migrations" not in p.parts)


def _long_functions() -> dict[str, int]:
    """``path:function`` → its length in lines, for every function over the limit."""
    out: dict[str, int] = {}
    for path in _sources():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                assert node.end_lineno is not None
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    out[f"{path.relative_to(SRC).as_posix()}:{node.name}"] = length
    return out


def _long_modules() -> dict[str, int]:
    out = {}
    for path in _sources():
        n = len(path.read_text(encoding="utf-8").splitlines())
        if n > MAX_MODULE_LINES:
            out[path.relative_to(SRC).as_posix()] = n
    return out


def test_no_function_over_the_limit_outside_the_allow_list() -> None:
    """Catches a function grown past 80 lines (split it by responsibility, or list it with a reason)."""
    over = {k: n for k, n in _long_functions().items() if k not in FUNCTION_ALLOWED}
    assert not over, f"functions over {MAX_FUNCTION_LINES} lines (split them): {over}"


def test_no_module_over_the_limit_outside_the_allow_list() -> None:
    """Catches a module grown past 800 lines (split it into a package of modules)."""
    over = {k: n for k, n in _long_modules().items() if k not in MODULE_ALLOWED}
    assert not over, f"modules over {MAX_MODULE_LINES} lines (split them): {over}"


def test_the_allow_lists_hold_only_what_is_still_over_and_say_why() -> None:
    """Catches a stale entry (the function is back under the limit) that would let it grow back unseen."""
    long_functions, long_modules = _long_functions(), _long_modules()
    stale = [k for k in FUNCTION_ALLOWED if k not in long_functions]
    stale += [k for k in MODULE_ALLOWED if k not in long_modules]
    assert not stale, f"no longer over the limit: remove from the allow-list: {stale}"
    assert all(reason.strip() for reason in [*FUNCTION_ALLOWED.values(), *MODULE_ALLOWED.values()])


def test_the_check_sees_a_long_function(tmp_path: Path) -> None:
    """The measure itself: a function of 81 lines counts as over, one of 80 does not."""
    body = "\n".join(f"    x{i} = {i}" for i in range(79))
    for n_lines, over in ((81, True), (80, False)):
        text = "def f():\n" + body + "\n" + "    return 0\n" * (n_lines - 80)
        node = ast.parse(text).body[0]
        assert node.end_lineno is not None
        assert (node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES) is over

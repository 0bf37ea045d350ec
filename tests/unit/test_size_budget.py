"""The library keeps the size budget of CONVENTIONS.md: modules under 400 lines (median under
150), Python and Lua functions of 50 lines at most, so a newcomer reads any unit whole."""

from __future__ import annotations

import ast
import re
import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYTHON = sorted([*(ROOT / "streamsaver").rglob("*.py"), *(ROOT / "projectors").rglob("*.py")])
LUA = sorted((ROOT / "streamsaver" / "scripts").glob("*.lua"))
_LUA_FUNCTION = re.compile(r"^(\s*)(local\s+)?function\b|^(\s*)local\s+\w+\s*=\s*function\b")


def _python_functions(path: Path) -> list[tuple[str, int]]:
    tree = ast.parse(path.read_text())
    return [
        (f"{path.relative_to(ROOT)}:{node.lineno} {node.name}", node.end_lineno - node.lineno + 1)  # type: ignore[operator]
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]


def _lua_functions(path: Path) -> list[tuple[str, int]]:
    """Functions whose body ends with an ``end`` at the indentation of their ``function`` line
    (how the scripts are written); a one-line function is one line."""
    lines = path.read_text().splitlines()
    found = []
    for i, line in enumerate(lines):
        match = _LUA_FUNCTION.match(line)
        if not match or line.rstrip().endswith(" end"):
            continue
        indent = len(line) - len(line.lstrip())
        end = next(j for j in range(i + 1, len(lines)) if lines[j].rstrip() == " " * indent + "end")
        found.append((f"{path.relative_to(ROOT)}:{i + 1}", end - i + 1))
    return found


def test_modules_stay_under_400_lines_with_a_median_under_150() -> None:
    sizes = {str(p.relative_to(ROOT)): len(p.read_text().splitlines()) for p in PYTHON}
    assert {name: n for name, n in sizes.items() if n >= 400} == {}
    assert statistics.median(n for name, n in sizes.items() if not name.endswith("__init__.py")) < 150


def test_no_python_or_lua_function_is_longer_than_50_lines() -> None:
    python = [f for path in PYTHON for f in _python_functions(path)]
    lua = [f for path in LUA for f in _lua_functions(path)]
    assert len(python) > 500 and len(lua) > 30, "the scan finds the library's functions"
    assert [f for f in python + lua if f[1] > 50] == []

"""The library passes its own static checks: ruff (the library, its tests and benchmarks), and
mypy in strict mode (settings in pyproject.toml), so typing and lint hold on every CI run, not
only when someone runs them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHECKED = ["streamsaver", "projectors", "tests", "benchmarks"]


@pytest.mark.parametrize(
    "command",
    [["ruff", "check", *CHECKED], ["mypy", "--cache-dir", str(ROOT / ".mypy_cache")]],
    ids=["ruff", "mypy"],
)
def test_the_library_passes_its_static_checks(command: list[str]) -> None:
    run = subprocess.run([sys.executable, "-m", *command], check=False, cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr

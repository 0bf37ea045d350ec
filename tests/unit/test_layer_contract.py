"""The layer contracts (import-linter, `[tool.importlinter]` in pyproject.toml) hold for the
library, and they bite: an import planted across a layer in a copy of the tree breaks them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _lint_imports(tree: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    code = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"
    return subprocess.run(
        [sys.executable, "-c", code, "--no-cache"], cwd=tree, env=env, capture_output=True, text=True, check=False
    )


def test_the_library_keeps_its_layer_contracts() -> None:
    run = _lint_imports(ROOT)
    assert run.returncode == 0, run.stdout + run.stderr


@pytest.mark.parametrize(
    ("module", "planted", "broken"),
    [
        ("streamsaver/log/codec.py", "import redis", "do no I/O"),
        ("projectors/full.py", "import streamsaver.checkpoints.core", "Layers point one way"),
        ("streamsaver/ops/verify.py", "import streamsaver.checkpoints.reads", "not on the saver's internals"),
    ],
)
def test_an_import_across_a_layer_breaks_a_contract(tmp_path: Path, module: str, planted: str, broken: str) -> None:
    for package in ("streamsaver", "projectors"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / module
    target.write_text(target.read_text() + f"\n{planted}  # planted by the test\n")
    run = _lint_imports(tmp_path)
    assert run.returncode != 0, run.stdout
    importer = module.removesuffix(".py").replace("/", ".")
    imported = planted.removeprefix("import ")
    assert broken in run.stdout and f"{importer} -> {imported}" in run.stdout, run.stdout

"""Every ```python block of README.md and docs/*.md runs as written (issue 22, item 1).

Each block runs in a fresh interpreter, with ``redis://localhost:6379`` (the address of
`streamsaver server`, which the snippets name for a reader) replaced by the test server's URL.
A block that cannot run here is marked in the markdown by a comment on the line before it,
``<!-- snippet: skip (why) -->``, and is reported as skipped with that reason.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parents[2]
READER_URL = "redis://localhost:6379"
BLOCK = re.compile(r"^(?:<!-- snippet: skip \((?P<skip>[^)]*)\) -->\n)?```python\n(?P<code>.*?)^```", re.M | re.S)


class Snippet(NamedTuple):
    where: str
    code: str
    skip: str | None


def snippets() -> list[Snippet]:
    found = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = path.read_text()
        for match in BLOCK.finditer(text):
            line = text.count("\n", 0, match.start("code"))
            found.append(Snippet(f"{path.relative_to(ROOT)}:{line}", match["code"], match["skip"]))
    return found


def test_the_docs_have_python_snippets() -> None:
    places = {s.where.split(":")[0] for s in snippets()}
    assert {"README.md", "docs/getting-started.md", "docs/subscribers.md", "docs/worker.md"} <= places


@pytest.mark.parametrize("snippet", snippets(), ids=lambda s: s.where)
def test_snippet_runs(snippet: Snippet, redis_url: str, tmp_path: Path) -> None:
    if snippet.skip:
        pytest.skip(f"{snippet.where} is marked not to run here: {snippet.skip}")
    code = snippet.code.replace(READER_URL, redis_url.removesuffix("/0"))
    command = [sys.executable, "-c", code]
    done = subprocess.run(command, check=False, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"the python block at {snippet.where} failed:\n{done.stderr[-3000:]}"

"""What the store's CLI tests share: a store's first model, running the CLI, reading the items view."""

from __future__ import annotations

from typing import Any

import pytest
from fake_embeddings import DIMS, vector
from langchain_core.embeddings import Embeddings

from streamsaver.cli.main import main


class Old(Embeddings):
    model = "old-v1"

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [vector(text, 1.0) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        return vector(text, 1.0)


INDEX: Any = {"dims": DIMS, "embed": Old(), "fields": ["text"]}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def items(client: Any, prefix: str) -> dict[bytes, Any]:
    """Every key of the items view with its content (documents, member sets, the namespace registry)."""
    readers = {b"set": lambda key: sorted(client.smembers(key)), b"hash": client.hgetall,
               b"zset": lambda key: client.zrange(key, 0, -1, withscores=True)}
    found = {}
    for key in sorted(client.scan_iter(match=f"{prefix}:items:*")):
        read = readers.get(client.type(key), lambda key: client.execute_command("JSON.GET", key))
        found[key] = read(key)
    return found

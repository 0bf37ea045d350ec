"""Deterministic embeddings the ``streamsaver reembed`` tests name on the command line
(``--embed fake_embeddings:...``): no model download, the same vector for the same text."""

from __future__ import annotations

from typing import Any

from langchain_core.embeddings import Embeddings

DIMS = 4


def vector(text: str, weight: float) -> list[float]:
    """The embedding of `text` under a model of `weight`."""
    return [weight, float(len(text)), 1.0, float(text.count("a"))]


class Weighted(Embeddings):
    """A named model; a class with no required argument (the CLI instantiates it)."""

    model = "weighted-v2"

    def __init__(self, weight: float = 2.0) -> None:
        self.weight = weight

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [vector(text, self.weight) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        return vector(text, self.weight)


def third_model(texts: list[str]) -> list[list[float]]:
    """An embedding function (texts -> vectors): the CLI passes it as it is."""
    return [vector(text, 3.0) for text in texts]


def make_weighted() -> Weighted:
    """A factory taking no arguments: the CLI calls it once."""
    return Weighted(5.0)


INDEX: dict[str, Any] = {"dims": DIMS, "embed": Weighted(), "fields": ["text"]}
"""An application's IndexConfig, named whole with ``--index fake_embeddings:INDEX``."""

NOT_AN_INDEX = {"dims": DIMS}

"""The store benchmark's data: items with a deterministic, clustered embedding (no model download).

An item's text is ``"topic T fact I"``; its vector is the centroid of topic T plus noise seeded
by I, normalised. A query's text is ``"topic T query J"``: the centroid plus other noise, so the
exact nearest items are mostly (not only) of its topic, as with a real model. Any other text gets
a vector seeded by its digest. The same text always gives the same vector, in every process.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

TOPICS = 100
NAMESPACES = 100
BUCKETS = 10
"""`bucket` takes BUCKETS values: a filter on one keeps 10% of the items."""
_TEXT = re.compile(r"topic (\d+) (fact|query) (\d+)")


class ClusteredEmbeddings(Embeddings):
    """Deterministic clustered vectors of `dims` dimensions (see the module docstring)."""

    def __init__(self, dims: int = 64, spread: float = 1.0) -> None:
        self.dims, self.spread = dims, spread
        self.centroids = np.random.default_rng(0).standard_normal((TOPICS, dims))
        # A store's put costs one embedding of the item's text in every store alike: cached, so the
        # figures show what the stores themselves cost.
        self._listed = lru_cache(maxsize=None)(lambda text: self.vector(text).tolist())

    def vector(self, text: str) -> np.ndarray:
        """The unit vector of `text`."""
        found = _TEXT.fullmatch(text)
        if found is None:
            raw = np.random.default_rng(zlib.crc32(text.encode())).standard_normal(self.dims)
        else:
            topic, kind, n = int(found[1]), found[2], int(found[3])
            seed = n if kind == "fact" else 1_000_000_000 + n
            noise = np.random.default_rng(seed).standard_normal(self.dims)
            raw = self.centroids[topic % TOPICS] + self.spread * noise
        return raw / np.linalg.norm(raw)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._listed(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        return list(self._listed(text))


def namespace(i: int) -> tuple[str, str]:
    """The namespace of item `i` (one of NAMESPACES users)."""
    return ("users", f"u{i % NAMESPACES}")


def key(i: int) -> str:
    return f"m{i}"


def value(i: int) -> dict[str, Any]:
    """Item `i`'s value: an embedded text, its topic, a bucket (10% each) and a number."""
    return {"text": f"topic {(i * 7) % TOPICS} fact {i}", "topic": (i * 7) % TOPICS, "bucket": i % BUCKETS, "n": i}


def items(n: int) -> Iterator[tuple[tuple[str, str], str, dict[str, Any]]]:
    """The (namespace, key, value) of items 0 .. n-1."""
    for i in range(n):
        yield namespace(i), key(i), value(i)


def query(j: int) -> str:
    """The text of query `j`."""
    return f"topic {(j * 13) % TOPICS} query {j}"


def matrix(embeddings: ClusteredEmbeddings, n: int) -> np.ndarray:
    """The vectors of items 0 .. n-1, one row each (for exact brute force)."""
    return np.stack([embeddings.vector(value(i)["text"]) for i in range(n)])


def exact_top(embeddings: ClusteredEmbeddings, vectors: np.ndarray, text: str, k: int,
              bucket: int | None = None) -> set[str]:
    """The keys of the `k` items nearest `text` by cosine (of one `bucket` only, when given)."""
    scores = vectors @ embeddings.vector(text)
    if bucket is not None:
        scores = np.where(np.arange(len(vectors)) % BUCKETS == bucket, scores, -np.inf)
    return {key(int(i)) for i in np.argsort(-scores)[:k]}

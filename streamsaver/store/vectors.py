"""The store's vector index, without I/O: which texts of an item are embedded, the `Embed` step
a program yields for them (the shell's embedder answers it, before the write is sent: Lua cannot
call a model, and the log keeps the vectors so replay never re-embeds), and scores.

Scores follow LangGraph's PostgresStore for each metric: cosine ``1 - cosine distance``,
inner product the inner product, l2 ``1 - euclidean distance``. RediSearch reports ``1 - cos``,
``1 - ip`` and the squared euclidean distance, which `VectorIndex.score` converts.

The index holds float32 (or float16) numbers, so `VectorIndex.checked` rounds each embedding to
that precision and keeps the shortest decimal of each number (``0.68683404``, not
``0.6868340508821383``): the log entry and the item document carry half the digits, RedisJSON
parses half the text on every put, and the index reads exactly the numbers it would have read
from the long form. Replay reads the logged numbers back as they are.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, cast

import numpy as np
import orjson
from langgraph.store.base import IndexConfig, PutOp
from langgraph.store.base.embed import get_text_at_path, tokenize_path

from streamsaver.errors import ConfigurationError, InvalidInputError
from streamsaver.store.hybrid import text_fields

__all__ = ["HNSW_EF_RUNTIME", "Embed", "VectorIndex", "model_name"]

_METRICS = {"cosine": "cosine", "l2": "l2", "inner_product": "ip"}
HNSW_EF_RUNTIME = 80
"""The default ``ef_runtime`` of an HNSW index: recall@10 at 100,000 items (``benchmarks/store.py``)
was 0.596 at RediSearch's own 10, 0.924 at 40 and 0.994 at 80 (0.998 at 40 on 10,000 items)."""
_tokens = lru_cache(maxsize=1024)(tokenize_path)
"""A path's tokens (LangGraph's `tokenize_path`; `get_text_at_path` only reads them): the index's
paths recur in every put."""
_DATATYPES: dict[str, np.dtype[Any]] = {"float32": np.dtype("<f4"), "float16": np.dtype("<f2")}
"""The vector types an index may hold, and the little-endian numpy type of each."""


def model_name(config: Mapping[str, Any]) -> str:
    """The name of an index config's embedding: its ``model`` when the config names one, else
    the ``embed`` string (``"openai:text-embedding-3-small"``), else the embeddings object's
    ``model`` or ``model_name``, else the qualified name of its class or function."""
    embed = config.get("embed")
    named = config.get("model") or (embed if isinstance(embed, str) else None)
    named = named or getattr(embed, "model", None) or getattr(embed, "model_name", None)
    if isinstance(named, str) and named:
        return named
    kind = embed if callable(embed) and not hasattr(embed, "embed_documents") else type(embed)
    return f"{getattr(kind, '__module__', '?')}.{getattr(kind, '__qualname__', type(embed).__name__)}"


@dataclass(frozen=True)
class Embed:
    """A program step: the embeddings of `texts` (`query`: of one search query), from the
    shell's embedder, as lists of floats in order."""

    texts: tuple[str, ...]
    query: bool = False


@dataclass(frozen=True)
class VectorIndex:
    """A store's vector index: the dimensions, the paths embedded by default (``["$"]``: the
    whole value), the metric, the redisvl attributes of the index field, and the TEXT index
    fields of a hybrid search (`streamsaver.store.hybrid`; none: vectors alone)."""

    dims: int
    fields: tuple[str, ...]
    metric: str
    attrs: Mapping[str, Any]
    text: tuple[Mapping[str, Any], ...] = ()
    model: str = ""
    """The embedding's name, logged with every embedding it computes (`model_name`)."""

    @classmethod
    def of(cls, config: IndexConfig) -> VectorIndex:
        """The index `config` asks for (``dims``, ``fields``; ``distance_type`` cosine, l2 or
        inner_product; ``ann_index_config``: ``{"vector_type": "flat" | "hnsw", "m", ...,
        "datatype": "float32" | "float16"}``; ``text_fields``: paths ranked by BM25 too). An HNSW
        index's ``ef_runtime`` is `HNSW_EF_RUNTIME` unless given.

        Raises:
            ConfigurationError: no positive ``dims``, or an unknown metric, index type, datatype,
                or text field.
        """
        options = cast(Mapping[str, Any], config)
        dims, metric = options.get("dims"), options.get("distance_type", "cosine")
        ann = dict(options.get("ann_index_config") or {})
        algorithm = ann.pop("vector_type", "flat")
        datatype = ann.pop("datatype", "float32")
        if not isinstance(dims, int) or dims <= 0 or metric not in _METRICS or algorithm not in ("flat", "hnsw"):
            raise ConfigurationError(f"index needs positive int dims, a metric of {sorted(_METRICS)}, flat or hnsw")
        if datatype not in _DATATYPES:
            raise ConfigurationError(f"ann_index_config datatype is one of {sorted(_DATATYPES)}, not {datatype!r}")
        fields = tuple(options.get("fields") or ["$"])
        attrs = {"dims": dims, "distance_metric": _METRICS[metric], "algorithm": algorithm, "datatype": datatype}
        tunables = {k: v for k, v in ann.items() if k in ("m", "ef_construction", "ef_runtime", "epsilon")}
        if algorithm == "hnsw":
            tunables = {"ef_runtime": HNSW_EF_RUNTIME} | tunables
        return cls(dims, fields, metric, attrs | tunables, tuple(text_fields(options)), model_name(options))

    def texts(self, op: PutOp) -> list[str]:
        """The texts of a put to embed: of its own `index` paths, or the index's (none for
        ``index=False`` or a deletion)."""
        if op.value is None or op.index is False:
            return []
        paths = self.fields if op.index is None else op.index
        return [
            text for path in paths for text in get_text_at_path(op.value, path if path == "$" else _tokens(path))
        ]

    @property
    def dtype(self) -> np.dtype[Any]:
        """The numpy type of the index's numbers (little-endian float32 or float16)."""
        return _DATATYPES[str(self.attrs["datatype"])]

    def checked(self, vectors: Any, count: int) -> list[tuple[float, ...]]:
        """The embedder's answer as `count` vectors of `dims` finite numbers, each rounded to the
        index's precision and kept as its shortest decimal (see the module docstring).

        Raises:
            InvalidInputError: another count, a vector of other dimensions, or a number that is
                not finite (or overflows a float16 index).
        """
        try:
            array = np.asarray(vectors, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            if "inhomogeneous" in str(exc):  # vectors of several lengths
                raise InvalidInputError(f"the embedder returned vectors of other dimensions than {self.dims}") from exc
            raise InvalidInputError(f"the embedder returned a vector that is not numbers: {exc}") from exc
        found = len(array) if array.ndim else 0
        if found != count:
            raise InvalidInputError(f"the embedder returned {found} vectors for {count} texts")
        if count == 0:
            return []
        if array.ndim != 2 or array.shape[1] != self.dims:
            width = array.shape[1] if array.ndim == 2 else "other"
            raise InvalidInputError(f"the embedder returned a vector of {width} dimensions, not {self.dims}")
        with np.errstate(over="ignore"):
            array = array.astype(self.dtype)
        text = orjson.dumps(array, option=orjson.OPT_SERIALIZE_NUMPY)
        if b"null" in text:  # orjson writes a number that is not finite as null (cheaper than isfinite)
            raise InvalidInputError(f"the embedder returned a number that is not finite as {self.attrs['datatype']}")
        rows: list[list[float]] = orjson.loads(text)
        return [tuple(row) for row in rows]

    def blob(self, vector: Sequence[float]) -> bytes:
        """A query vector as the index reads it (the index's type, little-endian)."""
        return np.asarray(vector, dtype=np.float64).astype(self.dtype).tobytes()

    def score(self, distance: float) -> float:
        """The PostgresStore score of a RediSearch distance."""
        if self.metric == "l2":
            return 1.0 - math.sqrt(max(distance, 0.0))
        return 1.0 - distance

"""The embedding checks of the middleware that search by meaning (semantic cache, router, memory):
done once, at construction, so a misconfigured one fails before the agent runs."""

from __future__ import annotations

from typing import Any

from langgraph.store.base.embed import ensure_embeddings

from streamsaver.errors import MiddlewareConfigError

__all__ = ["checked_index", "checked_threshold"]


def checked_index(store: Any, who: str, *, probe: bool = True) -> dict[str, Any]:
    """The store's ``IndexConfig``, checked: present, cosine, and (with `probe`) its embeddings
    answer one probe text with ``dims`` numbers.

    Raises:
        MiddlewareConfigError: the store has no index (no embeddings), another distance, or the
            embeddings' dimensions differ from the index's.
    """
    index = getattr(store, "index_config", None)
    if not index or "embed" not in index:
        raise MiddlewareConfigError(
            f"{who} searches by meaning: make its store with index={{'dims': ..., 'embed': embeddings}} "
            "(the user's Embeddings; nothing is downloaded)")
    distance = index.get("distance_type", "cosine")
    if distance != "cosine":
        raise MiddlewareConfigError(f"{who} compares cosine distances; the store's index uses {distance!r}")
    if probe:
        vector = ensure_embeddings(index["embed"]).embed_query("streamsaver middleware probe")
        if len(vector) != index["dims"]:
            raise MiddlewareConfigError(
                f"{who}: the embeddings give {len(vector)} dimensions, the store's index declares {index['dims']}")
    return dict(index)


def checked_threshold(threshold: Any, who: str) -> float:
    """`threshold`, a cosine distance in (0, 2].

    Raises:
        MiddlewareConfigError: anything else.
    """
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 < threshold <= 2:
        raise MiddlewareConfigError(f"{who}: threshold is a cosine distance in (0, 2], not {threshold!r}")
    return float(threshold)


def distance(score: float | None) -> float:
    """The cosine distance of a search score (the store's score is ``1 - distance``)."""
    return 2.0 if score is None else 1.0 - score

"""Re-embedding: the explicit, logged operation that moves a store's items to a new embedding
model (replay never re-embeds: every put logs the vectors it was given, and the model's name).

`reembed` reads the items under a namespace prefix, a page of documents at a time, keeps those
with embeddings that another model computed (the ``m`` every embedded document names; every one
with ``everything``), embeds their texts again (at the paths they were embedded at: the put's own,
or the index's), and appends one `ItemPut` per item to its partition log: the same value, the
same ``updated_at`` (``at`` is the item's ``u``), the same deadline (``expires_ms``, its current
``PEXPIRETIME``), new vectors and the new model's name. Each page's append is a compare-and-set
on every item's document (``append_batch.lua``'s guards): an item written, deleted or expired
since it was read refuses the page with ``STALE``, and the page is read again. A refreshing read
that lands between the read and the append is undone (the deadline read before it is kept).

A new model of other dimensions needs a new index first: drop the items index (``FT.DROPINDEX``,
keeping the documents), set the store up with the new ``index``, then re-embed: until an item is
re-embedded, its old vectors keep it out of the new index.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import orjson
from langgraph.store.base import PutOp

from projectors.store import VIEW
from projectors.store_domain import STORE
from streamsaver.errors import ConcurrentChangeError, ConfigurationError
from streamsaver.log.append import append_batch_call
from streamsaver.log.codec import escape
from streamsaver.log.events import ItemPut
from streamsaver.log.program import Call, Program, Refused
from streamsaver.log.routing import Step
from streamsaver.store.core import StoreCore
from streamsaver.store.validation import check_labels
from streamsaver.store.vectors import Embed, VectorIndex

__all__ = ["ATTEMPTS", "PAGE", "reembed"]

log = logging.getLogger("streamsaver.store")
PAGE = 50
"""Items read, embedded and appended at a time (one compare-and-set append each page)."""
ATTEMPTS = 5
"""How many times a page is read again when writes keep racing it."""



def _text(value: Any) -> str:
    return value.decode("utf-8", "surrogatepass") if isinstance(value, bytes) else str(value)


def _due(body: dict[str, Any], index: VectorIndex, everything: bool) -> bool:
    return bool(body.get("e")) and (everything or body.get("m") != index.model)


def _events(
    index: VectorIndex, log_id: str, items: list[tuple[dict[str, Any], int]], vectors: list[tuple[float, ...]],
    writer: str = "",
) -> list[ItemPut]:
    """The puts that give `items` (each a document body and its deadline) their new vectors,
    logged by `writer` (the re-embedding store's)."""
    events, at = [], 0
    for body, deadline in items:
        paths = tuple(body["ep"]) if "ep" in body else None
        count = len(index.texts(PutOp(tuple(body["ns"]), body["k"], body["v"], body.get("ep"))))
        found, at = tuple(vectors[at : at + count]), at + count
        expires = deadline if body["t"] > 0 else 0
        events.append(ItemPut(log_id, tuple(body["ns"]), body["k"], body["v"], body["u"], body["t"], found,
                              index.model, paths, expires, writer))
    return events


def _page(
    core: StoreCore, index: VectorIndex, log_id: str, stems: Sequence[str], everything: bool, dry_run: bool = False
) -> Program[int]:
    """Re-embed the due items among `stems` of partition `log_id`; how many (`dry_run`: how
    many are due, nothing embedded or written)."""
    keys = core.keyspace.store(log_id)
    for _ in range(ATTEMPTS):
        reads: list[Step] = []
        for stem in stems:
            reads += [["JSON.GET", keys.item(stem), "$.i"], ["PEXPIRETIME", keys.item(stem)]]
        replies = yield Call(reads, core.load_scripts)
        due: list[tuple[str, bytes, dict[str, Any], int]] = []
        for stem, raw, deadline in zip(stems, replies[::2], replies[1::2], strict=True):
            if raw is not None and _due(body := orjson.loads(raw)[0], index, everything):
                due.append((stem, raw, body, int(deadline)))
        if not due or dry_run:
            return len(due)
        texts = [t for _, _, body, _ in due for t in index.texts(PutOp(tuple(body["ns"]), body["k"], body["v"],
                                                                         body.get("ep")))]
        vectors = index.checked((yield Embed(tuple(texts))), len(texts)) if texts else []
        events = _events(index, log_id, [(body, deadline) for _, _, body, deadline in due], vectors, core.writer)
        guards = [(keys.item(stem), "$.i", raw) for stem, raw, _, _ in due]
        try:
            yield Call([append_batch_call(STORE, events, core.keyspace, (VIEW,), guards)], core.load_scripts)
            return len(events)
        except Refused as exc:
            if not exc.starts("STALE"):
                raise
    raise ConcurrentChangeError(f"items of store partition {log_id} kept changing during {ATTEMPTS} attempts")


def reembed(
    core: StoreCore, prefix: Sequence[str] = (), everything: bool = False, *, dry_run: bool = False,
    progress: Callable[[int], None] | None = None,
) -> Program[int]:
    """Re-embed, with the store's embedding, every item under `prefix` (labels matched whole;
    empty: the whole store) whose embeddings another model computed (every embedded item with
    `everything`); the count of items re-embedded. Logged (``streamsaver.store``, INFO).
    `dry_run`: only count the items due (nothing embedded, nothing written). `progress(n)` is
    called after each page with the items it re-embedded (or found due).

    Raises:
        ConfigurationError: the store has no vector index.
        InvalidNamespaceError: an invalid label.
        InvalidInputError: the embedder's answer has the wrong count or dimensions.
        ConcurrentChangeError: writes kept racing a page (the pages before it are re-embedded).
    """
    index = core.vectors
    if index is None:
        raise ConfigurationError("reembed needs a store with an index (IndexConfig)")
    labels = check_labels(prefix)
    escaped = ".".join(escape(label) for label in labels)
    log_ids = ([core.keyspace.store_partition(labels[0])] if labels
               else [str(n) for n in range(core.keyspace.partitions)])
    done = 0
    for log_id in log_ids:
        [members] = yield Call([["SMEMBERS", core.keyspace.store(log_id).items]], core.load_scripts)
        stems = sorted(s for s in map(_text, members) if not labels or s.split(":", 1)[0] == escaped
                       or s.split(":", 1)[0].startswith(escaped + "."))
        for at in range(0, len(stems), PAGE):
            page = yield from _page(core, index, log_id, stems[at : at + PAGE], everything, dry_run)
            done += page
            if progress is not None and page:
                progress(page)
    if not dry_run:
        log.info("re-embedded %d items under %r with %s", done, labels, index.model)
    return done

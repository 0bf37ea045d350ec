"""Erasure: purging a namespace prefix (a user's memories) leaves nothing of it, its log
entries included (architecture invariant 9).

A prefix's items all live in one store partition (its first label's), so a purge is one atomic
``rewrite.lua`` call on that partition (`streamsaver.log.rewrite.erase_call`): the partition
log is rewritten without the entries of the prefix (every other entry under its own id, so a
replay still gives the same items), and the same call deletes the prefix's item documents
(their index entries and TTLs go with them), their members of the partition's item set, their
namespaces' counts and expiring stems (the namespace registry), and the feed pointers of the
erased entries. Labels match whole: ``("users", "alice")`` never
touches ``("users", "alicea")``. The call is guarded on the log's last id and retried when an
append raced it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langgraph.store.base import InvalidNamespaceError

from projectors.store import VIEW
from projectors.store_domain import STORE
from streamsaver.errors import ConcurrentChangeError
from streamsaver.log import setup
from streamsaver.log.codec import escape
from streamsaver.log.events import Event, ItemDeleted, ItemPut
from streamsaver.log.keys import StoreKeys, item_stem
from streamsaver.log.program import Call, Program, Refused
from streamsaver.log.rewrite import Entry, decode_log, erase_call, read_log
from streamsaver.log.routing import Step
from streamsaver.scripts import REWRITE
from streamsaver.store.core import StoreCore
from streamsaver.store.validation import check_labels

__all__ = ["ATTEMPTS", "purge", "under"]

ATTEMPTS = 5
"""How many times a purge rereads the log when appends keep racing it."""


def _reloads(core: StoreCore) -> Callable[[], Sequence[Step]]:
    return lambda: [*core.load_scripts(), *setup.load_scripts((REWRITE,), core.topology)]


def under(namespace: Sequence[str], prefix: Sequence[str]) -> bool:
    """Whether `namespace` is `prefix` or below it, label by label."""
    return tuple(namespace[: len(prefix)]) == tuple(prefix)


def _erased(event: Event, prefix: tuple[str, ...]) -> bool:
    return isinstance(event, (ItemPut, ItemDeleted)) and under(event.namespace, prefix)


def _stem_under(stem: str, escaped: str) -> bool:
    labels = stem.split(":", 1)[0]  # escaped labels hold no ':'
    return labels == escaped or labels.startswith(escaped + ".")


def _text(value: Any) -> str:
    return value.decode("utf-8", "surrogatepass") if isinstance(value, bytes) else str(value)


def _pointer_ids(reply: Sequence[Any]) -> dict[str, str]:
    """Each feed pointer's id, by the log entry id it points at."""
    found: dict[str, str] = {}
    for raw_id, fields in reply:
        flat = fields if isinstance(fields, dict) else dict(zip(fields[::2], fields[1::2], strict=False))
        target = flat.get(b"id", flat.get("id"))
        if target is not None:
            found[_text(target)] = _text(raw_id)
    return found


def _erase_commands(
    keys: StoreKeys, prefix: tuple[str, ...], entries: Sequence[Entry], pointers: dict[str, str], members: Sequence[Any]
) -> list[list[str | bytes]]:
    """What deletes the prefix from the partition's views and feed: its documents (every stem
    its entries wrote, and every member of the item set under it), set members, feed pointers."""
    escaped = ".".join(escape(label) for label in prefix)
    stems = {_text(m) for m in members if _stem_under(_text(m), escaped)}
    erased_ids: list[str] = []
    for entry_id, event in entries:
        if isinstance(event, (ItemPut, ItemDeleted)) and under(event.namespace, prefix):
            stems.add(item_stem(event.namespace, event.key))
            erased_ids.append(entry_id)
    commands: list[list[str | bytes]] = [["DEL", keys.item(stem)] for stem in sorted(stems)]
    if stems:
        commands.append(["SREM", keys.items, *sorted(stems)])
        commands.append(["ZREM", keys.expiring, *sorted(stems)])
        # Every item of these namespaces goes: their counts go whole, as a replay would leave them.
        commands.append(["HDEL", keys.namespaces, *sorted({stem.split(":", 1)[0] for stem in stems})])
    feed_ids = [pointers[entry_id] for entry_id in erased_ids if entry_id in pointers]
    if feed_ids:
        commands.append(["XDEL", keys.feed, *feed_ids])
    return commands


def purge(core: StoreCore, prefix: Sequence[str]) -> Program[int]:
    """Erase every item whose namespace is `prefix` or below it, and every log entry and feed
    pointer that wrote one; the count of log entries erased (0: nothing was written).

    Raises:
        InvalidNamespaceError: an empty prefix, or an invalid label.
        ConcurrentChangeError: appends to the partition raced every attempt (nothing erased).
    """
    labels = check_labels(prefix)
    if not labels:
        raise InvalidNamespaceError("purge needs a prefix of at least one label")
    log_id = core.keyspace.store_partition(labels[0])
    keys = core.keyspace.store(log_id)
    for _ in range(ATTEMPTS):
        reads: list[Step] = [read_log(keys.log), ["XRANGE", keys.feed, "-", "+"], ["SMEMBERS", keys.items]]
        log_reply, feed_reply, members = yield Call(reads, _reloads(core))
        entries = decode_log(log_reply, STORE.decode)
        erase = _erase_commands(keys, labels, entries, _pointer_ids(feed_reply), members)
        if not erase:
            return 0
        kept = [(i, e) for i, e in entries if not _erased(e, labels)]
        guard = entries[-1][0] if entries else ""
        call = erase_call(STORE, core.keyspace, log_id, (VIEW,), guard=guard, kept=kept, erase=erase)
        try:
            yield Call([call], _reloads(core))
            return len(entries) - len(kept)
        except Refused as exc:
            if not exc.starts("STALE"):
                raise
    message = f"the store partition of {labels!r} kept changing during {ATTEMPTS} attempts to purge it"
    raise ConcurrentChangeError(message)

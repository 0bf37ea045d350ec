"""One put of a partition's batch, as one ``store_put.lua`` call (without I/O).

A batch's writes go to each partition in one atomic call. When a partition's part of the batch
is a single put (what `StreamStore.put` sends), it goes as ``store_put.lua`` rather than
``append_batch.lua``: the same log entry and feed pointer (`streamsaver.log.items`), the same
projection (`projectors.store.project`, whose two commands it unpacks: the document's bytes are
spelt in one place), the same writes in the same order, but with the projection's arguments at
fixed places (the feed pointer taken from the entry's own fields, at
`streamsaver.log.items.POINTER_PAIRS`), and without the op interpreter's prelude, which every
script evaluates on each call. Replay applies the entry through ``apply.lua`` and the same
projection, so the item it rebuilds is byte-identical to the one this call wrote.
"""

from __future__ import annotations

from projectors.store import VIEW, project
from streamsaver.log.events import ItemPut
from streamsaver.log.items import item_fields
from streamsaver.log.keys import Keyspace
from streamsaver.scripts import STORE_PUT

__all__ = ["put_call"]

Arg = str | bytes | int


def put_call(keyspace: Keyspace, event: ItemPut) -> list[Arg]:
    """The EVALSHA arguments that append the put `event` to its partition log and project it
    into the items view, atomically (``store_put.lua``); the reply is ``[entry id]``."""
    keys = keyspace.store(event.log_id)
    item, expiry = project(event, keyspace)
    _, doc, created, body, items, stem, namespaces, joined, expiring, expires = item
    deadline = expiry[2] if expiry[0] == "PEXPIREAT" else ""
    fields = item_fields(event)
    args: list[Arg] = [VIEW, created, body, stem, joined, expires, deadline, str(2 * len(fields))]
    for pair in fields.items():
        args += pair
    return STORE_PUT.evalsha_args([keys.log, keys.feed, keys.positions, doc, items, namespaces, expiring], args)

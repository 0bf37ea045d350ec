"""One put of a partition's batch, as one ``store_put.lua`` call (without I/O).

A batch's writes go to each partition in one atomic call. When a partition's part of the batch
is a single put (what `StreamStore.put` sends), it goes as ``store_put.lua`` rather than
``append_batch.lua``: the same log entry and feed pointer (`streamsaver.log.items`), the same
projection (`projectors.store.put_commands`, whose two commands it unpacks: the document's bytes
are spelt in one place), the same writes in the same order, but with the projection's arguments
at fixed places and without the op interpreter's prelude, which every script evaluates on each
call. The log entry goes as the values of its fields alone (their names, `ENTRY`, are constants
in the script; an optional field absent is ''), and the feed pointer and the document's creation
time and TTL flag are taken from them: every argument costs the client (hiredis formats each)
and the server (each becomes a Lua string). Replay applies the entry through ``apply.lua`` and
the same projection, so the item it rebuilds is byte-identical to the one this call wrote.
"""

from __future__ import annotations

from projectors.store import put_commands
from streamsaver.log.events import ItemPut
from streamsaver.log.fields import (
    ITEM_EMBEDDING,
    ITEM_EXPIRES,
    ITEM_KEY,
    ITEM_TTL,
    ITEM_VALUE,
    ITEM_VECTORS,
    LABELS,
    RUN,
    THREAD,
    TYPE,
    VERSION,
    WRITER,
    WRITTEN_AT,
)
from streamsaver.log.items import item_fields
from streamsaver.log.keys import Keyspace
from streamsaver.scripts import STORE_PUT

__all__ = ["ENTRY", "OPTIONAL", "SENT", "put_call"]

Arg = str | bytes | int

ENTRY = (TYPE, VERSION, THREAD, LABELS, ITEM_KEY, WRITTEN_AT, WRITER, RUN, ITEM_VALUE, ITEM_TTL, ITEM_EXPIRES,
         ITEM_VECTORS, ITEM_EMBEDDING)
"""The fields of an `ItemPut` log entry, in `item_fields`'s order, as ``store_put.lua`` writes them."""
SENT = ENTRY[2:]
"""Those whose values the call sends: the type and version are the script's constants (an
`ItemPut` of this version)."""
OPTIONAL = frozenset({RUN, ITEM_EXPIRES, ITEM_VECTORS, ITEM_EMBEDDING})
"""The fields of `ENTRY` an entry may lack (sent as ''; never empty when present)."""


def put_call(keyspace: Keyspace, event: ItemPut) -> list[Arg]:
    """The EVALSHA arguments that append the put `event` to its partition log and project it
    into the items view, atomically (``store_put.lua``); the reply is ``[entry id]``."""
    keys = keyspace.store(event.log_id)
    fields = item_fields(event)
    # The value's and vectors' JSON once: the document splices the log entry's bytes.
    item, expiry = put_commands(event, keyspace, fields[ITEM_VALUE], fields.get(ITEM_VECTORS))
    _, doc, _, body, items, stem, namespaces, joined, expiring, _ = item
    deadline = expiry[2] if expiry[0] == "PEXPIREAT" else ""
    get = fields.get
    return STORE_PUT.evalsha_args([keys.log, keys.feed, keys.positions, doc, items, namespaces, expiring],
                                  [body, stem, joined, deadline, *[get(name, b"") for name in SENT]])

"""`get_delta_channel_history` on the full view, without I/O: one ``read_history.lua`` call.

The script walks the parent chain of the checkpoint a config names, inside Redis, and returns
for each ancestor visited its document, the stored values of the walked channels it holds, and
its pending writes. `read_history` then gathers them exactly as the base class's walk over
`get_tuple` does: per ancestor, the writes to channels still walked (in `writes_sort_key`
order), then the seeds; writes oldest to newest. One round trip whatever the walk's length.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import orjson
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple, DeltaChannelHistory, PendingWrite
from langgraph.checkpoint.serde.base import SerializerProtocol

from streamsaver.checkpoints.append import namespace_of, thread_id_of
from streamsaver.checkpoints.reads import Links, LinkSource, Reading, links_of, load_value, pending_writes
from streamsaver.log import compression
from streamsaver.log.keys import Keyspace
from streamsaver.log.program import Program
from streamsaver.log.stored import decode_channel_value
from streamsaver.scripts import READ_HISTORY

__all__ = ["history_request", "read_history", "walk"]


def history_request(
    keyspace: Keyspace, config: RunnableConfig, channels: Sequence[str], claim: Sequence[str | bytes | int] = ()
) -> list[str | bytes | int]:
    """The one script call of a `get_delta_channel_history` on the full view; with `claim`, the
    arguments that name the log entries the client holds (``read_history.lua``;
    `streamsaver.checkpoints.cached_reads.cached_history`).

    Raises:
        InvalidInputError: the config names no thread.
    """
    keys = keyspace.thread(thread_id_of(config))
    ns = namespace_of(config)
    checkpoint_id = str(config["configurable"].get("checkpoint_id") or "")
    return READ_HISTORY.evalsha_args(
        [keys.in_ns("full", "ids", ns), keys.in_ns("full", "ptrs", ns), keys.log, *([keys.positions] if claim else [])],
        [*claim, keys.doc_prefix("full", "cp", ns), keys.doc_prefix("full", "writes", ns), checkpoint_id, *channels],
    )


def read_history(
    serde: SerializerProtocol, reply: Sequence[Any], channels: Sequence[str], entries: LinkSource | None = None
) -> Mapping[str, DeltaChannelHistory]:
    """The per-channel history from the rows the script returned (parent first); delta links are
    found in the rows, or with `entries` there (a read through the cache).

    Raises:
        PayloadDecodeError: a seed or write the walk reached cannot be read; names its log entry.
    """
    collected: dict[str, list[PendingWrite]] = {c: [] for c in channels}
    seeds: dict[str, Any] = {}
    remaining = set(channels)
    known: Links = {}  # one thread: a link comes once per call, with the first row that needs it
    links: LinkSource = known if entries is None else entries
    for row in reply:
        raw_doc, flat_seeds, flat_writes = row[:3]
        known.update(links_of(row[3] if len(row) > 3 else None))
        reading = Reading(orjson.loads(raw_doc))
        for write in reversed(pending_writes(serde, reading, flat_writes)):
            if write[1] in remaining:
                collected[write[1]].append(write)
        for i in range(0, len(flat_seeds), 3):
            name = flat_seeds[i].decode("utf-8", "surrogatepass")
            try:
                cv = decode_channel_value(flat_seeds[i + 1])
                seeds[name] = load_value(serde, cv.channel, cv.blob.type.encode(), cv.blob.data, links)
            except compression.LOAD_ERRORS as exc:
                raise reading.failed(flat_seeds[i + 2], f"the value of channel {name!r}", exc) from exc
            remaining.discard(name)
    return _histories(channels, collected, seeds)


def walk(
    get: Callable[[RunnableConfig], Program[CheckpointTuple | None]], config: RunnableConfig, channels: Sequence[str]
) -> Program[dict[str, DeltaChannelHistory]]:
    """The base class's `get_delta_channel_history` as a program over `get` (a `get_tuple`
    program): walk the parent chain from `config`, gathering per channel the pending writes of
    each ancestor (newest ancestor first, each one's writes in reverse) until an ancestor holds
    the channel's value (its seed); the writes are returned oldest first."""
    collected: dict[str, list[PendingWrite]] = {c: [] for c in channels}
    seeds: dict[str, Any] = {}
    remaining = set(channels)
    target = yield from get(config)
    cursor = target.parent_config if target else None
    while cursor is not None and remaining:
        ancestor = yield from get(cursor)
        if ancestor is None:
            break
        collected_from(ancestor, remaining, collected, seeds)
        cursor = ancestor.parent_config
    return _histories(channels, collected, seeds)


def collected_from(
    ancestor: CheckpointTuple, remaining: set[str], collected: dict[str, list[PendingWrite]], seeds: dict[str, Any]
) -> None:
    """Gather one ancestor of `walk`: its writes to channels still walked, then its seeds."""
    for write in reversed(ancestor.pending_writes or []):
        if write[1] in remaining:
            collected[write[1]].append(write)
    values = ancestor.checkpoint["channel_values"]
    for channel in [c for c in remaining if c in values]:
        seeds[channel] = values[channel]
        remaining.discard(channel)


def _histories(
    channels: Sequence[str], collected: dict[str, list[PendingWrite]], seeds: dict[str, Any]
) -> dict[str, DeltaChannelHistory]:
    """Per channel, the writes gathered newest first returned oldest first, and its seed if found."""
    result: dict[str, DeltaChannelHistory] = {}
    for channel in channels:
        entry: DeltaChannelHistory = {"writes": list(reversed(collected[channel]))}
        if channel in seeds:
            entry["seed"] = seeds[channel]
        result[channel] = entry
    return result

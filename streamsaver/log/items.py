"""The stored form of the store's events (`ItemPut`, `ItemDeleted`, `StorePartitionErased`):
stream fields and feed pointers, by the conventions of `streamsaver.log.stored` (``type`` and
``v`` lead, field names in `streamsaver.log.fields`, older versions lifted by upcasters).

An `ItemPut` keeps its value as strict JSON (``value``) and its namespace as a JSON list of
labels (``labels``), so an entry reads without the writer's code. Who wrote a put or a delete
(``writer``, and ``run``: the LangGraph run's ids as a JSON object of strings) is plain text too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import orjson

from streamsaver.errors import EventDecodeError
from streamsaver.log.codec import strict_json
from streamsaver.log.events import Event, ItemDeleted, ItemPut, RunContext, StorePartitionErased
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

__all__ = ["POINTER_PAIRS", "item_fields", "item_from_fields", "item_pointer"]

Fields = dict[bytes, bytes]


def _s(value: str) -> bytes:
    return value.encode("utf-8", "surrogatepass")


def item_fields(event: Event) -> Fields:
    """The stream fields of a store event, at its type's current schema version.

    Raises:
        TypeError: an event of another domain.
    """
    if not isinstance(event, (ItemPut, ItemDeleted, StorePartitionErased)):
        raise TypeError(f"{type(event).__name__} is not a store event")
    fields: Fields = {TYPE: _s(event.TYPE), VERSION: b"%d" % event.VERSION, THREAD: _s(event.log_id)}
    if isinstance(event, StorePartitionErased):
        return fields
    fields[LABELS] = orjson.dumps(list(event.namespace))
    fields[ITEM_KEY] = _s(event.key)
    fields[WRITTEN_AT] = b"%d" % event.at
    fields[WRITER] = _s(event.writer)
    if event.run is not None:
        fields[RUN] = _run_json(event.run)
    if isinstance(event, ItemPut):
        fields[ITEM_VALUE] = strict_json(event.value)
        fields[ITEM_TTL] = b"%d" % event.ttl_ms
        if event.expires_ms:
            fields[ITEM_EXPIRES] = b"%d" % event.expires_ms
        if event.vectors:
            fields[ITEM_VECTORS] = orjson.dumps(event.vectors)  # tuples: JSON lists, as a document's "e"
            embedding: dict[str, Any] = {"model": event.model, "dims": len(event.vectors[0])}
            if event.paths is not None:
                embedding["paths"] = list(event.paths)
            fields[ITEM_EMBEDDING] = orjson.dumps(embedding)
    return fields


_RUN_KEYS = ("thread_id", "checkpoint_ns", "run_id")


def _run_json(run: RunContext) -> bytes:
    return orjson.dumps({name: value for name in _RUN_KEYS if (value := getattr(run, name))})


def _run(f: Fields) -> RunContext | None:
    """The ``run`` field (absent: None); a value that is not a JSON object of strings is refused."""
    raw = f.get(RUN)
    if raw is None:
        return None
    run = orjson.loads(raw)
    if not isinstance(run, dict) or not all(isinstance(value, str) for value in run.values()):
        raise ValueError("an event's run must be a JSON object of strings")
    return RunContext(*(run.get(name, "") for name in _RUN_KEYS))


def _writer(f: Fields) -> str:
    return f.get(WRITER, b"").decode("utf-8", "surrogatepass")  # absent before ItemPut v3 / ItemDeleted v2


def _labels(f: Fields) -> tuple[str, ...]:
    labels = orjson.loads(f[LABELS])
    if not isinstance(labels, list) or not all(isinstance(label, str) for label in labels):
        raise ValueError("labels must be a JSON list of strings")
    return tuple(labels)


def _item_put(f: Fields) -> ItemPut:
    value = orjson.loads(f[ITEM_VALUE])
    if not isinstance(value, dict):
        raise ValueError("an item's value must be a JSON object")
    log_id, key = f[THREAD].decode(), f[ITEM_KEY].decode("utf-8", "surrogatepass")
    vectors = tuple(tuple(float(x) for x in vector) for vector in orjson.loads(f.get(ITEM_VECTORS, b"[]")))
    embedding = orjson.loads(f.get(ITEM_EMBEDDING, b"{}"))  # absent in version 1 entries
    if not isinstance(embedding, dict):
        raise ValueError("an ItemPut's embedding must be a JSON object")
    paths = embedding.get("paths")
    return ItemPut(log_id, _labels(f), key, value, int(f[WRITTEN_AT]), int(f[ITEM_TTL]), vectors,
                   str(embedding.get("model", "")), None if paths is None else tuple(str(p) for p in paths),
                   int(f.get(ITEM_EXPIRES, b"0")), _writer(f), _run(f))


def _item_deleted(f: Fields) -> ItemDeleted:
    return ItemDeleted(f[THREAD].decode(), _labels(f), f[ITEM_KEY].decode("utf-8", "surrogatepass"), int(f[WRITTEN_AT]),
                       _writer(f), _run(f))


def _erased(f: Fields) -> StorePartitionErased:
    return StorePartitionErased(f[THREAD].decode())


_DECODERS: dict[str, tuple[frozenset[int], Callable[[Fields], Event]]] = {
    # Older versions lack only optional fields: version 1 the embedding, 2 the writer and run.
    ItemPut.TYPE: (frozenset({1, 2, ItemPut.VERSION}), _item_put),
    ItemDeleted.TYPE: (frozenset({1, ItemDeleted.VERSION}), _item_deleted),
    StorePartitionErased.TYPE: (frozenset({StorePartitionErased.VERSION}), _erased),
}


def item_from_fields(
    fields: Mapping[bytes, bytes] | Sequence[bytes], event_id: str | None = None, *, payloads: bool = True
) -> Event:
    """A store event from its stream fields (a mapping or a flat ``XRANGE`` list). `payloads`
    is accepted for the `streamsaver.log.domain.Decoder` signature: a store event has none apart.

    Raises:
        EventDecodeError: unknown type, a version newer than this code, or a malformed field.
    """
    if isinstance(fields, Mapping):
        f = dict(fields)
    else:
        pairs = iter(fields)
        f = dict(zip(pairs, pairs, strict=True))
    try:
        type_name, version = f[TYPE].decode(), int(f[VERSION])
        readable, decode = _DECODERS[type_name]
    except (KeyError, ValueError, UnicodeDecodeError) as exc:
        raise EventDecodeError(f"not a readable store event: {exc!r}", event_id=event_id) from exc
    if version not in readable:
        raise EventDecodeError(f"{type_name} v{version} is not a version this streamsaver reads", event_id=event_id)
    try:
        return decode(f)
    except (KeyError, ValueError, TypeError, UnicodeDecodeError, orjson.JSONDecodeError) as exc:
        raise EventDecodeError(f"malformed {type_name} field: {exc!r}", event_id=event_id) from exc


POINTER_PAIRS = (0, 2, 3, 4)
"""Which field/value pairs of a put's `item_fields` (0: ``type``) its `item_pointer` repeats, in
order: ``store_put.lua`` writes the pointer from the entry's fields at these places."""


def item_pointer(event: Event) -> list[str | bytes | int]:
    """The fields of a store event's feed pointer, after ``id``: type, log, labels, key."""
    fields: list[str | bytes | int] = [TYPE, event.TYPE, THREAD, event.thread_id]
    if isinstance(event, (ItemPut, ItemDeleted)):
        fields += [LABELS, orjson.dumps(list(event.namespace)), ITEM_KEY, event.key]
    return fields

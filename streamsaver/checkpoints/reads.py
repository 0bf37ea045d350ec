"""The read side, without I/O: what to send for `get_tuple` and for the pages of `list`, and how
to read the checkpoints the read scripts return. The plan of a `list` call is
`streamsaver.checkpoints.listing.ListPager`.

A request is a list of commands that the saver sends in one round trip (a pipeline when there is
more than one).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import orjson
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple, PendingWrite, writes_sort_key
from langgraph.checkpoint.serde.base import SerializerProtocol

from projectors import full
from projectors.domain import CHECKPOINTS
from streamsaver.checkpoints.append import namespace_of, thread_id_of
from streamsaver.errors import PayloadDecodeError
from streamsaver.log import compression, deltas
from streamsaver.log.codec import unpack
from streamsaver.log.fields import EMPTY_TYPE
from streamsaver.log.keys import Keyspace, ViewName
from streamsaver.log.routing import Step
from streamsaver.log.stored import channel_field
from streamsaver.scripts import READ_FULL

__all__ = [
    "Decoded", "LinkSource", "Links", "Reading", "Request", "decode_row", "decode_rows", "get_request", "links_of",
    "load_value", "pending_writes", "read_one", "read_page",
]

Command = list[str | bytes | int]
Request = list[Step]
_EMPTY = EMPTY_TYPE.encode()
_NOT_DECODED = (False, None)
HISTORY = full.VIEW
"""The view whose pages `list` reads."""


def read_one(keyspace: Keyspace, view: ViewName, thread_id: str, ns: str, checkpoint_id: str) -> Command:
    """The read of one checkpoint of `view` (its `streamsaver.log.domain.View.read`)."""
    return CHECKPOINTS.view(view).read(keyspace, thread_id, ns, checkpoint_id)


def read_page(keyspace: Keyspace, thread_id: str, ns: str, before: str, limit: int) -> Command:
    """The read of a page of the full view (the view that keeps history), newest first."""
    keys = keyspace.thread(thread_id)
    return READ_FULL.evalsha_args(
        [keys.in_ns(HISTORY, "ids", ns), keys.in_ns(HISTORY, "ptrs", ns), keys.log],
        [keys.doc_prefix(HISTORY, "cp", ns), keys.doc_prefix(HISTORY, "writes", ns), "page", before, limit],
    )


def get_request(keyspace: Keyspace, view: ViewName, config: RunnableConfig) -> Command:
    """The one script call that reads the checkpoint `config` names (or the latest)."""
    thread_id, ns = thread_id_of(config), namespace_of(config)
    checkpoint_id = config["configurable"].get("checkpoint_id") or ""
    read_view = CHECKPOINTS.view(view)
    if not checkpoint_id and read_view.keeps_history:
        return read_page(keyspace, thread_id, ns, "", 1)
    return read_view.read(keyspace, thread_id, ns, checkpoint_id)


_load = compression.load_stored


_DECODE_ERRORS = compression.LOAD_ERRORS


@dataclass(frozen=True)
class Reading:
    """Which checkpoint a row holds, so a payload that cannot be read is named with its entry."""

    doc: Mapping[str, Any]

    def failed(self, entry_id: bytes | str | None, what: str, exc: BaseException) -> PayloadDecodeError:
        """The error to raise for `what` (from the log entry `entry_id`), which raised `exc`."""
        doc = self.doc
        return PayloadDecodeError(
            f"cannot read {what} of checkpoint {doc.get('checkpoint_id')!r} (thread "
            f"{doc.get('thread_id')!r}, namespace {doc.get('checkpoint_ns')!r}): {exc}",
            event_id=_text(entry_id) if entry_id else None,
        )


# The loops below name the entry of a payload that cannot be read with a try around each
# payload: a context manager per payload cost ~1.5 µs, a tenth of reading a small checkpoint.


def pending_writes(serde: SerializerProtocol, reading: Reading, flat: Sequence[bytes]) -> list[PendingWrite]:
    """Writes from a read script's flat ``field, task id, task path, write, entry id`` groups,
    in ``writes_sort_key`` order."""
    keyed: list[tuple[tuple[str, str, int], PendingWrite]] = []
    for i in range(0, len(flat), 5):
        field, task_id, task_path, packed, entry_id = flat[i : i + 5]
        try:
            channel, type_, data = unpack(packed)
            idx = int(field.rsplit(b":", 1)[1])
            task = task_id.decode("utf-8", "surrogatepass")
            value = _load(serde, type_.decode(), data)
        except _DECODE_ERRORS as exc:
            raise reading.failed(entry_id, f"the write {_text(field)!r}", exc) from exc
        keyed.append((
            writes_sort_key(task_path.decode("utf-8", "surrogatepass"), task, idx),
            (task, channel.decode("utf-8", "surrogatepass"), value),
        ))
    keyed.sort(key=lambda item: item[0])
    return [write for _, write in keyed]


Links = dict[tuple[bytes, bytes], bytes]
"""The values deltas extend, by (log entry id, log field), from a read script's flat
``entry id, field, payload`` groups."""


class LinkSource(Protocol):
    """Where the values deltas extend are found, by (log entry id, log field): `Links`, or the
    entries a cached read holds (`streamsaver.checkpoints.cached_reads`)."""

    def get(self, key: tuple[bytes, bytes], /) -> bytes | None: ...


class Decoded(Protocol):
    """Channel values decoded before the reply came (`streamsaver.checkpoints.guesses.Guesses`)."""

    def __bool__(self) -> bool: ...

    def take(self, stored: bytes, links: LinkSource, /) -> tuple[bool, Any]:
        """``(True, value)`` decoded from the packed channel value `stored` joined with the same
        `links`; ``(False, None)`` when there is none."""
        ...


def links_of(flat: Sequence[bytes] | None) -> Links:
    """`Links` from a read script's flat groups (none from a script older than deltas)."""
    if not flat:
        return {}
    return {(flat[i], flat[i + 1]): flat[i + 2] for i in range(0, len(flat), 3)}


def load_value(
    serde: SerializerProtocol,
    channel: str,
    type_: bytes,
    data: bytes,
    links: LinkSource,
    expand: deltas.Expand | None = None,
) -> Any:
    """A stored channel value loaded by `serde`, joined when it is a delta (`links` holds its
    chain; `expand`, as `compression.load_linked` takes it): what every reader of channel
    values calls.

    Raises:
        ValueError: a corrupt payload or a broken chain; and whatever `serde.loads_typed` raises.
    """
    if not deltas.is_delta(type_):
        # A base read as a row's own value (a page holding it) is the one the deltas of the
        # read's other rows join with: the read's `expand` decompresses it once for both.
        if expand is None:
            return _load(serde, type_.decode(), data)
        return serde.loads_typed(expand(type_.decode(), data))
    field = channel_field(channel)
    return compression.load_linked(
        serde, type_.decode(), data, lambda link: links.get((link.encode(), field)), expand
    )


def _channel_values(
    serde: SerializerProtocol,
    reading: Reading,
    versions: Mapping[str, Any],
    payloads: Sequence[bytes | None],
    entry_ids: Sequence[bytes],
    links: LinkSource,
    expand: deltas.Expand,
    decoded: Decoded | None,
) -> dict[str, Any]:
    """Channel values from the payloads the refs point at (`stored.encode_channel_value`
    packings), those `decoded` holds taken from it; a payload of another version than the
    checkpoint names (possible only in the shallow view) is not this checkpoint's value."""
    values: dict[str, Any] = {}
    for payload, entry_id in zip(payloads, entry_ids, strict=True):
        if payload is None:
            continue
        try:
            channel_bytes, version, type_, data = unpack(payload)
            channel = channel_bytes.decode("utf-8", "surrogatepass")
            if channel in versions and versions[channel] == orjson.loads(version) and type_ != _EMPTY:
                found, value = decoded.take(payload, links) if decoded else _NOT_DECODED
                values[channel] = value if found else load_value(serde, channel, type_, data, links, expand)
        except _DECODE_ERRORS as exc:
            raise reading.failed(entry_id, "a channel value", exc) from exc
    return values


def _decode_row(
    serde: SerializerProtocol,
    row: Sequence[Any],
    known: dict[str, Links],
    expand: deltas.Expand,
    decoded: Decoded | None,
) -> CheckpointTuple:
    raw_doc, payloads, writes, entry_ids = row[:4]
    doc = orjson.loads(raw_doc)
    # A script returns each link once per thread log: later rows of the thread join with it.
    links = known.setdefault(doc["thread_id"], {})
    if len(row) > 4 and row[4]:
        links.update(links_of(row[4]))
    return decode_row(serde, doc, payloads, writes, entry_ids, links, expand, decoded)


def decode_row(
    serde: SerializerProtocol,
    doc: Mapping[str, Any],
    payloads: Sequence[bytes | None],
    writes: Sequence[bytes],
    entry_ids: Sequence[bytes],
    links: LinkSource,
    expand: deltas.Expand,
    decoded: Decoded | None = None,
) -> CheckpointTuple:
    """The checkpoint tuple of one row of a read script: its decoded document, the payloads its
    refs point at (None: missing), its flat writes (see `pending_writes`), the entry ids of
    the payloads, where its deltas' links are found, and channel values `decoded` already.

    Raises:
        PayloadDecodeError: a payload is missing, malformed or refused by the serde.
    """
    reading = Reading(doc)
    try:
        if not payloads or payloads[0] is None:
            raise KeyError("the log holds no body where the view points")
        body_type, body_data = unpack(payloads[0])
        body = _load(serde, body_type.decode(), body_data)
    except _DECODE_ERRORS as exc:
        raise reading.failed(entry_ids[0] if entry_ids else None, "the checkpoint body", exc) from exc
    body["channel_values"] = _channel_values(
        serde, reading, body.get("channel_versions", {}), payloads[1:], entry_ids[1:], links, expand, decoded
    )
    identity = {"thread_id": doc["thread_id"], "checkpoint_ns": doc["checkpoint_ns"]}
    parent = doc.get("parent_checkpoint_id")
    return CheckpointTuple(
        config={"configurable": {**identity, "checkpoint_id": doc["checkpoint_id"]}},
        checkpoint=body,
        metadata=doc["metadata"],
        parent_config={"configurable": {**identity, "checkpoint_id": parent}} if parent else None,
        pending_writes=pending_writes(serde, reading, writes),
    )


def decode_rows(
    serde: SerializerProtocol,
    rows: Sequence[Any],
    damaged: list[PayloadDecodeError] | None = None,
    expand: deltas.Expand | None = None,
    decoded: Decoded | None = None,
) -> list[CheckpointTuple]:
    """Checkpoint tuples from the rows ONE read script call returns (in its order: a delta's
    links come with the first row of the thread that needs them). With `damaged` (a listing
    across threads), a row that cannot be read is left out and its error added there. `expand`
    (default: one remembering the bases of this call) expands compressed payloads; channel
    values `decoded` already are taken from it.

    Raises:
        PayloadDecodeError: without `damaged`, a payload the view points at is missing, malformed
            or refused by the serde; the error names the log entry. Other rows and other threads
            are unaffected.
    """
    known: dict[str, Links] = {}
    # the rows of a thread share their deltas' bases
    expand = expand or compression.remembering_expand()
    if damaged is None:
        return [_decode_row(serde, row, known, expand, decoded) for row in rows]
    tuples = []
    for row in rows:
        try:
            tuples.append(_decode_row(serde, row, known, expand, decoded))
        except PayloadDecodeError as error:
            damaged.append(error)
    return tuples


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)



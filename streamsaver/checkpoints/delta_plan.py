"""Which channel values a `put` stores as deltas (`streamsaver.log.deltas`), without I/O.

The saver remembers, per thread, namespace and channel, the full value its deltas link to (the
*base*): the log entry id the `put` storing it got back, its channel version, the stored field's
size, its element count and its body (the array without its header) as a length and a digest;
also how many deltas it stored since and the version it stored last. A new value extends the
base when its body starts with the base's body (hashed again, compared): then only the rest,
everything added since the base, is stored, linked straight to the base, so a read follows one
link. The elements after the base's end need not repeat what the deltas before held: a list
edited there (a message replaced) is still the base's body then new bytes. A value that
shrank, or changed inside the base's body, is stored whole and becomes the new base; so is every
`deltas.MAX_LINKS` + 1-th version. (Starting a new base also when a delta grows past half the
base's size was measured on the storage benchmark: within its noise, ~3% of the log, so not
done.)

The digest is ``hash`` (SipHash-1-3, 64 bits, holds the GIL: ~9 µs per 40 KiB) of a secret of
the memory followed by the body (`_digest`). ``hashlib`` releases the GIL above 2 KiB, and on
LangGraph's thread pools each release can stall a put for the switch interval; keeping the
bytes instead would cost memory per thread for a comparison only ~7 µs cheaper. The secret
matters: ``hash`` alone is keyed by PYTHONHASHSEED, which deployments sometimes fix; whoever
knows it could craft an edit of a message, of the same length, whose digest matches (~2^32
tries), and the saver would store a delta that joins to the old text. With the secret, a false
match is a 64-bit accident: at most 2^-64 per put whose list was edited at equal length.

A retried put (the same version again, after a lost reply) is stored as the first try was: the
same delta against the same base, or whole when the first was whole, so that ``append.lua``
recognises the repeat of the logged event.

What the saver remembers can be stale (another process wrote the thread, it was deleted,
pruned, copied over, restored, trimmed by retention, expired): ``append.lua`` checks that the
link (entry, version, size) is the record the thread's positions hash keeps of the last full
value of that namespace and channel (written with that value's entry, dropped by every write
that removes or rewrites entries; docs/architecture.md) before its first write and refuses
with ``SSBASE`` otherwise; the saver then forgets the thread and sends the full values
(`PutPlan.fallback`).
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from typing import Any

import orjson

from streamsaver.log import compression, deltas
from streamsaver.log.events import Blob, ChannelValue, CheckpointSaved

__all__ = ["BASE_REFUSED", "DeltaMemory", "Held", "PutPlan"]

BASE_REFUSED = "SSBASE"
"""The error code of ``append.lua`` when a delta's link is not what the saver remembered."""

_WORTH = 128
"""A delta is stored only when the base body it repeats (what it saves) is at least this long:
below, its link (~60 bytes) costs about what it saves."""

@dataclass(frozen=True, slots=True)
class Held:
    """What the saver remembers of one channel: its base (`entry`, "" until the put storing it
    returns; `version`, `size` of the stored field, element `count`, body `end` and `digest`),
    the deltas stored since (`links`) and the version stored `last`."""

    entry: str
    version: bytes
    size: int
    count: int
    end: int
    digest: int
    links: int
    last: bytes


@dataclass
class PutPlan:
    """The values one `put` stores as deltas, and what to remember once it is logged."""

    thread_id: str
    ns: str
    compress: bool
    held: dict[str, Held]
    secret: bytes = b""
    pending: dict[str, Held] = field(default_factory=dict)
    full: dict[str, tuple[str, bytes]] = field(default_factory=dict)

    def blob(self, channel: str, version: Any, type_: str, data: bytes) -> Blob:
        """The stored blob of `channel`'s new value (serde form `type_`, `data`)."""
        header = deltas.read_header(data) if type_ == deltas.DELTA_TYPE else None
        if header is None:
            self.pending.pop(channel, None)
            return self._stored(Blob(type_, data))
        count, start = header
        body = memoryview(data)[start:]
        version_json = orjson.dumps(version)
        held = self._base(channel, version_json)
        if held is None or not _extends(held, body, count, self.secret):
            return self._new_base(channel, version_json, type_, data)
        elements = self._stored(Blob(type_, bytes(body[held.end:])))
        dtype, ddata = deltas.encode(held.entry, held.version, held.size, count, elements.type, elements.data)
        self.full[channel] = (type_, data)
        # Not dataclasses.replace: it costs twice a construction, once or twice a put.
        self.pending[channel] = Held(
            held.entry, held.version, held.size, held.count, held.end, held.digest, held.links + 1, version_json
        )
        return Blob(dtype, ddata)

    def _base(self, channel: str, version_json: bytes) -> Held | None:
        """The base a delta of `channel` may link to: None when there is none, or when this
        version was stored last and whole (a retry stores what the first try stored)."""
        held = self.held.get(channel)
        if held is not None and held.last == version_json:
            held = replace(held, links=held.links - 1) if held.links else None
        return held

    def _stored(self, blob: Blob) -> Blob:
        return compression.shrink(blob) if self.compress else compression.keep(blob)

    def _new_base(self, channel: str, version_json: bytes, type_: str, data: bytes) -> Blob:
        """The whole value (a msgpack array), remembered as the base of the deltas that follow."""
        self.full.pop(channel, None)
        blob = self._stored(Blob(type_, data))
        count, start = deltas.read_header(data) or (0, 0)
        body = memoryview(data)[start:]
        # The stored field is stored.encode_channel_value's packing: four parts, each after
        # its 4-byte length.
        size = (
            16 + len(channel.encode("utf-8", "surrogatepass")) + len(version_json) + len(blob.type.encode())
            + len(blob.data)
        )
        self.pending[channel] = Held(
            "", version_json, size, count, len(body), _digest(self.secret, body), 0, version_json
        )
        return blob

    def fallback(self, event: CheckpointSaved) -> CheckpointSaved:
        """`event` with every delta replaced by its full value (after an ``SSBASE`` refusal);
        what it stores is then remembered as the base of new chains."""
        values = []
        for cv in event.values:
            if cv.channel in self.full:
                type_, data = self.full[cv.channel]
                held = self.pending[cv.channel]
                blob = self._new_base(cv.channel, held.last, type_, data)
                values.append(ChannelValue(cv.channel, cv.version, blob))
            else:
                values.append(cv)
        self.full.clear()
        return replace(event, values=tuple(values))


def _digest(secret: bytes, stretch: memoryview) -> int:
    """The digest of a stretch of body, keyed by the memory's `secret` (see the module docstring)."""
    return hash(b"".join((secret, stretch)))


def _extends(held: Held, body: memoryview, count: int, secret: bytes) -> bool:
    """Whether `body` starts with the base `held` describes, long enough for a delta to pay
    (and the base has not had as many deltas as it may)."""
    if held.links >= deltas.MAX_LINKS or count < held.count or len(body) < held.end or held.end < _WORTH:
        return False
    return _digest(secret, body[: held.end]) == held.digest


class DeltaMemory:
    """What each saver remembers of recent threads (LRU over `threads` threads); thread-safe."""

    def __init__(self, threads: int = 4096) -> None:
        self._threads = threads
        # thread id -> (namespace, channel) -> the base and what was last stored
        self._held: OrderedDict[str, dict[tuple[str, str], Held]] = OrderedDict()
        self._lock = threading.Lock()
        self._secret = os.urandom(16)

    def plan(self, thread_id: str, ns: str, compress: bool) -> PutPlan:
        """A plan for one put on (`thread_id`, `ns`), from what is remembered of it."""
        with self._lock:
            held = self._held.get(thread_id)
            mine = {ch: h for (n, ch), h in held.items() if n == ns} if held else {}
        return PutPlan(thread_id, ns, compress, mine, self._secret)

    def commit(self, plan: PutPlan, entry_id: str) -> None:
        """Remember what `plan` stored, now logged as `entry_id` (the entry of a new base)."""
        if not plan.pending:
            return
        with self._lock:
            channels = self._held.pop(plan.thread_id, None) or {}
            for channel, held in plan.pending.items():
                channels[(plan.ns, channel)] = held if held.entry else replace(held, entry=entry_id)
            self._held[plan.thread_id] = channels
            while len(self._held) > self._threads:
                self._held.popitem(last=False)

    def forget(self, thread_id: str) -> None:
        """Forget every namespace of `thread_id`."""
        with self._lock:
            self._held.pop(thread_id, None)

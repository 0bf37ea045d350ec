"""Which channel values a `put` stores as deltas (`streamsaver.deltas`), without I/O.

The saver remembers, per thread, namespace and channel, what it last stored: the log entry id
its `put` got back, the channel version, the stored field's size, the element count and, for
the body (the array without its header), a hash of each stretch one stored version added.
A new value extends the remembered one when its body starts with the same stretches (hashed
again, compared): then only the rest is stored, linked to that entry. The digest is
``hash`` (SipHash-1-3, 64 bits, holds the GIL: ~9 µs per 40 KiB) of a secret of the memory
followed by the stretch (`_digest`). ``hashlib`` releases the GIL above 2 KiB, and on
LangGraph's thread pools each release can stall a put for the switch interval; keeping the
bytes instead would cost memory per thread for a comparison only ~7 µs cheaper. The secret
matters: ``hash`` alone is keyed by PYTHONHASHSEED, which deployments sometimes fix; whoever
knows it could craft an edit of a message, of the same length, whose digest matches (~2^32
tries), and the saver would store a delta that joins to the old text. With the secret, a false
match is a 64-bit accident: at most 8 * 2^-64 per put whose list was edited at equal length.

What the saver remembers can be stale (another process wrote the thread, it was deleted,
pruned, copied over, restored, trimmed by retention): ``append.lua`` checks that the linked
entry holds that version at that size before its first write and refuses with ``SSBASE``
otherwise; the saver then forgets the thread and sends the full values (`PutPlan.fallback`).
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from typing import Any

import orjson

from streamsaver import compression, deltas
from streamsaver.events import Blob, ChannelValue, CheckpointSaved

__all__ = ["BASE_REFUSED", "DeltaMemory", "Held", "PutPlan"]

BASE_REFUSED = "SSBASE"
"""The error code of ``append.lua`` when a delta's link is not what the saver remembered."""

_WORTH = 128
"""A delta is stored only when the stretch it repeats (what it saves) is at least this long:
below, its link (~60 bytes) costs about what it saves."""


@dataclass(frozen=True, slots=True)
class Held:
    """What the saver last stored for one channel (`entry` is "" until the put returns)."""

    entry: str
    version: bytes
    size: int
    count: int
    stretches: tuple[tuple[int, int], ...]
    links: int
    base: Held | None = None
    """What this value extends when it was stored as a delta (its own `base` dropped): a put
    of the same version again (a retried put) is stored as the first was, so that
    ``append.lua`` sees a repeat of the logged event."""


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
        held = self.held.get(channel)
        if held is not None and held.version == version_json:
            held = held.base
        done = _extends(held, body, count, self.secret) if held is not None else None
        if held is None or done is None or done < _WORTH:
            whole = ((len(body), _digest(self.secret, body)),)
            return self._remember(channel, version_json, self._stored(Blob(type_, data)), count, whole, 0)
        stretches = (*held.stretches, (len(body), _digest(self.secret, body[done:])))
        elements = self._stored(Blob(type_, bytes(body[done:])))
        dtype, ddata = deltas.encode(held.entry, held.version, held.size, count, elements.type, elements.data)
        self.full[channel] = (type_, data)
        return self._remember(
            channel, version_json, Blob(dtype, ddata), count, stretches, held.links + 1, replace(held, base=None)
        )

    def _stored(self, blob: Blob) -> Blob:
        return compression.shrink(blob) if self.compress else compression.keep(blob)

    def _remember(
        self, channel: str, version_json: bytes, blob: Blob, count: int, stretches: tuple[tuple[int, int], ...], links: int,
        base: Held | None = None,
    ) -> Blob:
        # The stored field is events.encode_channel_value's packing: four parts, each after
        # its 4-byte length.
        size = 16 + len(channel.encode("utf-8", "surrogatepass")) + len(version_json) + len(blob.type.encode()) + len(blob.data)
        self.pending[channel] = Held("", version_json, size, count, stretches, links, base)
        return blob

    def fallback(self, event: CheckpointSaved) -> CheckpointSaved:
        """`event` with every delta replaced by its full value (after an ``SSBASE`` refusal);
        what it stores is then remembered as the start of new chains."""
        values = []
        for cv in event.values:
            if cv.channel in self.full:
                type_, data = self.full[cv.channel]
                held = self.pending[cv.channel]
                body = memoryview(data)[len(data) - held.stretches[-1][0]:]
                whole = ((len(body), _digest(self.secret, body)),)
                blob = self._remember(cv.channel, held.version, self._stored(Blob(type_, data)), held.count, whole, 0)
                cv = ChannelValue(cv.channel, cv.version, blob)
            values.append(cv)
        self.full.clear()
        return replace(event, values=tuple(values))


def _digest(secret: bytes, stretch: memoryview) -> int:
    """The digest of a stretch of body, keyed by the memory's `secret` (see the module docstring)."""
    return hash(b"".join((secret, stretch)))


def _extends(held: Held, body: memoryview, count: int, secret: bytes) -> int | None:
    """How many bytes of `body` repeat the value `held` describes, or None when it does not
    start with it (or the chain is as long as it may grow)."""
    if held.links >= deltas.MAX_LINKS or count < held.count or len(body) < held.stretches[-1][0]:
        return None
    start = 0
    for end, digest in held.stretches:
        if _digest(secret, body[start:end]) != digest:
            return None
        start = end
    return start


class DeltaMemory:
    """What each saver remembers of recent threads (LRU over `threads` threads); thread-safe."""

    def __init__(self, threads: int = 4096) -> None:
        self._threads = threads
        # thread id -> (namespace, channel) -> what was last stored
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
        """Remember what `plan` stored, now logged as `entry_id`."""
        if not plan.pending:
            return
        with self._lock:
            channels = self._held.pop(plan.thread_id, None) or {}
            for channel, held in plan.pending.items():
                channels[(plan.ns, channel)] = replace(held, entry=entry_id)
            self._held[plan.thread_id] = channels
            while len(self._held) > self._threads:
                self._held.popitem(last=False)

    def forget(self, thread_id: str) -> None:
        """Forget every namespace of `thread_id`."""
        with self._lock:
            self._held.pop(thread_id, None)

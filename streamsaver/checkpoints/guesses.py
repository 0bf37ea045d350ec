"""Channel values decoded while a read's round trip is in flight, without I/O.

A read through the read cache knows, before the server answers, which stored values it will
most likely be handed: those of the newest checkpoint it holds of the thread (or of the one it
asked for by id). Decoding them is most of a read's client time (the serde of the ``messages``
list); the server's script and the trip take as long again. So the saver sends its read, then
decodes the values it expects (`Guesses.decode`, run by the driver between the send and the
reply: `streamsaver.log.program.Call.meanwhile`), and then reads the reply as usual, taking a
value from the guesses only when it is exactly what was decoded:

* a guess is keyed by the stored bytes it was decoded from (channel, version, type and data),
  and remembers every value its delta chain was joined with (the stored bytes of each link);
* `Guesses.take` hands a value out only for the same stored bytes whose links, looked up where
  the reply says they are, are the same bytes too. Decoding is a function of those bytes, so a
  value taken is the value the read would have decoded; anything else is decoded as before.

Nothing decoded outlives the read: each value is handed out at most once (LangGraph mutates
what it reads), and what is not taken is dropped with the read. The cache itself still holds
stored bytes only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from langgraph.checkpoint.serde.base import SerializerProtocol

from streamsaver.checkpoints.entry_cache import id_order
from streamsaver.checkpoints.reads import LinkSource, load_value
from streamsaver.log import compression, deltas, fields
from streamsaver.log.codec import unpack

__all__ = ["GUESS_MIN_BYTES", "Guesses", "expected", "guessable"]

GUESS_MIN_BYTES = 1024
"""Smaller stored values that are not deltas are not worth guessing (a delta, however small,
decodes into its whole list)."""

_MISS = (False, None)

_CHECKPOINT = b"CheckpointSaved"
_LookupKey = tuple[bytes, bytes]


class _Recording:
    """A `LinkSource` that remembers every lookup and what it found."""

    __slots__ = ("links", "seen")

    def __init__(self, links: LinkSource) -> None:
        self.links, self.seen = links, list[tuple[_LookupKey, bytes | None]]()

    def get(self, key: _LookupKey, /) -> bytes | None:
        found = self.links.get(key)
        self.seen.append((key, found))
        return found


class Guesses:
    """Values decoded ahead of a reply, by the stored bytes they came from (see the module)."""

    __slots__ = ("_values", "decoded")

    def __init__(self) -> None:
        self._values: dict[bytes, tuple[list[tuple[_LookupKey, bytes | None]], Any]] = {}
        self.decoded = False

    def __bool__(self) -> bool:
        return bool(self._values)

    def decode(
        self, serde: SerializerProtocol, stored: Iterable[bytes], links: LinkSource, expand: deltas.Expand | None = None
    ) -> None:
        """Decode each packed channel value of `stored` (`stored.encode_channel_value`), its
        delta links found in `links`, compressed payloads expanded by `expand`; once (a driver
        may run this again on a resend). A value that does not decode, whatever the serde
        raises, is left to the read: decoded from the reply if the reply names it (raising
        there, naming its entry, if it really is bad), never a read's failure when it does not."""
        if self.decoded:
            return
        self.decoded = True
        expand = expand or compression.remembering_expand()
        for payload in stored:
            if payload not in self._values:
                guessed = _guess(serde, payload, links, expand)
                if guessed is not None:
                    self._values[payload] = guessed

    def take(self, stored: bytes, links: LinkSource) -> tuple[bool, Any]:
        """``(True, value)`` decoded from `stored` when every link it was joined with holds the
        same bytes in `links`; ``(False, None)`` otherwise. Each value is handed out once."""
        found = self._values.pop(stored, None)
        if found is None:
            return _MISS
        seen, value = found
        for key, linked in seen:
            if links.get(key) != linked:
                return _MISS
        return True, value


def _guess(
    serde: SerializerProtocol, payload: bytes, links: LinkSource, expand: deltas.Expand
) -> tuple[list[tuple[_LookupKey, bytes | None]], Any] | None:
    """The value decoded from `payload` with the links it was joined with; None when it does not
    decode, whatever was raised (the read decodes it again if it needs it, and raises then)."""
    recording = _Recording(links)
    try:
        channel, _version, type_, data = unpack(payload)
        value = load_value(serde, channel.decode("utf-8", "surrogatepass"), type_, data, recording, expand)
    except Exception:  # noqa: BLE001 - a guess may be of a value the reply turns out not to need
        return None
    return recording.seen, value


def expected(
    entries: Mapping[bytes, Mapping[bytes, bytes]], ns: bytes, checkpoint_id: bytes, count: int = 1
) -> list[bytes]:
    """The stored channel values a read of checkpoint `checkpoint_id` of namespace `ns` most
    likely returns (b"": the newest `count`, a page of `list`), from the log `entries` at hand
    (by entry id): the deltas and the values of `GUESS_MIN_BYTES` or more that each
    checkpoint's own entry holds (the channels its step wrote: a growing ``messages`` list at
    every step of an agent)."""
    found: list[tuple[tuple[int, int], Mapping[bytes, bytes]]] = []
    for entry_id, entry in entries.items():
        if entry.get(fields.TYPE) == _CHECKPOINT and entry.get(fields.NAMESPACE) == ns:
            if not checkpoint_id:
                found.append((id_order(entry_id), entry))
            elif entry.get(fields.CHECKPOINT_ID) == checkpoint_id:
                found = [((0, 0), entry)]
                break
    found.sort(key=lambda item: item[0], reverse=True)
    return [value for _, entry in found[:count] for value in guessable(entry)]


def guessable(entry: Mapping[bytes, bytes]) -> list[bytes]:
    """The stored channel values of a checkpoint's log `entry` worth decoding ahead: its deltas
    and its values of `GUESS_MIN_BYTES` or more."""
    return [
        value
        for name, value in entry.items()
        if name[:2] == fields.CHANNEL_PREFIX and (len(value) >= GUESS_MIN_BYTES or _DELTA in value[:_TYPE_WITHIN])
    ]


_DELTA = deltas.MARK.encode()
_TYPE_WITHIN = 96
"""How far into a packed channel value its stored type is looked for (after the channel name
and the version: a guess only, checked when the value is taken)."""



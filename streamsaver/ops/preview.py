"""Short human previews of what a log holds, for ``streamsaver inspect``: an entry id's time, and
the last message a checkpoint stored in its ``messages`` channel.

The preview decodes with `SafeSerializer` (LangGraph's strict msgpack: nothing a stored value
names runs), so values the saver's own serde wrote in another form (an ``EncryptedSerializer``,
custom types outside the allowlist) show no preview rather than an error. A value stored as a
delta (`streamsaver.log.deltas`) holds only the elements that checkpoint added, which is what a
preview of the newest message needs: those elements are a run of msgpack objects without their
count, so the count is found by trying array headers: the decoder reads as many elements as a
header says and no more, so the largest count that still decodes is theirs.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from streamsaver.log import compression, deltas
from streamsaver.log.events import Blob
from streamsaver.log.serde import SafeSerializer

__all__ = ["entry_time", "last_message"]

_SERDE = SafeSerializer()
_MOST_ADDED = 64


def entry_time(entry_id: str) -> str:
    """The UTC time a stream entry id (``<ms>-<seq>``) was appended at: ``2026-01-31 12:00:05``."""
    ms = int(entry_id.split("-", 1)[0])
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def _elements(blob: Blob) -> list[Any] | None:
    """The list a channel value holds, or for a delta the elements it added; None when it is
    not a list this serializer reads."""
    try:
        if not deltas.is_delta(blob.type):
            value = compression.load(_SERDE, blob)
            return list(value) if isinstance(value, list) else None
        link = deltas.split(blob.type, blob.data)
        added = compression.expand(Blob(link.elements_type, link.elements))
        value = None
        for count in range(1, _MOST_ADDED + 1):
            try:  # the decoder stops after `count` elements: the last count that decodes is all of them
                value = _SERDE.loads_typed((added.type, deltas.array_header(count) + added.data))
            except ValueError:
                break
        return list(value) if isinstance(value, list) else None
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
    return None


def _describe(message: Any) -> str:
    kind = getattr(message, "type", None) or (message.get("type") if isinstance(message, dict) else None)
    content = getattr(message, "content", None)
    if content is None and isinstance(message, dict):
        content = message.get("content")
    text = content if isinstance(content, str) else repr(content if content is not None else message)
    calls = getattr(message, "tool_calls", None) or []
    if calls and not text:
        text = "calls " + ", ".join(str(c.get("name")) for c in calls if isinstance(c, dict))
    return f"{kind or type(message).__name__}: {' '.join(text.split())}"


def last_message(blob: Blob) -> str | None:
    """``"<type>: <content>"`` of the last message a ``messages`` value (or delta) holds, on one
    line; None when it holds none this preview can read."""
    elements = _elements(blob)
    if not elements:
        return None
    return _describe(elements[-1])

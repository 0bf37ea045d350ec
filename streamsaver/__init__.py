"""streamsaver: an event-sourced LangGraph checkpointer on Redis.

Every `put` / `put_writes` appends an event to a per-thread Redis Stream and, in the same atomic
call, projects it into RedisJSON documents indexed by RediSearch; the savers read those views.
A `Subscriber` follows every append through a consumer group on the partition feeds.
Savers are imported lazily so that the pure modules (events, keys, codec, projectors) load
without redis.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from streamsaver.feeds.subscriber import Subscriber
    from streamsaver.log.serde import SafeSerializer
    from streamsaver.memory.aio import AsyncStreamStore
    from streamsaver.memory.sync import StreamStore
    from streamsaver.saver.aio import AsyncShallowStreamSaver, AsyncStreamSaver
    from streamsaver.saver.sync import ShallowStreamSaver, StreamSaver

from streamsaver._version import __version__

__all__ = ["AsyncShallowStreamSaver", "AsyncStreamSaver", "AsyncStreamStore", "SafeSerializer", "ShallowStreamSaver",
           "StreamSaver", "StreamStore", "Subscriber", "__version__"]

_LAZY = {"StreamSaver": "streamsaver.saver.sync", "AsyncStreamSaver": "streamsaver.saver.aio",
         "ShallowStreamSaver": "streamsaver.saver.sync", "AsyncShallowStreamSaver": "streamsaver.saver.aio",
         "Subscriber": "streamsaver.feeds.subscriber", "SafeSerializer": "streamsaver.log.serde",
         "StreamStore": "streamsaver.memory.sync", "AsyncStreamStore": "streamsaver.memory.aio"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'streamsaver' has no attribute {name!r}")

"""The queue of `AsyncStreamStore`'s batching task, which tells when it was last emptied.

LangGraph's batching task (``AsyncBatchedBaseStore``) takes every call queued in one tick as a
batch and ends on a falsy item met where it waits for a batch's first item; one met while it
gathers a batch is dropped. So `AsyncStreamStore.aclose` puts its end mark in behind an empty
queue, and must wait while a batch runs with calls queued behind it: `DrainWatchedQueue.emptied`
is what it waits on (set whenever the task has taken the last item, cleared by a put) instead of
polling the queue on every turn of the event loop.
"""

from __future__ import annotations

import asyncio
from typing import Any

__all__ = ["DrainWatchedQueue"]


class DrainWatchedQueue(asyncio.Queue[Any]):
    """An ``asyncio.Queue`` whose `emptied` event is set exactly while it holds no item."""

    emptied: asyncio.Event

    def _init(self, maxsize: int) -> None:
        super()._init(maxsize)
        self.emptied = asyncio.Event()
        self.emptied.set()

    def _put(self, item: Any) -> None:
        super()._put(item)
        self.emptied.clear()

    def _get(self) -> Any:
        item = super()._get()
        if not self.qsize():
            self.emptied.set()
        return item

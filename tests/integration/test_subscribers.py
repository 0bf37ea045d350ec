"""Subscribers read the partition feeds through consumer groups: typed events with payloads on
demand, filters, at-least-once delivery in per-thread order across consumers that die or join,
dead letters for a handler that keeps failing, lag, and feed retention."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from typing import Any

import pytest
import redis
import redis.asyncio
from helpers import config, new_checkpoint
from subscriber_harness import fill

from streamsaver import AsyncStreamSaver, StreamSaver
from streamsaver.feed_admin import dead_letters, group_health, requeue_dead_letters
from streamsaver.feed_event import FeedEvent
from streamsaver.subscribe import Subscriber


def one_thread_story(saver: StreamSaver) -> None:
    checkpoint, versions = new_checkpoint({"messages": ["hi"], "n": 1})
    saved = saver.put(config("story"), checkpoint, {"source": "input", "step": -1, "user": "ann"}, versions)
    saver.put_writes(saved, [("messages", "hello back"), ("__interrupt__", {"why": "approve"})], "task-1", "")
    saver.delete_thread("story")


def check_story(events: list[FeedEvent], payloads: list[Any]) -> None:
    assert [e.type for e in events] == ["CheckpointSaved", "WritesSaved", "ThreadDeleted"]
    put, writes, deleted = events
    assert (put.thread_id, put.checkpoint_ns, put.metadata) == ("story", "", {"source": "input", "step": -1, "user": "ann"})
    assert writes.checkpoint_id == put.checkpoint_id and writes.metadata is None
    assert (deleted.checkpoint_ns, deleted.checkpoint_id) == (None, None)
    assert len({e.id for e in events}) == 3 and all(e.deliveries == 1 for e in events)
    assert put.time <= writes.time <= deleted.time
    # The thread was deleted before the subscriber ran: its log entries are gone.
    assert payloads == [None, None, {}]


def test_handler_gets_typed_events_and_payloads_on_demand(client: redis.Redis, prefix: str) -> None:
    saver = StreamSaver(client, prefix=prefix)
    saver.setup()
    checkpoint, versions = new_checkpoint({"messages": ["hi"], "n": 1})
    saved = saver.put(config("live"), checkpoint, {"source": "input"}, versions)
    saver.put_writes(saved, [("messages", "hello back")], "task-1", "")
    seen: list[tuple[FeedEvent, Any]] = []
    Subscriber(client, "audit", lambda e: seen.append((e, e.payload())), prefix=prefix).run_burst()
    (put, put_payload), (writes, writes_payload) = seen
    assert put_payload["checkpoint"]["channel_values"] == {"messages": ["hi"], "n": 1}
    assert put_payload["checkpoint"]["id"] == put.checkpoint_id == checkpoint["id"]
    assert writes_payload == {"task_id": "task-1", "task_path": "", "writes": [("messages", "hello back")]}
    story: list[tuple[FeedEvent, Any]] = []
    one_thread_story(saver)
    Subscriber(client, "audit", lambda e: story.append((e, e.payload())), prefix=prefix).run_burst()
    check_story([e for e, _ in story], [p for _, p in story])


async def test_async_twin_with_a_coroutine_handler(aclient: redis.asyncio.Redis, client: redis.Redis,
                                                   prefix: str) -> None:
    saver = StreamSaver(client, prefix=prefix)
    saver.setup()
    checkpoint, versions = new_checkpoint({"n": 7})
    saver.put(config("a"), checkpoint, {"source": "loop"}, versions)
    seen: list[tuple[FeedEvent, Any]] = []

    async def handle(event: FeedEvent) -> None:
        await asyncio.sleep(0)
        seen.append((event, await event.apayload()))

    stats = await Subscriber(aclient, "audit", handle, prefix=prefix).async_run_burst()
    assert stats.handled == 1 and seen[0][1]["checkpoint"]["channel_values"] == {"n": 7}
    story: list[FeedEvent] = []
    one_thread_story(saver)
    await Subscriber(aclient, "audit", story.append, prefix=prefix, prefetch=True).async_run_burst()
    check_story(story, [None, None, {}])


def test_filters_by_type_and_metadata_run_before_the_handler(client: redis.Redis, prefix: str) -> None:
    fill(client, prefix, threads=3, per_thread=6, writes_every=2)
    evens: list[FeedEvent] = []
    writes: list[FeedEvent] = []
    stats = Subscriber(client, "evens", evens.append, prefix=prefix, metadata={"kind": "even", "n": 2.0}).run_burst()
    Subscriber(client, "writes", writes.append, prefix=prefix, types=["WritesSaved"]).run_burst()
    assert sorted((e.thread_id, e.metadata) for e in evens) == [
        (f"thread-{t}", {"n": 2, "kind": "even", "source": "loop", "step": 2}) for t in range(3)]
    assert stats.handled == 3 and stats.filtered == 3 * 6 + 3 * 3 - 3
    assert len(writes) == 9 and {e.type for e in writes} == {"WritesSaved"}
    assert all(h.pending == 0 and h.lag == 0 for h in group_health(client, prefix, "evens"))


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_a_poisoned_event_is_dead_lettered_after_n_attempts_and_the_rest_flow_on(
        kind: str, client: redis.Redis, aclient: redis.asyncio.Redis, prefix: str) -> None:
    order = fill(client, prefix, threads=4, per_thread=5, partitions=2)
    handled: list[tuple[str, int]] = []
    attempts: list[int] = []

    def handle(event: FeedEvent) -> None:
        if (event.thread_id, event.metadata["n"]) == ("thread-1", 2):  # type: ignore[index]
            attempts.append(event.deliveries)
            raise RuntimeError("poison")
        handled.append((event.thread_id, event.metadata["n"]))  # type: ignore[index]

    sub = Subscriber(aclient if kind == "async" else client, "alerts", handle, prefix=prefix, max_deliveries=3)
    stats = await sub.async_run_burst() if kind == "async" else sub.run_burst()
    assert attempts == [1, 2, 3] and stats.dead == 1 and stats.failed == 3
    assert sorted(handled) == sorted(o for o in order if o != ("thread-1", 2))
    by_thread = defaultdict(list)
    for thread, n in handled:
        by_thread[thread].append(n)
    assert all(ns == sorted(ns) for ns in by_thread.values())
    (letter,) = dead_letters(client, prefix, "alerts")
    assert (letter.thread_id, letter.attempts, letter.type) == ("thread-1", 3, "CheckpointSaved")
    assert "RuntimeError: poison" in letter.error
    assert all(h.pending == 0 and h.lag == 0 for h in group_health(client, prefix, "alerts"))
    # Re-queued for this group only, it is handled once the cause is gone; other groups skip it.
    attempts.clear()
    handled.clear()
    other: list[FeedEvent] = []
    Subscriber(client, "other", other.append, prefix=prefix, start="$").prepare()
    assert requeue_dead_letters(client, prefix, "alerts") == 1 and not dead_letters(client, prefix, "alerts")
    Subscriber(client, "alerts", lambda e: handled.append((e.thread_id, e.metadata["n"])),  # type: ignore[index]
               prefix=prefix).run_burst()
    Subscriber(client, "other", other.append, prefix=prefix).run_burst()
    assert handled == [("thread-1", 2)] and other == []

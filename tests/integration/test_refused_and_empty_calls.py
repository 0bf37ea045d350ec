"""Malformed calls are refused before any write; calls that change nothing append nothing.

* ``put`` with no checkpoint (None), or a checkpoint whose ``channel_versions`` or
  ``channel_values`` is None, raises `InvalidInputError` (once ``AttributeError`` /
  ``TypeError``), and nothing is written.
* ``list`` with a filter whose key is not a string (``{1: 1}``, which once listed nothing)
  raises `InvalidInputError`.
* ``put_writes`` with no writes and ``delete_thread`` of a thread that has no key append
  nothing: no log entry, no feed pointer (no tombstone a subscriber would see); deleting a
  thread that exists still appends its tombstone.
"""

from __future__ import annotations

from typing import Any

import pytest
import redis
from helpers import config, keys_of, new_checkpoint, stream_lengths

from streamsaver import AsyncStreamSaver, StreamSaver
from streamsaver.errors import InvalidInputError

METADATA: dict[str, Any] = {"source": "loop", "step": 0}


@pytest.mark.parametrize("broken", ["no checkpoint", "channel_versions", "channel_values"])
def test_a_put_of_a_malformed_checkpoint_is_refused_and_writes_nothing(
    client: redis.Redis, prefix: str, broken: str
) -> None:
    saver = StreamSaver(client, prefix=prefix)
    saver.setup()
    checkpoint, versions = new_checkpoint({"a": 1})
    before = keys_of(client, prefix)
    argument: Any = None if broken == "no checkpoint" else {**checkpoint, broken: None}

    with pytest.raises(InvalidInputError):
        saver.put(config("t"), argument, METADATA, versions)

    assert keys_of(client, prefix) == before


async def test_an_async_put_of_no_checkpoint_is_refused(aclient: Any, prefix: str) -> None:
    saver = AsyncStreamSaver(aclient, prefix=prefix)
    _, versions = new_checkpoint({"a": 1})
    with pytest.raises(InvalidInputError):
        await saver.aput(config("t"), None, METADATA, versions)  # type: ignore[arg-type]


async def test_a_filter_with_a_key_that_is_not_a_string_is_refused(
    sync_saver: StreamSaver, async_saver: AsyncStreamSaver
) -> None:
    with pytest.raises(InvalidInputError, match="metadata keys"):
        list(sync_saver.list(None, filter={1: 1}))  # type: ignore[dict-item]
    with pytest.raises(InvalidInputError, match="metadata keys"):
        [t async for t in async_saver.alist(None, filter={1: 1})]  # type: ignore[dict-item]


def test_put_writes_of_no_writes_appends_nothing(client: redis.Redis, prefix: str) -> None:
    saver = StreamSaver(client, prefix=prefix)
    checkpoint, versions = new_checkpoint({"a": 1})
    saved = saver.put(config("t"), checkpoint, METADATA, versions)
    before = stream_lengths(client, prefix)

    saver.put_writes(saved, [], "task-1")

    assert stream_lengths(client, prefix) == before
    found = saver.get_tuple(saved)
    assert found is not None and found.pending_writes == []
    with pytest.raises(InvalidInputError):
        saver.put_writes(config("t"), [], "task-1")  # still checked: no checkpoint id


async def test_an_async_put_writes_of_no_writes_appends_nothing(
    client: redis.Redis, aclient: Any, prefix: str
) -> None:
    saver = AsyncStreamSaver(aclient, prefix=prefix)
    checkpoint, versions = new_checkpoint({"a": 1})
    saved = await saver.aput(config("t"), checkpoint, METADATA, versions)
    before = stream_lengths(client, prefix)

    await saver.aput_writes(saved, [], "task-1")

    assert stream_lengths(client, prefix) == before


def test_deleting_a_thread_that_has_no_key_appends_nothing(client: redis.Redis, prefix: str) -> None:
    saver = StreamSaver(client, prefix=prefix)
    checkpoint, versions = new_checkpoint({"a": 1})
    saver.put(config("kept"), checkpoint, METADATA, versions)
    saver.delete_thread("gone")
    before = stream_lengths(client, prefix)

    saver.delete_thread("never-written")
    saver.delete_thread("gone")

    assert stream_lengths(client, prefix) == before
    saver.delete_thread("kept")
    assert sum(_feeds(client, prefix).values()) == sum(_feeds(client, prefix, before).values()) + 1  # its tombstone
    assert saver.get_tuple(config("kept")) is None


def _feeds(client: redis.Redis, prefix: str, lengths: dict[bytes, int] | None = None) -> dict[bytes, int]:
    """The partition feeds' lengths (of `lengths`, or now)."""
    lengths = stream_lengths(client, prefix) if lengths is None else lengths
    return {key: n for key, n in lengths.items() if key.startswith(f"{prefix}:feed:".encode())}

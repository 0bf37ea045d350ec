"""The read cache keeps to its bound (`read_cache_bytes`) in a process that only writes: what it
keeps beside the entries it holds (the index of held entries by checkpoint id) names held
entries only, however many checkpoints the thread gets."""

from __future__ import annotations

from typing import Any

from helpers import config, new_checkpoint

from streamsaver import StreamSaver

BOUND = 64 * 1024


def test_a_long_writing_thread_keeps_no_index_of_entries_the_cache_let_go(client: Any, prefix: str) -> None:
    saver = StreamSaver(client, prefix=prefix, read_cache_bytes=BOUND)
    saver.setup()
    cache = saver.core.entries
    assert cache is not None
    saved, previous = config("t"), None
    for step in range(600):
        checkpoint, versions = new_checkpoint({"note": f"{step:04d}" + "x" * 400}, previous)
        saved = saver.put(saved, checkpoint, {}, versions)
        saver.put_writes(saved, [("note", step)], "task")
        previous = checkpoint
    latest = saver.get_tuple(config("t"))  # takes the noted appends in
    assert latest is not None and latest.checkpoint["channel_values"]["note"].startswith("0599")
    assert cache.size <= BOUND
    thread = cache._threads[saver.core.keys.thread("t").log]
    indexed = [entry_id for named in thread.checkpoints.values() for entry_id in named]
    assert set(indexed) <= set(thread.ids)
    assert len(thread.checkpoints) <= len(thread.ids)


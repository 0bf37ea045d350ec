"""The read cache keeps to its bound (`read_cache_bytes`) in a process that only writes: what it
keeps beside the entries it holds (the index of held entries by checkpoint id) names held
entries only, however many checkpoints the thread gets, and the appends it noted but has not
taken in yet count against the bound too."""

from __future__ import annotations

import base64
import os
from typing import Any

from helpers import config, new_checkpoint

from streamsaver import StreamSaver
from streamsaver.checkpoints.entry_bytes import wire_bytes

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


def test_a_writer_that_never_reads_keeps_its_noted_appends_within_the_bound(client: Any, prefix: str) -> None:
    saver = StreamSaver(client, prefix=prefix, read_cache_bytes=BOUND)
    saver.setup()
    cache = saver.core.entries
    assert cache is not None
    saved, previous = config("t"), None
    for _ in range(20):
        # random text: compression keeps most of its ~24 KB, more than a quarter of the bound
        checkpoint, versions = new_checkpoint({"note": base64.b64encode(os.urandom(18_000)).decode()}, previous)
        saved = saver.put(saved, checkpoint, {}, versions)
        previous = checkpoint
        noted = sum(len(wire_bytes(value)) for note in cache._pending for value in _fields(note))
        assert cache.size + noted <= BOUND


def _fields(note: Any) -> Any:
    """The fields a noted append keeps (`EntryCache._note`; before, an `append.lua` command
    noted whole: its event fields)."""
    source, _, _, fields = note[:4]
    if fields is not None or isinstance(source, str):
        return fields or ()
    at = 4 + int(source[2])
    return source[at : at + int(source[at - 1])]

"""A thread's deadline belongs to the thread, and a half-expired thread never fails a listing.

* Two savers on one thread, one with `default_ttl` and one without (two services, or a rollout
  turning TTL on): every append of the one without a TTL gives the keys it touches the log's
  deadline (`append.lua`), so the whole thread expires at one moment, never the log alone.
* A listing across threads that reaches a checkpoint it cannot read (its log expired or was
  lost while a view key stayed, or a damaged payload) leaves it out, counts it in the saver's
  `core.skipped` and logs a warning, instead of raising `PayloadDecodeError`.
"""

from __future__ import annotations

import logging

import pytest
import redis
from helpers import config, keys_of, new_checkpoint

from streamsaver import StreamSaver

THREAD = "shared-thread"


def test_a_writer_without_ttl_gives_its_keys_the_threads_deadline(client: redis.Redis, prefix: str) -> None:
    expiring = StreamSaver(client, prefix=prefix, default_ttl=5)
    plain = StreamSaver(client, prefix=prefix)
    first, versions = new_checkpoint({"step": 0})
    saved = expiring.put(config(THREAD), first, {"step": 0}, versions)
    second, versions = new_checkpoint({"step": 1}, first)
    saved = plain.put(saved, second, {"step": 1}, versions)
    plain.put_writes(saved, [("step", 2)], "task")
    third, versions = new_checkpoint({"step": 2}, second)
    plain.put(config(THREAD, "inner"), third, {"step": 2}, versions)  # a namespace of its own

    log = plain.core.keys.thread(THREAD).log
    deadline = client.pexpiretime(log)
    assert deadline > 0
    thread_keys = [key for key in keys_of(client, prefix) if THREAD.encode() in key]
    assert len(thread_keys) > 10
    assert {key: client.pexpiretime(key) for key in thread_keys} == dict.fromkeys(thread_keys, deadline)


def test_a_writer_without_ttl_on_a_thread_without_deadline_sets_none(client: redis.Redis, prefix: str) -> None:
    plain = StreamSaver(client, prefix=prefix)
    checkpoint, versions = new_checkpoint({"step": 0})
    plain.put(config(THREAD), checkpoint, {}, versions)
    assert all(client.pttl(key) == -1 for key in keys_of(client, prefix) if THREAD.encode() in key)


def test_a_listing_across_threads_skips_a_half_expired_thread(
    client: redis.Redis, prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    saver = StreamSaver(client, prefix=prefix)
    for thread in ("a", "b", "c"):
        checkpoint, versions = new_checkpoint({"step": thread})
        saver.put(config(thread), checkpoint, {"kind": "x"}, versions)
    client.delete(saver.core.keys.thread("b").log)  # its log expired; its view keys did not
    with caplog.at_level(logging.WARNING, logger="streamsaver.listing"):
        listed = [t.config["configurable"]["thread_id"] for t in saver.list(None, filter={"kind": "x"})]
        everything = [t.config["configurable"]["thread_id"] for t in saver.list(None)]
    assert sorted(listed) == ["a", "c"] and sorted(everything) == ["a", "c"]
    assert saver.core.skipped.count == 2
    assert saver.core.skipped.last is not None
    assert "skipped a checkpoint" in caplog.text


def _thread_expiries(client: redis.Redis, prefix: str, thread: str) -> dict[bytes, int]:
    return {key: client.pexpiretime(key) for key in keys_of(client, prefix) if thread.encode() in key}


def _expiring_thread(client: redis.Redis, prefix: str) -> StreamSaver:
    expiring = StreamSaver(client, prefix=prefix, default_ttl=5)
    previous, saved = None, config(THREAD)
    for step in range(4):
        checkpoint, versions = new_checkpoint({"step": step, "log": [step]}, previous)
        saved = expiring.put(saved, checkpoint, {"step": step, "run_id": f"run-{step % 2}"}, versions)
        expiring.put_writes(saved, [("step", step)], f"task-{step}")
        previous = checkpoint
    return expiring


@pytest.mark.parametrize("rewrite", ["prune", "retain", "delete_for_runs"])
def test_a_rewrite_by_a_writer_without_ttl_keeps_the_threads_deadline(
    client: redis.Redis, prefix: str, rewrite: str
) -> None:
    """rewrite.lua: a prune replaces the log (deleting it, and its expiry, first); every key the
    rewrite writes gets the deadline the log had, not none."""
    _expiring_thread(client, prefix)
    plain = StreamSaver(client, prefix=prefix)
    plain.setup()
    deadline = client.pexpiretime(plain.core.keys.thread(THREAD).log)
    assert deadline > 0

    if rewrite == "prune":
        plain.prune([THREAD])
    elif rewrite == "retain":
        plain.retain([THREAD], keep_last=1)
    else:
        plain.delete_for_runs(["run-1"])

    expiries = _thread_expiries(client, prefix, THREAD)
    assert plain.core.keys.thread(THREAD).log.encode() in expiries
    assert expiries == dict.fromkeys(expiries, deadline)


def test_a_batch_append_gives_keys_without_expiry_the_logs_deadline(client: redis.Redis, prefix: str) -> None:
    """append_batch.lua (the store's writes): keys it writes that have no expiry of their own take
    the log's deadline, when the log has one; an expiry a projection set is kept."""
    from streamsaver import StreamStore

    store = StreamStore(client, prefix=prefix)
    store.put(("users", "ada"), "profile", {"name": "Ada"})
    [log] = [key for key in keys_of(client, prefix) if b":slog:" in key]
    client.pexpire(log, 600_000)
    deadline = client.pexpiretime(log)

    store.put(("users", "ada"), "profile", {"name": "Ada L."})
    store.put(("users", "ada"), "short", {"v": 1}, ttl=1)

    items = [key for key in keys_of(client, prefix) if b":items:" in key or b":spos:" in key]
    expiries = {key: client.pexpiretime(key) for key in items}
    assert len(expiries) >= 3
    short = [key for key in items if key.endswith(b"short") or b"short" in key]
    assert short and all(0 < expiries[key] < deadline for key in short)
    assert all(expiries[key] == deadline for key in items if key not in short)

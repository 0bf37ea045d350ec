"""Servers that answer ``LOADING`` on demand: started with the debug command and a per-key load
delay, filled with filler keys, then made to reload their data (``DEBUG RELOAD``) for as long as
a test's block runs."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

DEBUG_ARGS = ["--enable-debug-command", "yes", "--loading-process-events-interval-bytes", "1024"]
"""A server that can reload its data and answers clients while it loads (every ~30 keys)."""

FILLER_KEYS = 10_000
"""Keys `fill` adds: a reload takes about a second at 20 us a key (the server sleeps ~80), ten at 1 ms."""


def fill(node: redis.Redis, tag: str = "filler") -> None:
    """Give `node` `FILLER_KEYS` keys under the hash tag `tag` (on a cluster node, a tag of one of
    its own slots), so a reload of its data takes a while."""
    node.execute_command("DEBUG", "POPULATE", FILLER_KEYS, f"{{{tag}}}:filler")


def unretried(url: str) -> redis.Redis:
    """A plain client of the node at `url` that reports ``LOADING`` at once (redis-py's default
    ``Retry`` would resend a refused command until the server is done)."""
    return redis.Redis.from_url(url, retry=Retry(NoBackoff(), 0))


@contextmanager
def reloading(url: str, *, delay_us: int = 20) -> Iterator[None]:
    """The node at `url` reloads its data (``DEBUG RELOAD``, `delay_us` per key) until the
    block's end, when the rest loads without delay and the reload is awaited; the node answers
    ``LOADING`` on entry.

    Raises:
        AssertionError: the reload failed, or ended before the node reported ``LOADING``.
    """
    failed: list[BaseException] = []

    def reload() -> None:
        # No socket timeout: the reply comes when the reload is done.
        with redis.Redis.from_url(url, socket_timeout=None, retry=Retry(NoBackoff(), 0)) as admin:
            try:
                admin.execute_command("DEBUG", "RELOAD")
            except redis.RedisError as error:
                failed.append(error)

    with unretried(url) as probe:
        probe.config_set("key-load-delay", delay_us)
        reloader = threading.Thread(target=reload)
        reloader.start()
        try:
            while reloader.is_alive():  # until the node says it is loading
                try:
                    probe.ping()
                except redis.BusyLoadingError:
                    break
            else:
                raise AssertionError(f"the reload ended before the node reported LOADING: {failed}")
            yield
        finally:
            probe.config_set("key-load-delay", 0)  # CONFIG is served while loading
            reloader.join()
    if failed:
        raise AssertionError(f"the reload failed: {failed[0]!r}")

"""Helpers for the subscriber tests: fast pipelined appends, and a consumer run as a process.

Run as a script (``python subscriber_harness.py URL PREFIX GROUP NAME LEASE_MS``), it is one
subscriber of GROUP that records each handled event (``thread|n``) on the list
``PREFIX:test:handled`` and runs until killed; on SIGTERM it stops cleanly and adds the pending
entries it claimed from dead owners to ``PREFIX:test:claimed``.
"""

from __future__ import annotations

import signal
import sys
from typing import Any

import redis
from langgraph.checkpoint.base import empty_checkpoint

from streamsaver import StreamSaver
from streamsaver.log.keys import Keyspace


def handled_key(prefix: str) -> str:
    return f"{prefix}:test:handled"


def fill(client: redis.Redis, prefix: str, threads: int, per_thread: int, *, partitions: int = 8,
         writes_every: int = 0) -> list[tuple[str, int]]:
    """Append `per_thread` checkpoints (metadata ``{"n": i, "kind": even|odd}``) to each of
    `threads` threads, pipelined; every `writes_every`-th also gets writes. Returns the
    checkpoints' (thread, n) in append order."""
    saver = StreamSaver(client, prefix=prefix, partitions=partitions, projections=("full",))
    saver.setup()
    order, parents = [], {}
    for n in range(per_thread):
        pipe = client.pipeline(transaction=False)
        for t in range(threads):
            thread = f"thread-{t}"
            checkpoint = empty_checkpoint()
            checkpoint["channel_values"] = {"count": n}
            checkpoint["channel_versions"] = {"count": n + 1}
            config: Any = {"configurable": {"thread_id": thread, "checkpoint_ns": "",
                                            **({"checkpoint_id": parents[thread]} if thread in parents else {})}}
            metadata: Any = {"n": n, "kind": "even" if n % 2 == 0 else "odd", "source": "loop", "step": n}
            put, saved = saver.core.put_request(config, checkpoint, metadata, {"count": n + 1})
            pipe.execute_command(*put)
            if writes_every and n % writes_every == 0:
                pipe.execute_command(*saver.core.put_writes_request(saved, [("count", n)], f"task-{n}", ""))
            parents[thread] = checkpoint["id"]
            order.append((thread, n))
        pipe.execute()
    return order


def partitions_of(client: redis.Redis, prefix: str) -> int:
    return int(client.hget(Keyspace(prefix).meta, "partitions") or 0)


def main(url: str, prefix: str, group: str, name: str, lease_ms: str) -> None:
    from streamsaver.feeds.subscriber import Subscriber

    client = redis.Redis.from_url(url, client_name=name)  # the test finds its connections by name
    key = handled_key(prefix)

    def record(event: Any) -> None:
        client.rpush(key, f"{event.thread_id}|{event.metadata['n']}")

    sub = Subscriber(client, group, record, prefix=prefix, name=name, lease_ms=int(lease_ms), batch=20, poll_ms=50,
                     load_metadata=True)
    signal.signal(signal.SIGTERM, lambda *_: sub.stop())
    stats = sub.run()
    client.incrby(f"{prefix}:test:claimed", stats.claimed)


if __name__ == "__main__":
    main(*sys.argv[1:6])

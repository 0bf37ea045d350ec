"""Another process working on a thread (for the read cache's tests): ``python other_process.py
URL PREFIX THREAD OP [VALUE]``, where OP is one of

- ``rewrite``: delete the thread, then put checkpoints under the ids of its old ones (read from
  stdin, a JSON list), each holding VALUE, each the parent of the next;
- ``put``: put one more checkpoint holding VALUE after the latest;
- ``prune``: keep only the latest checkpoint;
- ``copy``: delete the thread, then copy thread VALUE onto it.

A URL of a test cluster's node (CLUSTER=1 in the environment) is reached as a cluster; VIEW=shallow
in the environment makes the saver a shallow one.
"""

from __future__ import annotations

import json
import os
import sys

import redis
from langgraph.checkpoint.base import empty_checkpoint

from streamsaver import ShallowStreamSaver, StreamSaver


def main(url: str, prefix: str, thread: str, op: str, value: str = "") -> None:
    cluster = os.environ.get("CLUSTER") == "1"
    client = redis.cluster.RedisCluster.from_url(url) if cluster else redis.Redis.from_url(url)
    shallow = os.environ.get("VIEW") == "shallow"
    saver = ShallowStreamSaver(client, prefix=prefix) if shallow else StreamSaver(client, prefix=prefix)
    config = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    if op == "rewrite":
        saver.delete_thread(thread)
        parent = config
        for n, checkpoint_id in enumerate(json.loads(sys.stdin.read())):
            parent = put(saver, parent, checkpoint_id, value, n)
    elif op == "put":
        latest = saver.get_tuple(config)
        assert latest is not None
        put(saver, latest.config, None, value, 99)
    elif op == "prune":
        saver.prune([thread])
    elif op == "copy":
        saver.delete_thread(thread)
        saver.copy_thread(value, thread)
    client.close()


def put(saver: StreamSaver, config: dict, checkpoint_id: str | None, value: str, n: int) -> dict:
    checkpoint = empty_checkpoint()
    if checkpoint_id is not None:
        checkpoint["id"] = checkpoint_id
    checkpoint["channel_values"] = {"messages": [value] * (n + 1), "note": value}
    checkpoint["channel_versions"] = {"messages": f"{n + 10}", "note": f"{n + 10}"}
    saved = saver.put(config, checkpoint, {"n": n}, dict(checkpoint["channel_versions"]))
    saver.put_writes(saved, [("note", value)], f"task-{n}")
    return saved


if __name__ == "__main__":
    main(*sys.argv[1:])

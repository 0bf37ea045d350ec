"""The read cache, measured: `get_tuple` with and without it on the same data, in one run.

python -m benchmarks.read_cache [--steps 30] [--calls 50] [--rounds 10]

One embedded Redis, one thread of a growing conversation (two ~500-byte messages a step, deltas as
`put` stores them, three writes a step), written by a saver with the default read cache, which
then reads it as does a saver with ``read_cache_bytes=0`` (every entry shipped, as before the
cache). Rounds alternate the two (ABBA). Prints, for ``get_tuple`` of the latest checkpoint and
by id, the median over rounds of: the read script's server time per call (``INFO
commandstats``: the script and its commands, not the reply's trip), the client's wall time per
call, and the reply's bytes. The cached saver's reads are hits: it wrote the thread (its puts
filled the cache) and learnt the thread's incarnation from its first read.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
import uuid
from collections.abc import Sequence
from typing import Any

import redis
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import empty_checkpoint

from streamsaver import StreamSaver
from streamsaver.checkpoints.cached_reads import cached_get
from streamsaver.checkpoints.reads import get_request
from streamsaver.server.embedded import EmbeddedRedis

_WORDS = [
    "agent", "tool", "call", "result", "graph", "node", "message",
    "redis", "stream", "entry", "json", "index", "lua", "script",
]


def _text(rng: random.Random) -> str:
    return " ".join(rng.choices(_WORDS, k=80))[:500]


def _fill(saver: StreamSaver, steps: int) -> tuple[RunnableConfig, RunnableConfig]:
    rng = random.Random(7)
    latest: RunnableConfig = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    saved: RunnableConfig = latest
    messages: list[Any] = []
    for step in range(steps):
        messages += [HumanMessage(content=_text(rng), id=f"h{step}"), AIMessage(content=_text(rng), id=f"a{step}")]
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"messages": list(messages), "step": step}
        checkpoint["channel_versions"] = {"messages": step + 1, "step": step + 1}
        versions = {"messages": step + 1, "step": step + 1}
        saved = saver.put(saved, checkpoint, {"source": "loop", "step": step}, versions)
        saver.put_writes(saved, [("a", 1), ("b", 2), ("c", 3)], "task")
        if step == 0:
            saver.get_tuple(latest)  # the saver learns the thread's incarnation
    return latest, saved


def _size(reply: Any) -> int:
    if isinstance(reply, bytes):
        return len(reply)
    if isinstance(reply, list):
        return sum(_size(item) for item in reply)
    return 8


def _reply_bytes(saver: StreamSaver, client: redis.Redis, config: RunnableConfig) -> int:
    cache = saver.core.entries
    if cache is None:
        return _size(client.execute_command(*get_request(saver.core.keys, "full", config)))
    return _size(client.execute_command(*cached_get(cache, saver.core.keys, "full", config).command))


def _round(client: redis.Redis, saver: StreamSaver, config: RunnableConfig, calls: int) -> tuple[float, float]:
    """Server µs and client ms per call of `calls` reads."""
    before = client.info("commandstats")["cmdstat_evalsha"]
    started = time.perf_counter()
    for _ in range(calls):
        saver.get_tuple(config)
    wall = (time.perf_counter() - started) / calls * 1000
    after = client.info("commandstats")["cmdstat_evalsha"]
    return (int(after["usec"]) - int(before["usec"])) / (int(after["calls"]) - int(before["calls"])), wall


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.read_cache", description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30, help="conversation steps before reading")
    parser.add_argument("--calls", type=int, default=50, help="calls per saver and round")
    parser.add_argument("--rounds", type=int, default=10, help="alternated rounds")
    args = parser.parse_args(argv)
    with EmbeddedRedis() as server:
        client = redis.Redis.from_url(server.url)
        prefix = "cache" + uuid.uuid4().hex[:6]
        cached = StreamSaver(client, prefix=prefix)
        cached.setup()
        plain = StreamSaver(client, prefix=prefix, read_cache_bytes=0)
        latest, by_id = _fill(cached, args.steps)
        savers = {"no cache": plain, "cache": cached}
        print("| read | saver | server µs/call | client ms/call | reply bytes |\n|---|---|---:|---:|---:|")
        for name, config in (("latest", latest), ("by id", by_id)):
            server_us: dict[str, list[float]] = {k: [] for k in savers}
            client_ms: dict[str, list[float]] = {k: [] for k in savers}
            for round_ in range(args.rounds):
                for label in list(savers) if round_ % 2 == 0 else list(savers)[::-1]:
                    us, ms = _round(client, savers[label], config, args.calls)
                    server_us[label].append(us)
                    client_ms[label].append(ms)
            for label, saver in savers.items():
                print(
                    f"| {name} | {label} | {statistics.median(server_us[label]):.1f} | "
                    f"{statistics.median(client_ms[label]):.3f} | {_reply_bytes(saver, client, config)} |"
                )
        client.close()


if __name__ == "__main__":
    main()

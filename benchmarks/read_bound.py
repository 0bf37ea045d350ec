"""What a client-side cache of log entries could save a read on the server, at most.

python -m benchmarks.read_bound [--steps 30] [--calls 50] [--rounds 10]

Sizes issue 23's lever "reads ship only what the client lacks" before building it: one
embedded Redis, one thread of a growing conversation (two ~500-byte messages a step, deltas as
`put` stores them), and two versions of `read_full.lua` called alternately on the same data:
the script as shipped, and one whose log reader holds every entry already (no ``XRANGE``, a
1-byte marker for each value, no delta link followed), which also interns 64 claimed entry ids
from its arguments and reads an incarnation with one ``HGET``, as a cache's claims would. Prints,
for ``get_tuple`` of the latest checkpoint and by id, the script's server time per call
(``INFO commandstats``: the script and its commands, not the reply's trip) and the reply's bytes.
The difference is the most a cache hit saves the server; the client still pays its decoding.
"""

from __future__ import annotations

import argparse
import random
import statistics
import uuid
from collections.abc import Sequence
from typing import Any

import redis
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import empty_checkpoint

from streamsaver import StreamSaver
from streamsaver.checkpoints.reads import get_request
from streamsaver.scripts import READ_FULL
from streamsaver.server.embedded import EmbeddedRedis

_READER = "local function log_reader(log)\n  local cache = {}\n  local read = function(id, field)"
_HELD = (
    "local function log_reader(log)\n  local cache = {}\n  local held = {}\n"
    "  for k = 6, #ARGV do held[ARGV[k]] = true end\n"
    "  redis.call('HGET', KEYS[3] .. ':incarnation', 'inc')\n"
    "  local read = function(id, field)\n    if held then return '1' end"
)
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
    return latest, saved


def _size(reply: Any) -> int:
    if isinstance(reply, bytes):
        return len(reply)
    if isinstance(reply, list):
        return sum(_size(item) for item in reply)
    return 8


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.read_bound", description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30, help="conversation steps before reading")
    parser.add_argument("--calls", type=int, default=50, help="calls per version and round")
    parser.add_argument("--rounds", type=int, default=10, help="alternated rounds")
    args = parser.parse_args(argv)
    held_source = READ_FULL.source.replace(_READER, _HELD)
    if held_source == READ_FULL.source:
        raise SystemExit("read_full.lua's log reader changed: update benchmarks/read_bound.py")
    with EmbeddedRedis() as server:
        client = redis.Redis.from_url(server.url)
        saver = StreamSaver(client, prefix="bound" + uuid.uuid4().hex[:6])
        saver.setup()
        latest, by_id = _fill(saver, args.steps)
        held_sha = client.script_load(held_source)
        claims = [f"{1700000000000 + k}-0" for k in range(64)]

        def call(held: bool, config: RunnableConfig) -> Any:
            command = get_request(saver.core.keys, "full", config)
            if held:
                command = ["EVALSHA", held_sha, *command[2:], *claims]
            return client.execute_command(*command)

        def server_usec() -> tuple[int, int]:
            stats = client.info("commandstats")["cmdstat_evalsha"]
            return int(stats["usec"]), int(stats["calls"])

        print("| read | script | server us/call (median of rounds) | reply bytes |\n|---|---|---:|---:|")
        for name, config in (("latest", latest), ("by id", by_id)):
            per_round: dict[bool, list[float]] = {False: [], True: []}
            for round_ in range(args.rounds):
                for held in (False, True) if round_ % 2 == 0 else (True, False):
                    usec, calls = server_usec()
                    for _ in range(args.calls):
                        call(held, config)
                    usec_after, calls_after = server_usec()
                    per_round[held].append((usec_after - usec) / (calls_after - calls))
            for held in (False, True):
                label = "every entry held" if held else "as shipped"
                usec = statistics.median(per_round[held])
                print(f"| {name} | {label} | {usec:.1f} | {_size(call(held, config))} |")
        client.close()


if __name__ == "__main__":
    main()

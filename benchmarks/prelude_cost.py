"""What evaluating the write scripts' preludes costs each call, and what Redis Functions would save.

A script's chunk runs on every ``EVALSHA``: each ``local function`` of its preludes
(``_spread``, ``_esc``, ``_item``, ``_lib``, ``_delta``: the op interpreter, type checks, purges,
TTL blocks, delta checks) is a closure made anew, with its upvalues and tables, then collected.
A Redis Functions library runs its top level once, at ``FUNCTION LOAD``. Server time per call
(``INFO commandstats`` after ``CONFIG RESETSTAT``, medians of rounds of 400 calls, variants
alternated), all with the ``ARGV`` of a real put_writes of the benchmark conversation:
``EVALSHA`` of ``return 1`` (the floor: arguments into Lua), ``EVALSHA`` of the preludes then
``return 1``, and ``FCALL`` of a function registered by a library holding the same preludes
(``redis.call`` is not reachable while a library loads: the library wraps it).

    python -m benchmarks.prelude_cost --rounds 7
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
from typing import Any

import redis

from benchmarks.workload import Conversation
from streamsaver import StreamSaver
from streamsaver.scripts import WRITE_SIDE, _read
from streamsaver.server.embedded import EmbeddedRedis

__all__ = ["main"]

_PRELUDES = (*WRITE_SIDE, "_delta")


def _put_writes_command(client: redis.Redis) -> list[Any]:
    saver = StreamSaver(client, prefix="pc")
    saver.setup()
    conversation = Conversation("t", saver.get_next_version, random.Random(1))
    for _ in range(25):
        step = conversation.next_step()
        conversation.record(saver.put(step.parent_config, step.checkpoint, step.metadata, step.new_versions))
        saver.put_writes(conversation.latest, step.writes, step.task_id)
    step = conversation.next_step()
    command = saver.core.put_writes_request(conversation.latest, step.writes, step.task_id, "")
    assert command is not None
    return list(command)


def main(argv: list[str] | None = None) -> None:
    """Measure the three variants and print the server time of each per call."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=400, help="calls per variant per round")
    args = parser.parse_args(argv)
    preludes = "\n".join(_read(f"{name}.lua") for name in _PRELUDES)
    library = (
        "#!lua name=ss_prelude_cost\n"
        + preludes.replace("local ARGV = ARGV", "local ARGV").replace(
            "local rcall = redis.call", "local rcall = function(...) return redis.call(...) end"
        )
        + "\nredis.register_function('ss_prelude_cost', function(_, args) ARGV = args return 1 end)\n"
    )
    with EmbeddedRedis() as server:
        client = redis.Redis.from_url(server.url)
        command = _put_writes_command(client)
        keys_and_args = command[2:]
        client.execute_command("FUNCTION", "LOAD", "REPLACE", library)
        variants = {
            "EVALSHA return 1": (["EVALSHA", client.script_load("return 1"), *keys_and_args], "evalsha"),
            "EVALSHA preludes": (["EVALSHA", client.script_load(preludes + "\nreturn 1"), *keys_and_args], "evalsha"),
            "FCALL (preludes loaded once)": (["FCALL", "ss_prelude_cost", *keys_and_args], "fcall"),
        }
        times: dict[str, list[float]] = {name: [] for name in variants}
        for round_ in range(args.rounds):
            names = list(variants) if round_ % 2 == 0 else list(variants)[::-1]
            for name in names:
                call, stat = variants[name]
                client.config_resetstat()
                for _ in range(args.calls):
                    client.execute_command(*call)
                stats = client.info("commandstats")[f"cmdstat_{stat}"]
                times[name].append(stats["usec"] / stats["calls"])
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"server us per call, {len(keys_and_args)} put_writes arguments, {args.rounds} rounds (medians); load {load}")
    for name, values in times.items():
        print(f"{name:30} {statistics.median(values):6.2f}")


if __name__ == "__main__":
    main()

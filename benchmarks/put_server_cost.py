"""Server work of each put and put_writes of a growing conversation: instructions or microseconds.

    python -m benchmarks.put_server_cost [--steps 40] [--warm 10] [--callgrind]

One `StreamSaver` writes `--warm` then `--steps` steps of one `Conversation` (a put, then its
put_writes; the messages list grows two messages a step, so most puts store it as a delta and
every eighth whole). Without ``--callgrind``: the server's own time per call, from ``SLOWLOG``
with every command logged (``slowlog-log-slower-than 0``): medians per kind, in microseconds
(integer resolution; noisy when other processes share the cores). With ``--callgrind``: the
server runs under ``valgrind --tool=callgrind --toggle-collect=evalGenericCommand`` and the
counters are dumped after every measured call, so each call's instructions inside the script
call are exact whatever the machine's load (medians and means per kind). Compare two trees by
running the module from each (``PYTHONPATH=<tree>``).
"""

from __future__ import annotations

import argparse
import glob
import os
import random
import re
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable

import redis

from benchmarks.workload import Conversation
from streamsaver import StreamSaver
from streamsaver.server.embedded import EmbeddedRedis, find_binaries, free_port

__all__ = ["main"]

_TOTALS = re.compile(rb"^(?:summary|totals): (\d+)", re.MULTILINE)


class _Callgrind:
    """A redis-server (modules loaded) under callgrind, collecting inside script calls only."""

    def __init__(self) -> None:
        server, modules = find_binaries()
        self.dir = tempfile.mkdtemp(prefix="ss-put-cg-")
        self.port = free_port()
        args = ["valgrind", "--tool=callgrind", "--toggle-collect=evalGenericCommand",
                f"--callgrind-out-file={self.dir}/cg.%p", str(server), "--port", str(self.port),
                "--bind", "127.0.0.1", "--dir", self.dir, "--appendonly", "yes", "--save", ""]
        for module in modules:
            args += ["--loadmodule", str(module)]
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.client = redis.Redis(port=self.port)
        for _ in range(600):
            try:
                self.client.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.1)

    def dump(self) -> int:
        """Instructions collected since the last dump."""
        before = set(glob.glob(f"{self.dir}/cg.*"))
        subprocess.run(["callgrind_control", "-d", str(self.process.pid)], check=True, capture_output=True)
        [new] = set(glob.glob(f"{self.dir}/cg.*")) - before
        with open(new, "rb") as f:
            found = _TOTALS.search(f.read())
        return int(found.group(1)) if found else 0

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait()


def _run(client: redis.Redis, steps: int, warm: int, measure: Callable[[str], None]) -> None:
    saver = StreamSaver(client, prefix="psc")
    saver.setup()
    conversation = Conversation("t", saver.get_next_version, random.Random(1))
    for n in range(warm + steps):
        step = conversation.next_step()
        if n == warm:
            measure("")
        conversation.record(saver.put(step.parent_config, step.checkpoint, step.metadata, step.new_versions))
        if n >= warm:
            measure("put")
        saver.put_writes(conversation.latest, step.writes, step.task_id)
        if n >= warm:
            measure("put_writes")


def _report(unit: str, found: dict[str, list[int]]) -> None:
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"server {unit} per call (load {load})")
    for kind, values in found.items():
        median, mean = statistics.median(values), statistics.fmean(values)
        print(f"{kind:11} median {median:10.0f}  mean {mean:10.0f}  n {len(values)}")


def main(argv: list[str] | None = None) -> None:
    """Write the conversation and print each kind's server work per call."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--warm", type=int, default=10)
    parser.add_argument("--callgrind", action="store_true")
    args = parser.parse_args(argv)
    found: dict[str, list[int]] = {"put": [], "put_writes": []}
    if args.callgrind:
        grind = _Callgrind()
        try:
            def measure(kind: str) -> None:
                count = grind.dump()
                if kind:
                    found[kind].append(count)

            _run(grind.client, args.steps, args.warm, measure)
        finally:
            grind.stop()
        _report("instructions", found)
        return
    with EmbeddedRedis() as server:
        client = redis.Redis.from_url(server.url)
        client.config_set("slowlog-log-slower-than", 0)
        client.config_set("slowlog-max-len", 100000)

        def measure_time(kind: str) -> None:
            if kind:
                entries = [e for e in client.slowlog_get(100) if e["command"].startswith(b"EVALSHA")]
                found[kind].append(int(entries[0]["duration"]))
            client.slowlog_reset()

        _run(client, args.steps, args.warm, measure_time)
    _report("microseconds", found)


if __name__ == "__main__":
    main()

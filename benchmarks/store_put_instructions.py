"""Instructions of one store upsert (what ``python -m benchmarks.store`` times as put), counted
with callgrind: deterministic, whatever the machine's load.

    python -m benchmarks.store_put_instructions server [--puts 200]
    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=/tmp/client.cg \\
        .venv/bin/python -m benchmarks.store_put_instructions client [--puts 500]
    (then the ``totals:`` line of /tmp/client.cg, divided by the puts)

``server``: a ``redis-server`` with the embedded modules runs under callgrind (collecting inside
``processCommand`` only, instrumentation switched on after the fill); a StreamStore with the
benchmark's index (64 dims, FLAT, cosine, ``benchmarks.store_data``) is filled with 1,000 items,
then upserts random ones; prints the server's instructions per put. ``client``: the same store's
puts with no server (its connection lane answers every call with an entry id), instrumentation
switched on (``callgrind_control -i on``) after a warm-up round: the client's instructions per put
(validation, embedding lookup, event, projection, packing, the driver).
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import tempfile
import time
from typing import Any

import redis

from benchmarks import store_data as data
from benchmarks.store import fill, index_config
from streamsaver import StreamStore
from streamsaver.drivers.lane import pack
from streamsaver.log.keys import Keyspace
from streamsaver.server.embedded import find_binaries, free_port


def _valgrind_server(out: str) -> tuple[subprocess.Popen[bytes], int]:
    binary, modules = find_binaries()
    port = free_port()
    args = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}",
            "--toggle-collect=processCommand", str(binary), "--port", str(port), "--bind", "127.0.0.1",
            "--dir", tempfile.mkdtemp(), "--appendonly", "yes", "--save", ""]
    for module in modules:
        args += ["--loadmodule", str(module)]
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL), port


def _instrument(pid: int, on: bool) -> None:
    subprocess.run(["callgrind_control", "-i", "on" if on else "off", str(pid)], check=True, capture_output=True)


def server(puts: int) -> float:
    """The server's instructions per upsert."""
    out = os.path.join(tempfile.mkdtemp(), "server.cg")
    process, port = _valgrind_server(out)
    try:
        client = redis.Redis(port=port, socket_timeout=600)
        for _ in range(600):
            try:
                client.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.2)
        store = StreamStore(client, prefix="bench", index=index_config(data.ClusteredEmbeddings(64)))  # type: ignore[arg-type]
        store.setup()
        fill(store, 1000)
        rng = random.Random(1)
        chosen = [rng.randrange(1000) for _ in range(puts)]
        for i in chosen[:20]:
            store.put(data.namespace(i), data.key(i), data.value(i))
        _instrument(process.pid, True)
        for i in chosen:
            store.put(data.namespace(i), data.key(i), data.value(i))
        _instrument(process.pid, False)
    finally:
        process.terminate()
        process.wait()
    with open(out) as handle:
        [total] = [int(line.split()[1]) for line in handle if line.startswith("totals:")]
    return total / puts


def client(puts: int) -> None:
    """Upserts with no server (see the module docstring); run under callgrind."""
    store = StreamStore(redis.Redis(port=1), prefix="b", index=index_config(data.ClusteredEmbeddings(64)))  # type: ignore[arg-type]
    store.core.keyspace = Keyspace("b", 16)  # what setup would read
    lane: Any = store._driver.lane
    lane.send = lambda commands, meanwhile=None: [pack(command) and [b"1-0"] for command in commands]
    chosen = [i % 200 for i in range(puts)]
    for i in chosen:
        store.put(data.namespace(i), data.key(i), data.value(i))
    _instrument(os.getpid(), True)
    for i in chosen:
        store.put(data.namespace(i), data.key(i), data.value(i))
    _instrument(os.getpid(), False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("side", choices=["server", "client"])
    parser.add_argument("--puts", type=int, default=None, help="upserts counted (server 200, client 500)")
    args = parser.parse_args()
    if args.side == "server":
        print(f"server instructions per upsert: {server(args.puts or 200):,.0f}")
    else:
        client(args.puts or 500)


if __name__ == "__main__":
    main()

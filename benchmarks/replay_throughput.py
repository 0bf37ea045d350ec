"""Replay throughput: how many logged events per second `Replayer.rebuild` folds into the views.

    python -m benchmarks.replay_throughput [--threads 2000] [--steps 20] [--page 500] [--jobs 1] [--profile]

Builds a realistic log on an embedded Redis (AOF on, as the tests run it): ``--threads``
LangGraph-like conversations (`benchmarks.workload.Conversation`: a ``messages`` channel that
grows by two ~500-byte messages a step, a few small channels, versions from the saver's own
``get_next_version``) of ``--steps`` steps each, every step one ``put`` and one ``put_writes``
of three writes, i.e. two events. The log is written through the ordinary append path
(pipelined across threads, so building it is quick), so the views are live. Then it times
``Replayer.rebuild`` (drop the views, fold every log into them again) for both views and for
each view alone, checks that the rebuilt views equal the live ones (a digest of the content of
every view key and position), and prints events/s.

With ``--profile`` it also runs one rebuild of both views under cProfile and prints where the
time goes: server command time per command (``INFO commandstats``, a script's time includes its
Lua) against the client's own time by layer.
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import io
import pstats
import random
import resource
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repo root importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import redis

from benchmarks.workload import Conversation
from streamsaver import StreamSaver
from streamsaver.log.keys import ViewName
from streamsaver.ops.replay import Replayer
from streamsaver.ops.replay_jobs import replay_in_jobs
from streamsaver.server.embedded import EmbeddedRedis

PREFIX = "bench"
RUNS: tuple[tuple[ViewName, ...], ...] = (("full", "shallow"), ("full",), ("shallow",))


def build_log(client: redis.Redis, threads: int, steps: int, seed: int = 7) -> int:
    """Write `threads` conversations of `steps` steps through the append path; returns events."""
    saver = StreamSaver(client, prefix=PREFIX)
    saver.setup()
    rng = random.Random(seed)
    conversations = [
        Conversation(f"thread-{i}", saver.get_next_version, random.Random(rng.getrandbits(64)))
        for i in range(threads)
    ]
    events = 0
    for _ in range(steps):
        for start in range(0, threads, 100):
            pipe = client.pipeline(transaction=False)
            for conversation in conversations[start : start + 100]:
                step = conversation.next_step()
                put, saved = saver.core.put_request(
                    step.parent_config, step.checkpoint, step.metadata, step.new_versions
                )
                conversation.record(saved)
                pipe.execute_command(*put)
                pipe.execute_command(
                    *saver.core.put_writes_request(saved, step.writes, step.task_id, "")
                )
                events += 2
            pipe.execute()
    return events


def command_usec(client: redis.Redis) -> dict[str, tuple[int, float]]:
    """Calls and microseconds per command since the server started (``INFO commandstats``)."""
    stats = client.info("commandstats")
    return {
        k.removeprefix("cmdstat_"): (int(v["calls"]), float(v["usec"])) for k, v in stats.items()
    }


def digest(client: redis.Redis) -> str:
    """A digest of every view key and position (type and content); equal digests, equal views.
    (``DEBUG DIGEST`` would be quicker, but it skips the values of module types such as JSON.)"""
    keys = sorted(
        key
        for pattern in ("full", "shallow", "pos")
        for key in client.scan_iter(match=f"{PREFIX}:{pattern}:*", count=1000)
    )
    out = hashlib.blake2b()
    for start in range(0, len(keys), 1000):
        batch = keys[start : start + 1000]
        pipe = client.pipeline(transaction=False)
        for key, kind in zip(batch, _types(client, batch), strict=True):
            if kind == b"zset":
                pipe.zrange(key, 0, -1, withscores=True)
            else:
                pipe.execute_command(_READ[kind], key)
        for key, value in zip(batch, pipe.execute(), strict=True):
            comparable = value
            if isinstance(value, (dict, set)):
                comparable = sorted(value.items() if isinstance(value, dict) else value)
            out.update(repr((key, comparable)).encode())
    return out.hexdigest()


_READ = {b"hash": "HGETALL", b"set": "SMEMBERS", b"ReJSON-RL": "JSON.GET", b"string": "GET"}


def _types(client: redis.Redis, keys: list[bytes]) -> list[bytes]:
    pipe = client.pipeline(transaction=False)
    for key in keys:
        pipe.type(key)
    return list(pipe.execute())


@dataclass(frozen=True)
class Rebuild:
    """One timed rebuild: events replayed; wall seconds to drop and to replay; the client's CPU
    seconds and the server process's CPU seconds (all its threads, ``INFO cpu``) during the
    replay. CPU seconds, unlike wall time, hardly change when other work shares the machine, so
    ``1 / max(client, server)`` per event is the rate the replay reaches when the two have a
    core each."""

    events: int
    drop: float
    replay: float
    client_cpu: float
    server: float
    jobs: int = 1

    def line(self, views: Sequence[ViewName], page: int) -> str:
        per_event = 1e6 / self.events
        jobs = f" jobs {self.jobs}" if self.jobs > 1 else ""
        return (
            f"rebuild {'+'.join(views):<13} page {page}{jobs}: {self.events / self.replay:>7,.0f} events/s "
            f"({self.events:,} events in {self.replay:.2f} s, drop {self.drop:.2f} s more); per event: "
            f"client CPU {self.client_cpu * per_event:.0f} us, server CPU {self.server * per_event:.0f} us "
            f"(a core each: {self.events / max(self.client_cpu / self.jobs, self.server):,.0f} events/s)"
        )


def timed_rebuild(client: redis.Redis, url: str, views: Sequence[ViewName], page: int, jobs: int) -> Rebuild:
    """Drop `views` and replay them (with `jobs` processes when above 1), timing each part."""
    replayer = Replayer.open(client, PREFIX, page=page)
    start = time.perf_counter()
    replayer.drop(views)
    dropped = time.perf_counter()
    before, cpu = server_cpu(client), client_cpu()
    stats = replay_in_jobs(url, PREFIX, views, jobs=jobs, page=page, keep=True) if jobs > 1 else replayer.replay(views)
    cpu, end, server = client_cpu() - cpu, time.perf_counter(), server_cpu(client) - before
    return Rebuild(stats.events, dropped - start, end - dropped, cpu, server, jobs)


def client_cpu() -> float:
    """CPU seconds of this process and of its finished children (the replay jobs)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def server_cpu(client: redis.Redis) -> float:
    """CPU seconds the server process has used (user + system, every thread)."""
    cpu = client.info("cpu")
    return float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])


def profile_rebuild(client: redis.Redis, page: int, top: int) -> str:
    """One rebuild of both views under cProfile, with the server's time per command beside it."""
    before = command_usec(client)
    profile = cProfile.Profile()
    wall = time.perf_counter()
    profile.enable()
    Replayer.open(client, PREFIX, page=page).rebuild(["full", "shallow"])
    profile.disable()
    wall = time.perf_counter() - wall
    after = command_usec(client)
    server = {
        k: (c - before.get(k, (0, 0.0))[0], u - before.get(k, (0, 0.0))[1])
        for k, (c, u) in after.items()
    }
    lines = [f"## profile: one rebuild of full + shallow, {wall:.2f} s wall under cProfile", ""]
    lines += ["| server command | calls | seconds |", "|---|---:|---:|"]
    for name, (calls, usec) in sorted(server.items(), key=lambda kv: -kv[1][1]):
        if calls:
            lines.append(f"| {name} | {calls:,} | {usec / 1e6:.2f} |")
    stats = pstats.Stats(profile, stream=io.StringIO())
    layers: dict[str, float] = defaultdict(float)
    for (path, _, function), (_, _, own, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        layers[_layer(path, function)] += own
    lines += ["", "| client layer (cProfile own time) | seconds |", "|---|---:|"]
    lines += [
        f"| {name} | {sec:.2f} |" for name, sec in sorted(layers.items(), key=lambda kv: -kv[1])
    ]
    buffer = io.StringIO()
    stats.stream = buffer  # type: ignore[attr-defined]
    stats.sort_stats("tottime").print_stats(top)
    body = buffer.getvalue()
    return "\n".join([*lines, "", "```", body[body.find("   ncalls") :].rstrip(), "```"])


def _layer(path: str, function: str) -> str:
    if "_socket.socket" in function or "select" in function:
        return "socket I/O and waiting for the server"
    if "/projectors/" in path:
        return "projectors"
    if any(s in path for s in ("/streamsaver/events", "/streamsaver/codec")):
        return "event decoding (events, codec)"
    if "/streamsaver/" in path:
        return "streamsaver (replay, append args, keys)"
    if "orjson" in function:
        return "orjson"
    if "/redis/" in path:
        return "redis-py (command encoding, reply parsing)"
    return "other (stdlib, builtins)"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.replay_throughput", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--threads", type=int, default=2000, help="conversation threads (default: %(default)s)"
    )
    parser.add_argument(
        "--steps",
        type=int,
        default=20,
        help="steps per thread, two events each (default: %(default)s)",
    )
    parser.add_argument(
        "--page", type=int, default=500, help="Replayer page size (default: %(default)s)"
    )
    parser.add_argument(
        "--runs", type=int, default=2, help="timed rebuilds per view set; the best counts"
    )
    parser.add_argument(
        "--jobs", type=int, default=1, help="replay processes (streamsaver replay --jobs; default 1)"
    )
    parser.add_argument("--profile", action="store_true", help="also profile one rebuild")
    parser.add_argument("--top", type=int, default=25, help="functions listed by --profile")
    args = parser.parse_args(argv)
    with EmbeddedRedis() as server, redis.Redis.from_url(server.url) as client:
        start = time.perf_counter()
        events = build_log(client, args.threads, args.steps)
        memory = client.info("memory")["used_memory_human"]
        print(
            f"log: {args.threads:,} threads x {args.steps} steps = {events:,} events, "
            f"built in {time.perf_counter() - start:.1f} s; server memory {memory}"
        )
        live = digest(client)
        for views in RUNS:
            best = min(
                (timed_rebuild(client, server.url, views, args.page, args.jobs) for _ in range(args.runs)),
                key=lambda r: r.replay,
            )
            same = (
                "identical to the live views"
                if digest(client) == live
                else "DIFFERENT from the live views"
            )
            print(f"{best.line(views, args.page)}; {same}")
        if args.profile:
            print()
            print(profile_rebuild(client, args.page, args.top))


if __name__ == "__main__":
    main()

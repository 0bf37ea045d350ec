"""Where one saver's time goes, per op: client Python by layer (cProfile) against server time.

    python -m benchmarks.profile_ops --saver ss-full --ops put,"get_tuple latest" -n 500

Runs the benchmark's workload on one saver twice. The first pass times each chosen op without
a profiler and reads, from the server, the command time (``INFO commandstats``, which for a
script includes its Lua) and the bytes the saver's connection sent and received. The second
pass runs the same ops under cProfile and splits the client's own time into layers.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import pstats
import statistics
import sys
import tempfile
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, closing, contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repo root importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import redis

from benchmarks.measure import OPS, OpFn, Settings, Subject, Wrap, iterate, open_subject
from benchmarks.savers import EXTRA_SAVERS, SAVERS, Environment

LAYERS: tuple[tuple[str, Callable[[str, str], bool]], ...] = (
    (
        "socket I/O and waiting for the server",
        lambda path, fn: "_socket.socket" in fn or "select" in fn,
    ),
    (
        "serde (langgraph serde, ormsgpack, langchain, pydantic, and the importlib it calls per object)",
        lambda path, fn: any(
            s in path + fn
            for s in ("checkpoint/serde", "ormsgpack", "langchain_core", "pydantic", "importlib")
        ),
    ),
    (
        "streamsaver + projectors (incl. orjson)",
        lambda path, fn: any(s in path + fn for s in ("/streamsaver/", "/projectors/", "orjson")),
    ),
    ("peer saver + redisvl", lambda path, fn: "checkpoint/redis" in path or "/redisvl/" in path),
    (
        "redis-py (commands, pipeline, parser)",
        lambda path, fn: "/redis/" in path or "hiredis" in fn,
    ),
    ("other (stdlib, asyncio, uuid, ...)", lambda path, fn: True),
)


def layer_of(path: str, function: str) -> str:
    return next(name for name, test in LAYERS if test(path, function))


@dataclass
class ServerProbe:
    """Server-side command time and the other connections' traffic, read between ops."""

    client: redis.Redis
    usec: list[float] = field(default_factory=list)
    sent: list[int] = field(default_factory=list)
    received: list[int] = field(default_factory=list)

    def _snapshot(self) -> tuple[float, int, int]:
        stats = self.client.info("commandstats")
        usec = sum(
            v["usec"]
            for k, v in stats.items()
            if k not in ("cmdstat_info", "cmdstat_client|list", "cmdstat_client|id")
        )
        own = self.client.client_id()
        others = [c for c in self.client.client_list() if int(c["id"]) != own]
        return (
            usec,
            sum(int(c.get("tot-net-in", 0)) for c in others),
            sum(int(c.get("tot-net-out", 0)) for c in others),
        )

    @contextmanager
    def probe(self) -> Iterator[None]:
        before = self._snapshot()
        yield
        after = self._snapshot()
        self.usec.append(after[0] - before[0])
        self.sent.append(after[1] - before[1])
        self.received.append(after[2] - before[2])


def bracket(op_name: str, around: Callable[[], AbstractContextManager[object]]) -> Wrap:
    """Run the saver calls of `op_name` inside `around` (its checks stay outside)."""

    def wrap(name: str, op: OpFn) -> OpFn:
        def run(subject: Subject, turn: Any) -> tuple[float, bool]:
            subject.around = around
            try:
                return op(subject, turn)
            finally:
                subject.around = nullcontext

        return run if name == op_name else op

    return wrap


def timing_pass(subject: Subject, op_name: str, n: int, probe: ServerProbe | None) -> list[float]:
    wrap = bracket(op_name, probe.probe if probe else nullcontext)
    return [next(s for name, s, _ in iterate(subject, wrap) if name == op_name) for _ in range(n)]


def profile_pass(subject: Subject, op_name: str, n: int) -> pstats.Stats:
    profile = cProfile.Profile()

    @contextmanager
    def profiling() -> Iterator[None]:
        profile.enable()
        try:
            yield
        finally:
            profile.disable()

    for _ in range(n):
        iterate(subject, bracket(op_name, profiling))
    return pstats.Stats(profile, stream=io.StringIO())


def layers(stats: pstats.Stats) -> dict[str, float]:
    """Own time (tottime) per layer, in seconds."""
    totals: dict[str, float] = defaultdict(float)
    for (path, _, function), (_, _, tottime, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        totals[layer_of(path, function)] += tottime
    return dict(totals)


def report(
    op_name: str,
    n: int,
    wall: list[float],
    probe: ServerProbe | None,
    stats: pstats.Stats,
    top: int,
) -> str:
    lines = [
        f"## {op_name}: {n} calls",
        "",
        f"wall, no profiler: median {statistics.median(wall) * 1e3:.3f} ms",
    ]
    if probe is not None:
        lines.append(
            f"server command time (incl. Lua): median {statistics.median(probe.usec) / 1e3:.3f} ms; "
            f"sent to server median {statistics.median(probe.sent) / 1024:.1f} KiB, "
            f"received median {statistics.median(probe.received) / 1024:.1f} KiB"
        )
    shares = layers(stats)
    total = sum(shares.values())
    lines += ["", "| client layer (cProfile own time) | ms/op | share |", "|---|---:|---:|"]
    lines += [
        f"| {name} | {sec / n * 1e3:.3f} | {sec / total:.0%} |"
        for name, sec in sorted(shares.items(), key=lambda kv: -kv[1])
    ]
    buffer = io.StringIO()
    stats.stream = buffer  # type: ignore[attr-defined]
    stats.sort_stats("tottime").print_stats(top)
    body = buffer.getvalue()
    lines += ["", "```", body[body.find("   ncalls") :].rstrip(), "```", ""]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    specs = {s.key: s for s in (*SAVERS, *EXTRA_SAVERS)}
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.profile_ops", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--saver", default="ss-full", choices=sorted(specs))
    parser.add_argument(
        "--ops", default="put,get_tuple latest", help=f"comma-separated, of: {', '.join(OPS)}"
    )
    parser.add_argument("-n", type=int, default=500, help="calls per op and pass")
    parser.add_argument("--top", type=int, default=15, help="functions listed per op")
    args = parser.parse_args(argv)
    settings = Settings(threads=0, warmup=10)
    loop = asyncio.new_event_loop()
    with tempfile.TemporaryDirectory(prefix="streamsaver-profile-") as tmp, ExitStack() as stack:
        env = Environment(stack, Path(tmp), loop)
        subject = open_subject(env, specs[args.saver], settings)
        probe_client = (
            stack.enter_context(closing(redis.Redis.from_url(env.servers[0].url)))
            if env.servers
            else None
        )
        print(f"# Profile of {subject.spec.name}\n")
        for op_name in args.ops.split(","):
            probe = ServerProbe(probe_client) if probe_client is not None else None
            wall = timing_pass(subject, op_name, args.n, probe)
            print(
                report(
                    op_name, args.n, wall, probe, profile_pass(subject, op_name, args.n), args.top
                )
            )
    loop.close()


if __name__ == "__main__":
    main()

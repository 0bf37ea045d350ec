"""What indexing the view documents costs a put, measured on the server.

Each variant is a deployment of its own (a prefix) on one embedded Redis: the default inline
views ``("full", "shallow")`` (declared; the default before savers adopted their read view),
``("full",)`` (a new deployment's default for `StreamSaver`), ``("shallow",)``, no index at all, and both
views with one indexed field dropped from both view indexes (a scratch schema: the index is
dropped and created again under its own name without the field). Every round runs the same
seeded conversation steps (``put`` then ``put_writes``, `benchmarks.workload.Conversation`)
through every variant, interleaved, and reads each call's server time from ``INFO
commandstats`` (``cmdstat_evalsha``, reset with ``CONFIG RESETSTAT`` before the call): client,
network and scheduling of the client process stay out of the figure, so a busy machine moves it
less than a wall-clock timing. Medians per call, in microseconds.

    python -m benchmarks.index_cost --rounds 5 --steps 20
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass, field
from typing import Any

import redis

from benchmarks.workload import Conversation
from projectors.domain import CHECKPOINTS
from projectors.schema import FIELDS
from streamsaver import StreamSaver
from streamsaver.log.indexes import field_args, indexed_views
from streamsaver.server.embedded import EmbeddedRedis

__all__ = ["Variant", "main", "variants"]


@dataclass
class Variant:
    """One deployment measured: its saver options and the index fields it drops."""

    name: str
    view: str = "full"
    projections: tuple[str, ...] = ("full", "shallow")
    dropped: tuple[str, ...] = ()
    no_index: bool = False
    put_us: list[int] = field(default_factory=list)
    writes_us: list[int] = field(default_factory=list)


def variants() -> list[Variant]:
    """The views compared, then the default views without each indexed field in turn."""
    return [
        Variant("full+shallow (declared)"),
        Variant("full+shallow (declared, a control)"),
        Variant("full only (default)", projections=("full",)),
        Variant("shallow only", view="shallow", projections=("shallow",)),
        Variant("full+shallow, no index", no_index=True),
        *(Variant(f"full+shallow without {f['name']}", dropped=(f["name"],)) for f in FIELDS),
    ]


def _rescheme(client: redis.Redis, saver: StreamSaver, variant: Variant) -> None:
    """Replace the variant's view indexes by its scratch schema (or by none)."""
    keyspace = saver.core.keyspace
    assert keyspace is not None
    for view in indexed_views(CHECKPOINTS, saver.core.projections):
        name = keyspace.index(view)
        client.execute_command("FT.DROPINDEX", name)
        if variant.no_index:
            continue
        fields = [arg for f in FIELDS if f["name"] not in variant.dropped for arg in field_args(f)]
        documents = keyspace.document_prefix(view, CHECKPOINTS.view(view).documents)
        client.execute_command("FT.CREATE", name, "ON", "JSON", "PREFIX", 1, documents, "SCHEMA", *fields)


def _server_us(client: redis.Redis, call: Callable[[], Any]) -> int:
    """The server time of the one EVALSHA `call` sends (microseconds)."""
    client.config_resetstat()
    call()
    stats = client.info("commandstats").get("cmdstat_evalsha", {})
    assert int(stats.get("calls", 0)) == 1, stats
    return int(stats["usec"])


def _run(client: redis.Redis, saver: StreamSaver, variant: Variant, thread: str, seed: int, steps: int) -> None:
    conversation = Conversation(thread, saver.get_next_version, random.Random(seed))
    for _ in range(steps):
        step = conversation.next_step()
        saved: list[Any] = []

        def put() -> None:
            saved.append(saver.put(step.parent_config, step.checkpoint, step.metadata, step.new_versions))  # noqa: B023

        variant.put_us.append(_server_us(client, put))
        conversation.record(saved[0])
        variant.writes_us.append(
            _server_us(client, lambda: saver.put_writes(saved[0], step.writes, step.task_id))  # noqa: B023
        )


def main(argv: list[str] | None = None) -> None:
    """Run the comparison and print one table row per variant."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5, help="rounds over every variant (interleaved)")
    parser.add_argument("--steps", type=int, default=20, help="put + put_writes steps per variant per round")
    args = parser.parse_args(argv)
    chosen = variants()
    server = EmbeddedRedis()
    server.start()
    try:
        with closing(redis.Redis.from_url(server.url)) as client:
            savers = []
            for number, variant in enumerate(chosen):
                saver = StreamSaver(
                    client, prefix=f"ic{number}", view=variant.view, projections=variant.projections
                )
                saver.setup()
                if variant.dropped or variant.no_index:
                    _rescheme(client, saver, variant)
                savers.append(saver)
            for round_ in range(args.rounds):
                order = list(zip(chosen, savers, strict=True))
                random.Random(round_).shuffle(order)
                for variant, saver in order:
                    _run(client, saver, variant, f"t{round_}", 1000 + round_, args.steps)
    finally:
        server.stop()
    _report(chosen, args)


def _report(chosen: list[Variant], args: argparse.Namespace) -> None:
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    base = statistics.median(chosen[0].put_us) + statistics.median(chosen[0].writes_us)
    print(f"server time per call (cmdstat_evalsha), medians of {args.rounds}x{args.steps}; load average {load}")
    print("paired: median over the same (round, step) of the variant's step minus the default's")
    print(f"{'variant':36} {'put us':>7} {'p25':>5} {'writes us':>9} {'step us':>8} {'vs default':>10} {'paired':>7}")
    default = chosen[0]
    for variant in chosen:
        put, writes = statistics.median(variant.put_us), statistics.median(variant.writes_us)
        p25 = statistics.quantiles(variant.put_us, n=4)[0]
        paired = statistics.median(
            p + w - dp - dw
            for p, w, dp, dw in zip(variant.put_us, variant.writes_us, default.put_us, default.writes_us, strict=True)
        )
        print(
            f"{variant.name:36} {put:7.0f} {p25:5.0f} {writes:9.0f} {put + writes:8.0f} "
            f"{put + writes - base:+10.0f} {paired:+7.0f}"
        )


if __name__ == "__main__":
    main()

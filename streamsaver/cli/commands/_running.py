"""Running a subscriber or a worker from a command: logging, a start line and periodic status
lines (as ``--progress`` says), and stopping cleanly on SIGINT/SIGTERM."""

from __future__ import annotations

import argparse
import dataclasses
import logging
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from streamsaver.feeds.subscriber import Subscriber, SubscriberStats

__all__ = ["run_subscriber", "status_lines", "subscriber_options"]


def subscriber_options(parser: argparse.ArgumentParser, group: str) -> None:
    """The options of a command that runs a subscriber."""
    parser.add_argument("--group", default=group, help="the consumer group (default: %(default)s)")
    parser.add_argument("--name", help="this subscriber's name, unique in the group (default: host-pid-random)")
    parser.add_argument("--burst", action="store_true", help="handle what the feeds hold, then exit")
    parser.add_argument("--lease-ms", type=int, default=10_000, help="lease time-to-live (default: %(default)s)")
    parser.add_argument("--max-deliveries", type=int, default=5,
                        help="failed attempts before an event is dead-lettered (default: %(default)s)")


def _counts(stats: Any, elapsed: float) -> str:
    shown = [f"{f.name} {getattr(stats, f.name):,}" for f in dataclasses.fields(stats) if getattr(stats, f.name)]
    rate = getattr(stats, "read", 0) / elapsed if elapsed > 0 else 0.0
    return f"{', '.join(shown) or 'nothing read yet'} ({rate:,.0f}/s over {elapsed:.0f}s)"


@contextmanager
def status_lines(label: str, counts: Callable[[], Any], every: float | None = None) -> Iterator[None]:
    """Print ``label: <counts>`` on stderr every `every` seconds (default
    `streamsaver.ops.progress.STATUS_EVERY_S`) while the block runs, from a daemon thread;
    nothing in the ``never`` progress mode. `counts` returns a dataclass of counts."""
    from streamsaver.ops.progress import STATUS_EVERY_S, mode

    if mode() == "never":
        yield
        return
    stop, started = threading.Event(), time.monotonic()

    def report() -> None:
        while not stop.wait(STATUS_EVERY_S if every is None else every):
            print(f"{label}: {_counts(counts(), time.monotonic() - started)}", file=sys.stderr, flush=True)

    reporter = threading.Thread(target=report, name="streamsaver-status", daemon=True)
    reporter.start()
    try:
        yield
    finally:
        stop.set()
        reporter.join()


def run_subscriber(subscriber: Subscriber, args: argparse.Namespace) -> SubscriberStats:
    """`run_burst` with ``--burst``, else `run` until SIGINT or SIGTERM (leases released); a
    start line and periodic status lines on stderr meanwhile."""
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    subscriber.prepare()  # idempotent: a server that cannot serve fails here, before the start line
    print(f"subscriber {subscriber.name} of group {subscriber.group!r}: "
          f"{'handling what the feeds hold' if args.burst else 'following the feeds (Ctrl-C stops)'}",
          file=sys.stderr, flush=True)
    with status_lines(f"subscriber {subscriber.name}", lambda: subscriber.core.running):
        return _run(subscriber, args)


def _run(subscriber: Subscriber, args: argparse.Namespace) -> SubscriberStats:
    if args.burst:
        return subscriber.run_burst()

    def stop(signum: int, frame: FrameType | None) -> None:
        subscriber.stop()

    previous = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        return subscriber.run()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)

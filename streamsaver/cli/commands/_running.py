"""Running a subscriber from a command: logging, and stopping cleanly on SIGINT/SIGTERM."""

from __future__ import annotations

import argparse
import logging
import signal
from types import FrameType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from streamsaver.feeds.subscriber import Subscriber, SubscriberStats

__all__ = ["run_subscriber", "subscriber_options"]


def subscriber_options(parser: argparse.ArgumentParser, group: str) -> None:
    """The options of a command that runs a subscriber."""
    parser.add_argument("--group", default=group, help="the consumer group (default: %(default)s)")
    parser.add_argument("--name", help="this subscriber's name, unique in the group (default: host-pid-random)")
    parser.add_argument("--burst", action="store_true", help="handle what the feeds hold, then exit")
    parser.add_argument("--lease-ms", type=int, default=10_000, help="lease time-to-live (default: %(default)s)")
    parser.add_argument("--max-deliveries", type=int, default=5,
                        help="failed attempts before an event is dead-lettered (default: %(default)s)")


def run_subscriber(subscriber: Subscriber, args: argparse.Namespace) -> SubscriberStats:
    """`run_burst` with ``--burst``, else `run` until SIGINT or SIGTERM (leases released)."""
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
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

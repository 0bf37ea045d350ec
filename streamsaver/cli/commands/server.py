"""``streamsaver server``: the embedded Redis (search + JSON modules) in the foreground."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path
from types import FrameType

__all__ = ["DEFAULT_PORT", "default_data_dir", "register"]

DEFAULT_PORT = 6379


def default_data_dir() -> Path:
    """Where the server keeps its AOF when --data-dir is not given: ``$XDG_DATA_HOME`` (or
    ``~/.local/share``) ``/streamsaver/redis``, so data survives a restart."""
    base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(base) / "streamsaver" / "redis"


def _stop_on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # SIGTERM (a supervisor, `kill`) stops as Ctrl-C does: cleanly


def _run(args: argparse.Namespace) -> int:
    from streamsaver.server.embedded import EmbeddedRedis

    server = EmbeddedRedis(args.data_dir, port=args.port).start()
    previous = signal.signal(signal.SIGTERM, _stop_on_sigterm)
    try:
        print(f"streamsaver server: {server.url} (data in {server.data_dir}); Ctrl-C stops it", flush=True)
        assert server.process is not None
        code = server.process.wait()
        print(f"streamsaver: error: redis-server exited with {code}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("streamsaver server: stopping", flush=True)
        return 0
    finally:
        server.stop()
        signal.signal(signal.SIGTERM, previous)


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add ``server``."""
    parser = commands.add_parser(
        "server",
        help="run a local Redis 8 with the search and JSON modules in the foreground",
        description="Start the embedded Redis 8 (RediSearch and RedisJSON loaded, AOF on) that the "
        "demo and the tests use, on 127.0.0.1, print its URL, and keep it running until Ctrl-C or "
        "SIGTERM, which shut it down cleanly (exit 0). Point REDIS_URL or "
        "StreamSaver.from_conn_string at the URL it prints. Needs pip install 'streamsaver[embedded]'.",
    )
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="the port to listen on (default: %(default)s)")
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=default_data_dir(),
        metavar="DIR",
        help="where the append-only file goes; data survives restarts (default: %(default)s)",
    )
    parser.set_defaults(handler=_run)

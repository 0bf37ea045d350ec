"""`run_demo`: reach (or start) a Redis, run every scene under a fresh key prefix, report facts."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib.util import find_spec
from typing import TYPE_CHECKING, TextIO
from urllib.parse import urlsplit, urlunsplit

from redis import Redis

from streamsaver.demo import scenes
from streamsaver.demo.memory_store import DIMS, MemoryStoreFacts, WordEmbeddings, long_term_memory
from streamsaver.demo.show import Show
from streamsaver.demo.stored import StoredFacts, command, what_is_stored
from streamsaver.memory.sync import StreamStore
from streamsaver.saver.sync import StreamSaver
from streamsaver.server.embedded import EmbeddedRedis

if TYPE_CHECKING:
    from streamsaver.demo.agent_middleware import MiddlewareFacts

__all__ = ["DemoReport", "run_demo"]


@dataclass(frozen=True)
class DemoReport:
    """What one demo run did: where, under which key prefix, and the facts of each scene."""

    server: str
    """The server's URL, password hidden."""
    embedded: bool
    """True when the demo started (and has since stopped) its own server."""
    prefix: str
    """The key prefix of this run; every key it wrote starts with ``prefix:``."""
    memory: scenes.MemoryFacts
    approval: scenes.ApprovalFacts
    time_travel: scenes.TimeTravelFacts
    subgraph: scenes.SubgraphFacts
    parallel: scenes.ParallelFacts
    stored: StoredFacts
    middleware: MiddlewareFacts | None = None
    """The agent middleware scene (None when langchain, the ``middleware`` extra, is not installed)."""
    long_term: MemoryStoreFacts | None = None
    """The long-term memory scene (`streamsaver.demo.memory_store`)."""


def run_demo(url: str | None = None, *, out: TextIO | None = None) -> DemoReport:
    """Run the demo on `url`, or on an embedded Redis started and stopped here when `url` is None.

    Each run writes under a new random key prefix, so runs on a shared server never mix; on a
    server given by `url` the keys are left in place to explore.

    Args:
        url: a ``redis://``, ``rediss://`` or ``unix://`` URL of a Redis 8 (or Redis Stack).
        out: where the demo prints; standard output when None.

    Raises:
        EmbeddedServerError: `url` is None and the embedded server is missing or did not start.
        MissingModuleError: the server lacks RediSearch or RedisJSON.
        redis.exceptions.RedisError: the server cannot be reached or refused a command.
    """
    show = Show(out or sys.stdout)
    with _server(url) as (server_url, embedded):
        client = Redis.from_url(server_url)
        try:
            return _run(client, show, _public(server_url), embedded)
        finally:
            client.close()


@contextmanager
def _server(url: str | None) -> Iterator[tuple[str, bool]]:
    if url is not None:
        yield url, False
        return
    with EmbeddedRedis() as server:
        yield server.url, True


def _public(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    return urlunsplit(
        parts._replace(netloc=parts.netloc.replace(f":{parts.password}@", ":***@", 1))
    )


def _introduce(client: Redis, show: Show, url: str, embedded: bool, prefix: str) -> None:
    version = command(client, "INFO", "server").get("redis_version", "?")
    origin = "embedded, started for this demo" if embedded else "given by --url / REDIS_URL"
    show.say("streamsaver demo: LangGraph graphs checkpointed by StreamSaver (sync, full view)")
    show.say(f"Server:     Redis {version} at {url} ({origin})")
    show.say(f"Key prefix: {prefix!r} (new for every run, so runs on a shared server never mix)")


def _middleware_scene(client: Redis, saver: StreamSaver, show: Show) -> MiddlewareFacts:
    from streamsaver.demo.agent_middleware import middleware_scene  # langchain: the middleware extra

    return middleware_scene(client, saver, show)


def _long_term(client: Redis, show: Show, prefix: str) -> MemoryStoreFacts:
    """The long-term memory scene, on a saver and a store of its own key prefix (so the
    checkpoint scenes' deployment stays as they left it)."""
    saver = StreamSaver(client, prefix=prefix, projections=("full", "shallow"))  # the tour shows both views
    saver.setup()
    store = StreamStore(client, prefix=prefix, index={"dims": DIMS, "embed": WordEmbeddings(), "fields": ["text"]})
    store.setup()
    return long_term_memory(saver, store, show)


def _run(client: Redis, show: Show, url: str, embedded: bool) -> DemoReport:
    prefix = f"demo-{uuid.uuid4().hex[:8]}"
    saver = StreamSaver(client, prefix=prefix, projections=("full", "shallow"))  # the tour shows both views
    saver.setup()
    _introduce(client, show, url, embedded, prefix)
    memory = scenes.memory(saver, show)
    approval = scenes.approval(saver, show)
    time_travel = scenes.time_travel(saver, show)
    subgraph = scenes.subgraph(saver, show)
    parallel = scenes.parallel(saver, show)
    threads = [memory.thread_id, approval.thread_id, subgraph.thread_id, parallel.thread_id]
    stored = what_is_stored(client, saver, show, threads, detail=parallel.thread_id)
    agents = _middleware_scene(client, saver, show) if find_spec("langchain") else None
    long_term = _long_term(client, show, f"{prefix}-memory")
    show.title("Done")
    if embedded:
        show.say("The embedded server stops now, and its data with it.")
    else:
        show.say(f"Everything stays on the server under {prefix + ':*'!r} for you to explore.")
    return DemoReport(
        url, embedded, prefix, memory, approval, time_travel, subgraph, parallel, stored, agents, long_term
    )

"""Run one LangGraph graph the same way over every saver variant, for the graph tests.

A `Driver` is a compiled graph plus the saver it checkpoints to, with one awaitable method per
graph API the tests use. For a sync saver it calls the sync graph API (``invoke``,
``get_state``, ...), which never touches the event loop; for an async saver it calls the async
one (``ainvoke``, ``aget_state``, ...). The tests are therefore written once and run over
sync/async x full/shallow, and against ``InMemorySaver`` as the reference.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
import redis
import redis.asyncio
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import StateGraph
from langgraph.pregel import Pregel
from langgraph.types import StateSnapshot

from streamsaver import AsyncStreamSaver, StreamSaver

__all__ = ["Driver", "Harness", "harness_fixture", "kind_fixture", "thread", "view_fixture"]


def thread(name: str | None = None) -> RunnableConfig:
    """A config naming a thread of its own."""
    return {"configurable": {"thread_id": name or f"th-{uuid.uuid4().hex[:8]}"}}


@dataclass
class Driver:
    """A compiled graph and its saver; `is_async` picks the graph API (sync or async)."""

    graph: Pregel
    saver: BaseCheckpointSaver
    is_async: bool

    async def invoke(self, value: Any, config: RunnableConfig) -> Any:
        if self.is_async:
            return await self.graph.ainvoke(value, config)
        return self.graph.invoke(value, config)

    async def state(self, config: RunnableConfig, *, subgraphs: bool = False) -> StateSnapshot:
        if self.is_async:
            return await self.graph.aget_state(config, subgraphs=subgraphs)
        return self.graph.get_state(config, subgraphs=subgraphs)

    async def history(self, config: RunnableConfig) -> list[StateSnapshot]:
        if self.is_async:
            return [s async for s in self.graph.aget_state_history(config)]
        return list(self.graph.get_state_history(config))

    async def update(self, config: RunnableConfig, values: Any, as_node: str | None = None) -> RunnableConfig:
        if self.is_async:
            return await self.graph.aupdate_state(config, values, as_node=as_node)
        return self.graph.update_state(config, values, as_node=as_node)

    async def checkpoints(self, config: RunnableConfig) -> list[CheckpointTuple]:
        """The saver's own listing for `config` (every namespace when it names none)."""
        if self.is_async:
            return [t async for t in self.saver.alist(config)]
        return list(self.saver.list(config))

    async def tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        if self.is_async:
            return await self.saver.aget_tuple(config)
        return self.saver.get_tuple(config)


@dataclass
class Harness:
    """Makes savers of one variant (`kind` x `view`) on one key prefix, each on a new client."""

    redis_url: str
    prefix: str
    kind: str
    view: str
    _clients: list[Any] = field(default_factory=list)

    @property
    def is_async(self) -> bool:
        return self.kind == "async"

    async def new_saver(self, prefix: str | None = None) -> BaseCheckpointSaver:
        """A saver on a brand-new client (on `prefix`, default the test's): it can only know
        what Redis holds."""
        prefix = prefix or self.prefix
        if self.is_async:
            aclient = redis.asyncio.Redis.from_url(self.redis_url)
            self._clients.append(aclient)
            asaver = AsyncStreamSaver(aclient, view=self.view, prefix=prefix)
            await asaver.setup()
            return asaver
        client = redis.Redis.from_url(self.redis_url)
        self._clients.append(client)
        saver = StreamSaver(client, view=self.view, prefix=prefix)
        saver.setup()
        return saver

    async def driver(self, build: Callable[[], StateGraph], saver: BaseCheckpointSaver | None = None) -> Driver:
        """`build()` compiled with `saver` (default: a new saver of this variant)."""
        saver = saver if saver is not None else await self.new_saver()
        return Driver(build().compile(checkpointer=saver), saver, self.is_async)

    def reference(self, build: Callable[[], StateGraph]) -> Driver:
        """`build()` compiled with ``InMemorySaver``, driven through the same API."""
        saver = InMemorySaver()
        return Driver(build().compile(checkpointer=saver), saver, self.is_async)

    async def close(self) -> None:
        for client in self._clients:
            if self.is_async:
                await client.aclose()
            else:
                client.close()


# Fixtures `kind`, `view` and `h`, imported by the test modules (under these function names, so
# no test parameter shadows an import). A test narrows a variant by parametrizing the fixture
# name, e.g. ``@pytest.mark.parametrize("view", ["full"])``.
@pytest.fixture(name="kind", params=["sync", "async"])
def kind_fixture(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(name="view", params=["full", "shallow"])
def view_fixture(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(name="h")
async def harness_fixture(redis_url: str, prefix: str, kind: str, view: str) -> AsyncIterator[Harness]:
    """A `Harness` of the test's variant on the test's prefix; its clients closed afterwards."""
    harness = Harness(redis_url, prefix, kind, view)
    try:
        yield harness
    finally:
        await harness.close()

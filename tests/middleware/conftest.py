"""The middleware suite: real `create_agent` graphs on a deterministic chat model and bag-of-words
embeddings, against the embedded Redis; every behaviour runs under ``invoke`` and ``ainvoke``."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import redis
from langchain.agents import create_agent
from langchain_core.tools import tool
from redis.backoff import NoBackoff
from redis.retry import Retry

from streamsaver import StreamSaver, StreamStore
from streamsaver.demo.fake_agent import BagOfWordsEmbeddings, ScriptedChatModel
from streamsaver.server.embedded import EmbeddedRedis, free_port

DIMS = 256


class WeatherTool:
    """A ``get_weather`` tool that counts its runs and can be told to raise."""

    def __init__(self) -> None:
        self.runs = 0
        self.fail = False

        @tool
        def get_weather(city: str) -> str:
            """The weather in a city."""
            self.runs += 1
            if self.fail:
                raise RuntimeError("weather service down")
            return f"sunny in {city}"

        self.tool = get_weather


@pytest.fixture
def embeddings() -> BagOfWordsEmbeddings:
    return BagOfWordsEmbeddings(DIMS)


@pytest.fixture
def store(client: redis.Redis, prefix: str, embeddings: BagOfWordsEmbeddings) -> StreamStore:
    """A set-up sync store with a cosine index on the test server."""
    s = StreamStore(client, prefix=prefix, index={"dims": DIMS, "embed": embeddings})
    s.setup()
    return s


@pytest.fixture
def saver(client: redis.Redis, prefix: str) -> StreamSaver:
    s = StreamSaver(client, prefix=prefix)
    s.setup()
    return s


@pytest.fixture
def weather() -> WeatherTool:
    return WeatherTool()


@pytest.fixture(params=["invoke", "ainvoke"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def make_agent(middleware: Sequence[Any], *, model: ScriptedChatModel | None = None, tools: Sequence[Any] = (),
               saver: StreamSaver | None = None, system_prompt: str | None = None) -> Any:
    return create_agent(model or ScriptedChatModel(), list(tools), middleware=list(middleware),
                        checkpointer=saver, system_prompt=system_prompt)


async def ask(agent: Any, mode: str, text: str, *, user: str = "alice", tenant: str = "acme",
              thread: str | None = None) -> str:
    """The agent's final answer to `text` for `user`, run with `mode` (``invoke`` or ``ainvoke``)."""
    config = {"configurable": {"thread_id": thread}} if thread else None
    state = {"messages": [{"role": "user", "content": text}]}
    context = {"user_id": user, "tenant_id": tenant}
    if mode == "invoke":
        out = agent.invoke(state, config, context=context)
    else:
        out = await agent.ainvoke(state, config, context=context)
    return str(out["messages"][-1].content)


def unreachable_client(port: int) -> redis.Redis:
    """A client of `port` that gives up at once (no retries, short timeouts)."""
    return redis.Redis(port=port, socket_connect_timeout=0.2, socket_timeout=0.2, retry=Retry(NoBackoff(), 0))


@pytest.fixture
def closed_port_store(embeddings: BagOfWordsEmbeddings) -> Iterator[StreamStore]:
    """A store whose client points at a port nothing listens on."""
    dead = unreachable_client(free_port())
    yield StreamStore(dead, index={"dims": DIMS, "embed": embeddings})
    dead.close()


@pytest.fixture
def stopped_server(tmp_path: Path) -> Iterator[tuple[redis.Redis, Callable[[], None]]]:
    """A client of a running embedded Redis, and the function that stops that server."""
    server = EmbeddedRedis(tmp_path / "data").start()
    client = unreachable_client(server.port)
    yield client, server.stop
    client.close()
    server.stop()

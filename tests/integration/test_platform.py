"""`streamsaver.platform`: the langgraph.json factories, loaded and entered the way the LangGraph
server does (the object a path names; called; entered as an async context manager, once per
worker thread), run a graph with a checkpointer and a store, the store embedded by the index
the ``store`` entry gives."""

from __future__ import annotations

import json
import operator
from importlib import import_module
from pathlib import Path
from typing import Annotated, Any

import pytest
import redis
from langgraph.graph import START, StateGraph
from langgraph.store.base import BaseStore
from typing_extensions import TypedDict

from streamsaver import AsyncStreamSaver, AsyncStreamStore, StreamSaver
from streamsaver.errors import ConfigurationError


class State(TypedDict):
    said: Annotated[list[str], operator.add]


async def _remember(state: State, *, store: BaseStore) -> dict[str, Any]:
    await store.aput(("memories",), f"m{len(state['said'])}", {"text": state["said"][-1]})
    return {"said": ["noted"]}


def _loaded(path: str) -> Any:
    """What langgraph-api 0.16 loads for ``{"path": "package.module.attribute"}`` (a module path
    is split at its last dot; ``file.py:name`` is for files)."""
    module, attribute = path.rsplit(".", 1)
    return import_module(module).__dict__[attribute]


EMBEDDINGS = '''
def embed(texts):
    return [[float(len(t)), float(t.count("a")) + 1.0] for t in texts]
'''


@pytest.fixture
def platform_env(monkeypatch: pytest.MonkeyPatch, redis_url: str, prefix: str, tmp_path: Path) -> Path:
    (tmp_path / "embeddings.py").write_text(EMBEDDINGS)
    monkeypatch.setenv("STREAMSAVER_URL", redis_url)
    monkeypatch.setenv("STREAMSAVER_PREFIX", prefix)
    monkeypatch.setenv("LANGGRAPH_STORE", json.dumps({
        "path": "streamsaver.platform.store",
        "index": {"embed": f"{tmp_path}/embeddings.py:embed", "dims": 2, "fields": ["text"]},
        "ttl": {"default_ttl": 60, "refresh_on_read": True},
    }))
    return tmp_path


async def test_the_factories_langgraph_json_names_run_a_graph_with_memory(
    platform_env: Path, client: redis.Redis, prefix: str
) -> None:
    make_saver, make_store = _loaded("streamsaver.platform.checkpointer"), _loaded("streamsaver.platform.store")
    async with make_saver() as saver, make_store() as store:
        assert isinstance(saver, AsyncStreamSaver) and isinstance(store, AsyncStreamStore)
        graph = (StateGraph(State).add_node("remember", _remember).add_edge(START, "remember")
                 .compile(checkpointer=saver, store=store))
        thread = {"configurable": {"thread_id": "platform"}}
        await graph.ainvoke({"said": ["pay the rent"]}, thread)
        found = await store.asearch(("memories",), query="rent")

    assert found and found[0].value == {"text": "pay the rent"} and found[0].score is not None
    assert store.ttl_config is not None and store.ttl_config.get("default_ttl") == 60
    latest = StreamSaver(client, prefix=prefix).get_tuple(thread)  # type: ignore[arg-type]
    assert latest is not None and latest.checkpoint["channel_values"]["said"] == ["pay the rent", "noted"]


async def test_each_entry_opens_its_own_saver_as_each_worker_thread_of_the_server_does(platform_env: Path) -> None:
    make_saver = _loaded("streamsaver.platform.checkpointer")
    async with make_saver() as first, make_saver() as second:
        assert first is not second and first.redis is not second.redis
        assert await first.aget_tuple({"configurable": {"thread_id": "none"}}) is None


async def test_a_factory_without_a_server_says_what_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STREAMSAVER_URL", raising=False)
    monkeypatch.delenv("REDIS_URL", raising=False)
    with pytest.raises(ConfigurationError, match="STREAMSAVER_URL"):
        async with _loaded("streamsaver.platform.checkpointer")():
            pass


async def test_a_project_factory_passes_its_own_options(platform_env: Path, redis_url: str, prefix: str) -> None:
    from streamsaver.platform import checkpointer_factory

    shallow = checkpointer_factory(redis_url, prefix=f"{prefix}:own", view="shallow", projections=("shallow",))
    async with shallow() as saver:
        assert saver.core.keys.prefix == f"{prefix}:own" and saver.core.view == "shallow"
